/* Unit tests of the response side: HTTP/1.1 response decoding (resp.c),
 * SSE framing (sse.c) and stream interpretation (stream.c), alone and
 * chained as the client chains them, with input split at every byte. */
#include "resp.h"
#include "sse.h"
#include "stream.h"

#include <stdlib.h>

#include "check.h"

/* ---- The chain, as client.c runs it. ---- */

struct chain {
	struct dbk_resp resp;
	struct dbk_sse sse;
	struct dbk_stream st;
	double t;
	int sse_rc;
	char ebody[256];
	size_t ebody_len;
};

static int chain_event(void *ctx, const char *data, size_t n)
{
	struct chain *c = ctx;

	return dbk_stream_event(&c->st, data, n, c->t) ? 1 : 0;
}

static int chain_body(void *ctx, const char *p, size_t n)
{
	struct chain *c = ctx;

	if (c->resp.status != 200) {
		if (n > sizeof(c->ebody) - c->ebody_len)
			n = sizeof(c->ebody) - c->ebody_len;
		memcpy(c->ebody + c->ebody_len, p, n);
		c->ebody_len += n;
		return 0;
	}
	c->sse_rc = dbk_sse_feed(&c->sse, p, n, chain_event, c);
	return c->sse_rc;
}

static void chain_init(struct chain *c)
{
	memset(c, 0, sizeof(*c));
	dbk_resp_init(&c->resp);
	dbk_sse_init(&c->sse, DBK_SSE_MAX_EVENT);
	dbk_stream_init(&c->st, 0, 100);
}

static void chain_free(struct chain *c)
{
	dbk_resp_free(&c->resp);
	dbk_sse_free(&c->sse);
	dbk_stream_free(&c->st);
}

/* Feeds s[0, n) in pieces cut at cuts[] (ascending), piece k read at
 * time k; then EOF if the response is not complete yet. */
static void chain_run(struct chain *c, const char *s, size_t n, const size_t *cuts, size_t ncuts)
{
	size_t k, from = 0;

	for (k = 0; k <= ncuts; k++) {
		size_t to = k < ncuts ? cuts[k] : n;

		c->t = (double)k;
		if (c->resp.state != DBK_RESP_DONE && c->resp.state != DBK_RESP_ERROR)
			dbk_resp_feed(&c->resp, s + from, to - from, chain_body, c);
		from = to;
	}
	if (c->resp.state != DBK_RESP_DONE && c->resp.state != DBK_RESP_ERROR)
		dbk_resp_eof(&c->resp);
}

#define HEAD_CHUNKED                                         \
	"HTTP/1.1 200 OK\r\n"                                \
	"date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"            \
	"X-Served-By: vllm0\r\n"                             \
	"content-type: text/event-stream; charset=utf-8\r\n" \
	"Transfer-Encoding: chunked\r\n\r\n"

#define EV_TOK(fin)                                                  \
	"data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","   \
	"\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"   \
	"\"text\":\" tok\",\"logprobs\":null,\"finish_reason\":" fin \
	",\"stop_reason\":null}],\"usage\":null}\n\n"
