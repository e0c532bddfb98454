/* Unit tests for the SPOP codec's wire encoding (agent/lib/spop_codec.c):
 * varints, typed data, frames, NOTIFY and ACK. Byte-exact expectations are
 * written by hand from doc/SPOE.txt, not produced by the code under test.
 * Truncation tests copy inputs into exactly-sized heap blocks so that ASan
 * catches any read past the end. */
#include "check.h"
#include "spop_equal.h"
#include "spop_test.h"

/* ---- varint ---- */

struct vec {
	uint64_t v;
	uint8_t b[10];
	size_t n;
};

static const struct vec vectors[] = {
	{ 0, { 0x00 }, 1 },
	{ 239, { 0xEF }, 1 },
	{ 240, { 0xF0, 0x00 }, 2 },
	{ 2287, { 0xFF, 0x7F }, 2 },
	{ 2288, { 0xF0, 0x80, 0x00 }, 3 },
	{ 16380, { 0xFC, 0xF0, 0x06 }, 3 },
	{ 4294967295u, { 0xFF, 0xF0, 0xFE, 0xFE, 0x7E }, 5 },
	{ UINT64_MAX, { 0xFF, 0xF0, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0x0E }, 10 },
};

static void test_varint_vectors(void)
{
	for (size_t i = 0; i < ARRAY_LEN(vectors); i++) {
		const struct vec *t = &vectors[i];
		uint8_t out[10];
		const uint8_t *p = t->b;
		uint64_t v = 12345;

		memset(out, 0xAA, sizeof(out));
		CHECK_EQ_U(dbk_spop_varint_encode(t->v, out, sizeof(out)), t->n);
		CHECK(memcmp(out, t->b, t->n) == 0);
		if (t->n < sizeof(out))
			CHECK_EQ_U(out[t->n], 0xAA); /* nothing past the varint */

		CHECK_EQ_U(dbk_spop_varint_decode(&p, t->b + t->n, &v), DBK_SPOP_OK);
		CHECK_EQ_U(v, t->v);
		CHECK(p == t->b + t->n);
	}
}

static void roundtrip_one(uint64_t v, size_t *maxn)
{
	uint8_t out[10], small[10];
	const uint8_t *p = out;
	uint64_t back = ~v;
	size_t n = dbk_spop_varint_encode(v, out, sizeof(out));

	CHECK(n >= 1 && n <= 10);
	if (n < 1 || n > 10)
		return;
	if (n > *maxn)
		*maxn = n;
	CHECK_EQ_U(dbk_spop_varint_decode(&p, out + n, &back), DBK_SPOP_OK);
	CHECK_EQ_U(back, v);
	CHECK(p == out + n);
	/* One byte short of room must fail, not write a truncated varint. */
	CHECK_EQ_U(dbk_spop_varint_encode(v, small, n - 1), 0);
}

static void test_varint_roundtrip(void)
{
	uint64_t x = 0x9E3779B97F4A7C15u;
	size_t maxn = 0;

	for (uint64_t v = 0; v < 70000; v++)
		roundtrip_one(v, &maxn);
	for (unsigned k = 0; k < 64; k++) {
		uint64_t p2 = (uint64_t)1 << k;
		roundtrip_one(p2 - 1, &maxn);
		roundtrip_one(p2, &maxn);
		roundtrip_one(p2 + 1, &maxn);
	}
	roundtrip_one(UINT64_MAX, &maxn);
	roundtrip_one(UINT64_MAX - 1, &maxn);
	roundtrip_one(INT64_MAX, &maxn);
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		roundtrip_one(x, &maxn);
		roundtrip_one(x >> (x & 63), &maxn);
	}
	CHECK_EQ_U(maxn, 10);
}

static void test_varint_truncated(void)
{
	const uint8_t none[1] = { 0 };
	const uint8_t *p = none;
	uint64_t v = 7;

	CHECK_EQ_U(dbk_spop_varint_decode(&p, none, &v), DBK_SPOP_ERR_INVALID);
	CHECK(p == none);
	CHECK_EQ_U(v, 7);

	for (size_t i = 0; i < ARRAY_LEN(vectors); i++) {
		for (size_t cut = 0; cut < vectors[i].n; cut++) {
			uint8_t *b = dup_exact(vectors[i].b, cut);
			p = b;
			CHECK_EQ_U(dbk_spop_varint_decode(&p, b + cut, &v), DBK_SPOP_ERR_INVALID);
			CHECK(p == b);
			free(b);
		}
	}
}

