/* Fuzzes the HTTP/1.1 response side of agent/lib/http1.h: the head parser
 * (dbk_http_parse_response) and the chunked decoder
 * (dbk_http_chunked_feed), as the benchmark client reads a response.
 *
 * Input: one parameter byte b, then the bytes a server sent.
 *   b & 3:        max_head_bytes {65536 (the bench's), 64, 256, 1024}
 *   (b >> 2) & 7: the chunked body is fed in pieces of 1 + that many
 *                 bytes (and again byte by byte, to compare)
 *
 * Checked:
 * - COMPLETE: head_len <= len and <= max_head_bytes; status 100..999;
 *   minor version 0 or 1; every slice inside the head; at most
 *   DBK_HTTP_MAX_HEADERS fields; framing one of the four, NONE for 1xx,
 *   204 and 304, CLOSE never keep-alive; the head alone parses the same,
 *   and every strict prefix of it is INCOMPLETE, never an error;
 *   dbk_http_response_header finds what a scan finds;
 * - ERROR: a reason;
 * - chunked (the body after a chunked head, else the whole input): the
 *   data spans lie in what was fed, the bytes used never exceed it, and
 *   the decoded bytes, the result and the bytes used do not depend on how
 *   the input was split. */
#include "fuzz.h"
#include "lib/http1.h"

static bool same_head(const struct dbk_http_response *a, const struct dbk_http_response *b)
{
	return a->status == b->status && a->minor_version == b->minor_version &&
	       a->n_headers == b->n_headers && a->head_len == b->head_len &&
	       a->framing == b->framing && a->keep_alive == b->keep_alive &&
	       a->content_length == b->content_length && a->reason.p == b->reason.p &&
	       a->reason.n == b->reason.n;
}

static void check_head(const char *buf, size_t len, size_t max, const struct dbk_http_response *r)
{
	static struct dbk_http_response r2;

	FUZZ_CHECK(r->head_len > 0 && r->head_len <= len && r->head_len <= max);
	FUZZ_CHECK(r->status >= 100 && r->status <= 999);
	FUZZ_CHECK(r->minor_version == 0 || r->minor_version == 1);
	FUZZ_CHECK(r->n_headers <= DBK_HTTP_MAX_HEADERS);
	FUZZ_CHECK(fuzz_inside(r->reason.p, r->reason.n, buf, r->head_len));
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct dbk_http_header *h = &r->headers[i];

		FUZZ_CHECK(h->name.n > 0);
		FUZZ_CHECK(fuzz_inside(h->name.p, h->name.n, buf, r->head_len));
		FUZZ_CHECK(fuzz_inside(h->value.p, h->value.n, buf, r->head_len));
		FUZZ_CHECK(dbk_http_response_header(r, "x-served-by") ||
		           !dbk_http_slice_ieq(h->name, "x-served-by"));
	}
	FUZZ_CHECK(r->framing >= DBK_HTTP_BODY_NONE && r->framing <= DBK_HTTP_BODY_CLOSE);
	if (r->status < 200 || r->status == 204 || r->status == 304)
		FUZZ_CHECK(r->framing == DBK_HTTP_BODY_NONE);
	if (r->framing == DBK_HTTP_BODY_CLOSE)
		FUZZ_CHECK(!r->keep_alive);

	FUZZ_CHECK(dbk_http_parse_response(buf, r->head_len, max, &r2) == DBK_HTTP_COMPLETE);
	FUZZ_CHECK(same_head(r, &r2));
	for (size_t n = 0; n < r->head_len; n++)
		FUZZ_CHECK(dbk_http_parse_response(buf, n, max, &r2) == DBK_HTTP_INCOMPLETE);
}

/* What one feeding of a chunked body gave: a checksum of the data (order
 * matters), its length, the result and the bytes used. */
struct dechunked {
	uint64_t sum;
	size_t n_data, used;
	enum dbk_http_result result;
};

static struct dechunked dechunk(const char *p, size_t n, size_t step)
{
	struct dbk_http_chunked c;
	struct dechunked out = { 0, 0, 0, DBK_HTTP_INCOMPLETE };
	size_t i = 0;

	dbk_http_chunked_init(&c);
	while (i < n && c.result == DBK_HTTP_INCOMPLETE) {
		size_t k = n - i < step ? n - i : step, j = 0;

		while (j < k && c.result == DBK_HTTP_INCOMPLETE) {
			struct dbk_http_slice d;
			size_t u = dbk_http_chunked_feed(&c, p + i + j, k - j, &d);

			FUZZ_CHECK(u <= k - j);
			FUZZ_CHECK(u > 0 || c.result != DBK_HTTP_INCOMPLETE);
			FUZZ_CHECK(fuzz_inside(d.p, d.n, p + i + j, u));
			for (size_t m = 0; m < d.n; m++)
				out.sum = out.sum * 1099511628211u + (unsigned char)d.p[m];
			out.n_data += d.n;
			j += u;
		}
		i += j;
	}
	if (c.result == DBK_HTTP_ERROR)
		FUZZ_CHECK(c.error != NULL && c.error[0]);
	out.used = i;
	out.result = c.result;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t heads[4] = { 64 * 1024, 64, 256, 1024 };
	static struct dbk_http_response r;
	struct fuzz_in in = { data, size };
	uint8_t b = fuzz_u8(&in);
	size_t max = heads[b & 3], step = 1 + ((b >> 2) & 7), len = in.n;
	char *buf = (char *)fuzz_dup(in.p, len);
	size_t body = 0;
	struct dechunked one, many;

	switch (dbk_http_parse_response(buf, len, max, &r)) {
	case DBK_HTTP_COMPLETE:
		check_head(buf, len, max, &r);
		if (r.framing == DBK_HTTP_BODY_CHUNKED)
			body = r.head_len;
		break;
	case DBK_HTTP_ERROR: FUZZ_CHECK(r.error != NULL && r.error[0]); break;
	case DBK_HTTP_INCOMPLETE: break;
	default: FUZZ_CHECK(!"result out of range");
	}

	many = dechunk(buf + body, len - body, step);
	one = dechunk(buf + body, len - body, 1);
	FUZZ_CHECK(many.used <= len - body);
	FUZZ_CHECK(one.result == many.result && one.used == many.used &&
	           one.n_data == many.n_data && one.sum == many.sum);
	free(buf);
	return 0;
}