#define EV_USAGE                                                   \
	"data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\"," \
	"\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":"  \
	"{\"prompt_tokens\":7,\"total_tokens\":10,"                \
	"\"completion_tokens\":3}}\n\n"
#define EV_DONE "data: [DONE]\n\n"

/* A chunked stream as the stub frames it (one event per chunk), except
 * that two events share one chunk and one event spans two chunks, as a
 * proxy re-chunking the stream may do. */
static size_t build_stream(char *out, size_t cap, bool with_usage, bool with_done)
{
	const char *ev1 = EV_TOK("null"), *ev2 = EV_TOK("null");
	const char *ev3 = EV_TOK("\"length\"");
	char both[2048];
	size_t n = 0, half;

	n += (size_t)snprintf(out + n, cap - n, "%s", HEAD_CHUNKED);
	n += (size_t)snprintf(out + n, cap - n, "%zx;ext=1\r\n%s\r\n", strlen(ev1), ev1);
	half = strlen(ev2) / 2;
	n += (size_t)snprintf(out + n, cap - n, "%zx\r\n%.*s\r\n", half, (int)half, ev2);
	n += (size_t)snprintf(out + n, cap - n, "%zx\r\n%s\r\n", strlen(ev2) - half, ev2 + half);
	snprintf(both, sizeof(both), "%s%s", ev3, with_usage ? EV_USAGE : "");
	n += (size_t)snprintf(out + n, cap - n, "%zX\r\n%s\r\n", strlen(both), both);
	if (with_done)
		n += (size_t)snprintf(out + n, cap - n, "%zx\r\n%s\r\n", strlen(EV_DONE), EV_DONE);
	n += (size_t)snprintf(out + n, cap - n, "0\r\nx-trailer: 1\r\n\r\n");
	return n;
}

static void check_complete(struct chain *c, uint32_t want_tokens)
{
	double ttft = -1, e2e = -1;
	uint32_t tokens = 0;
	char err[128] = "";

	CHECK_EQ_U(c->resp.state, DBK_RESP_DONE);
	CHECK_EQ_U(c->resp.status, 200);
	CHECK(strcmp(c->resp.served_by, "vllm0") == 0);
	CHECK(c->resp.chunked);
	CHECK_EQ_U(c->st.n_msgs, 3);
	CHECK_EQ_U(c->st.n_itl, 2);
	CHECK(c->st.done);
	CHECK(dbk_stream_result(&c->st, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK_EQ_U(tokens, want_tokens);
	CHECK(ttft >= 0 && e2e >= ttft);
}

static void test_chain_split_everywhere(void)
{
	char s[8192];
	size_t n = build_stream(s, sizeof(s), true, true), i;
	struct chain c;
	int bad = 0;

	/* Whole. */
	chain_init(&c);
	chain_run(&c, s, n, NULL, 0);
	check_complete(&c, 3);
	CHECK_NEAR(c.st.first, 0, 0);
	chain_free(&c);
	/* Two pieces, cut at every offset. */
	for (i = 0; i <= n; i++) {
		size_t cut = i;

		chain_init(&c);
		chain_run(&c, s, n, &cut, 1);
		if (c.resp.state != DBK_RESP_DONE || c.st.n_msgs != 3 || c.st.n_itl != 2 ||
		    !c.st.done || c.st.usage_tokens != 3 ||
		    strcmp(c.resp.served_by, "vllm0") != 0) {
			if (bad++ < 3)
				fprintf(stderr,
				        "  cut at %zu of %zu: state %d "
				        "msgs %zu\n",
				        i, n, c.resp.state, c.st.n_msgs);
		}
		chain_free(&c);
	}
	CHECK_EQ_U(bad, 0);
}

static void test_chain_byte_by_byte_times(void)
{
	char s[8192];
	size_t n = build_stream(s, sizeof(s), false, true), i, ncut;
	size_t *cuts = malloc(n * sizeof(*cuts));
	const char *first, *first_end, *last, *last_end;
	struct chain c;
	double ttft, e2e;
	uint32_t tokens;
	char err[128];

	if (!cuts)
		return;
	/* Piece k is byte k, read at time k: an event is seen at the time
	 * of the '\n' that ends its blank line. */
	for (i = 0, ncut = 0; i + 1 < n; i++)
		cuts[ncut++] = i + 1;
	chain_init(&c);
	chain_run(&c, s, n, cuts, ncut);
	check_complete(&c, 3); /* no usage: counted text chunks */
	first = strstr(s, "\"choices\":[{");
	first_end = strstr(first, "\n\n");
	last = strstr(s, "\"length\"");
	last_end = strstr(last, "\n\n");
	CHECK(dbk_stream_result(&c.st, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK_NEAR(ttft, (double)(first_end + 1 - s), 0);
	CHECK_NEAR(e2e, (double)(last_end + 1 - s), 0);
	CHECK_EQ_U(c.st.usage_tokens, -1);
	chain_free(&c);
	free(cuts);
}

static void test_chain_cut_streams(void)
{
	char s[8192];
	size_t n, i;
	struct chain c;
	double ttft, e2e;
	uint32_t tokens;
	char err[128];

	/* Without [DONE]: the stream is incomplete. */
	n = build_stream(s, sizeof(s), true, false);
	chain_init(&c);
	chain_run(&c, s, n, NULL, 0);
	CHECK_EQ_U(c.resp.state, DBK_RESP_DONE);
	CHECK(!dbk_stream_result(&c.st, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK(strcmp(err, "stream ended without [DONE]") == 0);
	chain_free(&c);

	/* Connection lost at every point before the end: never complete. */
	n = build_stream(s, sizeof(s), true, true);
	for (i = 0; i < n; i++) {
		chain_init(&c);
		chain_run(&c, s, i, NULL, 0);
		CHECK(c.resp.state == DBK_RESP_ERROR);
		chain_free(&c);
	}
}

static void test_chain_error_status(void)
{
	const char *body = "{\"object\":\"error\",\"message\":\"This model's maximum "
	                   "context length is 32768 tokens, not 40000\",\"type\":\"Bad\","
	                   "\"code\":400}";
	char s[512], out[160];
	struct chain c;

	snprintf(s, sizeof(s),
	         "HTTP/1.1 400 Bad Request\r\n"
	         "x-served-by: vllm1\r\n"
	         "Content-Type: application/json\r\n"
	         "Content-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	chain_init(&c);
	chain_run(&c, s, strlen(s), NULL, 0);
	CHECK_EQ_U(c.resp.state, DBK_RESP_DONE);
	CHECK_EQ_U(c.resp.status, 400);
	CHECK(strcmp(c.resp.served_by, "vllm1") == 0);
	CHECK_EQ_U(c.ebody_len, strlen(body));
	dbk_stream_error_summary(c.resp.status, c.ebody, c.ebody_len, out, sizeof(out));
	CHECK(strcmp(out, "HTTP 400: This model's maximum context length is "
	                  "32768 tokens, not 40000") == 0);
	chain_free(&c);
}

/* ---- resp.c alone. ---- */

/* r starts zeroed or used: what it held is freed first. */
static enum dbk_resp_state feed_all(struct dbk_resp *r, const char *s, size_t *used)
{
	size_t u;

	dbk_resp_free(r);
	dbk_resp_init(r);
	u = dbk_resp_feed(r, s, strlen(s), NULL, NULL);
	if (used)
		*used = u;
	return r->state;
}

static int collect(void *ctx, const char *p, size_t n)
{
	struct dbk_buf *b = ctx;

	dbk_buf_add(b, p, n);
	return 0;
}

/* A consumer that stops at once: for the body and for SSE events. */
static int refuse(void *ctx, const char *p, size_t n)
{
	(void)ctx;
	(void)p;
	(void)n;
	return 42;
}

static void test_resp_length_and_close(void)
{
	struct dbk_resp r = { 0 };
	struct dbk_buf b = { 0 };
	const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	                "Connection: close\r\n\r\nhelloEXTRA";
	size_t used;

	dbk_resp_init(&r);
	used = dbk_resp_feed(&r, s, strlen(s), collect, &b);
	CHECK_EQ_U(r.state, DBK_RESP_DONE);
	CHECK_EQ_U(used, strlen(s) - 5); /* what follows is left */
	CHECK(b.len == 5 && memcmp(b.p, "hello", 5) == 0);
	CHECK(!r.keep_alive);
	CHECK_EQ_U(r.minor, 1);

	/* No length: the body runs to the close. */
	dbk_buf_reset(&b);
	dbk_resp_free(&r);
	dbk_resp_init(&r);
	s = "HTTP/1.0 200 OK\r\n\r\nabc";
	dbk_resp_feed(&r, s, strlen(s), collect, &b);
	CHECK_EQ_U(r.state, DBK_RESP_BODY_CLOSE);
	dbk_resp_feed(&r, "def", 3, collect, &b);
	CHECK_EQ_U(dbk_resp_eof(&r), DBK_RESP_DONE);
	CHECK(b.len == 6 && memcmp(b.p, "abcdef", 6) == 0);
	CHECK(!r.keep_alive);

	/* Interim 100 Continue, then the response; 204 has no body. */
	CHECK_EQ_U(feed_all(&r,
	                    "HTTP/1.1 100 Continue\r\nX-Served-By: a\r\n"
	                    "\r\nHTTP/1.1 204 No Content\r\n\r\n",
	                    NULL),
	           DBK_RESP_DONE);
	CHECK_EQ_U(r.status, 204);
	CHECK(r.served_by[0] == 0);
	CHECK(r.keep_alive);

	/* Content-Length: 0, and a leading empty line. */
	CHECK_EQ_U(feed_all(&r,
	                    "\r\nHTTP/1.1 503 x\r\ncontent-length:0\r\n"
	                    "\r\n",
	                    NULL),
	           DBK_RESP_DONE);
	CHECK_EQ_U(r.status, 503);

	/* The body consumer can stop decoding. */
	dbk_resp_free(&r);
	dbk_resp_init(&r);
	s = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	dbk_resp_feed(&r, s, strlen(s), refuse, NULL);
	CHECK_EQ_U(r.state, DBK_RESP_ERROR);
	CHECK(strcmp(r.err, "body rejected") == 0);
	dbk_resp_free(&r);
	dbk_buf_free(&b);
}

static void test_resp_headers(void)
{
	struct dbk_resp r = { 0 };
	char big[4096];

	CHECK_EQ_U(feed_all(&r,
	                    "HTTP/1.1 200 OK\r\nX-Served-By:  a,b\"c\t\r\n"
	                    "Content-Length: 0\r\n\r\n",
	                    NULL),
	           DBK_RESP_DONE);
	CHECK(strcmp(r.served_by, "a_b_c") == 0);

	/* A long header line (a cookie) is read past. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nSet-Cookie: ", 29);
	memcpy(big + sizeof(big) - 60, "\r\nX-Served-By: v2\r\nContent-Length: 0\r\n\r\n", 40);
	big[sizeof(big) - 20] = 0;
	CHECK_EQ_U(feed_all(&r, big, NULL), DBK_RESP_DONE);
	CHECK(strcmp(r.served_by, "v2") == 0);

	/* Transfer-Encoding: chunked wins over Content-Length. */
	CHECK_EQ_U(feed_all(&r,
	                    "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n"
	                    "Transfer-Encoding: gzip, chunked\r\n\r\n"
	                    "0\r\n\r\n",
	                    NULL),
	           DBK_RESP_DONE);
	CHECK(r.chunked);
	CHECK_EQ_U(feed_all(&r,
	                    "HTTP/1.1 200 OK\r\nConnection: Keep-Alive"
	                    "\r\nContent-Length: 0\r\n\r\n",
	                    NULL),
	           DBK_RESP_DONE);
	CHECK(r.keep_alive);
	dbk_resp_free(&r);
}

static void expect_error(const char *s, const char *why)
{
	struct dbk_resp r = { 0 };

	CHECK_EQ_U(feed_all(&r, s, NULL), DBK_RESP_ERROR);
	if (r.state == DBK_RESP_ERROR && strcmp(r.err, why) != 0) {
		fprintf(stderr, "  error \"%s\", want \"%s\"\n", r.err, why);
		CHECK(0);
	}
	dbk_resp_free(&r);
}

static void test_resp_errors(void)
{
	struct dbk_resp r = { 0 };
	char *big;

	expect_error("HTTX/1.1 200 OK\r\n\r\n", "bad HTTP status line");
	expect_error("HTTP/1.1 20 OK\r\n\r\n", "bad HTTP status line");
	expect_error("HTTP/2 200\r\n\r\n", "bad HTTP status line");
	expect_error("HTTP/1.1 200OK\r\n\r\n", "bad HTTP status line");
	expect_error("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "bad header field name");
	expect_error("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	             "Content-Length: 6\r\n\r\n",
	             "conflicting Content-Length");
	expect_error("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length");
	expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	             "unsupported Transfer-Encoding");
	expect_error("HTTP/1.1 101 Switching\r\n\r\n", "unexpected 101 Switching Protocols");
	expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "zz\r\n",
	             "bad chunk size");
	expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "5 x\r\n",
	             "bad chunk size");
	expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "1234567890abcdef\r\n",
	             "chunk too large");
	expect_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "3\r\nabcXX\r\n",
	             "missing CRLF after chunk data");

	big = malloc(DBK_RESP_MAX_HEAD + 100);
	if (!big)
		return;
	memset(big, 'a', DBK_RESP_MAX_HEAD + 99);
	big[DBK_RESP_MAX_HEAD + 99] = 0;
	memcpy(big, "HTTP/1.1 200 OK\r\n", 17);
	for (size_t i = 2000; i < DBK_RESP_MAX_HEAD; i += 2000)
		memcpy(big + i, ": b\r\n", 5);
	expect_error(big, "response head too large");
	free(big);

	/* EOF before or during a response. */
	dbk_resp_init(&r);
	CHECK_EQ_U(dbk_resp_eof(&r), DBK_RESP_ERROR);
	CHECK(strcmp(r.err, "connection closed before a response") == 0);
	feed_all(&r, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", NULL);
	CHECK_EQ_U(dbk_resp_eof(&r), DBK_RESP_ERROR);
	CHECK(strcmp(r.err, "connection closed mid-response") == 0);
	feed_all(&r, "HTTP/1.1 200", NULL);
	CHECK_EQ_U(dbk_resp_eof(&r), DBK_RESP_ERROR);
	CHECK(strcmp(r.err, "connection closed mid-response") == 0);
	dbk_resp_free(&r);
}

/* ---- sse.c alone. ---- */

struct events {
	int n;
	char data[8][64];
};

static int on_ev(void *ctx, const char *data, size_t n)
{
	struct events *e = ctx;

	if (e->n < 8)
		snprintf(e->data[e->n], sizeof(e->data[0]), "%.*s", (int)n, data);
	e->n++;
	return 0;
}

static void test_sse_framing_split_everywhere(void)
{
	const char *s = ": comment\n"
	                "event: message\r\n"
	                "data: one\r\n"
	                "\r\n"
	                "id: 7\n"
	                "data:two\n"
	                "data:  three\n"
	                "retry: 10\n"
	                "\n"
	                "\n"
	                "data\n"
	                "\n"
	                "data: [DONE]\n"
	                "\n"
	                "data: tail without blank line\n";
	size_t n = strlen(s), i;
	int bad = 0;

	for (i = 0; i <= n; i++) {
		struct dbk_sse x;
		struct events e;

		memset(&e, 0, sizeof(e));
		dbk_sse_init(&x, 1024);
		CHECK_EQ_U(dbk_sse_feed(&x, s, i, on_ev, &e), DBK_SSE_OK);
		CHECK_EQ_U(dbk_sse_feed(&x, s + i, n - i, on_ev, &e), DBK_SSE_OK);
		if (e.n != 4 || strcmp(e.data[0], "one") != 0 ||
		    strcmp(e.data[1], "two\n three") != 0 || strcmp(e.data[2], "") != 0 ||
		    strcmp(e.data[3], "[DONE]") != 0)
			bad++;
		dbk_sse_free(&x);
	}
	CHECK_EQ_U(bad, 0);
}

static void test_sse_bounds(void)
{
	struct dbk_sse x;
	struct events e;
	char line[200];

	memset(&e, 0, sizeof(e));
	memset(line, 'a', sizeof(line));
	memcpy(line, "data: ", 6);
	/* One line above the bound, complete or not. */
	dbk_sse_init(&x, 64);
	line[99] = '\n';
	CHECK_EQ_U(dbk_sse_feed(&x, line, 100, on_ev, &e), DBK_SSE_TOO_BIG);
	dbk_sse_free(&x);
	dbk_sse_init(&x, 64);
	CHECK_EQ_U(dbk_sse_feed(&x, line, 99, on_ev, &e), DBK_SSE_TOO_BIG);
	dbk_sse_free(&x);
	/* An event of many small lines above the bound. */
	dbk_sse_init(&x, 64);
	CHECK_EQ_U(dbk_sse_feed(&x,
	                        "data: 0123456789012345678901234\n"
	                        "data: 0123456789012345678901234\n"
	                        "data: 0123456789012345678901234\n",
	                        96, on_ev, &e),
	           DBK_SSE_TOO_BIG);
	dbk_sse_free(&x);
	CHECK_EQ_U(e.n, 0);
	/* The callback's verdict is passed back. */
	dbk_sse_init(&x, 64);
	CHECK_EQ_U(dbk_sse_feed(&x, "data: x\n\ndata: y\n\n", 18, refuse, NULL), 42);
	dbk_sse_free(&x);
}

/* ---- stream.c alone. ---- */

static int ev(struct dbk_stream *s, const char *data, double t)
{
	return dbk_stream_event(s, data, strlen(data), t);
}

static void test_stream_metrics(void)
{
	struct dbk_stream s;
	double ttft, e2e, *itl;
	uint32_t tokens;
	size_t n;
	char err[128];

	dbk_stream_init(&s, 10.0, 10);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 10.5), 0);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"b\"}],\"usage\":null}", 10.7), 0);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"c\"}]}", 11.0), 0);
	CHECK_EQ_U(ev(&s,
	              "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
	              "\"completion_tokens\":3}}",
	              11.2),
	           0);
	CHECK_EQ_U(ev(&s, " [DONE] ", 11.3), 0);
	CHECK(dbk_stream_result(&s, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK_NEAR(ttft, 0.5, 1e-12);
	CHECK_NEAR(e2e, 1.0, 1e-12); /* the last choices, not [DONE] */
	CHECK_EQ_U(tokens, 3);
	itl = dbk_stream_take_itl(&s, &n);
	CHECK_EQ_U(n, 2);
	CHECK(itl && fabs(itl[0] - 0.2) < 1e-9 && fabs(itl[1] - 0.3) < 1e-9);
	free(itl);
	CHECK_EQ_U(s.n_itl, 0);
	dbk_stream_free(&s);
}

static void test_stream_chat_and_counting(void)
{
	struct dbk_stream s;
	double ttft, e2e;
	uint32_t tokens;
	char err[128];

	/* Chat: the role chunk is a choices message (it sets TTFT, as in
	 * vLLM's client) but carries no text; tokens are counted from the
	 * text chunks when there is no usage. */
	dbk_stream_init(&s, 0, 10);
	CHECK_EQ_U(ev(&s,
	              "{\"choices\":[{\"delta\":{\"role\":\"assistant\","
	              "\"content\":\"\"}}]}",
	              1),
	           0);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}", 1), 0);
	CHECK_EQ_U(ev(&s,
	              "{\"choices\":[{\"delta\":{\"content\":\"y\"},"
	              "\"finish_reason\":\"length\"}]}",
	              3),
	           0);
	CHECK_EQ_U(ev(&s, "[DONE]", 3), 0);
	CHECK(dbk_stream_result(&s, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK_EQ_U(s.n_msgs, 3);
	CHECK_EQ_U(tokens, 2);
	CHECK_NEAR(ttft, 1, 0);
	CHECK_NEAR(e2e, 3, 0);
	CHECK_EQ_U(s.n_itl, 2);
	dbk_stream_free(&s);
}

static void test_stream_failures(void)
{
	struct dbk_stream s;
	double ttft, e2e;
	uint32_t tokens;
	char err[128];

	dbk_stream_init(&s, 0, 10);
	CHECK_EQ_U(ev(&s, "[DONE]", 1), 0);
	CHECK(!dbk_stream_result(&s, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK(strcmp(err, "no choices in the stream") == 0);
	dbk_stream_free(&s);

	dbk_stream_init(&s, 0, 10);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1), 0);
	CHECK(ev(&s, "{\"error\":{\"message\":\"boom\",\"code\":500}}", 2));
	CHECK(!dbk_stream_result(&s, &ttft, &e2e, &tokens, err, sizeof(err)));
	CHECK(strcmp(err, "error in stream: boom") == 0);
	/* Sticky. */
	CHECK(ev(&s, "[DONE]", 3));
	dbk_stream_free(&s);

	dbk_stream_init(&s, 0, 10);
	CHECK(ev(&s, "{\"object\":\"error\",\"message\":\"old style\"}", 1));
	CHECK(strcmp(s.error, "error in stream: old style") == 0);
	dbk_stream_free(&s);

	dbk_stream_init(&s, 0, 10);
	CHECK(ev(&s, "{\"choices\":[{\"text\":", 1));
	CHECK(strstr(s.error, "not a JSON object") != NULL);
	dbk_stream_free(&s);

	dbk_stream_init(&s, 0, 2);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1), 0);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1), 0);
	CHECK(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1));
	CHECK(strstr(s.error, "more messages") != NULL);
	dbk_stream_free(&s);

	dbk_stream_init(&s, 0, 10);
	CHECK_EQ_U(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1), 0);
	CHECK_EQ_U(ev(&s, "[DONE]", 1), 0);
	CHECK(ev(&s, "{\"choices\":[{\"text\":\"a\"}]}", 1));
	CHECK(strcmp(s.error, "data after [DONE]") == 0);
	dbk_stream_free(&s);
}