static void test_varint_overlong(void)
{
	uint8_t b[16], max[10];
	const uint8_t *p;
	uint64_t v;
	size_t n;

	/* Endless continuation bytes: must stop once past 64 bits. */
	memset(b, 0xFF, sizeof(b));
	p = b;
	CHECK_EQ_U(dbk_spop_varint_decode(&p, b + sizeof(b), &v), DBK_SPOP_ERR_INVALID);
	CHECK(p == b);

	/* Smallest continuation bytes, terminated late. */
	b[0] = 0xF0;
	memset(b + 1, 0x80, 14);
	b[15] = 0x00;
	p = b;
	CHECK_EQ_U(dbk_spop_varint_decode(&p, b + 16, &v), DBK_SPOP_ERR_INVALID);

	/* UINT64_MAX + 1, one way or another: bump the last byte. */
	n = dbk_spop_varint_encode(UINT64_MAX, max, sizeof(max));
	CHECK_EQ_U(n, 10);
	memcpy(b, max, n);
	p = b;
	CHECK_EQ_U(dbk_spop_varint_decode(&p, b + n, &v), DBK_SPOP_OK);
	CHECK_EQ_U(v, UINT64_MAX);
	for (unsigned last = max[9] + 1u; last < 128; last++) {
		b[9] = (uint8_t)last;
		p = b;
		CHECK_EQ_U(dbk_spop_varint_decode(&p, b + n, &v), DBK_SPOP_ERR_INVALID);
	}
	/* A 10th byte that continues is over 64 bits too. */
	b[9] = 0x80;
	b[10] = 0x00;
	p = b;
	CHECK_EQ_U(dbk_spop_varint_decode(&p, b + 11, &v), DBK_SPOP_ERR_INVALID);
}

/* ---- typed data ---- */

static size_t encode_data(const struct dbk_spop_data *d, uint8_t *buf, size_t cap)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, buf, cap);
	dbk_spop_put_data(&w, d);
	return w.overflow ? 0 : w.len;
}

static const uint8_t bin_nul[] = { 'a', 0, 'b', 0, 0, 0xFF };
static const uint8_t ip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01 };

static struct dbk_spop_data sample(size_t i, bool *ok)
{
	struct dbk_spop_data d = d_null();

	*ok = true;
	switch (i) {
	case 0: return d_null();
	case 1: return dbk_spop_bool(true);
	case 2: return dbk_spop_bool(false);
	case 3: return d_i32(0);
	case 4: return d_i32(-1);
	case 5: return d_i32(INT32_MIN);
	case 6: return d_i32(INT32_MAX);
	case 7: return d_u32(0);
	case 8: return d_u32(UINT32_MAX);
	case 9: return d_i64(-1);
	case 10: return d_i64(INT64_MIN);
	case 11: return d_i64(INT64_MAX);
	case 12: return dbk_spop_int(-123456789);
	case 13: return d_u64(UINT64_MAX);
	case 14: return d_u64(240);
	case 15:
		d.type = DBK_SPOP_T_IPV4;
		memcpy(d.u.ipv4, "\x0a\x00\x00\x01", 4);
		return d;
	case 16:
		d.type = DBK_SPOP_T_IPV6;
		memcpy(d.u.ipv6, ip6, 16);
		return d;
	case 17: return dbk_spop_str("");
	case 18: return dbk_spop_str("hello, world");
	case 19: return d_bin(bin_nul, sizeof(bin_nul));
	case 20: return d_bin(NULL, 0);
	}
	*ok = false;
	return d;
}

static void test_data_roundtrip(void)
{
	unsigned seen = 0;
	bool ok;

	for (size_t i = 0;; i++) {
		struct dbk_spop_data d = sample(i, &ok), back;
		uint8_t buf[64];
		const uint8_t *p = buf;
		size_t n;

		if (!ok)
			break;
		seen |= 1u << d.type;
		n = encode_data(&d, buf, sizeof(buf));
		CHECK(n > 0);
		CHECK_EQ_U(buf[0] & 0x0F, d.type);
		memset(&back, 0x5A, sizeof(back));
		CHECK_EQ_U(dbk_spop_data_decode(&p, buf + n, &back), DBK_SPOP_OK);
		CHECK(p == buf + n);
		CHECK(spop_data_equal(&d, &back));
	}
	CHECK_EQ_U(seen, 0x3FF); /* all ten types */
}

