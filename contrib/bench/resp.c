#include "resp.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

void dbk_resp_init(struct dbk_resp *r)
{
	/* The line buffer needs no clearing: line_len says what is valid. */
	memset(r, 0, offsetof(struct dbk_resp, line));
	r->state = DBK_RESP_HEAD;
}

static void set_error(struct dbk_resp *r, const char *why)
{
	r->state = DBK_RESP_ERROR;
	r->err = why;
}

static void trim(const char **p, size_t *n)
{
	while (*n && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

static bool name_is(const char *p, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(p, name, n) == 0;
}

/* Whether the comma-separated list v holds token tok. */
static bool has_token(const char *v, size_t n, const char *tok)
{
	size_t i = 0;

	while (i < n) {
		const char *s;
		size_t start = i, len;

		while (i < n && v[i] != ',')
			i++;
		s = v + start;
		len = i - start;
		trim(&s, &len);
		if (name_is(s, len, tok))
			return true;
		i++;
	}
	return false;
}

/* The last coding of a Transfer-Encoding list. */
static void last_token(const char **v, size_t *n)
{
	size_t i = *n;

	while (i > 0 && (*v)[i - 1] != ',')
		i--;
	*v += i;
	*n -= i;
	trim(v, n);
}

static void status_line(struct dbk_resp *r, const char *p, size_t n)
{
	if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
	    !isdigit((unsigned char)p[11]) || (n > 12 && p[12] != ' ')) {
		set_error(r, "bad HTTP status line");
		return;
	}
	r->minor = p[7] - '0';
	r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	r->keep_alive = r->minor >= 1;
	r->status_seen = true;
}

static void header(struct dbk_resp *r, const char *p, size_t n)
{
	const char *colon = memchr(p, ':', n), *v;
	size_t nl, vl, i;

	if (!colon || colon == p) {
		set_error(r, "bad HTTP header line");
		return;
	}
	nl = (size_t)(colon - p);
	v = colon + 1;
	vl = n - nl - 1;
	trim(&v, &vl);
	if (name_is(p, nl, "content-length")) {
		uint64_t cl = 0;

		if (vl == 0 || vl > 18) {
			set_error(r, "bad Content-Length");
			return;
		}
		for (i = 0; i < vl; i++) {
			if (!isdigit((unsigned char)v[i])) {
				set_error(r, "bad Content-Length");
				return;
			}
			cl = cl * 10 + (uint64_t)(v[i] - '0');
		}
		if (r->has_length && cl != r->content_length) {
			set_error(r, "conflicting Content-Length headers");
			return;
		}
		r->has_length = true;
		r->content_length = cl;
	} else if (name_is(p, nl, "transfer-encoding")) {
		last_token(&v, &vl);
		if (name_is(v, vl, "chunked"))
			r->chunked = true;
		else if (!name_is(v, vl, "identity"))
			set_error(r, "unsupported Transfer-Encoding");
	} else if (name_is(p, nl, "connection")) {
		if (has_token(v, vl, "close"))
			r->keep_alive = false;
		else if (has_token(v, vl, "keep-alive"))
			r->keep_alive = true;
	} else if (name_is(p, nl, "x-served-by")) {
		/* Ends up in CSV and JSON: printable ASCII only. */
		if (vl > sizeof(r->served_by) - 1)
			vl = sizeof(r->served_by) - 1;
		for (i = 0; i < vl; i++) {
			unsigned char c = (unsigned char)v[i];

			r->served_by[i] = (c >= 0x21 && c <= 0x7e && c != ',' &&
			                   c != '"') ? (char)c : '_';
		}
		r->served_by[vl] = 0;
	}
}

static void end_of_head(struct dbk_resp *r)
{
	if (r->status >= 100 && r->status < 200) {
		if (r->status == 101) {
			set_error(r, "unexpected 101 Switching Protocols");
			return;
		}
		/* Interim response (100 Continue, 103 Early Hints): the
		 * real one follows. */
		r->status_seen = false;
		r->head_bytes = 0;
		r->served_by[0] = 0;
		r->has_length = r->chunked = false;
		return;
	}
	if (r->status == 204 || r->status == 304) {
		r->state = DBK_RESP_DONE;
	} else if (r->chunked) {
		r->state = DBK_RESP_CHUNK_SIZE;
	} else if (r->has_length) {
		r->remaining = r->content_length;
		r->state = r->remaining ? DBK_RESP_BODY_LENGTH : DBK_RESP_DONE;
	} else {
		r->state = DBK_RESP_BODY_CLOSE;
		r->keep_alive = false;
	}
}

static void chunk_size(struct dbk_resp *r, const char *p, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n && isxdigit((unsigned char)p[i]); i++) {
		if (i == 15) {
			set_error(r, "chunk too large");
			return;
		}
		v = v * 16 + (uint64_t)(isdigit((unsigned char)p[i])
		                        ? p[i] - '0'
		                        : (tolower((unsigned char)p[i]) - 'a' +
		                           10));
	}
	if (i == 0) {
		set_error(r, "bad chunk size");
		return;
	}
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i < n && p[i] != ';') {
		set_error(r, "bad chunk size");
		return;
	}
	if (v == 0) {
		r->state = DBK_RESP_TRAILER;
		r->head_bytes = 0;
	} else {
		r->remaining = v;
		r->state = DBK_RESP_CHUNK_DATA;
	}
}

