#include "lib/http_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/conn.h"

/* One connection, apart from the client: a request's end may close it
 * and start the next on a new one inside the same callback, so each is
 * its own allocation, detached from the client when it closes. */
struct dbk_hc_link {
	struct dbk_conn conn;
	struct dbk_hc *hc; /* NULL once the client let go of it */
};

static const struct dbk_conn_ops link_ops;

/* Lets go of the connection; its answer buffer comes back to the
 * client. */
static void close_conn(struct dbk_hc *c)
{
	struct dbk_hc_link *l = c->link;

	if (!l)
		return;
	c->link = NULL;
	l->hc = NULL;
	c->in = l->conn.in;
	dbk_buf_init(&l->conn.in);
	dbk_conn_close(&l->conn, DBK_CONN_LOCAL);
}

/* The buffer holding the answer: the connection's while there is one. */
static struct dbk_buf *answer_buf(struct dbk_hc *c) { return c->link ? &c->link->conn.in : &c->in; }

static void finish(struct dbk_hc *c, const struct dbk_hc_result *r, bool keep)
{
	c->busy = false;
	if (!keep || c->moved || c->once)
		close_conn(c);
	c->moved = false;
	/* Last: done may start the next request. */
	c->done(c->arg, r);
}

static void fail(struct dbk_hc *c, const char *why)
{
	struct dbk_hc_result r = { .error = why, .too_large = c->ans.too_large };

	finish(c, &r, false);
}

/* A new connection, the request queued on it; the client's buffer goes
 * with it. */
static int start_connect(struct dbk_hc *c)
{
	struct dbk_hc_link *l = calloc(1, sizeof(*l));

	if (!l) {
		snprintf(c->err, sizeof(c->err), "connect: out of memory");
		return -1;
	}
	if (dbk_conn_connect(&l->conn, c->loop, &c->sa, c->salen, &link_ops, l, SIZE_MAX / 4) < 0) {
		snprintf(c->err, sizeof(c->err), "connect: %s", strerror(errno));
		free(l);
		return -1;
	}
	l->hc = c;
	l->conn.keep_in = true;
	l->conn.in = c->in;
	dbk_buf_init(&c->in);
	c->link = l;
	c->connects++;
	c->reused = false;
	dbk_buf_add(&l->conn.out, c->req, c->req_len);
	return 0;
}

/* The server closed or reset a connection that had carried a request
 * before, and no byte of this answer came: it timed the connection out
 * as we sent. Try once more on a new one. */
static bool retry(struct dbk_hc *c)
{
	if (!c->reused || c->retried || answer_buf(c)->len > 0)
		return false;
	c->retried = true;
	close_conn(c);
	if (start_connect(c) < 0) {
		fail(c, c->err);
		return true;
	}
	dbk_conn_update(&c->link->conn);
	return true;
}

static void io_error(struct dbk_hc *c, const char *what, int e)
{
	if ((e == 0 || e == ECONNRESET || e == EPIPE) && retry(c))
		return;
	if (e == 0)
		snprintf(c->err, sizeof(c->err), "%s", what);
	else
		snprintf(c->err, sizeof(c->err), "%s: %s", what, strerror(e));
	fail(c, c->err);
}

/* ---- the answer, apart from the socket ---- */

static enum dbk_http_result too_big(struct dbk_hc_answer *a)
{
	snprintf(a->err, sizeof(a->err), "body too large (over %zu bytes)", a->max_body);
	a->too_large = true;
	return DBK_HTTP_ERROR;
}

static enum dbk_http_result parse_head(struct dbk_hc_answer *a, struct dbk_buf *in)
{
	for (;;) {
		enum dbk_http_result r = dbk_http_parse_response(in->p, in->len, DBK_HC_MAX_HEAD,
		                                                 &a->rsp);

		if (r == DBK_HTTP_INCOMPLETE)
			return r;
		if (r == DBK_HTTP_ERROR) {
			snprintf(a->err, sizeof(a->err), "bad response: %s", a->rsp.error);
			return r;
		}
		if (a->rsp.status >= 200)
			break;
		/* An interim answer (100 Continue): the real one follows. */
		dbk_buf_consume(in, a->rsp.head_len);
	}
	a->head_done = true;
	if (a->rsp.framing == DBK_HTTP_BODY_LENGTH && a->rsp.content_length > a->max_body)
		return too_big(a);
	dbk_http_body_init(&a->body, a->rsp.head_len, a->max_body);
	return DBK_HTTP_COMPLETE;
}

static enum dbk_http_result decode_chunks(struct dbk_hc_answer *a, struct dbk_buf *in)
{
	enum dbk_http_result r = dbk_http_body_dechunk(&a->body, in->p, &in->len);

	if (r == DBK_HTTP_ERROR && a->body.too_large)
		return too_big(a);
	if (r == DBK_HTTP_ERROR)
		snprintf(a->err, sizeof(a->err), "bad chunked body: %s", a->body.chunked.error);
	return r;
}

void dbk_hc_answer_init(struct dbk_hc_answer *a, size_t max_body)
{
	a->max_body = max_body;
	a->head_done = false;
	a->too_large = false;
	a->err[0] = '\0';
}

enum dbk_http_result dbk_hc_answer_step(struct dbk_hc_answer *a, struct dbk_buf *in, bool eof,
                                        struct dbk_hc_result *res, size_t *end)
{
	enum dbk_http_result r;

