/* Writes the seed corpora of tests/fuzz/corpus/<target>/: SPOP frames as
 * HAProxy 2.6 sends them (built with the agent's own writer), completion
 * lines in the dbk1 log-format, runtime API outputs (the captures of
 * tests/unit/fixtures/), JSON bodies and HTTP requests. Each target's
 * parameter bytes (see the target's header comment) come first.
 *
 *   gen_seeds CORPUS_DIR FIXTURES_DIR
 *
 * Regenerate with `make fuzz-seeds`; the output is deterministic. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/spop_codec.h"

static const char *corpus, *fixtures;

struct out {
	uint8_t b[32768];
	size_t n;
};

static void add(struct out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->b)) {
		fprintf(stderr, "gen_seeds: seed too big\n");
		exit(1);
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void adds(struct out *o, const char *s) { add(o, s, strlen(s)); }

static void addb(struct out *o, uint8_t b) { add(o, &b, 1); }

static void save(const char *target, const char *name, const struct out *o)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", corpus, target);
	if (mkdir(path, 0777) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", corpus, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(o->b, 1, o->n, f) != o->n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* A seed of one parameter byte and a text. */
static void save_text(const char *target, const char *name, uint8_t param, const char *text)
{
	struct out o = { .n = 0 };

	addb(&o, param);
	adds(&o, text);
	save(target, name, &o);
}

/* A seed a body, named STEM-<i>, after the parameter byte lead + i * step
 * (none when lead is negative). */
static void save_bodies(const char *target, const char *stem, int lead, unsigned step,
                        const char *const *bodies, size_t n)
{
	char name[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%zu", stem, i);
		if (lead >= 0) {
			save_text(target, name, (uint8_t)((size_t)lead + i * step), bodies[i]);
		} else {
			struct out o = { .n = 0 };

			adds(&o, bodies[i]);
			save(target, name, &o);
		}
	}
}

static void add_fixture(struct out *o, const char *name)
{
	char path[512];
	char buf[8192];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		add(o, buf, n);
	fclose(f);
}

/* ---- SPOP frames ---- */

static struct dbk_spop_writer W;
static uint8_t wbuf[20000];

static void begin(enum dbk_spop_frame_type t, uint32_t flags, uint64_t sid, uint64_t fid)
{
	dbk_spop_writer_init(&W, wbuf, sizeof(wbuf));
	dbk_spop_frame_begin(&W, t, flags, sid, fid);
}

static void end(struct out *o)
{
	size_t n = dbk_spop_frame_end(&W);

	if (!n) {
		fprintf(stderr, "gen_seeds: frame overflow\n");
		exit(1);
	}
	add(o, wbuf, n);
}

static void kv_str(const char *k, const char *v)
{
	struct dbk_spop_data d = dbk_spop_str(v);

	dbk_spop_put_kv(&W, k, &d);
}

static void kv_u32(const char *k, uint32_t v)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_UINT32, .u.u32 = v };

	dbk_spop_put_kv(&W, k, &d);
}

static void kv_bool(const char *k, bool v)
{
	struct dbk_spop_data d = dbk_spop_bool(v);

	dbk_spop_put_kv(&W, k, &d);
}