static void test_data_exact_bytes(void)
{
	struct dbk_spop_data d;
	uint8_t buf[32];
	static const uint8_t neg1[] = { 0x02, 0xFF, 0xF0, 0xFE, 0xFE, 0xFE,
		                        0xFE, 0xFE, 0xFE, 0xFE, 0x0E };
	static const uint8_t str[] = { 0x08, 0x03, '2', '.', '0' };

	d = dbk_spop_bool(true);
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), 1);
	CHECK_EQ_U(buf[0], 0x11);
	d = dbk_spop_bool(false);
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), 1);
	CHECK_EQ_U(buf[0], 0x01);
	d = d_null();
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), 1);
	CHECK_EQ_U(buf[0], 0x00);
	d = d_u32(16380);
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), 4);
	CHECK(memcmp(buf, "\x03\xFC\xF0\x06", 4) == 0);
	/* Negative int32: sign-extended to 64 bits before the varint. */
	d = d_i32(-1);
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), sizeof(neg1));
	CHECK(memcmp(buf, neg1, sizeof(neg1)) == 0);
	d = d_i64(-1);
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), sizeof(neg1));
	CHECK_EQ_U(buf[0], 0x04);
	CHECK(memcmp(buf + 1, neg1 + 1, sizeof(neg1) - 1) == 0);
	d = dbk_spop_str("2.0");
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), sizeof(str));
	CHECK(memcmp(buf, str, sizeof(str)) == 0);
	/* Unknown type: the writer refuses. */
	d.type = (enum dbk_spop_type)10;
	CHECK_EQ_U(encode_data(&d, buf, sizeof(buf)), 0);
}

static void test_data_int_range(void)
{
	uint8_t b[16];
	const uint8_t *p;
	struct dbk_spop_data d;
	size_t n;

	/* int32 above INT32_MAX */
	b[0] = DBK_SPOP_T_INT32;
	n = 1 + dbk_spop_varint_encode((uint64_t)INT32_MAX + 1, b + 1, 15);
	p = b;
	CHECK_EQ_U(dbk_spop_data_decode(&p, b + n, &d), DBK_SPOP_ERR_INVALID);
	CHECK(p == b);
	/* int32 below INT32_MIN */
	n = 1 + dbk_spop_varint_encode((uint64_t)((int64_t)INT32_MIN - 1), b + 1, 15);
	p = b;
	CHECK_EQ_U(dbk_spop_data_decode(&p, b + n, &d), DBK_SPOP_ERR_INVALID);
	/* The 32-bit pattern of -1 is 4294967295, out of int32 range. */
	n = 1 + dbk_spop_varint_encode(0xFFFFFFFFu, b + 1, 15);
	p = b;
	CHECK_EQ_U(dbk_spop_data_decode(&p, b + n, &d), DBK_SPOP_ERR_INVALID);
	/* uint32 above UINT32_MAX */
	b[0] = DBK_SPOP_T_UINT32;
	n = 1 + dbk_spop_varint_encode((uint64_t)UINT32_MAX + 1, b + 1, 15);
	p = b;
	CHECK_EQ_U(dbk_spop_data_decode(&p, b + n, &d), DBK_SPOP_ERR_INVALID);
	/* int64 takes any 64-bit pattern */
	b[0] = DBK_SPOP_T_INT64;
	n = 1 + dbk_spop_varint_encode(UINT64_MAX, b + 1, 15);
	p = b;
	CHECK_EQ_U(dbk_spop_data_decode(&p, b + n, &d), DBK_SPOP_OK);
	CHECK(d.u.i64 == -1);
}

static void test_data_truncated(void)
{
	bool ok;

	for (size_t i = 0;; i++) {
		struct dbk_spop_data d = sample(i, &ok), back;
		uint8_t buf[64];
		size_t n;

		if (!ok)
			break;
		n = encode_data(&d, buf, sizeof(buf));
		for (size_t cut = 0; cut < n; cut++) {
			uint8_t *b = dup_exact(buf, cut);
			const uint8_t *p = b;

			CHECK_EQ_U(dbk_spop_data_decode(&p, b + cut, &back), DBK_SPOP_ERR_INVALID);
			CHECK(p == b);
			free(b);
		}
	}
	/* A string whose length runs past the end. */
	{
		const uint8_t s[] = { 0x08, 0x05, 'a', 'b', 'c' };
		const uint8_t *p = s;
		struct dbk_spop_data d;

		CHECK_EQ_U(dbk_spop_data_decode(&p, s + sizeof(s), &d), DBK_SPOP_ERR_INVALID);
	}
}

static void test_data_unknown_type(void)
{
	for (unsigned t = 10; t < 256; t++) {
		uint8_t b[20];
		const uint8_t *p = b;
		struct dbk_spop_data d;

		if ((t & 0x0F) < 10)
			continue;
		memset(b, 0, sizeof(b));
		b[0] = (uint8_t)t;
		CHECK_EQ_U(dbk_spop_data_decode(&p, b + sizeof(b), &d), DBK_SPOP_ERR_INVALID);
		CHECK(p == b);
	}
}

