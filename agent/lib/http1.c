/* Bounded HTTP/1.1 request parser; see http.h for what it accepts. */
#include "lib/http1.h"

#include <stdint.h>
#include <string.h>

static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar / SP / HTAB, obs-text allowed as RFC 9110 5.5 keeps it. */
static bool is_field_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

bool dbk_http_slice_eq(struct dbk_http_slice s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && memcmp(s.p, lit, n) == 0;
}

bool dbk_http_slice_ieq(struct dbk_http_slice s, const char *lit)
{
	size_t i, n = strlen(lit);

	if (s.n != n)
		return false;
	for (i = 0; i < n; i++)
		if (lower((unsigned char)s.p[i]) != lower((unsigned char)lit[i]))
			return false;
	return true;
}

const struct dbk_http_slice *
dbk_http_header(const struct dbk_http_request *req, const char *name)
{
	size_t i;

	for (i = 0; i < req->n_headers; i++)
		if (dbk_http_slice_ieq(req->headers[i].name, name))
			return &req->headers[i].value;
	return NULL;
}

const char *dbk_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

static enum dbk_http_result fail(struct dbk_http_request *req, int status,
                                 const char *why)
{
	req->status = status;
	req->error = why;
	return DBK_HTTP_ERROR;
}

/* One line [*start, nl) without its CR; returns the index after the LF,
 * 0 when no LF is within the first `limit` bytes of buf. */
static size_t next_line(const char *buf, size_t len, size_t pos, size_t limit,
                        struct dbk_http_slice *line)
{
	size_t end = len < limit ? len : limit;
	const char *nl;

	if (pos >= end)
		return 0;
	nl = memchr(buf + pos, '\n', end - pos);
	if (!nl)
		return 0;
	line->p = buf + pos;
	line->n = (size_t)(nl - (buf + pos));
	if (line->n > 0 && line->p[line->n - 1] == '\r')
		line->n--;
	return (size_t)(nl - buf) + 1;
}

static bool has_cr(struct dbk_http_slice s)
{
	return memchr(s.p, '\r', s.n) != NULL;
}

static enum dbk_http_result parse_request_line(struct dbk_http_slice l,
                                               struct dbk_http_request *req)
{
	size_t i = 0, j;
	const char *v;

	while (i < l.n && is_tchar((unsigned char)l.p[i]))
		i++;
	if (i == 0 || i >= l.n || l.p[i] != ' ')
		return fail(req, 400, "bad method");
	req->method.p = l.p;
	req->method.n = i;
	j = ++i;
	while (i < l.n && (unsigned char)l.p[i] > 0x20 &&
	       (unsigned char)l.p[i] < 0x7f)
		i++;
	if (i == j || i >= l.n || l.p[i] != ' ')
		return fail(req, 400, "bad request target");
	req->target.p = l.p + j;
	req->target.n = i - j;
	i++;
	if (l.n - i != 8)
		return fail(req, 400, "bad HTTP version");
	v = l.p + i;
	if (memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
	    v[6] != '.' || v[7] < '0' || v[7] > '9')
		return fail(req, 400, "bad HTTP version");
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return fail(req, 505, "unsupported HTTP version");
	req->minor_version = v[7] - '0';
	return DBK_HTTP_COMPLETE;
}

static enum dbk_http_result parse_field(struct dbk_http_slice l,
                                        struct dbk_http_request *req)
{
	struct dbk_http_header *h;
	size_t i = 0, a, b, colon;

	if (l.p[0] == ' ' || l.p[0] == '\t')
		return fail(req, 400, "obsolete line folding");
	while (i < l.n && is_tchar((unsigned char)l.p[i]))
		i++;
	if (i == 0 || i >= l.n || l.p[i] != ':')
		return fail(req, 400, "bad header field name");
	if (req->n_headers == DBK_HTTP_MAX_HEADERS)
		return fail(req, 431, "too many header fields");
	colon = i;
	a = i + 1;
	b = l.n;
	while (a < b && (l.p[a] == ' ' || l.p[a] == '\t'))
		a++;
	while (b > a && (l.p[b - 1] == ' ' || l.p[b - 1] == '\t'))
		b--;
	for (i = a; i < b; i++)
		if (!is_field_char((unsigned char)l.p[i]))
			return fail(req, 400, "bad header field value");
	h = &req->headers[req->n_headers++];
	h->name.p = l.p;
	h->name.n = colon;
	h->value.p = l.p + a;
	h->value.n = b - a;
	return DBK_HTTP_COMPLETE;
}

/* Calls fn on each comma-separated, OWS-trimmed element of s. */
static void each_token(struct dbk_http_slice s,
                       void (*fn)(struct dbk_http_slice, void *), void *arg)
{
	size_t i = 0;

	while (i <= s.n) {
		size_t a = i, b;

		while (i < s.n && s.p[i] != ',')
			i++;
		b = i;
		while (a < b && (s.p[a] == ' ' || s.p[a] == '\t'))
			a++;
		while (b > a && (s.p[b - 1] == ' ' || s.p[b - 1] == '\t'))
			b--;
		if (b > a) {
			struct dbk_http_slice t = {s.p + a, b - a};

			fn(t, arg);
		}
		i++;
	}
}