/* HAPROXY-HELLO as 2.6 sends it. */
static void hello(struct out *o, const char *vsn, uint32_t mfs, const char *caps, bool hc)
{
	begin(DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	kv_str("supported-versions", vsn);
	kv_u32("max-frame-size", mfs);
	if (caps)
		kv_str("capabilities", caps);
	if (hc)
		kv_bool("healthcheck", true);
	else
		kv_str("engine-id", "6A1B9E4D-2C3F-4B5A-8E7D-0F1E2D3C4B5A");
	end(o);
}

static void disconnect(struct out *o, uint32_t code, const char *msg)
{
	begin(DBK_SPOP_HAPROXY_DISCONNECT, DBK_SPOP_FLAG_FIN, 0, 0);
	kv_u32("status-code", code);
	kv_str("message", msg);
	end(o);
}

/* One message: name, then args as (name, value) pairs. */
static void msg_begin(const char *name, unsigned nargs)
{
	dbk_spop_put_name(&W, name, strlen(name));
	dbk_spop_put_u8(&W, (uint8_t)nargs);
}

static void arg(const char *name, const struct dbk_spop_data *v) { dbk_spop_put_kv(&W, name, v); }

/* The dbucket-route message of haproxy/dbucket.spoe.conf:
 * id=unique-id blen=req.body_size body=req.body,bytes(0,15000). HAProxy
 * sends integers as INT64 (SMP_T_SINT) and the body as BIN. */
static void route_msg(const char *id, int64_t blen, const char *body)
{
	struct dbk_spop_data v;
	unsigned n = (id ? 1 : 0) + 1 + (body ? 1 : 0);

	msg_begin("dbucket-route", n);
	if (id) {
		v = dbk_spop_str(id);
		arg("id", &v);
	}
	v = dbk_spop_int(blen);
	arg("blen", &v);
	if (body) {
		v.type = DBK_SPOP_T_BIN;
		v.u.buf.ptr = (const uint8_t *)body;
		v.u.buf.len = strlen(body);
		arg("body", &v);
	}
}

/* A pseudo-frame of fuzz_notify (types 0xf0-0xf4): the payload is an id
 * or parameters. */
static void ctl(struct out *o, uint8_t type, const char *payload)
{
	begin((enum dbk_spop_frame_type)type, 0, 0, 0);
	if (!W.overflow && W.len + strlen(payload) <= W.cap) {
		memcpy(W.buf + W.len, payload, strlen(payload));
		W.len += strlen(payload);
	}
	end(o);
}

static void notify(struct out *o, uint64_t sid, uint64_t fid, const char *id, int64_t blen,
                   const char *body)
{
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, sid, fid);
	route_msg(id, blen, body);
	end(o);
}

#define BODY_CMPL "{\"model\":\"stub-model\",\"prompt\":\"Hello, my name is\",\"max_tokens\":32}"
#define BODY_CHAT                                                                       \
	"{\"model\":\"stub-model\",\"messages\":[{\"role\":\"user\",\"content\":\"Say " \
	"hi\"}],\"max_tokens\":64,\"ignore_eos\":true}"