static void test_data_to_i64(void)
{
	struct dbk_spop_data d;
	int64_t v = 0;

	d = d_i32(-5);
	CHECK(dbk_spop_data_to_i64(&d, &v) && v == -5);
	d = d_u32(UINT32_MAX);
	CHECK(dbk_spop_data_to_i64(&d, &v) && v == UINT32_MAX);
	d = d_i64(INT64_MIN);
	CHECK(dbk_spop_data_to_i64(&d, &v) && v == INT64_MIN);
	d = d_u64(INT64_MAX);
	CHECK(dbk_spop_data_to_i64(&d, &v) && v == INT64_MAX);
	d = d_u64((uint64_t)INT64_MAX + 1);
	CHECK(!dbk_spop_data_to_i64(&d, &v));
	d = dbk_spop_bool(true);
	CHECK(dbk_spop_data_to_i64(&d, &v) && v == 1);
	d = dbk_spop_str("12");
	CHECK(!dbk_spop_data_to_i64(&d, &v));
	d = d_null();
	CHECK(!dbk_spop_data_to_i64(&d, &v));
}

/* ---- frames ---- */

static void test_frame_split(void)
{
	/* Two frames back to back: 7-byte and 8-byte bodies. */
	static const uint8_t two[] = {
		0, 0, 0, 7, 3, 0, 0, 0, 1, 1, 2, 0, 0, 0, 8, 3, 0, 0, 0, 1, 1, 3, 0xAB,
	};
	size_t flen = 99;
	bool complete = true;

	for (size_t avail = 0; avail < 4; avail++) {
		CHECK_EQ_U(dbk_spop_frame_split(two, avail, 16380, &flen, &complete), DBK_SPOP_OK);
		CHECK(!complete);
		CHECK_EQ_U(flen, 0);
	}
	for (size_t avail = 4; avail < 11; avail++) {
		CHECK_EQ_U(dbk_spop_frame_split(two, avail, 16380, &flen, &complete), DBK_SPOP_OK);
		CHECK(!complete);
		CHECK_EQ_U(flen, 7);
	}
	CHECK_EQ_U(dbk_spop_frame_split(two, 11, 16380, &flen, &complete), DBK_SPOP_OK);
	CHECK(complete);
	CHECK_EQ_U(flen, 7);
	CHECK_EQ_U(dbk_spop_frame_split(two, sizeof(two), 16380, &flen, &complete), DBK_SPOP_OK);
	CHECK(complete);
	CHECK_EQ_U(flen, 7);
	CHECK_EQ_U(dbk_spop_frame_split(two + 11, sizeof(two) - 11, 16380, &flen, &complete),
	           DBK_SPOP_OK);
	CHECK(complete);
	CHECK_EQ_U(flen, 8);

	/* Limit is on the length field itself, inclusive. */
	CHECK_EQ_U(dbk_spop_frame_split(two, 4, 7, &flen, &complete), DBK_SPOP_OK);
	CHECK_EQ_U(dbk_spop_frame_split(two, 4, 6, &flen, &complete), DBK_SPOP_ERR_TOO_BIG);
	{
		static const uint8_t huge[] = { 0xFF, 0xFF, 0xFF, 0xFF };
		static const uint8_t zero[] = { 0, 0, 0, 0, 1, 2, 3 };

		CHECK_EQ_U(dbk_spop_frame_split(huge, 4, 16380, &flen, &complete),
		           DBK_SPOP_ERR_TOO_BIG);
		CHECK_EQ_U(dbk_spop_frame_split(huge, 3, 16380, &flen, &complete), DBK_SPOP_OK);
		CHECK(!complete);
		CHECK_EQ_U(dbk_spop_frame_split(zero, sizeof(zero), 16380, &flen, &complete),
		           DBK_SPOP_ERR_INVALID);
	}
}

