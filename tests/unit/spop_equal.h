/* Equality of two decoded SPOP typed values: the unit tests and the fuzz
 * targets (tests/fuzz/spop_check.h) both check that a value comes back
 * from a write and a read, and must agree on what "the same" means. */
#ifndef DBK_TEST_SPOP_EQUAL_H
#define DBK_TEST_SPOP_EQUAL_H

#include <stdbool.h>
#include <string.h>

#include "lib/spop_codec.h"

static inline bool spop_data_equal(const struct dbk_spop_data *a, const struct dbk_spop_data *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case DBK_SPOP_T_NULL: return true;
	case DBK_SPOP_T_BOOL: return a->u.b == b->u.b;
	case DBK_SPOP_T_INT32: return a->u.i32 == b->u.i32;
	case DBK_SPOP_T_UINT32: return a->u.u32 == b->u.u32;
	case DBK_SPOP_T_INT64: return a->u.i64 == b->u.i64;
	case DBK_SPOP_T_UINT64: return a->u.u64 == b->u.u64;
	case DBK_SPOP_T_IPV4: return memcmp(a->u.ipv4, b->u.ipv4, 4) == 0;
	case DBK_SPOP_T_IPV6: return memcmp(a->u.ipv6, b->u.ipv6, 16) == 0;
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		return a->u.buf.len == b->u.buf.len &&
		       (a->u.buf.len == 0 || memcmp(a->u.buf.ptr, b->u.buf.ptr, a->u.buf.len) == 0);
	}
	return false;
}

#endif