static void seeds_spop(void)
{
	struct out o;

	o.n = 0;
	hello(&o, "2.0", 16380, "pipelining,async", false);
	save("fuzz_spop_frame", "hello-2.6", &o);

	o.n = 0;
	hello(&o, "2.0", 16380, "", true);
	save("fuzz_spop_frame", "hello-healthcheck", &o);

	o.n = 0;
	hello(&o, "1.0, 2.0", 1024, "pipelining", false);
	notify(&o, 1, 1, "8f2c1a00:0001", sizeof(BODY_CMPL) - 1, BODY_CMPL);
	notify(&o, 2, 1, "8f2c1a00:0002", sizeof(BODY_CHAT) - 1, BODY_CHAT);
	disconnect(&o, 0, "normal");
	save("fuzz_spop_frame", "session", &o);

	o.n = 0;
	hello(&o, "1.0", 16380, "pipelining", false);
	save("fuzz_spop_frame", "hello-bad-version", &o);

	o.n = 0;
	disconnect(&o, 2, "a timeout occurred");
	save("fuzz_spop_frame", "disconnect-timeout", &o);

	/* max-frame-size as an INT64 and a too-small one. */
	o.n = 0;
	begin(DBK_SPOP_HAPROXY_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	kv_str("supported-versions", "2.0");
	{
		struct dbk_spop_data d = dbk_spop_int(200);
		dbk_spop_put_kv(&W, "max-frame-size", &d);
	}
	kv_str("capabilities", "pipelining");
	end(&o);
	save("fuzz_spop_frame", "hello-small-frame", &o);

	/* The boundaries: 255 is refused, 256 is the smallest accepted. */
	o.n = 0;
	hello(&o, "2.0", 255, "pipelining", false);
	save("fuzz_spop_frame", "hello-frame-255", &o);
	o.n = 0;
	hello(&o, "2.0", 256, "pipelining", false);
	notify(&o, 1, 1, "x", 2, "{}");
	save("fuzz_spop_frame", "hello-frame-256", &o);
}

static void seeds_notify(void)
{
	struct out o;
	struct dbk_spop_data v;

	/* 4 servers, dynamic, unbounded, all usable, 16380-byte frames. */
	o.n = 0;
	add(&o, "\x0b\x00\x00\x03", 4);
	hello(&o, "2.0", 16380, "pipelining", false);
	notify(&o, 1, 1, "8f2c1a00:0001", sizeof(BODY_CMPL) - 1, BODY_CMPL);
	notify(&o, 2, 1, "8f2c1a00:0002", 400000, "{\"prompt\":\"");
	notify(&o, 3, 1, "8f2c1a00:0003", sizeof(BODY_CHAT) - 1, BODY_CHAT);
	notify(&o, 4, 1, "8f2c1a00:0001", 10, "{\"a\":1}"); /* duplicate id */
	save("fuzz_notify", "dynamic-4", &o);

	/* Plain mode, 3 servers, one down, max 2 leases. */
	o.n = 0;
	add(&o, "\x02\x02\x02\x03", 4);
	notify(&o, 1, 1, "a1", sizeof(BODY_CMPL) - 1, BODY_CMPL);
	notify(&o, 1, 2, "a2", sizeof(BODY_CHAT) - 1, BODY_CHAT);
	notify(&o, 1, 3, "a3", 5, "{}   ");
	save("fuzz_notify", "plain-full", &o);

	/* The sample's message with arrived: a body not whole (its prefill
	 * held back where the server is scraped), then one whole. */
	o.n = 0;
	static const char *const arrived_ids[] = { "ar-1", "ar-2" };
	static const int64_t arrived[] = { 20000, sizeof(BODY_CMPL) - 1 };
	for (unsigned i = 0; i < 2; i++) {
		begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 2, i + 1);
		msg_begin("dbucket-route", 4);
		v = dbk_spop_str(arrived_ids[i]);
		arg("id", &v);
		v = dbk_spop_int(i ? (int64_t)sizeof(BODY_CMPL) - 1 : 900000);
		arg("blen", &v);
		v = dbk_spop_int(arrived[i]);
		arg("arrived", &v);
		v = (struct dbk_spop_data){ .type = DBK_SPOP_T_BIN,
			                    .u.buf = { (const uint8_t *)BODY_CMPL,
			                               sizeof(BODY_CMPL) - 1 } };
		arg("body", &v);
		end(&o);
	}
	save("fuzz_notify", "arrived", &o);

	/* With clen (Content-Length headers): none and a cut sample (a
	 * chunked body's length is a floor), none and a whole body, one. */
	o.n = 0;
	static const int64_t clens[] = { 0, 0, 1 };
	for (unsigned i = 0; i < 3; i++) {
		begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 3, i + 1);
		msg_begin("dbucket-route", 4);
		char cid[8];
		snprintf(cid, sizeof(cid), "cl-%u", i);
		v = dbk_spop_str(cid);
		arg("id", &v);
		v = dbk_spop_int(i == 1 ? (int64_t)sizeof(BODY_CMPL) - 1 : 16392);
		arg("blen", &v);
		v = dbk_spop_int(clens[i]);
		arg("clen", &v);
		v = (struct dbk_spop_data){ .type = DBK_SPOP_T_BIN,
			                    .u.buf = { (const uint8_t *)BODY_CMPL,
			                               i == 1 ? sizeof(BODY_CMPL) - 1 : 20 } };
		arg("body", &v);
		end(&o);
	}
	save("fuzz_notify", "clen", &o);

	/* No id, an unknown message, two routes in one frame. */
	o.n = 0;
	add(&o, "\x09\x00\x00\x01", 4);
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 7, 9);
	route_msg(NULL, 12, "{\"x\":true}");
	msg_begin("other-message", 1);
	v = dbk_spop_str("x");
	arg("k", &v);
	route_msg("r-1", -1, "not json");
	route_msg("r-2", 3, "{\"max_tokens\":null}");
	end(&o);
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 8, 1);
	msg_begin("other-message", 0);
	end(&o);
	save("fuzz_notify", "mixed-messages", &o);

	/* details, as the sample sends it (env(DBK_DEBUG_HEADERS): "1", or
	 * NULL when unset) and as a bool or an integer. */
	o.n = 0;
	add(&o, "\x0b\x00\x00\x03", 4);
	{
		static const char *const ids[] = { "d-str1", "d-null", "d-true", "d-int0",
			                           "d-str0" };
		struct dbk_spop_data dv[5] = {
			dbk_spop_str("1"), { .type = DBK_SPOP_T_NULL }, dbk_spop_bool(true),
			dbk_spop_int(0),   dbk_spop_str("0"),
		};

		for (int i = 0; i < 5; i++) {
			begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, (uint64_t)i + 1, 1);
			msg_begin("dbucket-route", 3);
			v = dbk_spop_str(ids[i]);
			arg("id", &v);
			v = dbk_spop_int(i == 2 ? 200000 : 300);
			arg("blen", &v);
			arg("details", &dv[i]);
			end(&o);
		}
	}
	save("fuzz_notify", "details", &o);

	/* class, as haproxy.cfg sends it (txn.dbk_class: a string), in each
	 * spelling the agent knows, and ones it does not (standard). */
	o.n = 0;
	add(&o, "\x0b\x00\x00\x03", 4);
	{
		struct dbk_spop_data cv[7] = {
			dbk_spop_str("critical"),    dbk_spop_str("Sheddable"), dbk_spop_str("2"),
			dbk_spop_str("urgent"),      dbk_spop_str(""),          dbk_spop_int(0),
			{ .type = DBK_SPOP_T_NULL },
		};

		for (int i = 0; i < 7; i++) {
			char id[16];

			snprintf(id, sizeof(id), "c-%d", i);
			begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, (uint64_t)i + 1, 1);
			msg_begin("dbucket-route", 3);
			v = dbk_spop_str(id);
			arg("id", &v);
			v = dbk_spop_int(300);
			arg("blen", &v);
			arg("class", &cv[i]);
			end(&o);
		}
	}
	save("fuzz_notify", "classes", &o);

	/* 256-byte frames: an ACK for many messages does not fit. */
	o.n = 0;
	add(&o, "\x0f\x00\x00\x00", 4);
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 1);
	for (int i = 0; i < 8; i++) {
		char id[8];

		snprintf(id, sizeof(id), "m%d", i);
		route_msg(id, 100, NULL);
	}
	end(&o);
	save("fuzz_notify", "ack-too-big", &o);

	/* HAProxy retried elsewhere: dbucket-moved id=... server=... (to
	 * another server, to the same one, to an unknown one, an unknown id). */
	o.n = 0;
	add(&o, "\x0b\x00\x00\x03", 4);
	notify(&o, 1, 1, "mv-1", sizeof(BODY_CMPL) - 1, BODY_CMPL);
	notify(&o, 2, 1, "mv-2", 200000, "{");
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 2);
	msg_begin("dbucket-moved", 2);
	v = dbk_spop_str("mv-1");
	arg("id", &v);
	v = dbk_spop_str("vllm3");
	arg("server", &v);
	msg_begin("dbucket-moved", 2);
	v = dbk_spop_str("mv-2");
	arg("id", &v);
	v = dbk_spop_str("vllm9");
	arg("server", &v);
	msg_begin("dbucket-moved", 2);
	v = dbk_spop_str("nope");
	arg("id", &v);
	v = dbk_spop_str("vllm0");
	arg("server", &v);
	end(&o);
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 3);
	msg_begin("dbucket-moved", 2);
	v = dbk_spop_str("mv-1");
	arg("id", &v);
	v = dbk_spop_str("vllm0");
	arg("server", &v);
	route_msg("mv-3", 7, "{\"max_tokens\":2}");
	end(&o);
	save("fuzz_notify", "moved", &o);

	/* A lease's life: routed, released, routed again; an id buried by its
	 * completion before its NOTIFY; expiry; a server taken out. */
	o.n = 0;
	add(&o, "\x0b\x00\x00\x03", 4);
	notify(&o, 1, 1, "life-1", 4000, NULL);
	ctl(&o, 0xf0, "life-1"); /* release */
	ctl(&o, 0xf0, "life-1"); /* unknown now */
	notify(&o, 1, 2, "life-1", 4000, NULL);
	ctl(&o, 0xf1, "life-2");              /* bury */
	notify(&o, 1, 3, "life-2", 10, NULL); /* request already ended */
	notify(&o, 1, 4, "life-2", 10, NULL); /* forgotten: routed */
	ctl(&o, 0xf4, "\x01\x00");            /* vllm1 unusable */
	notify(&o, 1, 5, "life-3", 300000, NULL);
	ctl(&o, 0xf2, "\x02"); /* expire ttl 2 ms */
	ctl(&o, 0xf1, "life-4");
	ctl(&o, 0xf3, "\x00"); /* expire buried ids */
	notify(&o, 1, 6, "life-4", 10, NULL);
	save("fuzz_notify", "lease-life", &o);

	/* No usable server at all. */
	o.n = 0;
	add(&o, "\x01\x00\x03\x03", 4);
	notify(&o, 1, 1, "x", 100, NULL);
	save("fuzz_notify", "no-server", &o);

	/* Every argument type, as an unknown message. */
	o.n = 0;
	add(&o, "\x03\x00\x00\x03", 4);
	begin(DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 1);
	msg_begin("types", 10);
	v.type = DBK_SPOP_T_NULL;
	arg("null", &v);
	v = dbk_spop_bool(true);
	arg("bool", &v);
	v.type = DBK_SPOP_T_INT32;
	v.u.i32 = -5;
	arg("i32", &v);
	v.type = DBK_SPOP_T_UINT32;
	v.u.u32 = 4000000000u;
	arg("u32", &v);
	v = dbk_spop_int(-1234567890123LL);
	arg("i64", &v);
	v.type = DBK_SPOP_T_UINT64;
	v.u.u64 = UINT64_MAX;
	arg("u64", &v);
	v.type = DBK_SPOP_T_IPV4;
	memcpy(v.u.ipv4, "\x7f\x00\x00\x01", 4);
	arg("ipv4", &v);
	v.type = DBK_SPOP_T_IPV6;
	memset(v.u.ipv6, 0, 16);
	v.u.ipv6[15] = 1;
	arg("ipv6", &v);
	v = dbk_spop_str("text");
	arg("str", &v);
	v.type = DBK_SPOP_T_BIN;
	v.u.buf.ptr = (const uint8_t *)"\x00\x01\xff";
	v.u.buf.len = 3;
	arg("bin", &v);
	route_msg("t", 0, "");
	end(&o);
	save("fuzz_notify", "all-types", &o);
}

