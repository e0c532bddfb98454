/* Unit tests for SPOP's control frames (agent/lib/spop_control.c): HELLO
 * both ways, DISCONNECT, status strings, and the frame writer's bounds.
 * Byte-exact expectations are written by hand from doc/SPOE.txt. */
#include "check.h"
#include "spop_equal.h"
#include "spop_test.h"

/* ---- HELLO ---- */

static void test_hello_haproxy(void)
{
	static const char engine[] = "6C6A7A6E-5B4B-4C0E-9D52-7F2B44A6B5D1";
	const struct kv kv[] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", d_u32(16380) },
		{ "capabilities", dbk_spop_str("pipelining,async") },
		{ "engine-id", dbk_spop_str(engine) },
	};
	uint8_t buf[512];
	struct dbk_spop_frame f;
	struct dbk_spop_hello h;

	CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0, kv,
	               ARRAY_LEN(kv), &f));
	CHECK_EQ_U(dbk_spop_hello_parse(&f, &h), DBK_SPOP_OK);
	CHECK_EQ_U(h.max_frame_size, 16380);
	CHECK(h.pipelining);
	CHECK(!h.healthcheck);
	CHECK(h.engine_id && buf_is(h.engine_id, h.engine_id_len, engine));
	/* Borrowed from the frame, not copied. */
	CHECK(h.engine_id >= buf && h.engine_id < buf + sizeof(buf));
}

static void test_hello_healthcheck(void)
{
	const struct kv empty_caps[] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", d_u32(16380) },
		{ "capabilities", dbk_spop_str("") },
		{ "healthcheck", dbk_spop_bool(true) },
	};
	const struct kv no_caps[] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", d_u32(16380) },
		{ "healthcheck", dbk_spop_bool(true) },
	};
	const struct kv hc_false[] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", d_u32(16380) },
		{ "healthcheck", dbk_spop_bool(false) },
	};
	struct dbk_spop_hello h;

	CHECK_EQ_U(hello_of(empty_caps, ARRAY_LEN(empty_caps), &h), DBK_SPOP_OK);
	CHECK(h.healthcheck);
	CHECK(!h.pipelining);
	CHECK(h.engine_id == NULL);
	CHECK_EQ_U(hello_of(no_caps, ARRAY_LEN(no_caps), &h), DBK_SPOP_OK);
	CHECK(h.healthcheck);
	CHECK_EQ_U(hello_of(hc_false, ARRAY_LEN(hc_false), &h), DBK_SPOP_ERR_NO_CAP);
}

static void test_hello_versions(void)
{
	static const struct {
		const char *vsn;
		enum dbk_spop_status want;
	} cases[] = {
		{ "2.0", DBK_SPOP_OK },           { "2.1", DBK_SPOP_OK },
		{ " 2.0 ", DBK_SPOP_OK },         { "1.0, 2.0", DBK_SPOP_OK },
		{ "1.0,2.0,3.0", DBK_SPOP_OK },   { "1.0", DBK_SPOP_ERR_BAD_VSN },
		{ "3.0", DBK_SPOP_ERR_BAD_VSN },  { "20.0", DBK_SPOP_ERR_BAD_VSN },
		{ "2.", DBK_SPOP_ERR_BAD_VSN },   { "2.x", DBK_SPOP_ERR_BAD_VSN },
		{ "2", DBK_SPOP_ERR_BAD_VSN },    { "", DBK_SPOP_ERR_BAD_VSN },
		{ " , ,", DBK_SPOP_ERR_BAD_VSN },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct kv kv[] = {
			{ "supported-versions", dbk_spop_str(cases[i].vsn) },
			{ "max-frame-size", d_u32(16380) },
			{ "capabilities", dbk_spop_str("pipelining") },
		};
		struct dbk_spop_hello h;
		enum dbk_spop_status st = hello_of(kv, ARRAY_LEN(kv), &h);

		if (st != cases[i].want)
			fprintf(stderr, "  version \"%s\"\n", cases[i].vsn);
		CHECK_EQ_U(st, cases[i].want);
	}
}

