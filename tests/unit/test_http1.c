/* Unit tests of the HTTP/1.1 message parser (lib/http1.c: requests and
 * response heads) and the chunked decoder (lib/http1_chunked.c). */
#include "lib/http1.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static const struct dbk_http_limits LIM = { 1024, 4096, false };
/* The stub's: chunked request bodies taken. */
static const struct dbk_http_limits LIM_CH = { 1024, 4096, true };

static enum dbk_http_result parse_s(const char *s, struct dbk_http_request *r)
{
	return dbk_http_parse(s, strlen(s), &LIM, r);
}

static int parse_status(const char *s)
{
	struct dbk_http_request r;

	if (parse_s(s, &r) != DBK_HTTP_ERROR)
		return 0;
	return r.status;
}

/* Each request (a NULL-ended list) fails with status want. */
static void expect_status(int want, const char *const *reqs)
{
	for (; *reqs; reqs++) {
		int st = parse_status(*reqs);

		CHECK_EQ_U(st, want);
		if (st != want)
			fprintf(stderr, "    request: %s\n", *reqs);
	}
}

static void test_simple_get(void)
{
	struct dbk_http_request r;
	const char *s = "GET /v1/models HTTP/1.1\r\nHost: x\r\n"
	                "Accept:   */*  \r\n\r\n";

	CHECK_EQ_U(parse_s(s, &r), DBK_HTTP_COMPLETE);
	CHECK(dbk_http_slice_eq(r.method, "GET"));
	CHECK(dbk_http_slice_eq(r.target, "/v1/models"));
	CHECK_EQ_U(r.minor_version, 1);
	CHECK_EQ_U(r.n_headers, 2);
	CHECK(dbk_http_header(&r, "accept") &&
	      dbk_http_slice_eq(*dbk_http_header(&r, "ACCEPT"), "*/*"));
	CHECK(dbk_http_header(&r, "content-length") == NULL);
	CHECK_EQ_U(r.total_len, strlen(s));
	CHECK_EQ_U(r.head_len, strlen(s));
	CHECK_EQ_U(r.body.n, 0);
	CHECK(r.keep_alive);
	CHECK(!r.expect_continue);
}

static void test_post_body(void)
{
	struct dbk_http_request r;
	const char *s = "POST /v1/completions HTTP/1.1\r\n"
	                "Content-Type: application/json\r\n"
	                "Content-Length: 13\r\n\r\n"
	                "{\"prompt\":\"\"}";

	CHECK_EQ_U(parse_s(s, &r), DBK_HTTP_COMPLETE);
	CHECK_EQ_U(r.content_length, 13);
	CHECK_EQ_U(r.body.n, 13);
	CHECK(r.body.p && memcmp(r.body.p, "{\"prompt\":\"\"}", 13) == 0);
	CHECK_EQ_U(r.total_len, strlen(s));
	/* Body not all there yet: incomplete, but the head is known. */
	CHECK_EQ_U(dbk_http_parse(s, strlen(s) - 1, &LIM, &r), DBK_HTTP_INCOMPLETE);
	CHECK_EQ_U(r.head_len, strlen(s) - 13);
	CHECK_EQ_U(r.total_len, strlen(s));
}

/* Every proper prefix of a request is incomplete, never an error, and the
 * whole parses the same way whatever the split. */
static void check_every_split(const char *s, size_t first_len)
{
	size_t n = strlen(s), k;
	struct dbk_http_request r;
	int bad = 0;

	for (k = 0; k < first_len; k++)
		if (dbk_http_parse(s, k, &LIM, &r) != DBK_HTTP_INCOMPLETE)
			bad++;
	for (k = first_len; k <= n; k++) {
		if (dbk_http_parse(s, k, &LIM, &r) != DBK_HTTP_COMPLETE || r.total_len != first_len)
			bad++;
	}
	CHECK_EQ_U(bad, 0);
}

static void test_split_every_offset(void)
{
	const char *a = "POST /v1/chat/completions HTTP/1.1\r\n"
	                "Host: 127.0.0.1\r\nContent-Length: 5\r\n"
	                "Connection: keep-alive\r\n\r\nhello";
	const char *b = "\r\nGET /health HTTP/1.0\nX: y\n\n";
	char two[512];

	check_every_split(a, strlen(a));
	check_every_split(b, strlen(b));
	/* Pipelined: the first request ends where it should. */
	snprintf(two, sizeof(two), "%s%s", a, "GET /metrics HTTP/1.1\r\n\r\n");
	check_every_split(two, strlen(a));
}