/* ---- completion lines ---- */

static void line(struct out *o, const char *l)
{
	char len[16];

	snprintf(len, sizeof(len), "%zu ", strlen(l));
	adds(o, len);
	adds(o, l);
}

static void seeds_completion(void)
{
	struct out o;

	o.n = 0;
	line(&o, "dbk1 7f000001:9c2e_0A1B_0001 vllm1 vllm1 200 ---- 1234 5678 0 1712345678901 "
	         "127.0.0.1:51234 \"POST /v1/completions HTTP/1.1\"\n");
	save("fuzz_completion", "one", &o);

	o.n = 0;
	line(&o, "dbk1 id-1 vllm0 vllm0 200 ---- 15 830 0 1712345678000 \"POST /v1/completions "
	         "HTTP/1.1\"");
	line(&o, "dbk1 id-2 vllm2 vllm3 503 sC-- 3001 0 +3 1712345679000 \"POST "
	         "/v1/chat/completions HTTP/1.1\"");
	line(&o, "dbk1 id-3 vllm1 vllm1 -1 CD-- -1 120 0 1712345680000 \"POST /v1/completions "
	         "HTTP/1.1\"\r\n");
	line(&o, "dbk1 - - <NOSRV> 400 PR-- 0 187 0 1712345681000 \"<BADREQ>\"");
	line(&o, "dbk1 id-5 - vllm2 200 ---- 40 1200 1 1712345682000 \"GET /v1/models HTTP/1.1\"");
	save("fuzz_completion", "stream", &o);

	o.n = 0;
	line(&o, "<134>1 2024-04-05T12:00:00Z host haproxy 1234 - - some other format");
	line(&o, "dbk1 id-6 vllm0 vllm0 200 ---- 1 2 0 3");
	adds(&o, "42 dbk1 id-7 vllm0 vllm0 200 ---- 1 2 0 "); /* cut short */
	save("fuzz_completion", "bad-and-partial", &o);

	/* %{+Q,+E}ID: an id from a client's header, spaces and quotes. */
	o.n = 0;
	line(&o, "dbk1 \"sess 1 \\\"x\\\\y\\]\" vllm0 vllm0 500 ---- 3 40 0 1712345683000 \"POST "
	         "/v1/completions HTTP/1.1\"");
	line(&o, "dbk1 \"\" - <NOSRV> 400 CR-- 0 0 0 1712345684000 \"<BADREQ>\"");
	line(&o, "dbk1 \"-\" vllm1 vllm2 503 SC-- 9 0 +1 1712345685000");
	save("fuzz_completion", "quoted", &o);
}