static void test_hello_errors(void)
{
	const struct dbk_spop_data V = dbk_spop_str("2.0");
	const struct dbk_spop_data M = d_u32(16380);
	const struct dbk_spop_data C = dbk_spop_str("pipelining");
	struct dbk_spop_hello h;

	{
		const struct kv kv[] = { { "max-frame-size", M }, { "capabilities", C } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_NO_VSN);
	}
	{
		const struct kv kv[] = { { "supported-versions", V }, { "capabilities", C } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_NO_FRAME_SIZE);
	}
	{
		const struct kv kv[] = { { "supported-versions", V }, { "max-frame-size", M } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_NO_CAP);
	}
	{
		/* Everything missing: the first check in order wins. */
		CHECK_EQ_U(hello_of(NULL, 0, &h), DBK_SPOP_ERR_NO_VSN);
	}
	{
		/* A max-frame-size that is present but a string is malformed
		 * rather than missing: INVALID. */
		const struct kv kv[] = { { "supported-versions", V },
			                 { "max-frame-size", dbk_spop_str("16380") },
			                 { "capabilities", C } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_INVALID);
	}
	{
		const struct kv kv[] = { { "supported-versions", V },
			                 { "max-frame-size", dbk_spop_bool(true) },
			                 { "capabilities", C } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_INVALID);
	}
	{
		const struct kv kv[] = { { "supported-versions", d_u32(2) },
			                 { "max-frame-size", M },
			                 { "capabilities", C } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_INVALID);
	}
	{
		const struct kv kv[] = { { "supported-versions", V },
			                 { "max-frame-size", M },
			                 { "capabilities", C },
			                 { "healthcheck", dbk_spop_str("true") } };
		CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_ERR_INVALID);
	}
	{
		static const struct {
			struct dbk_spop_data v;
			enum dbk_spop_status want;
			uint32_t mfs;
		} sizes[] = {
			{ { .type = DBK_SPOP_T_UINT32, .u.u32 = 255 },
			  DBK_SPOP_ERR_BAD_FRAME_SIZE,
			  0 },
			{ { .type = DBK_SPOP_T_UINT32, .u.u32 = 0 },
			  DBK_SPOP_ERR_BAD_FRAME_SIZE,
			  0 },
			{ { .type = DBK_SPOP_T_UINT32, .u.u32 = 256 }, DBK_SPOP_OK, 256 },
			{ { .type = DBK_SPOP_T_UINT32, .u.u32 = UINT32_MAX },
			  DBK_SPOP_OK,
			  UINT32_MAX },
			{ { .type = DBK_SPOP_T_INT32, .u.i32 = 16380 }, DBK_SPOP_OK, 16380 },
			{ { .type = DBK_SPOP_T_INT64, .u.i64 = 16380 }, DBK_SPOP_OK, 16380 },
			{ { .type = DBK_SPOP_T_UINT64, .u.u64 = 16380 }, DBK_SPOP_OK, 16380 },
			{ { .type = DBK_SPOP_T_INT32, .u.i32 = -1 },
			  DBK_SPOP_ERR_BAD_FRAME_SIZE,
			  0 },
			{ { .type = DBK_SPOP_T_INT64, .u.i64 = (int64_t)UINT32_MAX + 1 },
			  DBK_SPOP_ERR_BAD_FRAME_SIZE,
			  0 },
			{ { .type = DBK_SPOP_T_UINT64, .u.u64 = UINT64_MAX },
			  DBK_SPOP_ERR_BAD_FRAME_SIZE,
			  0 },
		};
		for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
			const struct kv kv[] = { { "supported-versions", V },
				                 { "max-frame-size", sizes[i].v },
				                 { "capabilities", C } };
			CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), sizes[i].want);
			if (sizes[i].want == DBK_SPOP_OK)
				CHECK_EQ_U(h.max_frame_size, sizes[i].mfs);
		}
	}
	{
		/* Capability matching is by whole token. */
		static const struct {
			const char *caps;
			bool pipe;
		} caps[] = {
			{ "pipelining", true },
			{ "async, pipelining", true },
			{ " pipelining ,fragmentation", true },
			{ "", false },
			{ "async", false },
			{ "pipelining2", false },
			{ "pipe", false },
			{ "Pipelining", false },
		};
		for (size_t i = 0; i < ARRAY_LEN(caps); i++) {
			const struct kv kv[] = { { "supported-versions", V },
				                 { "max-frame-size", M },
				                 { "capabilities", dbk_spop_str(caps[i].caps) },
				                 { "some-future-key", d_u64(7) } };
			CHECK_EQ_U(hello_of(kv, ARRAY_LEN(kv), &h), DBK_SPOP_OK);
			CHECK(h.pipelining == caps[i].pipe);
		}
	}
}