static void test_frame_parse(void)
{
	/* NOTIFY, FIN, stream-id 300, frame-id 5, payload "xy" */
	static const uint8_t body[] = { 3, 0, 0, 0, 1, 0xFC, 0x03, 5, 'x', 'y' };
	struct dbk_spop_frame f;

	CHECK_EQ_U(dbk_spop_frame_parse(body, sizeof(body), &f), DBK_SPOP_OK);
	CHECK_EQ_U(f.type, DBK_SPOP_NOTIFY);
	CHECK_EQ_U(f.flags, DBK_SPOP_FLAG_FIN);
	CHECK_EQ_U(f.stream_id, 300);
	CHECK_EQ_U(f.frame_id, 5);
	CHECK_EQ_U(f.payload_len, 2);
	CHECK(f.payload == body + 8);

	/* Every cut inside the header fails; cuts in the payload just
	 * shorten it. */
	for (size_t cut = 0; cut <= sizeof(body); cut++) {
		uint8_t *b = dup_exact(body, cut);
		enum dbk_spop_status st = dbk_spop_frame_parse(b, cut, &f);

		if (cut < 8)
			CHECK_EQ_U(st, DBK_SPOP_ERR_INVALID);
		else
			CHECK(st == DBK_SPOP_OK && f.payload_len == cut - 8);
		free(b);
	}
	{
		/* Seven bytes but the stream-id varint is cut. */
		static const uint8_t cutid[] = { 3, 0, 0, 0, 1, 0xF0, 0x80 };
		CHECK_EQ_U(dbk_spop_frame_parse(cutid, sizeof(cutid), &f), DBK_SPOP_ERR_INVALID);
	}
	{
		/* Unknown type and flag bits: parsed, and detectably unknown. */
		static const uint8_t odd[] = { 50, 0x80, 0, 0, 3, 0, 0 };
		CHECK_EQ_U(dbk_spop_frame_parse(odd, sizeof(odd), &f), DBK_SPOP_OK);
		CHECK_EQ_U(f.type, 50);
		CHECK_EQ_U(f.flags, 0x80000003u);
		CHECK_EQ_U(f.payload_len, 0);
		CHECK(!dbk_spop_frame_type_known(f.type));
		CHECK(dbk_spop_frame_type_known(DBK_SPOP_NOTIFY));
		CHECK(dbk_spop_frame_type_known(DBK_SPOP_ACK));
		CHECK(!dbk_spop_frame_type_known(0));
		CHECK(!dbk_spop_frame_type_known(4));
	}
}

/* ---- NOTIFY ---- */

static const uint8_t body_bytes[] = { '{', '"', 'p', '"', 0, 0x01, 0xFF, '}' };

/* HAProxy's shape: "dbucket-route" with six args, the last unnamed. */
static void put_route_msg(struct dbk_spop_writer *w, const char *id)
{
	static const char *names[] = { "id", "method", "path", "blen", "body", "" };
	struct dbk_spop_data vals[6];

	vals[0] = dbk_spop_str(id);
	vals[1] = dbk_spop_str("POST");
	vals[2] = dbk_spop_str("/v1/chat/completions");
	vals[3] = d_i64((int64_t)sizeof(body_bytes));
	vals[4] = d_bin(body_bytes, sizeof(body_bytes));
	vals[5] = d_null();
	dbk_spop_put_name(w, "dbucket-route", 13);
	dbk_spop_put_u8(w, 6);
	for (size_t i = 0; i < 6; i++) {
		dbk_spop_put_kv(w, names[i], &vals[i]);
	}
}

static void check_route_msg(const struct dbk_spop_message *m, const char *id)
{
	const struct dbk_spop_data *d;
	int64_t blen = 0;

	CHECK(buf_is(m->name, m->name_len, "dbucket-route"));
	CHECK_EQ_U(m->nargs, 6);
	d = dbk_spop_msg_arg(m, "id");
	CHECK(d && d->type == DBK_SPOP_T_STR && buf_is(d->u.buf.ptr, d->u.buf.len, id));
	d = dbk_spop_msg_arg(m, "method");
	CHECK(d && buf_is(d->u.buf.ptr, d->u.buf.len, "POST"));
	d = dbk_spop_msg_arg(m, "path");
	CHECK(d && buf_is(d->u.buf.ptr, d->u.buf.len, "/v1/chat/completions"));
	d = dbk_spop_msg_arg(m, "blen");
	CHECK(d && d->type == DBK_SPOP_T_INT64 && dbk_spop_data_to_i64(d, &blen));
	CHECK_EQ_U(blen, sizeof(body_bytes));
	d = dbk_spop_msg_arg(m, "body");
	CHECK(d && d->type == DBK_SPOP_T_BIN && d->u.buf.len == sizeof(body_bytes) &&
	      memcmp(d->u.buf.ptr, body_bytes, sizeof(body_bytes)) == 0);
	d = dbk_spop_msg_arg(m, "");
	CHECK(d && d->type == DBK_SPOP_T_NULL);
	CHECK(m->args[5].name_len == 0);
}

static size_t build_notify(uint8_t *buf, size_t cap, int nmsgs)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, buf, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 77, 3000);
	put_route_msg(&w, "req-1");
	if (nmsgs > 1) {
		/* A second, different message: one unnamed int32 arg. */
		struct dbk_spop_data v = d_i32(-42);

		dbk_spop_put_name(&w, "other", 5);
		dbk_spop_put_u8(&w, 1);
		dbk_spop_put_name(&w, "", 0);
		dbk_spop_put_data(&w, &v);
	}
	return dbk_spop_frame_end(&w);
}

