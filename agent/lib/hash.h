/* 64-bit mixing, after Vigna's splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014, with
 * Stafford's "Mix13" finalizer): the one mixer every program uses, for
 * hash keys, seeds and cheap reproducible sequences; and wyhash's
 * folded 128-bit product, the step of the hashes that read long input
 * (the lease table's ids, the prompt's blocks). Not for secrets: the
 * lease table keys its own hash (agent/leases.c) where clients pick the
 * input. */
#ifndef DBK_HASH_H
#define DBK_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The golden-ratio increment: consecutive states differ in many bits. */
#define DBK_HASH_GOLDEN UINT64_C(0x9e3779b97f4a7c15)

/* splitmix64's finalizer: a bijection in which every input bit reaches
 * every output bit. dbk_hash_fmix64(0) is 0. */
static inline uint64_t dbk_hash_fmix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The first half of murmur3's 64-bit finalizer: one multiply, so not
 * every input bit reaches every output bit, but the high ones mix well;
 * enough to break ties and to pick one of a few balancers, on inputs
 * that are already hashes. */
static inline uint64_t dbk_hash_fmix_light(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	return x ^ (x >> 33);
}

/* splitmix64's generator: advances *state and returns its next word
 * (spreads a weak seed, or draws a reproducible sequence). */
static inline uint64_t dbk_hash_next(uint64_t *state)
{
	return dbk_hash_fmix64(*state += DBK_HASH_GOLDEN);
}

/* A uniform draw in (0, 1] from the generator: 53 bits, never 0, so
 * that its log (an exponential draw) stays finite. */
static inline double dbk_hash_unit(uint64_t *state)
{
	return (double)((dbk_hash_next(state) >> 11) + 1) * 0x1p-53;
}

/* Eight bytes as a word, in host byte order (unaligned is fine): hashes
 * of bytes that only this process compares, never written anywhere. */
static inline uint64_t dbk_hash_read64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* The 128-bit product of a and b, its halves xored: what wyhash builds
 * on. Written with 64-bit words only, for compilers without a 128-bit
 * type; the same value either way (tests/unit/test_hash.c). */
static inline uint64_t dbk_hash_mum_portable(uint64_t a, uint64_t b)
{
	uint64_t alo = a & 0xffffffffu, ahi = a >> 32, blo = b & 0xffffffffu, bhi = b >> 32;
	uint64_t lo = alo * blo, m1 = ahi * blo, m2 = alo * bhi, hi = ahi * bhi;
	uint64_t mid = (lo >> 32) + (m1 & 0xffffffffu) + (m2 & 0xffffffffu);

	hi += (m1 >> 32) + (m2 >> 32) + (mid >> 32);
	return ((mid << 32) | (lo & 0xffffffffu)) ^ hi;
}

static inline uint64_t dbk_hash_mum(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
	return dbk_hash_mum_portable(a, b);
#endif
}

/* Four bytes as a word, as dbk_hash_read64. */
static inline uint64_t dbk_hash_read32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* A byte string's hash under the key (k0, k1): wyhash's mixing, a
 * 128-bit product of input words xored with key words, folded to 64
 * bits (the construction Go's maps fall back on). A secret key keeps
 * strings a client picks (request ids) from piling into one chain; a
 * fixed one serves strings the client cannot add to the table. About a
 * fifth of SipHash-1-3's instructions on a 30-byte id. */
static inline uint64_t dbk_hash_bytes(uint64_t k0, uint64_t k1, const void *in, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	uint64_t h = k0, a = 0, b = 0;
	size_t left = len;

	for (; left > 16; p += 16, left -= 16)
		h = dbk_hash_mum(dbk_hash_read64(p) ^ k1, dbk_hash_read64(p + 8) ^ h);
	/* The last 1..16 bytes, read as two words that may overlap; the
	 * length folded in below tells strings that overlap differently
	 * apart. */
	if (left > 8) {
		a = dbk_hash_read64(p);
		b = dbk_hash_read64(p + left - 8);
	} else if (left >= 4) {
		a = dbk_hash_read32(p);
		b = dbk_hash_read32(p + left - 4);
	} else if (left > 0) {
		a = (uint64_t)p[0] << 16 | (uint64_t)p[left / 2] << 8 | p[left - 1];
	}
	return dbk_hash_mum(k1 ^ len, dbk_hash_mum(a ^ k1, b ^ h));
}

#endif
