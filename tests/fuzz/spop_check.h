/* SPOP checks shared by fuzz_spop_frame.c and fuzz_notify.c: typed data
 * and varint round trips, and a KV-list reader written from doc/SPOE.txt
 * rather than from spop_codec.c. */
#ifndef DBK_FUZZ_SPOP_CHECK_H
#define DBK_FUZZ_SPOP_CHECK_H

#include "fuzz.h"
#include "lib/spop_codec.h"
#include "../unit/spop_equal.h"

/* Varint: encode then decode gives v back, in 1..10 bytes; every strict
 * prefix of the encoding is refused without moving the cursor. */
static inline void check_varint_value(uint64_t v)
{
	uint8_t b[10];
	size_t n = dbk_spop_varint_encode(v, b, sizeof(b));

	FUZZ_CHECK(n >= 1 && n <= 10);
	FUZZ_CHECK(dbk_spop_varint_encode(v, b, n - 1) == 0);
	for (size_t k = 0; k <= n; k++) {
		uint8_t *c = fuzz_dup(b, k);
		const uint8_t *p = c;
		uint64_t r = 0;
		enum dbk_spop_status st = dbk_spop_varint_decode(&p, c + k, &r);

		if (k < n) {
			FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID && p == c);
		} else {
			FUZZ_CHECK(st == DBK_SPOP_OK && r == v && p == c + n);
		}
		free(c);
	}
}

/* Varint: whatever decode accepts, encode writes back byte for byte (the
 * encoding is a bijection, so a second spelling of a value would be a
 * decoder bug). */
static inline void check_varint_bytes(const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t v;
	uint8_t b[10];

	if (dbk_spop_varint_decode(&p, buf + len, &v) != DBK_SPOP_OK) {
		FUZZ_CHECK(p == buf);
		return;
	}
	size_t used = (size_t)(p - buf);
	FUZZ_CHECK(used >= 1 && used <= 10 && used <= len);
	size_t n = dbk_spop_varint_encode(v, b, sizeof(b));
	FUZZ_CHECK(n == used && memcmp(b, buf, n) == 0);
}

/* Typed data: a decoded value written back is the same bytes (up to the
 * type byte's flag nibble, which only BOOL keeps), and decodes to the
 * same value. start..end are the bytes decode consumed. */
static inline void check_data_reencode(const uint8_t *start, const uint8_t *end,
                                       const struct dbk_spop_data *d)
{
	size_t n = (size_t)(end - start);
	uint8_t *out = malloc(n ? n : 1);
	struct dbk_spop_writer w;
	struct dbk_spop_data d2;
	const uint8_t *p;

	FUZZ_CHECK(out != NULL && n >= 1);
	FUZZ_CHECK(d->type == (enum dbk_spop_type)(start[0] & 0x0f));
	dbk_spop_writer_init(&w, out, n);
	dbk_spop_put_data(&w, d);
	FUZZ_CHECK(!w.overflow && w.len == n);
	uint8_t tb = (uint8_t)(start[0] & 0x0f);
	if (tb == DBK_SPOP_T_BOOL)
		tb |= start[0] & 0x10;
	FUZZ_CHECK(out[0] == tb);
	FUZZ_CHECK(n == 1 || memcmp(out + 1, start + 1, n - 1) == 0);
	p = out;
	FUZZ_CHECK(dbk_spop_data_decode(&p, out + n, &d2) == DBK_SPOP_OK);
	FUZZ_CHECK(p == out + n && spop_data_equal(d, &d2));
	/* One byte less of room must overflow the writer, not write past it. */
	dbk_spop_writer_init(&w, out, n - 1);
	dbk_spop_put_data(&w, d);
	FUZZ_CHECK(w.overflow && w.len <= n - 1);
	free(out);
}

/* Decodes one typed value at *p; on success checks it and re-encodes it.
 * Returns the status, moving *p only on success. */
static inline enum dbk_spop_status check_data_at(const uint8_t **p, const uint8_t *end,
                                                 const uint8_t *base, size_t base_len,
                                                 struct dbk_spop_data *d)
{
	const uint8_t *q = *p;
	enum dbk_spop_status st = dbk_spop_data_decode(&q, end, d);

	if (st != DBK_SPOP_OK) {
		FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID && q == *p);
		return st;
	}
	FUZZ_CHECK(q > *p && q <= end);
	if (d->type == DBK_SPOP_T_STR || d->type == DBK_SPOP_T_BIN)
		FUZZ_CHECK(fuzz_inside(d->u.buf.ptr, d->u.buf.len, base, base_len));
	FUZZ_CHECK(d->type <= DBK_SPOP_T_BIN);
	/* Integer conversion: ranges as spop_codec.h states them. */
	int64_t v;
	bool ok = dbk_spop_data_to_i64(d, &v);
	switch (d->type) {
	case DBK_SPOP_T_BOOL: FUZZ_CHECK(ok && v == d->u.b); break;
	case DBK_SPOP_T_INT32: FUZZ_CHECK(ok && v == d->u.i32); break;
	case DBK_SPOP_T_UINT32: FUZZ_CHECK(ok && v == d->u.u32); break;
	case DBK_SPOP_T_INT64: FUZZ_CHECK(ok && v == d->u.i64); break;
	case DBK_SPOP_T_UINT64:
		FUZZ_CHECK(ok == (d->u.u64 <= INT64_MAX));
		FUZZ_CHECK(!ok || (uint64_t)v == d->u.u64);
		break;
	default: FUZZ_CHECK(!ok); break;
	}
	check_data_reencode(*p, q, d);
	*p = q;
	return st;
}