static void test_notify_haproxy(void)
{
	uint8_t buf[512];
	size_t n = build_notify(buf, sizeof(buf), 1), flen;
	bool complete, done;
	struct dbk_spop_frame f;
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;

	CHECK(n > 0);
	CHECK_EQ_U(dbk_spop_frame_split(buf, n, 16380, &flen, &complete), DBK_SPOP_OK);
	CHECK(complete);
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, flen, &f), DBK_SPOP_OK);
	CHECK_EQ_U(f.type, DBK_SPOP_NOTIFY);
	CHECK_EQ_U(f.stream_id, 77);
	CHECK_EQ_U(f.frame_id, 3000);
	dbk_spop_msg_iter_init(&it, &f);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	check_route_msg(&m, "req-1");
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(done);
	/* Stays done. */
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(done);
}

static void test_notify_two_messages(void)
{
	uint8_t buf[512];
	size_t n = build_notify(buf, sizeof(buf), 2);
	bool done;
	struct dbk_spop_frame f;
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	const struct dbk_spop_data *d;

	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	dbk_spop_msg_iter_init(&it, &f);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	check_route_msg(&m, "req-1");
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	CHECK(buf_is(m.name, m.name_len, "other"));
	CHECK_EQ_U(m.nargs, 1);
	d = dbk_spop_msg_arg(&m, "");
	CHECK(d && d->type == DBK_SPOP_T_INT32 && d->u.i32 == -42);
	CHECK(dbk_spop_msg_arg(&m, "id") == NULL);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(done);
}

static void test_notify_many_args(void)
{
	uint8_t buf[2048];
	struct dbk_spop_writer w;
	struct dbk_spop_frame f;
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	const struct dbk_spop_data *d;
	bool done;
	size_t n;

	dbk_spop_writer_init(&w, buf, sizeof(buf));
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 1);
	dbk_spop_put_name(&w, "wide", 4);
	dbk_spop_put_u8(&w, 40);
	for (int i = 0; i < 40; i++) {
		char name[16];
		struct dbk_spop_data v = i % 2 ? d_i64(i) : dbk_spop_str("filler-value");

		snprintf(name, sizeof(name), "a%d", i);
		dbk_spop_put_kv(&w, name, &v);
	}
	put_route_msg(&w, "after-wide");
	n = dbk_spop_frame_end(&w);
	CHECK(n > 0);
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);

	dbk_spop_msg_iter_init(&it, &f);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	CHECK(buf_is(m.name, m.name_len, "wide"));
	CHECK_EQ_U(m.nargs, DBK_SPOP_MAX_ARGS);
	d = dbk_spop_msg_arg(&m, "a31");
	CHECK(d && d->type == DBK_SPOP_T_INT64 && d->u.i64 == 31);
	CHECK(dbk_spop_msg_arg(&m, "a32") == NULL);
	CHECK(dbk_spop_msg_arg(&m, "a39") == NULL);
	/* The skipped args were consumed: the next message is intact. */
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	check_route_msg(&m, "after-wide");
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(done);

	/* The same with the 40th arg cut short: the message is invalid. */
	{
		struct dbk_spop_frame g = f;
		struct dbk_spop_msg_iter it2;

		dbk_spop_msg_iter_init(&it2, &f);
		CHECK_EQ_U(dbk_spop_msg_next(&it2, &m, &done), DBK_SPOP_OK);
		g.payload_len = (size_t)(it2.p - f.payload) - 1;
		dbk_spop_msg_iter_init(&it2, &g);
		CHECK_EQ_U(dbk_spop_msg_next(&it2, &m, &done), DBK_SPOP_ERR_INVALID);
	}
}

/* Runs the iterator over the first cut bytes of payload (copied to an
 * exact heap block); returns the status and counts messages. */
static enum dbk_spop_status iterate(const uint8_t *payload, size_t cut, unsigned *count)
{
	uint8_t *b = dup_exact(payload, cut);
	struct dbk_spop_frame f = { .type = DBK_SPOP_NOTIFY, .payload = b, .payload_len = cut };
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	enum dbk_spop_status st;
	bool done = false;

	*count = 0;
	dbk_spop_msg_iter_init(&it, &f);
	for (;;) {
		st = dbk_spop_msg_next(&it, &m, &done);
		if (st != DBK_SPOP_OK || done)
			break;
		(*count)++;
		if (*count > 10) {
			st = DBK_SPOP_ERR_UNKNOWN; /* runaway */
			break;
		}
	}
	free(b);
	return st;
}