static void test_hello_frame_checks(void)
{
	const struct kv kv[] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", d_u32(16380) },
		{ "capabilities", dbk_spop_str("pipelining") },
	};
	static const struct {
		uint8_t type;
		uint32_t flags;
		uint64_t sid, fid;
		enum dbk_spop_status want;
	} cases[] = {
		{ DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0, DBK_SPOP_OK },
		{ DBK_SPOP_HAPROXY_HELLO, 0, 0, 0, DBK_SPOP_ERR_INVALID },
		{ DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 1, 0, DBK_SPOP_ERR_INVALID },
		{ DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 1, DBK_SPOP_ERR_INVALID },
		{ DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 0, 0, DBK_SPOP_ERR_INVALID },
		{ DBK_SPOP_AGENT_HELLO, DBK_SPOP_FLAG_FIN, 0, 0, DBK_SPOP_ERR_INVALID },
	};
	uint8_t buf[256];
	struct dbk_spop_frame f;
	struct dbk_spop_hello h;

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		CHECK(kv_frame(buf, sizeof(buf), cases[i].type, cases[i].flags, cases[i].sid,
		               cases[i].fid, kv, ARRAY_LEN(kv), &f));
		CHECK_EQ_U(dbk_spop_hello_parse(&f, &h), cases[i].want);
	}

	/* Every truncation of the payload is malformed or lacks a key;
	 * never OK, never a read past the end. */
	CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0, kv,
	               ARRAY_LEN(kv), &f));
	for (size_t cut = 0; cut < f.payload_len; cut++) {
		struct dbk_spop_frame g = f;
		uint8_t *b = dup_exact(f.payload, cut);

		g.payload = b;
		g.payload_len = cut;
		CHECK(dbk_spop_hello_parse(&g, &h) != DBK_SPOP_OK);
		free(b);
	}
	{
		/* A hand-built frame may carry no payload at all. */
		struct dbk_spop_frame g = f;
		g.payload = NULL;
		g.payload_len = 0;
		CHECK_EQ_U(dbk_spop_hello_parse(&g, &h), DBK_SPOP_ERR_NO_VSN);
	}
}

static const uint8_t agent_hello_16380[] = {
	0x00, 0x00, 0x00, 0x40, /* length 64 */
	0x65,                   /* AGENT-HELLO */
	0x00, 0x00, 0x00, 0x01, /* FIN */
	0x00, 0x00,             /* stream-id, frame-id */
	0x07, 'v',  'e',  'r',  's', 'i', 'o', 'n', 0x08, 0x03, '2', '.', '0', 0x0E, 'm',
	'a',  'x',  '-',  'f',  'r', 'a', 'm', 'e', '-',  's',  'i', 'z', 'e', 0x03, 0xFC,
	0xF0, 0x06, 0x0C, 'c',  'a', 'p', 'a', 'b', 'i',  'l',  'i', 't', 'i', 'e',  's',
	0x08, 0x0A, 'p',  'i',  'p', 'e', 'l', 'i', 'n',  'i',  'n', 'g',
};

