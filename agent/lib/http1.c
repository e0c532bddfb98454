/* Bounded HTTP/1.1 message parser; see http1.h for what it accepts. */
#include "lib/http1.h"

#include <stdint.h>
#include <string.h>

static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar / SP / HTAB, obs-text allowed as RFC 9110 5.5 keeps it. */
static bool is_field_char(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static struct dbk_http_slice trim_ows(struct dbk_http_slice s)
{
	while (s.n > 0 && is_ows(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n > 0 && is_ows(s.p[s.n - 1]))
		s.n--;
	return s;
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

static const struct dbk_http_slice *find_header(const struct dbk_http_header *h, size_t n,
                                                const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (dbk_http_slice_ieq(h[i].name, name))
			return &h[i].value;
	return NULL;
}

const struct dbk_http_slice *dbk_http_header(const struct dbk_http_request *req, const char *name)
{
	return find_header(req->headers, req->n_headers, name);
}

const char *dbk_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
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

static enum dbk_http_result fail(struct dbk_http_request *req, int status, const char *why)
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

static bool has_cr(struct dbk_http_slice s) { return memchr(s.p, '\r', s.n) != NULL; }

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
	while (i < l.n && (unsigned char)l.p[i] > 0x20 && (unsigned char)l.p[i] < 0x7f)
		i++;
	if (i == j || i >= l.n || l.p[i] != ' ')
		return fail(req, 400, "bad request target");
	req->target.p = l.p + j;
	req->target.n = i - j;
	i++;
	if (l.n - i != 8)
		return fail(req, 400, "bad HTTP version");
	v = l.p + i;
	if (memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0' ||
	    v[7] > '9')
		return fail(req, 400, "bad HTTP version");
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return fail(req, 505, "unsupported HTTP version");
	req->minor_version = v[7] - '0';
	return DBK_HTTP_COMPLETE;
}

/* One "name: value" line into hdrs[*n]; 0, or the status to refuse with
 * (400 malformed, 431 one field too many) and why. */
static int parse_field(struct dbk_http_slice l, struct dbk_http_header *hdrs, size_t *n,
                       const char **why)
{
	struct dbk_http_header *h;
	size_t i = 0;

	*why = NULL;
	if (l.p[0] == ' ' || l.p[0] == '\t')
		*why = "obsolete line folding";
	while (!*why && i < l.n && is_tchar((unsigned char)l.p[i]))
		i++;
	if (!*why && (i == 0 || i >= l.n || l.p[i] != ':'))
		*why = "bad header field name";
	if (*why)
		return 400;
	if (*n == DBK_HTTP_MAX_HEADERS) {
		*why = "too many header fields";
		return 431;
	}
	h = &hdrs[*n];
	h->name = (struct dbk_http_slice){ l.p, i };
	h->value = trim_ows((struct dbk_http_slice){ l.p + i + 1, l.n - i - 1 });
	for (i = 0; i < h->value.n; i++)
		if (!is_field_char((unsigned char)h->value.p[i])) {
			*why = "bad header field value";
			return 400;
		}
	(*n)++;
	return 0;
}

enum start_result {
	START_OK,
	START_INCOMPLETE,
	START_BARE_CR,
	START_HEAD_TOO_LARGE, /* empty lines alone fill the head limit */
	START_LINE_TOO_LONG,
};

/* The start line, after the empty lines RFC 9112 2.2 lets a recipient
 * ignore (counted against the head limit): START_OK with *line, and
 * *next the offset after it. */
static enum start_result start_line(const char *buf, size_t len, size_t limit,
                                    struct dbk_http_slice *line, size_t *next)
{
	size_t i = 0;

	while (i < len && i < limit) {
		if (buf[i] == '\n')
			i++;
		else if (buf[i] != '\r')
			break;
		else if (i + 1 >= len)
			return START_INCOMPLETE;
		else if (buf[i + 1] != '\n')
			return START_BARE_CR;
		else
			i += 2;
	}
	if (i >= limit)
		return START_HEAD_TOO_LARGE;
	*next = next_line(buf, len, i, limit, line);
	if (*next == 0)
		return len >= limit ? START_LINE_TOO_LONG : START_INCOMPLETE;
	return has_cr(*line) ? START_BARE_CR : START_OK;
}

/* The status a server refuses a bad start with, and why: for a request
 * the line alone too long is 414, a head too large 431. A client only
 * reports the reason. */
static int start_error(enum start_result sr, bool request, const char **why)
{
	if (sr == START_BARE_CR) {
		*why = "bare CR";
		return 400;
	}
	if (sr == START_LINE_TOO_LONG && request) {
		*why = "request line too long";
		return 414;
	}
	*why = request ? "request head too large" : "response head too large";
	return 431;
}

/* The field lines from pos up to and including the blank line. 0 with
 * *head_len set, -1 incomplete, or the status to refuse with and why
 * (too_large when the head passes limit). */
static int parse_fields(const char *buf, size_t len, size_t pos, size_t limit,
                        const char *too_large, struct dbk_http_header *hdrs, size_t *n,
                        size_t *head_len, const char **why)
{
	struct dbk_http_slice line;
	size_t next;
	int st;

	for (;;) {
		next = next_line(buf, len, pos, limit, &line);
		if (next == 0) {
			if (len < limit)
				return -1;
			*why = too_large;
			return 431;
		}
		pos = next;
		if (line.n == 0)
			break;
		if (has_cr(line)) {
			*why = "bare CR";
			return 400;
		}
		st = parse_field(line, hdrs, n, why);
		if (st != 0)
			return st;
	}
	*head_len = pos;
	return 0;
}

/* The element of comma-separated list s that starts at *i, trimmed;
 * *i moves past it and its comma. Call while *i <= s.n. */
static struct dbk_http_slice next_element(struct dbk_http_slice s, size_t *i)
{
	size_t a = *i;

	while (*i < s.n && s.p[*i] != ',')
		(*i)++;
	struct dbk_http_slice e = trim_ows((struct dbk_http_slice){ s.p + a, *i - a });
	(*i)++;
	return e;
}

/* Whether the comma-separated list s holds token tok (any case). */
static bool has_token(struct dbk_http_slice s, const char *tok)
{
	for (size_t i = 0; i <= s.n;)
		if (dbk_http_slice_ieq(next_element(s, &i), tok))
			return true;
	return false;
}

/* The last element of a comma-separated list, ignoring empty ones: the
 * transfer coding applied last, the one that frames the body. */
static struct dbk_http_slice last_element(struct dbk_http_slice s)
{
	size_t i;

	while (s.n > 0 && (is_ows(s.p[s.n - 1]) || s.p[s.n - 1] == ','))
		s.n--;
	i = s.n;
	while (i > 0 && s.p[i - 1] != ',')
		i--;
	return trim_ows((struct dbk_http_slice){ s.p + i, s.n - i });
}

/* How many codings a Transfer-Encoding value lists (empty elements are
 * not codings). */
static size_t count_elements(struct dbk_http_slice s)
{
	size_t n = 0;

	for (size_t i = 0; i <= s.n;)
		n += next_element(s, &i).n > 0;
	return n;
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

/* What the framing fields of a head (requests and responses alike) say. */
struct framing {
	bool have_cl, have_te, close, keep_alive;
	size_t cl;
	size_t te_codings;             /* in every Transfer-Encoding field */
	struct dbk_http_slice te_last; /* last coding of the last field */
};

/* Reads Content-Length, Transfer-Encoding and Connection. 0, or the
 * status to refuse with and why: 400 malformed or conflicting lengths,
 * 413 a length above max_body. */
static int scan_framing(const struct dbk_http_header *h, size_t n, size_t max_body,
                        struct framing *f, const char **why)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		struct dbk_http_slice nm = h[i].name, v = h[i].value;

		if (dbk_http_slice_ieq(nm, "content-length")) {
			size_t len = 0;
			int st = parse_length(v, max_body, &len);

			*why = "bad Content-Length";
			if (st == 400)
				return 400;
			*why = "conflicting Content-Length";
			if (f->have_cl && len != f->cl)
				return 400;
			*why = "body too large";
			if (st == 413)
				return 413;
			f->have_cl = true;
			f->cl = len;
		} else if (dbk_http_slice_ieq(nm, "transfer-encoding")) {
			f->have_te = true;
			f->te_last = last_element(v);
			f->te_codings += count_elements(v);
		} else if (dbk_http_slice_ieq(nm, "connection")) {
			f->close |= has_token(v, "close");
			f->keep_alive |= has_token(v, "keep-alive");
		}
	}
	*why = NULL;
	return 0;
}

/* HTTP/1.1 persists unless told to close; HTTP/1.0 only when asked to. */
static bool persists(const struct framing *f, int minor)
{
	return minor == 1 ? !f->close : (f->keep_alive && !f->close);
}

static enum dbk_http_result head_semantics(const struct dbk_http_limits *lim,
                                           struct dbk_http_request *req)
{
	struct framing f;
	const char *why;
	size_t i;
	int st = scan_framing(req->headers, req->n_headers, lim->max_body_bytes, &f, &why);

	if (st != 0)
		return fail(req, st, why);
	for (i = 0; i < req->n_headers; i++)
		if (req->minor_version == 1 && dbk_http_slice_ieq(req->headers[i].name, "expect") &&
		    dbk_http_slice_ieq(req->headers[i].value, "100-continue"))
			req->expect_continue = true;
	if (f.have_te && f.have_cl)
		return fail(req, 400, "Transfer-Encoding with Content-Length");
	/* Chunked alone, as uvicorn's h11 takes it: a coding under it
	 * ("gzip, chunked") is one this server could not undo. */
	if (f.have_te && (!dbk_http_slice_ieq(f.te_last, "chunked") || f.te_codings != 1))
		return fail(req, 501, "unsupported transfer coding");
	if (f.have_te && !lim->chunked)
		return fail(req, 411, "chunked request body; send a Content-Length");
	req->chunked = f.have_te;
	/* RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message is framing
	 * to distrust, so that connection ends with the request. */
	req->keep_alive = persists(&f, req->minor_version) &&
	                  !(req->chunked && req->minor_version == 0);
	if (req->chunked)
		return DBK_HTTP_COMPLETE;
	req->content_length = f.cl;
	req->total_len = req->head_len + f.cl;
	return DBK_HTTP_COMPLETE;
}

enum dbk_http_result dbk_http_parse(const char *buf, size_t len, const struct dbk_http_limits *lim,
                                    struct dbk_http_request *req)
{
	size_t next = 0, limit = lim->max_head_bytes;
	struct dbk_http_slice line;
	enum dbk_http_result r;
	enum start_result sr;
	const char *why = NULL;
	int st;

	memset(req, 0, sizeof(*req));
	sr = start_line(buf, len, limit, &line, &next);
	if (sr == START_INCOMPLETE)
		return DBK_HTTP_INCOMPLETE;
	if (sr != START_OK) {
		st = start_error(sr, true, &why);
		return fail(req, st, why);
	}
	r = parse_request_line(line, req);
	if (r != DBK_HTTP_COMPLETE)
		return r;
	st = parse_fields(buf, len, next, limit, "request head too large", req->headers,
	                  &req->n_headers, &req->head_len, &why);
	if (st != 0)
		return st < 0 ? DBK_HTTP_INCOMPLETE : fail(req, st, why);
	r = head_semantics(lim, req);
	if (r != DBK_HTTP_COMPLETE || req->chunked)
		return r == DBK_HTTP_COMPLETE ? DBK_HTTP_INCOMPLETE : r;
	if (len < req->total_len)
		return DBK_HTTP_INCOMPLETE;
	req->body.p = buf + req->head_len;
	req->body.n = req->content_length;
	return DBK_HTTP_COMPLETE;
}

/* ---- Responses ---- */

/* "HTTP/1.x SP 3DIGIT [SP reason]": the space before an empty reason is
 * optional, as most clients read it. */
static bool parse_status_line(struct dbk_http_slice l, struct dbk_http_response *rsp)
{
	const char *p = l.p;
	size_t i;

	if (l.n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ' || (l.n > 12 && p[12] != ' '))
		return false;
	for (i = 9; i < 12; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	rsp->minor_version = p[7] - '0';
	rsp->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (rsp->status < 100)
		return false;
	rsp->reason = l.n > 12 ? (struct dbk_http_slice){ p + 13, l.n - 13 }
	                       : (struct dbk_http_slice){ p + 12, 0 };
	for (i = 0; i < rsp->reason.n; i++)
		if (!is_field_char((unsigned char)rsp->reason.p[i]))
			return false;
	return true;
}

static enum dbk_http_result rsp_fail(struct dbk_http_response *rsp, const char *why)
{
	rsp->error = why;
	return DBK_HTTP_ERROR;
}

/* RFC 9112 6.3, from the client's side: no body for 1xx, 204 and 304;
 * chunked when it is the last transfer coding (it wins over a
 * Content-Length); then Content-Length; else the body runs to the close.
 * A coding other than chunked (or the legacy "identity") is refused:
 * nothing here could undo it. */
static enum dbk_http_result response_framing(struct dbk_http_response *rsp)
{
	struct framing f;
	const char *why;

	if (scan_framing(rsp->headers, rsp->n_headers, SIZE_MAX, &f, &why))
		return rsp_fail(rsp, why);
	rsp->keep_alive = persists(&f, rsp->minor_version);
	if (rsp->status < 200 || rsp->status == 204 || rsp->status == 304) {
		rsp->framing = DBK_HTTP_BODY_NONE;
	} else if (f.have_te && dbk_http_slice_ieq(f.te_last, "chunked")) {
		rsp->framing = DBK_HTTP_BODY_CHUNKED;
	} else if (f.have_te && !dbk_http_slice_ieq(f.te_last, "identity")) {
		return rsp_fail(rsp, "unsupported Transfer-Encoding");
	} else if (f.have_cl) {
		rsp->framing = DBK_HTTP_BODY_LENGTH;
		rsp->content_length = f.cl;
	} else {
		rsp->framing = DBK_HTTP_BODY_CLOSE;
		rsp->keep_alive = false;
	}
	return DBK_HTTP_COMPLETE;
}

enum dbk_http_result dbk_http_parse_response(const char *buf, size_t len, size_t max_head_bytes,
                                             struct dbk_http_response *rsp)
{
	size_t next = 0;
	struct dbk_http_slice line;
	enum start_result sr;
	const char *why = NULL;
	int st;

	memset(rsp, 0, sizeof(*rsp));
	sr = start_line(buf, len, max_head_bytes, &line, &next);
	if (sr == START_INCOMPLETE)
		return DBK_HTTP_INCOMPLETE;
	if (sr != START_OK) {
		start_error(sr, false, &why);
		return rsp_fail(rsp, why);
	}
	if (!parse_status_line(line, rsp))
		return rsp_fail(rsp, "bad HTTP status line");
	st = parse_fields(buf, len, next, max_head_bytes, "response head too large", rsp->headers,
	                  &rsp->n_headers, &rsp->head_len, &why);
	if (st != 0)
		return st < 0 ? DBK_HTTP_INCOMPLETE : rsp_fail(rsp, why);
	return response_framing(rsp);
}

const struct dbk_http_slice *dbk_http_response_header(const struct dbk_http_response *rsp,
                                                      const char *name)
{
	return find_header(rsp->headers, rsp->n_headers, name);
}
