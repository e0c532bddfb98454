#include "resp.h"

#include <string.h>

void dbk_resp_init(struct dbk_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->state = DBK_RESP_HEAD;
}

void dbk_resp_free(struct dbk_resp *r) { dbk_buf_free(&r->head); }

static void set_error(struct dbk_resp *r, const char *why)
{
	r->state = DBK_RESP_ERROR;
	r->err = why;
}

/* X-Served-By ends up in CSV and JSON: printable ASCII only. */
static void copy_served_by(struct dbk_resp *r, const struct dbk_http_slice *v)
{
	size_t i, n = v ? v->n : 0;

	if (n > sizeof(r->served_by) - 1)
		n = sizeof(r->served_by) - 1;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v->p[i];

		r->served_by[i] = (c >= 0x21 && c <= 0x7e && c != ',' && c != '"') ? (char)c : '_';
	}
	r->served_by[n] = 0;
}

static void start_body(struct dbk_resp *r, const struct dbk_http_response *h)
{
	r->status = h->status;
	r->minor = h->minor_version;
	r->keep_alive = h->keep_alive;
	copy_served_by(r, dbk_http_response_header(h, "x-served-by"));
	switch (h->framing) {
	case DBK_HTTP_BODY_NONE: r->state = DBK_RESP_DONE; break;
	case DBK_HTTP_BODY_LENGTH:
		r->remaining = h->content_length;
		r->state = r->remaining ? DBK_RESP_BODY_LENGTH : DBK_RESP_DONE;
		break;
	case DBK_HTTP_BODY_CHUNKED:
		r->chunked = true;
		dbk_http_chunked_init(&r->ch);
		r->state = DBK_RESP_BODY_CHUNKED;
		break;
	case DBK_HTTP_BODY_CLOSE: r->state = DBK_RESP_BODY_CLOSE; break;
	}
}

/* Adds head bytes and parses the head again from its start (it is short,
 * and lib/http1 is stateless). Returns how many of p belong to the head:
 * all when it is still incomplete, fewer once it is complete. */
static size_t feed_head(struct dbk_resp *r, const char *p, size_t n)
{
	struct dbk_http_response h;
	size_t old = r->head.len, take = DBK_RESP_MAX_HEAD - old;

	if (take > n)
		take = n;
	dbk_buf_add(&r->head, p, take);
	if (r->head.oom) {
		set_error(r, "out of memory");
		return take;
	}
	switch (dbk_http_parse_response(r->head.p, r->head.len, DBK_RESP_MAX_HEAD, &h)) {
	case DBK_HTTP_INCOMPLETE: return take;
	case DBK_HTTP_ERROR: set_error(r, h.error); return take;
	case DBK_HTTP_COMPLETE: break;
	}
	dbk_buf_reset(&r->head);
	if (h.status == 101)
		set_error(r, "unexpected 101 Switching Protocols");
	else if (h.status >= 200)
		start_body(r, &h);
	/* Else an interim response (100 Continue, 103 Early Hints): the
	 * real one follows. */
	return h.head_len - old;
}

static size_t feed_chunked(struct dbk_resp *r, const char *p, size_t n, dbk_resp_body_fn fn,
                           void *ctx)
{
	struct dbk_http_slice d;
	size_t used = dbk_http_chunked_feed(&r->ch, p, n, &d);

	if (d.n > 0 && fn && fn(ctx, d.p, d.n) != 0)
		set_error(r, "body rejected");
	else if (r->ch.result == DBK_HTTP_ERROR)
		set_error(r, r->ch.error);
	else if (r->ch.result == DBK_HTTP_COMPLETE)
		r->state = DBK_RESP_DONE;
	return used;
}

size_t dbk_resp_feed(struct dbk_resp *r, const char *p, size_t n, dbk_resp_body_fn fn, void *ctx)
{
	size_t i = 0, k;

	while (i < n && r->state != DBK_RESP_DONE && r->state != DBK_RESP_ERROR) {
		switch (r->state) {
		case DBK_RESP_HEAD: i += feed_head(r, p + i, n - i); break;
		case DBK_RESP_BODY_CHUNKED: i += feed_chunked(r, p + i, n - i, fn, ctx); break;
		default:
			k = n - i;
			if (r->state == DBK_RESP_BODY_LENGTH && k > r->remaining)
				k = (size_t)r->remaining;
			if (fn && fn(ctx, p + i, k) != 0) {
				set_error(r, "body rejected");
				return i + k;
			}
			i += k;
			if (r->state == DBK_RESP_BODY_LENGTH && (r->remaining -= k) == 0)
				r->state = DBK_RESP_DONE;
			break;
		}
	}
	return i;
}

enum dbk_resp_state dbk_resp_eof(struct dbk_resp *r)
{
	if (r->state == DBK_RESP_BODY_CLOSE)
		r->state = DBK_RESP_DONE;
	else if (r->state == DBK_RESP_HEAD && r->head.len == 0)
		set_error(r, "connection closed before a response");
	else if (r->state != DBK_RESP_DONE && r->state != DBK_RESP_ERROR)
		set_error(r, "connection closed mid-response");
	return r->state;
}
