/* The SPOP benchmark tools' pure helpers: what the load client sends must
 * read, through the agent's own decoders, as what HAProxy 2.6 sends; what
 * it accepts must be what HAProxy accepts. */
#include <stdlib.h>

#include "check.h"
#include "completion.h"
#include "estimate.h"
#include "spb.h"
#include "lib/spop_codec.h"

static bool frame_of(const uint8_t *buf, size_t n, struct dbk_spop_frame *f)
{
	size_t flen;
	bool complete;

	return dbk_spop_frame_split(buf, n, 1u << 20, &flen, &complete) == DBK_SPOP_OK &&
	       complete && flen + 4 == n && dbk_spop_frame_parse(buf + 4, flen, f) == DBK_SPOP_OK;
}

static bool data_is(const struct dbk_spop_data *d, enum dbk_spop_type t, const char *s)
{
	return d && d->type == t && d->u.buf.len == strlen(s) &&
	       memcmp(d->u.buf.ptr, s, d->u.buf.len) == 0;
}

static void test_hello_reads_as_haproxy(void)
{
	uint8_t buf[512];
	struct dbk_spop_frame f;
	struct dbk_spop_hello h;
	size_t n = dbk_spb_hello_build(buf, sizeof(buf), DBK_SPB_HAPROXY_FRAME, false, "e-1");

	CHECK(n > 0 && frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spop_hello_parse(&f, &h), DBK_SPOP_OK);
	CHECK_EQ_U(h.max_frame_size, 16380);
	CHECK(h.pipelining && !h.healthcheck);
	CHECK(h.engine_id_len == 3 && memcmp(h.engine_id, "e-1", 3) == 0);

	n = dbk_spb_hello_build(buf, sizeof(buf), 16380, true, NULL);
	CHECK(n > 0 && frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spop_hello_parse(&f, &h), DBK_SPOP_OK);
	CHECK(h.healthcheck && !h.pipelining && h.engine_id == NULL);

	CHECK_EQ_U(dbk_spb_hello_build(buf, 20, 16380, false, NULL), 0);
}

static void test_notify_reads_as_haproxy(void)
{
	uint8_t buf[DBK_SPB_HAPROXY_FRAME + 4];
	char body[200];
	struct dbk_spop_frame f;
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	bool done;
	int64_t blen = 0;

	CHECK_EQ_U(dbk_spb_body_fill(body, sizeof(body), 100, 16), 100);
	size_t n = dbk_spb_notify_build(buf, sizeof(buf), 300, 1, "1C2B-6B0D0AA6124-0007", 21, 100,
	                                (const uint8_t *)body, 100);
	CHECK(n > 0 && frame_of(buf, n, &f));
	CHECK_EQ_U(f.type, DBK_SPOP_NOTIFY);
	CHECK_EQ_U(f.flags, DBK_SPOP_FLAG_FIN);
	CHECK_EQ_U(f.stream_id, 300);
	CHECK_EQ_U(f.frame_id, 1);
	dbk_spop_msg_iter_init(&it, &f);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(!done);
	CHECK(m.name_len == 13 && memcmp(m.name, "dbucket-route", 13) == 0);
	CHECK_EQ_U(m.nargs, 3);
	CHECK(data_is(dbk_spop_msg_arg(&m, "id"), DBK_SPOP_T_STR, "1C2B-6B0D0AA6124-0007"));
	const struct dbk_spop_data *b = dbk_spop_msg_arg(&m, "blen");
	CHECK(b && b->type == DBK_SPOP_T_INT64 && dbk_spop_data_to_i64(b, &blen) && blen == 100);
	const struct dbk_spop_data *s = dbk_spop_msg_arg(&m, "body");
	CHECK(s && s->type == DBK_SPOP_T_BIN && s->u.buf.len == 100 &&
	      memcmp(s->u.buf.ptr, body, 100) == 0);
	CHECK_EQ_U(dbk_spop_msg_next(&it, &m, &done), DBK_SPOP_OK);
	CHECK(done);
	CHECK_EQ_U(dbk_spb_notify_build(buf, 30, 1, 1, "x", 1, 1, (const uint8_t *)"x", 1), 0);
}

/* The agent reads max_tokens from the body the client sends. */
static void test_body_is_what_the_agent_reads(void)
{
	char body[6000];
	struct dbk_bal_request r;

	for (size_t len = DBK_SPB_BODY_MIN; len <= sizeof(body); len += 997) {
		CHECK_EQ_U(dbk_spb_body_fill(body, sizeof(body), len, 321), len);
		CHECK_EQ_U(dbk_estimate((int64_t)len, (const uint8_t *)body, len, &r),
		           DBK_EST_JSON);
		CHECK_NEAR(r.max_tokens, 321, 0);
		CHECK_NEAR(r.body_bytes, (double)len, 0);
	}
	CHECK_EQ_U(dbk_spb_body_fill(body, sizeof(body), DBK_SPB_BODY_MIN - 1, 16), 0);
	CHECK_EQ_U(dbk_spb_body_fill(body, 100, 101, 16), 0);
	CHECK_EQ_U(dbk_spb_body_fill(body, sizeof(body), 100, 100000), 0);
}