/* ---- outlier ejection: config, fleet, then ops (fuzz_outlier.c) ---- */

static void seeds_outlier(void)
{
	/* Five 500s on server 1, a tick past the back-off, one more 500
	 * (half-open: ejected again), a tick, then successes. */
	static const uint8_t ops[][4] = {
		{ 4, 1, 0x33, 5 }, { 4, 1, 0x33, 5 }, { 4, 1, 0x33, 5 }, { 4, 1, 0x33, 5 },
		{ 4, 1, 0x33, 5 }, { 2, 0, 0, 80 },   { 4, 1, 0x33, 1 }, { 2, 0, 0, 80 },
		{ 4, 1, 0x00, 1 }, { 4, 1, 0x00, 1 }, { 3, 1, 0, 0 },
	};
	struct out o;

	o.n = 0;
	addb(&o, 5);    /* consecutive 5, no ratio rule */
	addb(&o, 0x32); /* 4 servers, 50% */
	add(&o, ops, sizeof(ops));
	save("fuzz_outlier", "eject-and-return", &o);
}

/* ---- runtime API ---- */

static void seeds_runtime(void)
{
	/* The captures, alone or as a pair (servers state, then stat). */
	static const struct {
		uint8_t param;
		const char *first, *second, *name;
	} caps[] = {
		{ 0x00, "haproxy26-be-servers-state.txt", NULL, "servers-state-be" },
		{ 0x08, "haproxy26-be2-servers-state.txt", NULL, "servers-state-be2" },
		{ 0x00, "haproxy26-nosuch-servers-state.txt", NULL, "servers-state-nosuch" },
		{ 0x01, "haproxy26-be-stat.txt", NULL, "stat-be" },
		{ 0x01, "haproxy26-nosuch-stat.txt", NULL, "stat-nosuch" },
		{ 0x02, "haproxy26-be-servers-state-initial.txt", "haproxy26-be-stat-initial.txt",
		  "both-be-initial" },
		{ 0x0a, "haproxy26-be2-servers-state.txt", "haproxy26-be2-stat.txt", "both-be2" },
		/* Dynamic and template servers, weights (test_runtime_members.c). */
		{ 0x00, "haproxy26-fleet-servers-state.txt", NULL, "servers-state-fleet" },
		{ 0x02, "haproxy26-fleet-servers-state.txt", "haproxy26-fleet-stat.txt",
		  "both-fleet" },
	};
	struct out o;

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		o.n = 0;
		addb(&o, caps[i].param);
		add_fixture(&o, caps[i].first);
		if (caps[i].second) {
			addb(&o, 0);
			add_fixture(&o, caps[i].second);
		}
		save("fuzz_runtime", caps[i].name, &o);
	}

	/* A 3.x shape: columns moved, a quoted status text with a comma. */
	save_text("fuzz_runtime", "stat-3x-shape", 0x05,
	          "# pxname,svname,status,qcur,scur,type,check_desc\n"
	          "vllm,FRONTEND,OPEN,,3,0,\n"
	          "vllm,vllm0,UP,0,2,2,\"Layer7 check passed, code 200\"\n"
	          "vllm,vllm1,\"MAINT (via vllm/vllm0)\",1,0,2,\n"
	          "vllm,vllm2,DRAIN 1/2,,5,2,\"multi\nline\"\n"
	          "vllm,BACKEND,UP,0,7,1,\n"
	          "\n");

	/* Status text and reconciliation polls (ours, haproxy) pairs. */
	o.n = 0;
	addb(&o, 0x03);
	adds(&o, "UP 1/3");
	add(&o, "\x00\x05\x00\x02\x00\x05\x00\x03\x00\x06\x00\x01\x00\x04\xff\xff", 16);
	save("fuzz_runtime", "status-reconcile", &o);
}