static void test_notify_truncated(void)
{
	uint8_t buf[512];
	size_t n = build_notify(buf, sizeof(buf), 2);
	struct dbk_spop_frame f;
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	size_t first_end;
	unsigned count;
	bool done;

	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	dbk_spop_msg_iter_init(&it, &f);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	first_end = (size_t)(it.p - f.payload);

	CHECK_EQ_U(iterate(f.payload, f.payload_len, &count), DBK_SPOP_OK);
	CHECK_EQ_U(count, 2);
	/* Only cuts on a message boundary parse, as a shorter list. */
	for (size_t cut = 0; cut < f.payload_len; cut++) {
		enum dbk_spop_status st = iterate(f.payload, cut, &count);

		if (cut == 0) {
			CHECK(st == DBK_SPOP_OK && count == 0);
		} else if (cut == first_end) {
			CHECK(st == DBK_SPOP_OK && count == 1);
		} else {
			CHECK_EQ_U(st, DBK_SPOP_ERR_INVALID);
			CHECK_EQ_U(count, cut < first_end ? 0 : 1);
		}
	}
	/* And a whole frame cut anywhere is never reported complete. */
	for (size_t cut = 0; cut < n; cut++) {
		uint8_t *b = dup_exact(buf, cut);
		size_t flen;
		bool complete = true;

		CHECK_EQ_U(dbk_spop_frame_split(b, cut, 16380, &flen, &complete), DBK_SPOP_OK);
		CHECK(!complete);
		free(b);
	}
}

static void test_notify_malformed(void)
{
	static const struct {
		const char *what;
		uint8_t b[16];
		size_t n;
	} cases[] = {
		{ "no nb-args", { 1, 'm' }, 2 },
		{ "name past end", { 5, 'm', 'x' }, 3 },
		{ "too few args", { 1, 'm', 2, 1, 'a', 0x00 }, 6 },
		{ "arg without value", { 1, 'm', 1, 1, 'a' }, 5 },
		{ "arg name cut", { 1, 'm', 1, 3, 'a' }, 5 },
		{ "unknown arg type", { 1, 'm', 1, 1, 'a', 0x0C }, 6 },
		{ "bad name varint", { 0xF0 }, 1 },
		{ "string past end", { 1, 'm', 1, 0, 0x08, 0x09, 'x' }, 7 },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		unsigned count;
		enum dbk_spop_status st = iterate(cases[i].b, cases[i].n, &count);

		if (st != DBK_SPOP_ERR_INVALID)
			fprintf(stderr, "  case: %s\n", cases[i].what);
		CHECK_EQ_U(st, DBK_SPOP_ERR_INVALID);
	}
	{
		/* Zero args and an empty name are fine. */
		static const uint8_t ok[] = { 0, 0, 1, 'm', 1, 0, 0x11 };
		unsigned count;

		CHECK_EQ_U(iterate(ok, sizeof(ok), &count), DBK_SPOP_OK);
		CHECK_EQ_U(count, 2);
	}
	{
		/* An error is sticky: the iterator does not move past it. */
		static const uint8_t bad[] = { 1, 'm', 1, 1, 'a', 0x0C };
		struct dbk_spop_frame f = { .payload = bad, .payload_len = sizeof(bad) };
		struct dbk_spop_msg_iter it;
		struct dbk_spop_message m;
		bool done = true;

		dbk_spop_msg_iter_init(&it, &f);
		CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_ERR_INVALID);
		CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_ERR_INVALID);
		CHECK(it.p == bad);
	}
	{
		/* NULL payload with no length: just done. */
		struct dbk_spop_frame f = { .payload = NULL, .payload_len = 0 };
		struct dbk_spop_msg_iter it;
		struct dbk_spop_message m;
		bool done = false;

		dbk_spop_msg_iter_init(&it, &f);
		CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
		CHECK(done);
	}
}