static void test_unique_id_like_haproxy(void)
{
	char id[64];

	/* 1796016806292 ms is 0x6B0D0AA6 s and 0x124 ms. */
	CHECK_EQ_U(dbk_spb_unique_id(id, sizeof(id), 0x1C2B, 1796016806292ULL, 7), 21);
	CHECK(strcmp(id, "1C2B-6B0D0AA6124-0007") == 0);
	CHECK_EQ_U(dbk_spb_unique_id(id, sizeof(id), 1, 1000, 0x123456789ULL), 26);
	CHECK(strcmp(id, "0001-00000001000-123456789") == 0);
	CHECK_EQ_U(dbk_spb_unique_id(id, 10, 1, 1000, 1), 0);
}

static void test_agent_hello(void)
{
	uint8_t buf[256];
	struct dbk_spop_frame f;
	struct dbk_spb_agent_hello h;
	size_t n = dbk_spop_agent_hello_build(buf, sizeof(buf), 16380, true);

	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_OK);
	CHECK_EQ_U(h.max_frame_size, 16380);
	CHECK(h.pipelining);
	n = dbk_spop_agent_hello_build(buf, sizeof(buf), 1024, false);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_OK);
	CHECK(!h.pipelining && h.max_frame_size == 1024);

	/* What HAProxy refuses. */
	struct dbk_spop_writer w;
	struct dbk_spop_data v;
	dbk_spop_writer_init(&w, buf, sizeof(buf));
	dbk_spop_frame_begin(&w, DBK_SPOP_AGENT_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	v = dbk_spop_str("1.0");
	dbk_spop_put_name(&w, "version", 7);
	dbk_spop_put_data(&w, &v);
	n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_ERR_BAD_VSN);
	v = dbk_spop_str("2.0");
	dbk_spop_frame_begin(&w, DBK_SPOP_AGENT_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	dbk_spop_put_name(&w, "version", 7);
	dbk_spop_put_data(&w, &v);
	n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_ERR_NO_FRAME_SIZE);
	dbk_spop_put_name(&w, "max-frame-size", 14);
	v.type = DBK_SPOP_T_UINT32;
	v.u.u32 = 100;
	dbk_spop_put_data(&w, &v);
	n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_ERR_BAD_FRAME_SIZE);
	dbk_spop_frame_begin(&w, DBK_SPOP_AGENT_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_ERR_NO_VSN);
	dbk_spop_frame_begin(&w, DBK_SPOP_ACK, DBK_SPOP_FLAG_FIN, 1, 1);
	n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_agent_hello_parse(&f, &h), DBK_SPOP_ERR_INVALID);
}

static void test_ack_find(void)
{
	uint8_t buf[512];
	struct dbk_spop_writer w;
	struct dbk_spop_frame f;
	struct dbk_spop_data v;
	const uint8_t *s = NULL;
	size_t slen = 0;
	bool found;

	/* Shaped like dbucket-spoa's: server, then integers, bool, string. */
	dbk_spop_writer_init(&w, buf, sizeof(buf));
	dbk_spop_ack_begin(&w, 7, 1);
	dbk_spop_ack_unset_var(&w, DBK_SPOP_SCOPE_TXN, "error");
	v = dbk_spop_str("vllm2");
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "server", &v);
	v = dbk_spop_int(1);
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "bucket", &v);
	v = dbk_spop_bool(false);
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "redirected", &v);
	v = dbk_spop_str("12.5");
	dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "score", &v);
	size_t n = dbk_spop_frame_end(&w);
	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_TXN, "server", &s, &slen, &found),
	           DBK_SPOP_OK);
	CHECK(found && slen == 5 && memcmp(s, "vllm2", 5) == 0);
	/* Wrong scope, absent name. */
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_SESS, "server", &s, &slen, &found),
	           DBK_SPOP_OK);
	CHECK(!found);
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_TXN, "serve", &s, &slen, &found),
	           DBK_SPOP_OK);
	CHECK(!found);
	/* An integer server is not a decision. */
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_TXN, "bucket", &s, &slen, &found),
	           DBK_SPOP_OK);
	CHECK(!found);
	/* Every truncation of the action list is refused, never overread. */
	for (size_t cut = 1; cut < f.payload_len; cut++) {
		struct dbk_spop_frame g = f;

		g.payload_len = cut;
		enum dbk_spop_status st = dbk_spb_ack_find_str(&g, DBK_SPOP_SCOPE_TXN, "server", &s,
		                                               &slen, &found);
		CHECK(st == DBK_SPOP_ERR_INVALID || st == DBK_SPOP_OK);
	}
	/* An unknown action type. */
	uint8_t bad[] = { 9, 3, 2, 1, 'x', 0 };
	f.payload = bad;
	f.payload_len = sizeof(bad);
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_TXN, "x", &s, &slen, &found),
	           DBK_SPOP_ERR_INVALID);
	/* An empty ACK is well-formed and decides nothing. */
	f.payload = NULL;
	f.payload_len = 0;
	CHECK_EQ_U(dbk_spb_ack_find_str(&f, DBK_SPOP_SCOPE_TXN, "x", &s, &slen, &found),
	           DBK_SPOP_OK);
	CHECK(!found);
}