/* ---- request bodies ---- */

/* A body after its declared size: parameter 0x03, then the size as 8
 * bytes (a big-endian int64, as fuzz_estimate reads it). */
static void save_sized(const char *name, const char *size8, const char *body)
{
	struct out o = { .n = 0 };

	addb(&o, 0x03);
	add(&o, size8, 8);
	adds(&o, body);
	save("fuzz_estimate", name, &o);
}

static void seeds_estimate(void)
{
	static const char *const bodies[] = {
		BODY_CMPL,
		BODY_CHAT,
		"{\"prompt\":\"x\",\"max_tokens\":8,\"max_tokens\":4096}",
		"{\"prompt\":[1,2,3],\"max_tokens\":null,\"ignore_eos\":false}\n",
		"{\"max_tokens\":1e400}",
		"{\"max_tokens\":-3.5,\"ignore_eos\":1}",
		"[1,2,3]",
		"{\"prompt\":\"unterminated",
		"{} trailing",
	};

	save_bodies("fuzz_estimate", "whole", 0x00, 0, bodies, sizeof(bodies) / sizeof(bodies[0]));
	save_text("fuzz_estimate", "unknown-size", 0x01, BODY_CMPL);
	save_text("fuzz_estimate", "truncated", 0xfe, "{\"prompt\":\"cut sh");
	save_sized("explicit-size", "\x00\x00\x00\x00\x00\x00\x00\x22", BODY_CMPL);
	save_sized("huge-size", "\x7f\xff\xff\xff\xff\xff\xff\xff", "{}");
}