static void test_agent_hello(void)
{
	uint8_t buf[128];
	size_t n = dbk_spop_agent_hello_build(buf, sizeof(buf), 16380, true);
	struct dbk_spop_frame f;
	const uint8_t *p, *end;
	bool saw_v = false, saw_m = false, saw_c = false;

	CHECK_EQ_U(n, sizeof(agent_hello_16380));
	CHECK(memcmp(buf, agent_hello_16380, sizeof(agent_hello_16380)) == 0);

	/* Re-parse its KV list with the public decoders. */
	n = dbk_spop_agent_hello_build(buf, sizeof(buf), 65535, false);
	CHECK(n > 11);
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	CHECK_EQ_U(f.type, DBK_SPOP_AGENT_HELLO);
	CHECK_EQ_U(f.flags, DBK_SPOP_FLAG_FIN);
	CHECK_EQ_U(f.stream_id, 0);
	CHECK_EQ_U(f.frame_id, 0);
	p = f.payload;
	end = f.payload + f.payload_len;
	while (p < end) {
		uint64_t klen;
		const uint8_t *k;
		struct dbk_spop_data v;

		CHECK_EQ_U(dbk_spop_varint_decode(&p, end, &klen), DBK_SPOP_OK);
		CHECK(klen <= (uint64_t)(end - p));
		k = p;
		p += klen;
		CHECK_EQ_U(dbk_spop_data_decode(&p, end, &v), DBK_SPOP_OK);
		if (buf_is(k, klen, "version")) {
			saw_v = true;
			CHECK(v.type == DBK_SPOP_T_STR && buf_is(v.u.buf.ptr, v.u.buf.len, "2.0"));
		} else if (buf_is(k, klen, "max-frame-size")) {
			saw_m = true;
			CHECK(v.type == DBK_SPOP_T_UINT32 && v.u.u32 == 65535);
		} else if (buf_is(k, klen, "capabilities")) {
			saw_c = true;
			CHECK(v.type == DBK_SPOP_T_STR && v.u.buf.len == 0);
		} else {
			CHECK(!"unexpected key");
		}
	}
	CHECK(p == end);
	CHECK(saw_v && saw_m && saw_c);
}

/* Builders under every too-small cap: 0 returned, nothing past cap. */
static void check_caps(size_t (*build)(uint8_t *, size_t, const void *), const void *arg)
{
	uint8_t ref[256], buf[256 + 16];
	size_t need = build(ref, sizeof(ref), arg);

	CHECK(need > 0 && need <= sizeof(ref));
	for (size_t cap = 0; cap <= need; cap++) {
		bool clean = true;

		memset(buf, 0xA5, sizeof(buf));
		CHECK_EQ_U(build(buf, cap, arg), cap == need ? need : 0);
		for (size_t i = cap; i < sizeof(buf); i++)
			clean &= buf[i] == 0xA5;
		CHECK(clean);
	}
	CHECK(memcmp(buf, ref, need) == 0);
}

static size_t build_hello_cb(uint8_t *out, size_t cap, const void *arg)
{
	(void)arg;
	return dbk_spop_agent_hello_build(out, cap, 16380, true);
}

static size_t build_disc_cb(uint8_t *out, size_t cap, const void *arg)
{
	return dbk_spop_disconnect_build(out, cap, DBK_SPOP_ERR_TOO_BIG, arg);
}

static size_t build_ack_cb(uint8_t *out, size_t cap, const void *arg)
{
	struct dbk_spop_writer w;
	struct dbk_spop_data v = dbk_spop_str(arg);

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_ack_begin(&w, 1234567, 89);
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "backend", &v);
	dbk_spop_ack_unset_var(&w, DBK_SPOP_SCOPE_TXN, "old");
	return dbk_spop_frame_end(&w);
}