struct conn_tokens {
	bool close, keep_alive;
};

static void on_conn_token(struct dbk_http_slice t, void *arg)
{
	struct conn_tokens *ct = arg;

	if (dbk_http_slice_ieq(t, "close"))
		ct->close = true;
	else if (dbk_http_slice_ieq(t, "keep-alive"))
		ct->keep_alive = true;
}

/* 0 ok, 400 malformed, 413 above max. */
static int parse_length(struct dbk_http_slice v, size_t max, size_t *out)
{
	size_t i, n = 0;

	if (v.n == 0)
		return 400;
	for (i = 0; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return 400;
		if (n > (SIZE_MAX - 9) / 10)
			return 413;
		n = n * 10 + (size_t)(v.p[i] - '0');
	}
	*out = n;
	return n > max ? 413 : 0;
}

static enum dbk_http_result head_semantics(const struct dbk_http_limits *lim,
                                           struct dbk_http_request *req)
{
	struct conn_tokens ct = {false, false};
	bool have_cl = false, have_te = false, te_chunked = false;
	size_t i, cl = 0;

	for (i = 0; i < req->n_headers; i++) {
		struct dbk_http_slice nm = req->headers[i].name;
		struct dbk_http_slice v = req->headers[i].value;

		if (dbk_http_slice_ieq(nm, "content-length")) {
			size_t n = 0;
			int st = parse_length(v, lim->max_body_bytes, &n);

			if (st == 400)
				return fail(req, 400, "bad Content-Length");
			if (have_cl && n != cl)
				return fail(req, 400,
				            "conflicting Content-Length");
			if (st == 413)
				return fail(req, 413, "body too large");
			have_cl = true;
			cl = n;
		} else if (dbk_http_slice_ieq(nm, "transfer-encoding")) {
			/* Chunked is the last coding when present at all. */
			size_t k = v.n;

			have_te = true;
			while (k > 0 && (v.p[k - 1] == ' ' || v.p[k - 1] == ','))
				k--;
			te_chunked = k >= 7 &&
			             dbk_http_slice_ieq((struct dbk_http_slice){
			                                        v.p + k - 7, 7},
			                                "chunked");
		} else if (dbk_http_slice_ieq(nm, "connection")) {
			each_token(v, on_conn_token, &ct);
		} else if (dbk_http_slice_ieq(nm, "expect")) {
			if (req->minor_version == 1 &&
			    dbk_http_slice_ieq(v, "100-continue"))
				req->expect_continue = true;
		}
	}
	if (have_te && have_cl)
		return fail(req, 400, "Transfer-Encoding with Content-Length");
	if (have_te)
		return te_chunked ? fail(req, 411, "chunked request body; "
		                                   "send a Content-Length")
		                  : fail(req, 501, "unsupported transfer coding");
	req->keep_alive = req->minor_version == 1 ? !ct.close
	                                          : (ct.keep_alive && !ct.close);
	req->content_length = cl;
	req->total_len = req->head_len + cl;
	return DBK_HTTP_COMPLETE;
}

enum dbk_http_result dbk_http_parse(const char *buf, size_t len,
                                    const struct dbk_http_limits *lim,
                                    struct dbk_http_request *req)
{
	size_t pos = 0, next, limit = lim->max_head_bytes;
	struct dbk_http_slice line;
	enum dbk_http_result r;

	memset(req, 0, sizeof(*req));

	/* Leading empty lines, counted against the head limit. */
	while (pos < len && pos < limit) {
		if (buf[pos] == '\n') {
			pos++;
		} else if (buf[pos] == '\r') {
			if (pos + 1 >= len)
				return DBK_HTTP_INCOMPLETE;
			if (buf[pos + 1] != '\n')
				return fail(req, 400, "bare CR");
			pos += 2;
		} else {
			break;
		}
	}
	if (pos >= limit)
		return fail(req, 431, "request head too large");

	next = next_line(buf, len, pos, limit, &line);
	if (next == 0)
		return len >= limit ? fail(req, 414, "request line too long")
		                    : DBK_HTTP_INCOMPLETE;
	if (has_cr(line))
		return fail(req, 400, "bare CR");
	r = parse_request_line(line, req);
	if (r != DBK_HTTP_COMPLETE)
		return r;
	pos = next;

	for (;;) {
		next = next_line(buf, len, pos, limit, &line);
		if (next == 0) {
			if (len >= limit)
				return fail(req, 431, "request head too large");
			return DBK_HTTP_INCOMPLETE;
		}
		pos = next;
		if (line.n == 0)
			break;
		if (has_cr(line))
			return fail(req, 400, "bare CR");
		r = parse_field(line, req);
		if (r != DBK_HTTP_COMPLETE)
			return r;
	}
	req->head_len = pos;
	r = head_semantics(lim, req);
	if (r != DBK_HTTP_COMPLETE)
		return r;
	if (len < req->total_len)
		return DBK_HTTP_INCOMPLETE;
	req->body.p = buf + req->head_len;
	req->body.n = req->content_length;
	return DBK_HTTP_COMPLETE;
}