static void seeds_estimate_scan(void)
{
	static const char *const bodies[] = {
		BODY_CMPL,
		BODY_CHAT,
		"{\"prompt\":\"x\",\"max_tokens\":8,\"max_tokens\":4096}",
		"{\"max_tokens\":-12.5e-3,\"ignore_eos\":true,\"ignore_eos\":null}",
		"{\"max_tokens\":01,\"x\":[1.]}",
		"{\"prompt\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/\\b\\f\\n\\r\\t\"}",
		"{\"prompt\":\"\\ud800 lone\",\"p\":\"\\uZZZZ\"}",
		"{\"max\\u005ftokens\":9}",
		"{\"a\":{\"b\":[[],{},[{\"c\":[null,true,false]}]]}}  \r\n",
		"{\"x\":1} trailing",
		" \x01{\"max_tokens\":3}",
		"[\"not an object\"]",
	};
	struct out o;

	save_bodies("fuzz_estimate_scan", "body", -1, 0, bodies,
	            sizeof(bodies) / sizeof(bodies[0]));
	/* A chat body with a long prompt and escapes spread through it. */
	o.n = 0;
	adds(&o, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"");
	for (int i = 0; i < 3000; i++)
		adds(&o, i % 97 == 0 ? "\\n" : i % 131 == 0 ? "\\u00e9" : "a");
	adds(&o, "\"}],\"max_tokens\":256,\"ignore_eos\":true}");
	save("fuzz_estimate_scan", "long-chat", &o);
}

static void seeds_prefix_key(void)
{
	static const char *const bodies[] = {
		BODY_CMPL,
		BODY_CHAT,
		"{\"user\":\"conv-7\",\"prompt\":[\"a\\\"b\",\"c\"],\"stream\":true}",
		("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
		 "\"text\":\"hi\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]}]}"),
		"{\"model\":{\"x\":[1,{\"y\":\"]\"}]},\"prompt\":\"cut here",
	};
	struct out o;

	save_bodies("fuzz_prefix_key", "body", 0x83, 9, bodies, sizeof(bodies) / sizeof(bodies[0]));
	/* A long prompt: several 256-byte blocks. */
	o.n = 0;
	addb(&o, 0x03);
	adds(&o, "{\"prompt\":\"");
	for (int i = 0; i < 1100; i++)
		addb(&o, (uint8_t)('a' + i % 26));
	adds(&o, "\"}");
	save("fuzz_prefix_key", "long", &o);
}

/* ---- HTTP requests ---- */

static void http_post(struct out *o, const char *target, const char *body, const char *extra)
{
	char head[512];

	snprintf(head, sizeof(head),
	         "POST %s HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: python-httpx/0.27.0\r\n"
	         "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
	         target, extra ? extra : "", strlen(body));
	adds(o, head);
	adds(o, body);
}