static void test_msg_arg(void)
{
	static const uint8_t idx[] = "idx", id[] = "id", empty[] = "";
	struct dbk_spop_message m;
	const struct dbk_spop_data *d;

	const uint8_t *names[] = { idx, id, empty, id };

	memset(&m, 0, sizeof(m));
	m.nargs = 4;
	/* idx=1, id=2, (no name)=3, id=4 */
	for (unsigned k = 0; k < 4; k++) {
		m.args[k].name = names[k];
		m.args[k].name_len = strlen((const char *)names[k]);
		m.args[k].value = d_i64(k + 1);
	}

	d = dbk_spop_msg_arg(&m, "id");
	CHECK(d && d->u.i64 == 2); /* first match, not a prefix of "idx" */
	d = dbk_spop_msg_arg(&m, "idx");
	CHECK(d && d->u.i64 == 1);
	d = dbk_spop_msg_arg(&m, "");
	CHECK(d && d->u.i64 == 3);
	CHECK(dbk_spop_msg_arg(&m, "i") == NULL);
	CHECK(dbk_spop_msg_arg(&m, "idxx") == NULL);
	CHECK(dbk_spop_msg_arg(&m, NULL) == NULL);
	m.nargs = 2;
	CHECK(dbk_spop_msg_arg(&m, "") == NULL); /* beyond nargs is unseen */
	m.nargs = 0;
	CHECK(dbk_spop_msg_arg(&m, "id") == NULL);
}

/* ---- ACK ---- */

static void test_ack_bytes(void)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x2A, /* length 42 */
		0x67,                   /* ACK */
		0x00, 0x00, 0x00, 0x01, /* FIN */
		0x05, 0xFC, 0x03,       /* stream-id 5, frame-id 300 */
		0x01, 0x03, 0x02, 0x07, 'b',  'a',  'c',  'k',  'e',  'n',  'd',  0x08,
		0x02, 'b',  '1',  0x01, 0x03, 0x03, 0x01, 'n',  0x04, 0x2A, 0x01, 0x03,
		0x01, 0x02, 'o',  'k',  0x11, 0x02, 0x02, 0x02, 0x01, 'x',
	};
	uint8_t buf[128];
	struct dbk_spop_writer w;
	struct dbk_spop_data v;
	struct dbk_spop_frame f;
	size_t n;

	dbk_spop_writer_init(&w, buf, sizeof(buf));
	dbk_spop_ack_begin(&w, 5, 300);
	v = dbk_spop_str("b1");
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "backend", &v);
	v = dbk_spop_int(42);
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_REQ, "n", &v);
	v = dbk_spop_bool(true);
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_SESS, "ok", &v);
	dbk_spop_ack_unset_var(&w, DBK_SPOP_SCOPE_TXN, "x");
	n = dbk_spop_frame_end(&w);
	CHECK_EQ_U(n, sizeof(want));
	CHECK(memcmp(buf, want, sizeof(want)) == 0);

	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	CHECK_EQ_U(f.type, DBK_SPOP_ACK);
	CHECK_EQ_U(f.stream_id, 5);
	CHECK_EQ_U(f.frame_id, 300);

	/* Negative ints and proc/res scopes. */
	{
		static const uint8_t want2[] = {
			0x00, 0x00, 0x00, 0x1B, 0x67, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
			0x01, 0x03, 0x00, 0x01, 'v',  0x04, 0xFF, 0xF0, 0xFE, 0xFE, 0xFE,
			0xFE, 0xFE, 0xFE, 0xFE, 0x0E, 0x02, 0x02, 0x04, 0x00,
		};

		dbk_spop_writer_init(&w, buf, sizeof(buf));
		dbk_spop_ack_begin(&w, 0, 0);
		v = dbk_spop_int(-1);
		dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_PROC, "v", &v);
		dbk_spop_ack_unset_var(&w, DBK_SPOP_SCOPE_RES, NULL);
		n = dbk_spop_frame_end(&w);
		CHECK_EQ_U(n, sizeof(want2));
		CHECK(memcmp(buf, want2, sizeof(want2)) == 0);
	}
	/* Constructors. */
	v = dbk_spop_str(NULL);
	CHECK(v.type == DBK_SPOP_T_STR && v.u.buf.len == 0);
	v = dbk_spop_int(INT64_MIN);
	CHECK(v.type == DBK_SPOP_T_INT64 && v.u.i64 == INT64_MIN);
	v = dbk_spop_bool(false);
	CHECK(v.type == DBK_SPOP_T_BOOL && !v.u.b);
}

int main(void)
{
	RUN(test_varint_vectors);
	RUN(test_varint_roundtrip);
	RUN(test_varint_truncated);
	RUN(test_varint_overlong);
	RUN(test_data_roundtrip);
	RUN(test_data_exact_bytes);
	RUN(test_data_int_range);
	RUN(test_data_truncated);
	RUN(test_data_unknown_type);
	RUN(test_data_to_i64);
	RUN(test_frame_split);
	RUN(test_frame_parse);
	RUN(test_notify_haproxy);
	RUN(test_notify_two_messages);
	RUN(test_notify_many_args);
	RUN(test_notify_truncated);
	RUN(test_notify_malformed);
	RUN(test_msg_arg);
	RUN(test_ack_bytes);
	return CHECK_DONE();
}