static void on_line(struct dbk_resp *r, const char *p, size_t n)
{
	switch (r->state) {
	case DBK_RESP_HEAD:
		if (!r->status_seen) {
			/* RFC 9112 2.2: empty lines before a status line are
			 * tolerated. */
			if (n == 0 && !r->line_dropped)
				return;
			if (r->line_dropped)
				set_error(r, "bad HTTP status line");
			else
				status_line(r, p, n);
		} else if (n == 0 && !r->line_dropped) {
			end_of_head(r);
		} else if (!r->line_dropped) {
			header(r, p, n);
		}
		break;
	case DBK_RESP_CHUNK_SIZE:
		chunk_size(r, p, n);
		break;
	case DBK_RESP_CHUNK_END:
		if (n != 0 || r->line_dropped)
			set_error(r, "missing CRLF after chunk data");
		else
			r->state = DBK_RESP_CHUNK_SIZE;
		break;
	case DBK_RESP_TRAILER:
		if (n == 0 && !r->line_dropped)
			r->state = DBK_RESP_DONE;
		break;
	default:
		break;
	}
}

size_t dbk_resp_feed(struct dbk_resp *r, const char *p, size_t n,
                     dbk_resp_body_fn fn, void *ctx)
{
	size_t i = 0;

	while (i < n && r->state != DBK_RESP_DONE &&
	       r->state != DBK_RESP_ERROR) {
		size_t k;
		char c;

		switch (r->state) {
		case DBK_RESP_BODY_LENGTH:
		case DBK_RESP_CHUNK_DATA:
			k = n - i;
			if (k > r->remaining)
				k = (size_t)r->remaining;
			if (fn && fn(ctx, p + i, k) != 0) {
				set_error(r, "body rejected");
				return i + k;
			}
			i += k;
			r->remaining -= k;
			if (r->remaining == 0)
				r->state = r->state == DBK_RESP_BODY_LENGTH
				           ? DBK_RESP_DONE
				           : DBK_RESP_CHUNK_END;
			break;
		case DBK_RESP_BODY_CLOSE:
			k = n - i;
			if (fn && fn(ctx, p + i, k) != 0) {
				set_error(r, "body rejected");
				return n;
			}
			i = n;
			break;
		default:
			/* Line-oriented states: head, chunk framing, trailer.
			 * They are short, so byte at a time is fine. */
			c = p[i++];
			if ((r->state == DBK_RESP_HEAD ||
			     r->state == DBK_RESP_TRAILER) &&
			    ++r->head_bytes > DBK_RESP_MAX_HEAD) {
				set_error(r, r->state == DBK_RESP_HEAD
				             ? "response head too large"
				             : "chunked trailer too large");
				break;
			}
			if (c == '\n') {
				size_t len = r->line_len;

				if (len && r->line[len - 1] == '\r')
					len--;
				on_line(r, r->line, len);
				r->line_len = 0;
				r->line_dropped = false;
			} else if (r->line_len < sizeof(r->line)) {
				r->line[r->line_len++] = c;
			} else {
				r->line_dropped = true;
			}
			break;
		}
	}
	return i;
}

enum dbk_resp_state dbk_resp_eof(struct dbk_resp *r)
{
	if (r->state == DBK_RESP_BODY_CLOSE)
		r->state = DBK_RESP_DONE;
	else if (r->state == DBK_RESP_HEAD && !r->status_seen &&
	         r->line_len == 0)
		set_error(r, "connection closed before a response");
	else if (r->state != DBK_RESP_DONE && r->state != DBK_RESP_ERROR)
		set_error(r, "connection closed mid-response");
	return r->state;
}