static void seeds_http(void)
{
	struct out o;

	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/completions", BODY_CMPL, NULL);
	save("fuzz_stub_http", "completions", &o);

	o.n = 0;
	addb(&o, 0x20);
	http_post(&o, "/v1/chat/completions",
	          "{\"model\":\"stub-model\",\"messages\":[{\"role\":\"system\",\"content\":\"Be "
	          "brief\"},"
	          "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}],"
	          "\"stream\":true,\"stream_options\":{\"include_usage\":true},"
	          "\"max_completion_tokens\":16}",
	          "Accept: text/event-stream\r\n");
	save("fuzz_stub_http", "chat-stream", &o);

	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/completions", "{\"prompt\":[\"a\",\"bb\",\"ccc\"],\"max_tokens\":4}",
	          "Connection: keep-alive\r\n");
	adds(&o, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
	adds(&o, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	save("fuzz_stub_http", "pipelined", &o);

	save_text("fuzz_stub_http", "http10-bare-lf", 0x00,
	          "\r\nGET /health HTTP/1.0\nConnection: keep-alive\n\n");
	save_text("fuzz_stub_http", "chunked", 0x00,
	          "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	          "5\r\nhello\r\n0\r\n\r\n");
	/* As the stub takes it, a request body from HAProxy in chunks
	 * (extensions and a trailer read past), then one pipelined. */
	save_text("fuzz_stub_http", "chunked-body", 0x40,
	          "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	          "10;a=b\r\n{\"prompt\":\"hello\",\r\n"
	          "F\r\n\"max_tokens\":4}\r\n0\r\nX-T: 1\r\n\r\n"
	          "GET /health HTTP/1.1\r\n\r\n");
	save_text("fuzz_stub_http", "chunked-bytewise", 0xc0,
	          "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	          "3\r\n{\"m\r\n0\r\n\r\n");

	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/completions", "{\"model\":\"other\",\"prompt\":\"x\",\"max_tokens\":0}",
	          "Expect: 100-continue\r\n");
	save("fuzz_stub_http", "expect-bad-model", &o);

	o.n = 0;
	addb(&o, 0x10);
	http_post(&o, "/v1/completions", "{\"prompt\":[[1,2,3],[4]],\"max_tokens\":8}", NULL);
	save("fuzz_stub_http", "token-prompts-small-model", &o);

	/* LoRA: a completion for the served adapter, a load then an unload
	 * on one connection, and a JSON --lora-modules value as a body. */
	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/completions", "{\"model\":\"sql\",\"prompt\":\"x\",\"max_tokens\":2}",
	          NULL);
	save("fuzz_stub_http", "lora-completion", &o);
	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/load_lora_adapter", "{\"lora_name\":\"x\",\"lora_path\":\"/lora/x\"}",
	          NULL);
	http_post(&o, "/v1/unload_lora_adapter", "{\"lora_name\":\"sql\",\"lora_int_id\":1}", NULL);
	save("fuzz_stub_http", "lora-load-unload", &o);
	o.n = 0;
	addb(&o, 0x00);
	http_post(&o, "/v1/load_lora_adapter",
	          "{\"name\":\"chat\",\"path\":\"/lora/chat\",\"base_model_name\":\"stub-model\"}",
	          NULL);
	save("fuzz_stub_http", "lora-module-json", &o);
}

/* ---- The admin endpoint's guard: a policy byte, then a request ---- */

static void seeds_admin_guard(void)
{
	static const struct {
		const char *name;
		uint8_t param;
		const char *text;
	} seeds[] = {
		{ "metrics", 0x18, "GET /metrics HTTP/1.1\r\nHost: localhost:12347\r\n\r\n" },
		{ "cross-site-post", 0x01,
		  "POST /config?max-leases=1 HTTP/1.1\r\nHost: 127.0.0.1:12347\r\n"
		  "Origin: http://evil.example\r\nContent-Type: "
		  "application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n" },
		{ "rebinding", 0x18,
		  "GET /state HTTP/1.1\r\nHost: attacker.example:12347\r\n\r\n" },
		{ "token", 0x01,
		  "POST /config?max-leases=5 HTTP/1.1\r\nHost: [::1]:9\r\nAuthorization: "
		  "Bearer s3cret\r\nReferer: http://[::1]:9/\r\nSec-Fetch-Site: "
		  "same-origin\r\n\r\n" },
		{ "unix-read-only", 0x06, "POST /config HTTP/1.1\r\nHost: localhost\r\n\r\n" },
		{ "public-list", 0x00, "metrics,status" },
	};

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		save_text("fuzz_admin_guard", seeds[i].name, seeds[i].param, seeds[i].text);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gen_seeds CORPUS_DIR FIXTURES_DIR\n");
		return 2;
	}
	corpus = argv[1];
	fixtures = argv[2];
	if (mkdir(corpus, 0777) < 0 && errno != EEXIST) {
		perror(corpus);
		return 1;
	}
	seeds_spop();
	seeds_notify();
	seeds_completion();
	seeds_outlier();
	seeds_runtime();
	seeds_estimate();
	seeds_estimate_scan();
	seeds_prefix_key();
	seeds_http();
	seeds_admin_guard();
	return 0;
}