static void test_error_summary(void)
{
	char out[64];
	const char *b;

	b = "{\"detail\":\"Not Found\"}";
	dbk_stream_error_summary(404, b, strlen(b), out, sizeof(out));
	CHECK(strcmp(out, "HTTP 404: Not Found") == 0);
	b = "{\"error\":{\"message\":\"m\",\"code\":500}}";
	dbk_stream_error_summary(500, b, strlen(b), out, sizeof(out));
	CHECK(strcmp(out, "HTTP 500: m") == 0);
	b = "<html>Bad Gateway</html>\r\n";
	dbk_stream_error_summary(502, b, strlen(b), out, sizeof(out));
	CHECK(strcmp(out, "HTTP 502: <html>Bad Gateway</html>??") == 0);
	dbk_stream_error_summary(503, "", 0, out, sizeof(out));
	CHECK(strcmp(out, "HTTP 503") == 0);
	/* Truncated JSON (the body is kept up to a bound): raw text. */
	b = "{\"message\":\"abc";
	dbk_stream_error_summary(400, b, strlen(b), out, sizeof(out));
	CHECK(strcmp(out, "HTTP 400: {\"message\":\"abc") == 0);
	/* Bounded output. */
	b = "0123456789012345678901234567890123456789012345678901234567890123";
	dbk_stream_error_summary(400, b, strlen(b), out, 16);
	CHECK(strcmp(out, "HTTP 400: 01234") == 0);
}

int main(void)
{
	RUN(test_chain_split_everywhere);
	RUN(test_chain_byte_by_byte_times);
	RUN(test_chain_cut_streams);
	RUN(test_chain_error_status);
	RUN(test_resp_length_and_close);
	RUN(test_resp_headers);
	RUN(test_resp_errors);
	RUN(test_sse_framing_split_everywhere);
	RUN(test_sse_bounds);
	RUN(test_stream_metrics);
	RUN(test_stream_chat_and_counting);
	RUN(test_stream_failures);
	RUN(test_error_summary);
	return CHECK_DONE();
}