static void test_writer_overflow(void)
{
	struct dbk_spop_writer w;
	uint8_t b[4] = { 0 };

	check_caps(build_hello_cb, NULL);
	check_caps(build_disc_cb, NULL);
	check_caps(build_disc_cb, "custom message");
	check_caps(build_ack_cb, "b1");

	/* After an overflow, later writes that would fit are dropped too. */
	dbk_spop_writer_init(&w, b, sizeof(b));
	dbk_spop_put_name(&w, "abcd", 4);
	CHECK(w.overflow);
	CHECK_EQ_U(w.len, 1);
	dbk_spop_put_varint(&w, 1);
	CHECK_EQ_U(w.len, 1);
	CHECK_EQ_U(dbk_spop_frame_end(&w), 0);

	/* frame_end without a frame_begin is refused. */
	dbk_spop_writer_init(&w, b, sizeof(b));
	CHECK_EQ_U(dbk_spop_frame_end(&w), 0);
}

static void test_writer_reuse(void)
{
	uint8_t buf[64];
	struct dbk_spop_writer w;
	struct dbk_spop_frame f;
	size_t n;

	/* frame_begin restarts the writer, even after an overflow. */
	dbk_spop_writer_init(&w, buf, 12);
	dbk_spop_ack_begin(&w, 1, 1);
	dbk_spop_put_name(&w, "too long for the rest", 21);
	CHECK_EQ_U(dbk_spop_frame_end(&w), 0);
	dbk_spop_ack_begin(&w, 2, 3);
	n = dbk_spop_frame_end(&w);
	CHECK_EQ_U(n, 11);
	CHECK(memcmp(buf, "\x00\x00\x00\x07\x67\x00\x00\x00\x01\x02\x03", 11) == 0);
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	CHECK_EQ_U(f.stream_id, 2);
	CHECK_EQ_U(f.frame_id, 3);
	CHECK_EQ_U(f.payload_len, 0);
}

/* ---- DISCONNECT ---- */

static void test_disconnect(void)
{
	static const enum dbk_spop_status codes[] = {
		DBK_SPOP_OK,          DBK_SPOP_ERR_IO,  DBK_SPOP_ERR_TOO_BIG, DBK_SPOP_ERR_INVALID,
		DBK_SPOP_ERR_BAD_VSN, DBK_SPOP_ERR_RES, DBK_SPOP_ERR_UNKNOWN,
	};
	uint8_t buf[256];
	struct dbk_spop_frame f;
	uint32_t code;
	const uint8_t *msg;
	size_t mlen, n, flen;
	bool complete;

	for (size_t i = 0; i < ARRAY_LEN(codes); i++) {
		n = dbk_spop_disconnect_build(buf, sizeof(buf), codes[i], NULL);
		CHECK(n > 0);
		CHECK_EQ_U(dbk_spop_frame_split(buf, n, 16380, &flen, &complete), DBK_SPOP_OK);
		CHECK(complete && flen + 4 == n);
		CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, flen, &f), DBK_SPOP_OK);
		CHECK_EQ_U(f.type, DBK_SPOP_AGENT_DISCONNECT);
		CHECK_EQ_U(f.flags, DBK_SPOP_FLAG_FIN);
		CHECK_EQ_U(f.stream_id, 0);
		CHECK_EQ_U(f.frame_id, 0);
		code = 12345;
		CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_OK);
		CHECK_EQ_U(code, codes[i]);
		CHECK(msg && buf_is(msg, mlen, dbk_spop_status_str(codes[i])));
	}

	n = dbk_spop_disconnect_build(buf, sizeof(buf), DBK_SPOP_ERR_TIMEOUT, "bye now");
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_OK);
	CHECK_EQ_U(code, DBK_SPOP_ERR_TIMEOUT);
	CHECK(buf_is(msg, mlen, "bye now"));

	{
		/* HAProxy's side: message optional, any integer type. */
		const struct kv kv[] = { { "status-code", d_i64(2) } };
		CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_DISCONNECT, DBK_SPOP_FLAG_FIN, 0,
		               0, kv, 1, &f));
		CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_OK);
		CHECK_EQ_U(code, 2);
		CHECK(msg == NULL && mlen == 0);
	}
	{
		const struct kv kv[] = { { "message", dbk_spop_str("no code") } };
		CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_DISCONNECT, DBK_SPOP_FLAG_FIN, 0,
		               0, kv, 1, &f));
		CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_ERR_INVALID);
	}
	{
		const struct kv kv[] = { { "status-code", dbk_spop_str("1") } };
		CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_HAPROXY_DISCONNECT, DBK_SPOP_FLAG_FIN, 0,
		               0, kv, 1, &f));
		CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_ERR_INVALID);
	}
	{
		const struct kv kv[] = { { "status-code", d_u32(1) } };
		CHECK(kv_frame(buf, sizeof(buf), DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 0, 0, kv, 1,
		               &f));
		CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_ERR_INVALID);
	}
	/* Truncations never succeed... except a cut right after the
	 * status-code pair, which is a complete, shorter list. */
	n = dbk_spop_disconnect_build(buf, sizeof(buf), DBK_SPOP_ERR_IO, "x");
	CHECK_EQ_U(dbk_spop_frame_parse(buf + 4, n - 4, &f), DBK_SPOP_OK);
	for (size_t cut = 0; cut < f.payload_len; cut++) {
		struct dbk_spop_frame g = f;
		uint8_t *b = dup_exact(f.payload, cut);
		enum dbk_spop_status st;

		g.payload = b;
		g.payload_len = cut;
		st = dbk_spop_disconnect_parse(&g, &code, &msg, &mlen);
		/* "status-code" is 1 + 11 bytes, its value 2. */
		CHECK_EQ_U(st, cut == 14 ? DBK_SPOP_OK : DBK_SPOP_ERR_INVALID);
		free(b);
	}
}