	if (!a->head_done && (r = parse_head(a, in)) != DBK_HTTP_COMPLETE)
		return r;
	memset(res, 0, sizeof(*res));
	res->status = a->rsp.status;
	switch (a->rsp.framing) {
	case DBK_HTTP_BODY_NONE: *end = a->rsp.head_len; break;
	case DBK_HTTP_BODY_LENGTH:
		*end = a->rsp.head_len + a->rsp.content_length;
		if (in->len < *end)
			return DBK_HTTP_INCOMPLETE;
		res->body_len = a->rsp.content_length;
		break;
	case DBK_HTTP_BODY_CHUNKED:
		if ((r = decode_chunks(a, in)) != DBK_HTTP_COMPLETE)
			return r;
		res->body_len = a->body.len;
		*end = a->body.raw_off;
		break;
	default: /* until the server closes */
		res->body_len = in->len - a->rsp.head_len;
		if (res->body_len > a->max_body)
			return too_big(a);
		if (!eof)
			return DBK_HTTP_INCOMPLETE;
		*end = in->len;
		break;
	}
	/* in->p[in->len] is always there (lib/buf keeps room for a NUL). */
	in->p[*end] = '\0';
	res->body = in->p + a->rsp.head_len;
	return DBK_HTTP_COMPLETE;
}

/* ---- the socket ---- */

/* Whether the answer is complete, after more bytes came (eof: the server
 * closed). Returns false when it is still under way; otherwise done was
 * called. */
static bool advance(struct dbk_hc *c, bool eof)
{
	struct dbk_buf *in = answer_buf(c);
	struct dbk_hc_result r;
	size_t end = 0;

	switch (dbk_hc_answer_step(&c->ans, in, eof, &r, &end)) {
	case DBK_HTTP_INCOMPLETE: return false;
	case DBK_HTTP_ERROR: fail(c, c->ans.err); return true;
	default: break;
	}
	/* Bytes past the answer were never asked for: do not trust the
	 * connection with another request. */
	finish(c, &r, c->ans.rsp.keep_alive && in->len == end && !eof);
	return true;
}

/* Between requests the server has nothing to say: bytes or a close end
 * the connection. */
static void on_link_data(struct dbk_conn *conn)
{
	struct dbk_hc_link *l = conn->arg;

	if (!l->hc)
		return;
	if (!l->hc->busy) {
		close_conn(l->hc);
		return;
	}
	advance(l->hc, false);
}

static void on_link_close(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_hc_link *l = conn->arg;
	struct dbk_hc *c = l->hc;
	const char *op = conn->err_op;
	int e = conn->err_no;

	if (c) {
		c->link = NULL;
		c->in = conn->in;
	}
	free(l);
	if (!c || !c->busy)
		return; /* let go of, or idle: its buffer is back already */
	if (why == DBK_CONN_EOF) {
		if (!advance(c, true))
			io_error(c,
			         c->in.len ? "connection closed mid-response"
			                   : "connection closed before a response",
			         0);
		return;
	}
	if (strcmp(op, "connect") == 0) {
		snprintf(c->err, sizeof(c->err), "connect: %s", strerror(e));
		fail(c, c->err);
		return;
	}
	io_error(c, strcmp(op, "read") ? "send" : "recv", e);
}

static const struct dbk_conn_ops link_ops = { .on_data = on_link_data, .on_close = on_link_close };

void dbk_hc_init(struct dbk_hc *c, struct ev_loop *loop, size_t max_body, dbk_hc_done_fn done,
                 void *arg)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->max_body = max_body;
	c->done = done;
	c->arg = arg;
	dbk_buf_init(&c->in);
}

void dbk_hc_set_addr(struct dbk_hc *c, const struct sockaddr *sa, socklen_t len)
{
	if (len > sizeof(c->sa))
		return;
	if (c->salen == len && memcmp(&c->sa, sa, len) == 0)
		return;
	if (c->busy)
		c->moved = true; /* closed when the request is over */
	else
		close_conn(c);
	memset(&c->sa, 0, sizeof(c->sa));
	memcpy(&c->sa, sa, len);
	c->salen = len;
}

bool dbk_hc_has_addr(const struct dbk_hc *c) { return c->salen > 0; }

int dbk_hc_get(struct dbk_hc *c, const char *req, size_t len, uint64_t deadline_ms)
{
	if (c->busy) {
		snprintf(c->err, sizeof(c->err), "a request is in flight");
		return -1;
	}
	if (!c->salen) {
		snprintf(c->err, sizeof(c->err), "no address");
		return -1;
	}
	c->req = req;
	c->req_len = len;
	c->deadline_ms = deadline_ms;
	answer_buf(c)->len = 0;
	c->retried = false;
	dbk_hc_answer_init(&c->ans, c->max_body);
	if (!c->link) {
		if (start_connect(c) < 0)
			return -1;
		c->busy = true;
		dbk_conn_update(&c->link->conn);
		return 0;
	}
	c->reused = true;
	c->busy = true;
	dbk_conn_send(&c->link->conn, req, len); /* a failure there has called done */
	return 0;
}

void dbk_hc_expire(struct dbk_hc *c, uint64_t now_ms)
{
	if (!c->busy || now_ms < c->deadline_ms)
		return;
	snprintf(c->err, sizeof(c->err), "%s timed out",
	         c->link && c->link->conn.connecting ? "connect"
	         : c->ans.head_done                  ? "response body"
	                                             : "response");
	fail(c, c->err);
}

size_t dbk_hc_answer_len(struct dbk_hc *c) { return answer_buf(c)->len; }

void dbk_hc_free(struct dbk_hc *c)
{
	close_conn(c);
	c->busy = false;
	dbk_buf_free(&c->in);
}