static void test_completion_reads_as_haproxy_ring(void)
{
	char buf[512];
	const char *msg;
	size_t mlen, used;
	struct dbk_completion c;
	size_t n = dbk_spb_completion_build(buf, sizeof(buf), "1C2B-6B0D0AA6124-0007", 21, "vllm3",
	                                    5, 1796016806292ULL);

	CHECK(n > 0);
	CHECK_EQ_U(dbk_completion_frame(buf, n, &msg, &mlen, &used), DBK_COMPLETION_OK);
	CHECK_EQ_U(used, n);
	CHECK_EQ_U(dbk_completion_parse(msg, mlen, &c), DBK_COMPLETION_OK);
	CHECK(c.id_len == 21 && memcmp(c.id, "1C2B-6B0D0AA6124-0007", 21) == 0);
	CHECK(c.chosen_len == 5 && memcmp(c.chosen, "vllm3", 5) == 0);
	CHECK(c.server_len == 5 && memcmp(c.server, "vllm3", 5) == 0);
	CHECK_EQ_U(c.status, 200);
	CHECK(strcmp(c.term, "----") == 0);
	CHECK_EQ_U(c.log_ms, 1796016806292ULL);
	CHECK_EQ_U(dbk_spb_completion_build(buf, 20, "a", 1, "b", 1, 1), 0);
}

static void test_disconnect(void)
{
	uint8_t buf[128];
	struct dbk_spop_frame f;
	uint32_t code = 99;
	const uint8_t *msg;
	size_t mlen;
	size_t n = dbk_spb_haproxy_disconnect_build(buf, sizeof(buf), 0, "normal");

	CHECK(frame_of(buf, n, &f));
	CHECK_EQ_U(f.type, DBK_SPOP_HAPROXY_DISCONNECT);
	CHECK_EQ_U(dbk_spop_disconnect_parse(&f, &code, &msg, &mlen), DBK_SPOP_OK);
	CHECK(code == 0 && mlen == 6 && memcmp(msg, "normal", 6) == 0);
}

static void test_latency_quantiles(void)
{
	struct dbk_spb_lat *l = malloc(sizeof(*l));

	if (!l) {
		CHECK(0);
		return;
	}
	dbk_spb_lat_init(l);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.5), 0, 0);
	/* 1..1000 us, uniform. */
	for (uint64_t us = 1; us <= 1000; us++)
		dbk_spb_lat_add(l, us * 1000);
	CHECK_EQ_U(l->count, 1000);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.5), 500e3, 0.016);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.9), 900e3, 0.016);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.99), 990e3, 0.016);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 1.0), 1000e3, 0.016);
	CHECK(dbk_spb_lat_quantile(l, 1.0) <= 1000e3);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.0), 1e3, 0.016);
	/* Small values are exact; huge ones land in the last bucket. */
	dbk_spb_lat_init(l);
	dbk_spb_lat_add(l, 5);
	dbk_spb_lat_add(l, 7);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 0.5), 5, 0);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 1.0), 7, 0);
	dbk_spb_lat_add(l, UINT64_MAX);
	CHECK(l->buckets[DBK_SPB_LAT_BUCKETS - 1] == 1);
	CHECK_NEAR(dbk_spb_lat_quantile(l, 1.0), (double)UINT64_MAX, 1e-9);
	/* Every power of two lands inside the table. */
	for (unsigned e = 0; e < 64; e++)
		dbk_spb_lat_add(l, 1ULL << e);
	CHECK_EQ_U(l->count, 3 + 64);
	free(l);
}

int main(void)
{
	RUN(test_hello_reads_as_haproxy);
	RUN(test_notify_reads_as_haproxy);
	RUN(test_body_is_what_the_agent_reads);
	RUN(test_unique_id_like_haproxy);
	RUN(test_agent_hello);
	RUN(test_ack_find);
	RUN(test_completion_reads_as_haproxy_ring);
	RUN(test_disconnect);
	RUN(test_latency_quantiles);
	return CHECK_DONE();
}