static void test_pipelined(void)
{
	const char *s = "GET /a HTTP/1.1\r\n\r\n"
	                "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
	                "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n";
	size_t off = 0, n = strlen(s);
	const char *want[3] = { "/a", "/b", "/c" };
	struct dbk_http_request r;
	int i;

	for (i = 0; i < 3; i++) {
		CHECK_EQ_U(dbk_http_parse(s + off, n - off, &LIM, &r), DBK_HTTP_COMPLETE);
		CHECK(dbk_http_slice_eq(r.target, want[i]));
		CHECK_EQ_U(r.keep_alive, i < 2);
		off += r.total_len;
	}
	CHECK_EQ_U(off, n);
	CHECK_EQ_U(dbk_http_parse(s + off, 0, &LIM, &r), DBK_HTTP_INCOMPLETE);
}

static void test_limits(void)
{
	char big[4096];
	struct dbk_http_request r;
	size_t i;
	int n;

	/* A request line longer than the head limit. */
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', 2000);
	big[2005] = 0;
	CHECK_EQ_U(parse_status(big), 414);
	/* Short request line, headers over the limit. */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX: ");
	memset(big + n, 'b', 1100);
	big[n + 1100] = 0;
	CHECK_EQ_U(parse_status(big), 431);
	/* ... also when the over-limit head is complete. */
	memcpy(big + n + 1100, "\r\n\r\n", 5);
	CHECK_EQ_U(parse_status(big), 431);
	/* A head exactly at the limit is fine. */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX: ");
	memset(big + n, 'c', 1024 - (size_t)n - 4);
	memcpy(big + 1024 - 4, "\r\n\r\n", 5);
	CHECK_EQ_U(strlen(big), 1024);
	CHECK_EQ_U(parse_s(big, &r), DBK_HTTP_COMPLETE);
	/* Too many fields. */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\n");
	for (i = 0; i < DBK_HTTP_MAX_HEADERS + 1; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "a:b\r\n");
	snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
	CHECK_EQ_U(parse_status(big), 431);
	/* Body above the limit: refused from the head alone. */
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nContent-Length: 4097\r\n\r\n"), 413);
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nContent-Length: "
	                        "99999999999999999999999999\r\n\r\n"),
	           413);
	CHECK_EQ_U(parse_s("POST / HTTP/1.1\r\nContent-Length: 4096\r\n\r\n", &r),
	           DBK_HTTP_INCOMPLETE);
	/* Endless blank lines count against the head too. */
	memset(big, '\n', 2000);
	big[2000] = 0;
	CHECK_EQ_U(parse_status(big), 431);
}

static void test_bad_request_lines(void)
{
	expect_status(400,
	              (const char *const[]){
	                      "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 \r\n\r\n", "GET /\r\n\r\n",
	                      "GET\r\n\r\n", " GET / HTTP/1.1\r\n\r\n", "G(T / HTTP/1.1\r\n\r\n",
	                      "GET / http/1.1\r\n\r\n", "GET / HTTP/1.x\r\n\r\n",
	                      "GET / HTTP/11\r\n\r\n", "GET /a\x01 HTTP/1.1\r\n\r\n", NULL });
	CHECK_EQ_U(parse_status("GET / HTTP/2.0\r\n\r\n"), 505);
	CHECK_EQ_U(parse_status("GET / HTTP/1.2\r\n\r\n"), 505);
	CHECK_EQ_U(parse_status("GET / HTTP/1.1\rX\r\n\r\n"), 400);
	CHECK_EQ_U(parse_status("\rGET / HTTP/1.1\r\n\r\n"), 400);
}

static void test_bad_fields(void)
{
	expect_status(400, (const char *const[]){ "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
	                                          "GET / HTTP/1.1\r\n: x\r\n\r\n",
	                                          "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
	                                          "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",
	                                          "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", NULL });
	{
		static const char s[] = "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n";
		struct dbk_http_request r;

		CHECK_EQ_U(dbk_http_parse(s, sizeof(s) - 1, &LIM, &r), DBK_HTTP_ERROR);
		CHECK_EQ_U(r.status, 400);
	}
}