static void test_status_str(void)
{
	static const enum dbk_spop_status all[] = {
		DBK_SPOP_OK,
		DBK_SPOP_ERR_IO,
		DBK_SPOP_ERR_TIMEOUT,
		DBK_SPOP_ERR_TOO_BIG,
		DBK_SPOP_ERR_INVALID,
		DBK_SPOP_ERR_NO_VSN,
		DBK_SPOP_ERR_NO_FRAME_SIZE,
		DBK_SPOP_ERR_NO_CAP,
		DBK_SPOP_ERR_BAD_VSN,
		DBK_SPOP_ERR_BAD_FRAME_SIZE,
		DBK_SPOP_ERR_FRAG_NOT_SUPP,
		DBK_SPOP_ERR_INTERLACED,
		DBK_SPOP_ERR_FRAMEID_NOTFND,
		DBK_SPOP_ERR_RES,
		DBK_SPOP_ERR_UNKNOWN,
	};

	CHECK(strcmp(dbk_spop_status_str(DBK_SPOP_OK), "normal") == 0);
	CHECK(strcmp(dbk_spop_status_str(DBK_SPOP_ERR_INVALID), "invalid frame received") == 0);
	CHECK(strcmp(dbk_spop_status_str(DBK_SPOP_ERR_TOO_BIG), "frame is too big") == 0);
	CHECK(strcmp(dbk_spop_status_str((enum dbk_spop_status)77),
	             dbk_spop_status_str(DBK_SPOP_ERR_UNKNOWN)) == 0);
	for (size_t i = 0; i < ARRAY_LEN(all); i++) {
		const char *s = dbk_spop_status_str(all[i]);

		CHECK(s && *s);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(s, dbk_spop_status_str(all[j])) != 0);
	}
}

int main(void)
{
	RUN(test_hello_haproxy);
	RUN(test_hello_healthcheck);
	RUN(test_hello_versions);
	RUN(test_hello_errors);
	RUN(test_hello_frame_checks);
	RUN(test_agent_hello);
	RUN(test_writer_overflow);
	RUN(test_writer_reuse);
	RUN(test_disconnect);
	RUN(test_status_str);
	return CHECK_DONE();
}