/* Builds a value from fuzz bytes, writes it, reads it back. Types above
 * BIN must poison the writer (spop_codec.h: "An unknown type marks the writer
 * as overflowed"). */
static inline void check_data_from_input(struct fuzz_in *in)
{
	struct dbk_spop_data d, d2;
	uint8_t buf[64];
	struct dbk_spop_writer w;
	const uint8_t *p;
	uint8_t t = fuzz_u8(in);
	uint64_t v = fuzz_u64(in);

	memset(&d, 0, sizeof(d));
	d.type = (enum dbk_spop_type)(t % 12);
	switch (d.type) {
	case DBK_SPOP_T_BOOL: d.u.b = v & 1; break;
	case DBK_SPOP_T_INT32: d.u.i32 = (int32_t)(uint32_t)v; break;
	case DBK_SPOP_T_UINT32: d.u.u32 = (uint32_t)v; break;
	case DBK_SPOP_T_INT64: d.u.i64 = (int64_t)v; break;
	case DBK_SPOP_T_UINT64: d.u.u64 = v; break;
	case DBK_SPOP_T_IPV4: memcpy(d.u.ipv4, &v, 4); break;
	case DBK_SPOP_T_IPV6:
		memcpy(d.u.ipv6, &v, 8);
		memcpy(d.u.ipv6 + 8, &v, 8);
		break;
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		d.u.buf.ptr = in->p;
		d.u.buf.len = in->n < 40 ? in->n : 40;
		break;
	default: break;
	}
	dbk_spop_writer_init(&w, buf, sizeof(buf));
	dbk_spop_put_data(&w, &d);
	if (t % 12 > DBK_SPOP_T_BIN) {
		FUZZ_CHECK(w.overflow);
		return;
	}
	FUZZ_CHECK(!w.overflow && w.len >= 1 && w.len <= sizeof(buf));
	p = buf;
	FUZZ_CHECK(dbk_spop_data_decode(&p, buf + w.len, &d2) == DBK_SPOP_OK);
	FUZZ_CHECK(p == buf + w.len && spop_data_equal(&d, &d2));
	check_varint_value(v);
}

/* One key/value pair of a HELLO or DISCONNECT list, read independently
 * of spop_codec.c's kv_next: varint length, key bytes, typed value. */
static inline bool model_kv(const uint8_t **p, const uint8_t *end, const uint8_t **k, size_t *klen,
                            struct dbk_spop_data *v)
{
	const uint8_t *q = *p;
	uint64_t n;

	if (dbk_spop_varint_decode(&q, end, &n) != DBK_SPOP_OK || n > (uint64_t)(end - q))
		return false;
	*k = q;
	*klen = (size_t)n;
	q += n;
	if (dbk_spop_data_decode(&q, end, v) != DBK_SPOP_OK)
		return false;
	*p = q;
	return true;
}

static inline bool key_is(const uint8_t *k, size_t klen, const char *s)
{
	return klen == strlen(s) && memcmp(k, s, klen) == 0;
}

static inline bool buf_is(const struct dbk_spop_data *d, const char *s)
{
	return d->type == DBK_SPOP_T_STR && d->u.buf.len == strlen(s) &&
	       (d->u.buf.len == 0 || memcmp(d->u.buf.ptr, s, d->u.buf.len) == 0);
}

static inline uint32_t fuzz_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* frame_split's contract, spop_codec.h word for word. */
static inline void check_split(const uint8_t *buf, size_t avail, uint32_t max,
                               enum dbk_spop_status st, size_t flen, bool complete)
{
	if (avail < 4) {
		FUZZ_CHECK(st == DBK_SPOP_OK && !complete && flen == 0);
		return;
	}
	uint32_t n = fuzz_be32(buf);
	if (n == 0) {
		FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID && !complete);
	} else if (n > max) {
		FUZZ_CHECK(st == DBK_SPOP_ERR_TOO_BIG && !complete);
	} else {
		FUZZ_CHECK(st == DBK_SPOP_OK && flen == n);
		FUZZ_CHECK(complete == (avail - 4 >= n));
	}
}

/* frame_parse's contract: header fields where the format puts them,
 * payload the rest of the frame. */
static inline void check_parse(const uint8_t *body, size_t len, enum dbk_spop_status st,
                               const struct dbk_spop_frame *f)
{
	if (len < 7) {
		FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID);
		return;
	}
	const uint8_t *p = body + 5;
	uint64_t sid, fid;
	bool ok = dbk_spop_varint_decode(&p, body + len, &sid) == DBK_SPOP_OK &&
	          dbk_spop_varint_decode(&p, body + len, &fid) == DBK_SPOP_OK;

	if (!ok) {
		FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID);
		return;
	}
	FUZZ_CHECK(st == DBK_SPOP_OK);
	FUZZ_CHECK(f->type == body[0] && f->flags == fuzz_be32(body + 1));
	FUZZ_CHECK(f->stream_id == sid && f->frame_id == fid);
	FUZZ_CHECK(f->payload == p && f->payload_len == (size_t)(body + len - p));
	FUZZ_CHECK(dbk_spop_frame_type_known(f->type) ==
	           (f->type == 1 || f->type == 2 || f->type == 3 || f->type == 101 ||
	            f->type == 102 || f->type == 103));
}

#endif
