/* 64-bit mixing, after Vigna's splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014, with
 * Stafford's "Mix13" finalizer): the one mixer every program uses, for
 * hash keys, seeds and cheap reproducible sequences. Not for secrets:
 * the lease table keys its own hash (agent/leases.c) where clients pick
 * the input. */
#ifndef DBK_HASH_H
#define DBK_HASH_H

#include <stdint.h>

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

/* splitmix64's generator: advances *state and returns its next word
 * (spreads a weak seed, or draws a reproducible sequence). */
static inline uint64_t dbk_hash_next(uint64_t *state)
{
	return dbk_hash_fmix64(*state += DBK_HASH_GOLDEN);
}

#endif
