/* Helpers shared by the SPOP codec's unit tests (test_spop_codec.c and
 * test_spop_control.c): typed values in one expression, frames built from
 * key-value lists, exactly-sized heap copies so ASan sees over-reads. */
#ifndef DBK_SPOP_TEST_H
#define DBK_SPOP_TEST_H

#include "lib/spop_codec.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Typed values, one expression each. */
#define D_OF(t, field, v) ((struct dbk_spop_data){ .type = DBK_SPOP_T_##t, .u.field = (v) })
#define d_null() ((struct dbk_spop_data){ .type = DBK_SPOP_T_NULL })
#define d_i32(v) D_OF(INT32, i32, v)
#define d_u32(v) D_OF(UINT32, u32, v)
#define d_i64(v) D_OF(INT64, i64, v)
#define d_u64(v) D_OF(UINT64, u64, v)

static inline struct dbk_spop_data d_bin(const void *p, size_t n)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_BIN };
	d.u.buf.ptr = p;
	d.u.buf.len = n;
	return d;
}

static inline bool buf_is(const uint8_t *p, size_t n, const char *s)
{
	return dbk_spop_name_is(p, n, s);
}

/* A heap copy of exactly n bytes, so ASan flags any over-read. */
static inline uint8_t *dup_exact(const uint8_t *src, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	if (n)
		memcpy(p, src, n);
	return p;
}

struct kv {
	const char *k;
	struct dbk_spop_data v;
};

static inline size_t build_kv_frame(uint8_t *buf, size_t cap, uint8_t type, uint32_t flags,
                                    uint64_t sid, uint64_t fid, const struct kv *kv, size_t n)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, buf, cap);
	dbk_spop_frame_begin(&w, (enum dbk_spop_frame_type)type, flags, sid, fid);
	for (size_t i = 0; i < n; i++) {
		dbk_spop_put_kv(&w, kv[i].k, &kv[i].v);
	}
	return dbk_spop_frame_end(&w);
}

/* Builds, splits and parses a frame; *f points into buf. */
static inline bool kv_frame(uint8_t *buf, size_t cap, uint8_t type, uint32_t flags, uint64_t sid,
                            uint64_t fid, const struct kv *kv, size_t n, struct dbk_spop_frame *f)
{
	size_t len = build_kv_frame(buf, cap, type, flags, sid, fid, kv, n);
	size_t flen = 0;
	bool complete = false;

	if (len == 0)
		return false;
	if (dbk_spop_frame_split(buf, len, 65536, &flen, &complete) != DBK_SPOP_OK || !complete ||
	    flen + 4 != len)
		return false;
	return dbk_spop_frame_parse(buf + 4, flen, f) == DBK_SPOP_OK;
}

static inline enum dbk_spop_status hello_of(const struct kv *kv, size_t n, struct dbk_spop_hello *h)
{
	uint8_t buf[512];
	struct dbk_spop_frame f;

	if (!kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0, kv, n, &f))
		return DBK_SPOP_ERR_UNKNOWN;
	return dbk_spop_hello_parse(&f, h);
}

#endif
