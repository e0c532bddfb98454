/* Unit tests of the shared mixers (agent/lib/hash.h): the 128-bit
 * product's portable form gives the same value as the compiler's, and
 * the light finalizer is murmur3's first half, whose outputs the
 * balancers' tie-breaks and the simulator's figures were measured with. */
#include <stdint.h>

#include "check.h"
#include "lib/hash.h"

/* The folded product from the schoolbook halves, checked against values
 * worked out by hand, and against the 128-bit type where there is one. */
static void test_mum_portable(void)
{
	CHECK(dbk_hash_mum_portable(0, UINT64_MAX) == 0);
	CHECK(dbk_hash_mum_portable(1, 12345) == 12345);
	/* 2^32 * 2^32 = 2^64: low 0, high 1. */
	CHECK(dbk_hash_mum_portable(UINT64_C(1) << 32, UINT64_C(1) << 32) == 1);
	/* (2^64 - 1)^2 = 2^128 - 2^65 + 1: high 2^64 - 2, low 1. */
	CHECK(dbk_hash_mum_portable(UINT64_MAX, UINT64_MAX) == ((UINT64_MAX - 1) ^ 1));
	uint64_t state = 42;
	unsigned differ = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t a = dbk_hash_next(&state), b = dbk_hash_next(&state);
		/* Small and one-sided factors too, where carries are rare. */
		if (i % 4 == 1)
			a >>= 40;
		if (i % 4 == 2)
			b |= UINT64_C(0xffffffff);
		differ += dbk_hash_mum_portable(a, b) != dbk_hash_mum(a, b);
#ifdef __SIZEOF_INT128__
		__uint128_t r = (__uint128_t)a * b;
		differ += dbk_hash_mum_portable(a, b) != ((uint64_t)r ^ (uint64_t)(r >> 64));
#endif
	}
	CHECK_EQ_U(differ, 0);
}

/* Values worked out apart (Python's integers, masked to 64 bits). */
static void test_fmix_light(void)
{
	CHECK(dbk_hash_fmix_light(0) == 0);
	CHECK(dbk_hash_fmix_light(1) == UINT64_C(0xff51afd792fd5b26));
	CHECK(dbk_hash_fmix_light(0xdeadbeef) == UINT64_C(0x1280ffa5f4a7e6b1));
	CHECK(dbk_hash_fmix_light(UINT64_MAX) == UINT64_C(0x0955399984aa9ccc));
}

int main(void)
{
	RUN(test_mum_portable);
	RUN(test_fmix_light);
	return CHECK_DONE();
}