static void test_content_length_cases(void)
{
	struct dbk_http_request r;

	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nContent-Length: 3\r\n"
	                        "Content-Length: 4\r\n\r\nabcd"),
	           400);
	CHECK_EQ_U(parse_s("POST / HTTP/1.1\r\nContent-Length: 3\r\n"
	                   "content-length: 3\r\n\r\nabc",
	                   &r),
	           DBK_HTTP_COMPLETE);
	expect_status(400, (const char *const[]){ "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
	                                          "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
	                                          "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
	                                          "POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n",
	                                          NULL });
	/* Fewer body bytes than announced: wait for them. */
	CHECK_EQ_U(parse_s("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", &r),
	           DBK_HTTP_INCOMPLETE);
	/* More than announced: the rest is the next request. */
	CHECK_EQ_U(parse_s("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabc", &r),
	           DBK_HTTP_COMPLETE);
	CHECK_EQ_U(r.body.n, 2);
	CHECK_EQ_U(r.total_len, strlen("POST / HTTP/1.1\r\nContent-Length: "
	                               "2\r\n\r\nab"));
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n"
	                        "abc / HTTP/1.1\r\n\r\n"),
	           0);
}

static void test_transfer_encoding(void)
{
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked"
	                        "\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
	           411);
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, "
	                        "Chunked\r\n\r\n"),
	           501);
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip"
	                        "\r\n\r\n"),
	           501);
	CHECK_EQ_U(parse_status("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	                        "Transfer-Encoding: chunked\r\n\r\n"),
	           400);
}

/* With chunked bodies allowed: chunked alone is taken (any case, over
 * empty list elements), and the head says so; a coding besides it is
 * 501, with a Content-Length still 400. */
static void test_transfer_encoding_allowed(void)
{
	static const char *const refused[] = {
		"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		/* Two fields, one literal: parenthesised, as clang asks. */
		("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n"),
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n",
	};
	const char *ok = "POST / HTTP/1.1\r\nTransfer-Encoding: , CHUNKED ,\r\n\r\n5\r\nhel";
	struct dbk_http_request r;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		CHECK_EQ_U(dbk_http_parse(refused[i], strlen(refused[i]), &LIM_CH, &r),
		           DBK_HTTP_ERROR);
		CHECK_EQ_U(r.status, 501);
	}
	CHECK_EQ_U(dbk_http_parse(ok, strlen(ok), &LIM_CH, &r), DBK_HTTP_INCOMPLETE);
	CHECK(r.chunked && r.keep_alive);
	CHECK_EQ_U(r.head_len, strlen(ok) - strlen("5\r\nhel"));
	CHECK_EQ_U(r.total_len, 0);
	ok = "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
	CHECK_EQ_U(dbk_http_parse(ok, strlen(ok), &LIM_CH, &r), DBK_HTTP_ERROR);
	CHECK_EQ_U(r.status, 400);
	/* RFC 9112 6.1: on HTTP/1.0 the connection ends with the request. */
	ok = "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n";
	CHECK_EQ_U(dbk_http_parse(ok, strlen(ok), &LIM_CH, &r), DBK_HTTP_INCOMPLETE);
	CHECK(r.chunked && !r.keep_alive);
}

static void test_keep_alive_and_expect(void)
{
	struct dbk_http_request r;

	CHECK_EQ_U(parse_s("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &r), DBK_HTTP_COMPLETE);
	CHECK(!r.keep_alive);
	CHECK_EQ_U(parse_s("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n", &r),
	           DBK_HTTP_COMPLETE);
	CHECK(!r.keep_alive);
	CHECK_EQ_U(parse_s("GET / HTTP/1.0\r\n\r\n", &r), DBK_HTTP_COMPLETE);
	CHECK(!r.keep_alive);
	CHECK_EQ_U(r.minor_version, 0);
	CHECK_EQ_U(parse_s("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r),
	           DBK_HTTP_COMPLETE);
	CHECK(r.keep_alive);
	CHECK_EQ_U(parse_s("POST / HTTP/1.1\r\nExpect: 100-continue\r\n"
	                   "Content-Length: 4\r\n\r\n",
	                   &r),
	           DBK_HTTP_INCOMPLETE);
	CHECK(r.expect_continue);
	CHECK(r.head_len > 0);
	CHECK_EQ_U(parse_s("POST / HTTP/1.0\r\nExpect: 100-continue\r\n"
	                   "Content-Length: 4\r\n\r\n",
	                   &r),
	           DBK_HTTP_INCOMPLETE);
	CHECK(!r.expect_continue);
}

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

/* Deterministic mutation fuzzing: whatever the bytes, the parser stays in
 * its buffer and says something coherent. Run under ASan by make sanitize. */
static void test_mutation_fuzz(void)
{
	static const char *seeds[] = {
		("POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 4"
		 "\r\nConnection: keep-alive\r\nExpect: 100-continue\r\n\r\n"
		 "abcd"),
		"GET /metrics HTTP/1.0\nA:b\n\n",
		"\r\nGET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	};
	static const char alphabet[] = "\r\n :,\t\0aZ09/.-HTTP";
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	char buf[256];
	int i, incoherent = 0;

	for (i = 0; i < 200000; i++) {
		const char *s = seeds[rnd(&seed) % 3];
		size_t n = strlen(s), k, m = 1 + rnd(&seed) % 4;
		struct dbk_http_request r;
		enum dbk_http_result res;

		memcpy(buf, s, n);
		for (k = 0; k < m; k++) {
			size_t at = rnd(&seed) % n;

			switch (rnd(&seed) % 3) {
			case 0: buf[at] = (char)rnd(&seed); break;
			case 1: buf[at] = alphabet[rnd(&seed) % (sizeof(alphabet) - 1)]; break;
			default:
				n = at; /* truncate */
				break;
			}
			if (n == 0)
				break;
		}
		res = dbk_http_parse(buf, n, &LIM, &r);
		if (res == DBK_HTTP_COMPLETE && (r.total_len > n || r.head_len == 0 ||
		                                 r.body.p + r.body.n > buf + n || r.method.n == 0))
			incoherent++;
		if (res == DBK_HTTP_ERROR && (r.status < 400 || r.status > 505 || !r.error))
			incoherent++;
	}
	CHECK_EQ_U(incoherent, 0);
}

static void test_reasons(void)
{
	CHECK(strcmp(dbk_http_reason(200), "OK") == 0);
	CHECK(strcmp(dbk_http_reason(411), "Length Required") == 0);
	CHECK(strcmp(dbk_http_reason(431), "Request Header Fields Too Large") == 0);
	CHECK(strcmp(dbk_http_reason(999), "Unknown") == 0);
}

/* ---- Response heads ---- */

static enum dbk_http_result parse_rsp(const char *s, struct dbk_http_response *r)
{
	return dbk_http_parse_response(s, strlen(s), 1024, r);
}

static void test_response_head(void)
{
	struct dbk_http_response r;
	const char *s = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"
	                "\r\nX-Served-By: vllm0\r\nContent-Length: 5\r\n\r\n"
	                "hello";
	size_t i, head = strlen(s) - 5;

	CHECK_EQ_U(parse_rsp(s, &r), DBK_HTTP_COMPLETE);
	CHECK_EQ_U(r.status, 200);
	CHECK_EQ_U(r.minor_version, 1);
	CHECK(dbk_http_slice_eq(r.reason, "OK"));
	CHECK_EQ_U(r.head_len, head);
	CHECK_EQ_U(r.framing, DBK_HTTP_BODY_LENGTH);
	CHECK_EQ_U(r.content_length, 5);
	CHECK(r.keep_alive);
	CHECK(dbk_http_response_header(&r, "x-served-by") &&
	      dbk_http_slice_eq(*dbk_http_response_header(&r, "X-SERVED-BY"), "vllm0"));
	CHECK(dbk_http_response_header(&r, "server") == NULL);
	/* Every proper prefix of the head is incomplete, never an error. */
	for (i = 0; i < head; i++)
		if (dbk_http_parse_response(s, i, 1024, &r) != DBK_HTTP_INCOMPLETE) {
			fprintf(stderr, "  prefix %zu not incomplete\n", i);
			CHECK(0);
		}

	/* No space before an empty reason; a leading empty line; bare LF. */
	CHECK_EQ_U(parse_rsp("\r\nHTTP/1.0 503\nA: b\n\n", &r), DBK_HTTP_COMPLETE);
	CHECK_EQ_U(r.status, 503);
	CHECK_EQ_U(r.reason.n, 0);
	CHECK_EQ_U(r.minor_version, 0);
	CHECK_EQ_U(r.framing, DBK_HTTP_BODY_CLOSE);
	CHECK(!r.keep_alive);
}

/* s is a complete head with this framing and keep_alive; *r for more
 * checks. */
static void expect_framing(const char *s, enum dbk_http_framing framing, bool keep_alive,
                           struct dbk_http_response *r)
{
	int failed = dbk_check_cur_failed;

	CHECK_EQ_U(parse_rsp(s, r), DBK_HTTP_COMPLETE);
	CHECK_EQ_U(r->framing, framing);
	CHECK_EQ_U(r->keep_alive, keep_alive);
	if (dbk_check_cur_failed != failed)
		fprintf(stderr, "    response: %s\n", s);
}

static void test_response_framing(void)
{
	struct dbk_http_response r;

	/* No body: interim, 204, 304, whatever the fields say. */
	expect_framing("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", DBK_HTTP_BODY_NONE, true, &r);
	CHECK_EQ_U(r.status, 100);
	CHECK_EQ_U(r.head_len, 25);
	expect_framing("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", DBK_HTTP_BODY_NONE,
	               true, &r);
	expect_framing("HTTP/1.1 304 Not Modified\r\n\r\n", DBK_HTTP_BODY_NONE, true, &r);

	/* Chunked as the last coding wins over Content-Length. */
	expect_framing("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n"
	               "Transfer-Encoding: gzip, chunked ,\r\n\r\n",
	               DBK_HTTP_BODY_CHUNKED, true, &r);
	expect_framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: "
	               "3\r\n\r\n",
	               DBK_HTTP_BODY_LENGTH, true, &r);
	CHECK_EQ_U(r.content_length, 3);

	/* Connection tokens; HTTP/1.0 persists only when asked to. */
	expect_framing("HTTP/1.1 200 OK\r\nConnection: x, Close\r\nContent-Length: 0\r\n\r\n",
	               DBK_HTTP_BODY_LENGTH, false, &r);
	expect_framing("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
	               DBK_HTTP_BODY_LENGTH, true, &r);
	/* Read to the close: the connection cannot be reused. */
	expect_framing("HTTP/1.1 200 OK\r\n\r\n", DBK_HTTP_BODY_CLOSE, false, &r);
}

static void expect_rsp_error(const char *s, const char *why)
{
	struct dbk_http_response r;

	CHECK_EQ_U(parse_rsp(s, &r), DBK_HTTP_ERROR);
	if (!r.error || strcmp(r.error, why) != 0) {
		fprintf(stderr, "  \"%s\": error \"%s\", want \"%s\"\n", s,
		        r.error ? r.error : "(none)", why);
		CHECK(0);
	}
}

static void test_response_errors(void)
{
	char big[1100];

	expect_rsp_error("HTTX/1.1 200 OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.1 20 OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/2 200\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.2 200 OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.1 200OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.1 2x0 OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.1 099 OK\r\n\r\n", "bad HTTP status line");
	expect_rsp_error("HTTP/1.1 200 O\rK\r\n\r\n", "bare CR");
	expect_rsp_error("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "bad header field name");
	expect_rsp_error("HTTP/1.1 200 OK\r\n folded\r\n\r\n", "obsolete line folding");
	expect_rsp_error("HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", "bare CR");
	expect_rsp_error("\rHTTP/1.1 200 OK\r\n\r\n", "bare CR");
	expect_rsp_error("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	                 "Content-Length: 6\r\n\r\n",
	                 "conflicting Content-Length");
	expect_rsp_error("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length");
	expect_rsp_error("HTTP/1.1 200 OK\r\nContent-Length: "
	                 "99999999999999999999999\r\n\r\n",
	                 "body too large");
	expect_rsp_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	                 "unsupported Transfer-Encoding");

	/* The head bound holds for the status line and for the fields. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "HTTP/1.1 200 ", 13);
	expect_rsp_error(big, "response head too large");
	memcpy(big, "HTTP/1.1 200 OK\r\nA: ", 20);
	expect_rsp_error(big, "response head too large");
}

/* ---- Chunked bodies ---- */

/* Decodes s fed in pieces of `step` bytes; the data goes to out. Returns
 * the result and how many bytes of s were used. */
static enum dbk_http_result dechunk(const char *s, size_t step, char *out, size_t outn,
                                    size_t *used, const char **why)
{
	struct dbk_http_chunked c;
	size_t n = strlen(s), i = 0, o = 0;

	dbk_http_chunked_init(&c);
	while (i < n && c.result == DBK_HTTP_INCOMPLETE) {
		size_t k = n - i < step ? n - i : step;
		size_t j = 0;

		while (j < k && c.result == DBK_HTTP_INCOMPLETE) {
			struct dbk_http_slice d;

			j += dbk_http_chunked_feed(&c, s + i + j, k - j, &d);
			if (d.n > 0 && o + d.n < outn) {
				memcpy(out + o, d.p, d.n);
				o += d.n;
			}
		}
		i += j;
	}
	out[o] = 0;
	*used = i;
	*why = c.error;
	return c.result;
}

static void test_chunked(void)
{
	const char *s = "5;name=\"v\"\r\nhello\r\nA \r\n, world!!!\n"
	                "0\r\nX-Trailer: 1\r\n\r\nNEXT";
	char out[64];
	const char *why;
	size_t step, used;

	for (step = 1; step <= strlen(s); step++) {
		CHECK_EQ_U(dechunk(s, step, out, sizeof(out), &used, &why), DBK_HTTP_COMPLETE);
		CHECK(strcmp(out, "hello, world!!!") == 0);
		CHECK_EQ_U(used, strlen(s) - 4);
	}
	CHECK_EQ_U(dechunk("1a\r\n", 99, out, sizeof(out), &used, &why), DBK_HTTP_INCOMPLETE);
	CHECK_EQ_U(dechunk("0\r\n\r\n", 99, out, sizeof(out), &used, &why), DBK_HTTP_COMPLETE);
	CHECK_EQ_U(out[0], 0);
}

/* A server reading s as the stub does: reads of the first `cut` bytes,
 * then of `step`; the head parsed again after each, the chunked body
 * decoded in place with state kept across reads. After the request is
 * complete, the rest of s is appended (a pipelined request) and *next
 * is where it starts in buf. */
static enum dbk_http_result read_chunked(const char *s, size_t cut, size_t step, char *buf,
                                         struct dbk_http_body *b, size_t *next)
{
	size_t n = strlen(s), i = 0, len = 0;
	enum dbk_http_result r = DBK_HTTP_INCOMPLETE;
	bool started = false;

	while (i < n && r == DBK_HTTP_INCOMPLETE) {
		struct dbk_http_request req;
		size_t k = i < cut ? cut - i : step;

		if (k > n - i)
			k = n - i;
		memcpy(buf + len, s + i, k);
		len += k;
		i += k;
		r = dbk_http_parse(buf, len, &LIM_CH, &req);
		if (r != DBK_HTTP_INCOMPLETE || !req.chunked)
			continue;
		if (!started)
			dbk_http_body_init(b, req.head_len, LIM_CH.max_body_bytes);
		started = true;
		r = dbk_http_body_dechunk(b, buf, &len);
	}
	memcpy(buf + len, s + i, n - i);
	len += n - i;
	buf[len] = '\0';
	*next = b->raw_off;
	return r;
}

static void test_chunked_request(void)
{
	const char *s = "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	                "b;ext=1\r\n{\"prompt\":\"\r\n"
	                "7\r\nab\",\"n\"\r\n3\r\n:1}\r\n0\r\nX-Trailer: t\r\n\r\n"
	                "GET /next HTTP/1.1\r\n\r\n";
	const char *body = "{\"prompt\":\"ab\",\"n\":1}";
	size_t head = strlen("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	char buf[256];
	int bad = 0;

	/* Split in two reads at every byte, and a byte at a time. */
	for (size_t cut = 0; cut <= strlen(s); cut++)
		for (size_t step = 1; step <= strlen(s); step += strlen(s) - 1) {
			struct dbk_http_body b;
			struct dbk_http_request next;
			size_t at = 0;

			if (read_chunked(s, cut, step, buf, &b, &at) != DBK_HTTP_COMPLETE ||
			    b.start != head || b.len != strlen(body) ||
			    memcmp(buf + head, body, b.len) != 0 || at != head + b.len ||
			    dbk_http_parse(buf + at, strlen(buf + at), &LIM_CH, &next) !=
			            DBK_HTTP_COMPLETE ||
			    !dbk_http_slice_eq(next.target, "/next"))
				bad++;
		}
	CHECK_EQ_U(bad, 0);
}

static void test_chunked_request_errors(void)
{
	char big[8192], buf[8300];
	struct dbk_http_body b;
	size_t at, n;

	/* Malformed framing: an error, not too_large (the stub's 400). */
	CHECK_EQ_U(read_chunked("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	                        "3\r\nabcX\r\n",
	                        0, 1, buf, &b, &at),
	           DBK_HTTP_ERROR);
	CHECK(!b.too_large && strcmp(b.chunked.error, "missing CRLF after chunk data") == 0);
	/* A body one byte over max_body_bytes, in two chunks (the stub's 413);
	 * exactly max_body_bytes is taken. */
	for (int over = 0; over <= 1; over++) {
		size_t total = LIM_CH.max_body_bytes + (size_t)over, half = total / 2;

		n = (size_t)snprintf(big, sizeof(big),
		                     "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n",
		                     half);
		memset(big + n, 'x', half);
		n += half;
		n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\n%zx\r\n", total - half);
		memset(big + n, 'y', total - half);
		n += total - half;
		n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\n0\r\n\r\n");
		CHECK(n < sizeof(big));
		CHECK_EQ_U(read_chunked(big, 0, 1000, buf, &b, &at),
		           over ? DBK_HTTP_ERROR : DBK_HTTP_COMPLETE);
		CHECK(b.too_large == (over == 1));
		CHECK(over ? b.len <= LIM_CH.max_body_bytes : b.len == total);
	}
}

static void expect_chunk_error(const char *s, const char *want)
{
	char out[64];
	const char *why;
	size_t used;

	CHECK_EQ_U(dechunk(s, 3, out, sizeof(out), &used, &why), DBK_HTTP_ERROR);
	if (!why || strcmp(why, want) != 0) {
		fprintf(stderr, "  error \"%s\", want \"%s\"\n", why ? why : "(none)", want);
		CHECK(0);
	}
}

static void test_chunked_errors(void)
{
	static char big[DBK_HTTP_MAX_TRAILER + 16];

	expect_chunk_error("zz\r\n", "bad chunk size");
	expect_chunk_error("\r\n", "bad chunk size");
	expect_chunk_error("5 x\r\n", "bad chunk size");
	expect_chunk_error("5\rx", "bad chunk size");
	expect_chunk_error("1234567890abcdef\r\n", "chunk too large");
	expect_chunk_error("3\r\nabcXX\r\n", "missing CRLF after chunk data");
	expect_chunk_error("3\r\nabc\rX", "missing CRLF after chunk data");

	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "1;", 2);
	expect_chunk_error(big, "chunk extension too long");
	memcpy(big, "0\r\nA: ", 6);
	expect_chunk_error(big, "chunked trailer too large");
}

int main(void)
{
	RUN(test_simple_get);
	RUN(test_post_body);
	RUN(test_split_every_offset);
	RUN(test_pipelined);
	RUN(test_limits);
	RUN(test_bad_request_lines);
	RUN(test_bad_fields);
	RUN(test_content_length_cases);
	RUN(test_transfer_encoding);
	RUN(test_transfer_encoding_allowed);
	RUN(test_keep_alive_and_expect);
	RUN(test_mutation_fuzz);
	RUN(test_reasons);
	RUN(test_response_head);
	RUN(test_response_framing);
	RUN(test_response_errors);
	RUN(test_chunked);
	RUN(test_chunked_errors);
	RUN(test_chunked_request);
	RUN(test_chunked_request_errors);
	return CHECK_DONE();
}
