#include "lib/http_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/net.h"

/* The buffer's first size: a vLLM /metrics filtered to what the agent
 * reads fits, and a full one grows it once, for good. */
#define FIRST_ROOM (16 * 1024)

enum progress { MORE, DONE, FAILED };

static void watch(struct dbk_hc *c, int events)
{
	if (ev_is_active(&c->io) && (c->io.events & (EV_READ | EV_WRITE)) == events)
		return;
	ev_io_stop(c->loop, &c->io);
	ev_io_set(&c->io, c->fd, events);
	ev_io_start(c->loop, &c->io);
}

static void close_conn(struct dbk_hc *c)
{
	if (c->fd < 0)
		return;
	ev_io_stop(c->loop, &c->io);
	close(c->fd);
	c->fd = -1;
}

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
	struct dbk_hc_result r = { .error = why };

	finish(c, &r, false);
}

static int start_connect(struct dbk_hc *c)
{
	c->fd = dbk_net_connect(&c->sa, c->salen);
	if (c->fd < 0) {
		snprintf(c->err, sizeof(c->err), "connect: %s", strerror(errno));
		return -1;
	}
	c->connects++;
	c->connecting = true;
	c->reused = false;
	watch(c, EV_READ | EV_WRITE);
	return 0;
}

/* The server closed or reset a connection that had carried a request
 * before, and no byte of this answer came: it timed the connection out
 * as we sent. Try once more on a new one. */
static bool retry(struct dbk_hc *c)
{
	if (!c->reused || c->retried || c->in.len > 0)
		return false;
	c->retried = true;
	close_conn(c);
	c->sent = 0;
	if (start_connect(c) < 0) {
		fail(c, c->err);
		return true;
	}
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

/* Sends what is left of the request; false after a failure (done
 * called). */
static bool send_rest(struct dbk_hc *c)
{
	if (dbk_net_send_pending(c->fd, c->req, c->req_len, &c->sent) < 0) {
		io_error(c, "send", errno);
		return false;
	}
	/* A full socket (rare: requests are small) waits for room. */
	watch(c, c->sent < c->req_len ? EV_READ | EV_WRITE : EV_READ);
	return true;
}

/* ---- the answer, apart from the socket ---- */

static enum dbk_http_result too_big(struct dbk_hc_answer *a)
{
	snprintf(a->err, sizeof(a->err), "body too large (over %zu bytes)", a->max_body);
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
	a->raw_off = a->rsp.head_len;
	a->body_len = 0;
	if (a->rsp.framing == DBK_HTTP_BODY_LENGTH && a->rsp.content_length > a->max_body)
		return too_big(a);
	dbk_http_chunked_init(&a->chunked);
	return DBK_HTTP_COMPLETE;
}

/* Decodes the chunks read so far in place: the body goes right after
 * the head, and the bytes not decoded yet right after the body, so the
 * buffer never holds more than the body and one read. */
static enum dbk_http_result decode_chunks(struct dbk_hc_answer *a, struct dbk_buf *in)
{
	size_t head = a->rsp.head_len;

	while (a->raw_off < in->len && a->chunked.result == DBK_HTTP_INCOMPLETE) {
		struct dbk_http_slice d;
		size_t used = dbk_http_chunked_feed(&a->chunked, in->p + a->raw_off,
		                                    in->len - a->raw_off, &d);

		if (d.n) {
			if (a->body_len + d.n > a->max_body)
				return too_big(a);
			memmove(in->p + head + a->body_len, d.p, d.n);
			a->body_len += d.n;
		}
		a->raw_off += used;
	}
	size_t rest = in->len - a->raw_off;
	memmove(in->p + head + a->body_len, in->p + a->raw_off, rest);
	a->raw_off = head + a->body_len;
	in->len = a->raw_off + rest;
	if (a->chunked.result == DBK_HTTP_ERROR)
		snprintf(a->err, sizeof(a->err), "bad chunked body: %s", a->chunked.error);
	return a->chunked.result;
}

void dbk_hc_answer_init(struct dbk_hc_answer *a, size_t max_body)
{
	a->max_body = max_body;
	a->head_done = false;
	a->raw_off = a->body_len = 0;
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
		res->body_len = a->body_len;
		*end = a->raw_off;
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
 * closed). On DONE it has called done. */
static enum progress advance(struct dbk_hc *c, bool eof)
{
	struct dbk_hc_result r;
	size_t end = 0;

	switch (dbk_hc_answer_step(&c->ans, &c->in, eof, &r, &end)) {
	case DBK_HTTP_INCOMPLETE: return MORE;
	case DBK_HTTP_ERROR: return FAILED;
	default: break;
	}
	/* Bytes past the answer were never asked for: do not trust the
	 * connection with another request. */
	finish(c, &r, c->ans.rsp.keep_alive && c->in.len == end && !eof);
	return DONE;
}

/* Reads until the answer is complete or the socket is empty. A read that
 * does not fill the room means the socket had no more: wait for the next
 * readiness rather than ask again only to hear EAGAIN. */
static void on_readable(struct dbk_hc *c)
{
	for (;;) {
		if (c->in.cap - c->in.len < FIRST_ROOM / 2 &&
		    !dbk_buf_reserve(&c->in, c->in.cap ? c->in.cap : FIRST_ROOM)) {
			fail(c, "out of memory");
			return;
		}
		size_t room = c->in.cap - 1 - c->in.len;
		ssize_t n = recv(c->fd, c->in.p + c->in.len, room, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			io_error(c, "recv", errno);
			return;
		}
		c->in.len += (size_t)n;
		enum progress p = advance(c, n == 0);
		if (p == FAILED) {
			fail(c, c->ans.err);
			return;
		}
		if (p == DONE)
			return;
		if (n == 0) {
			io_error(c,
			         c->in.len ? "connection closed mid-response"
			                   : "connection closed before a response",
			         0);
			return;
		}
		if ((size_t)n < room)
			return;
	}
}

/* Between requests: the server closed (or sent what nobody asked for). */
static void on_idle_readable(struct dbk_hc *c)
{
	char b[64];
	ssize_t n = recv(c->fd, b, sizeof(b), 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	close_conn(c);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_hc *c = (struct dbk_hc *)((char *)w - offsetof(struct dbk_hc, io));

	(void)loop;
	if (!c->busy) {
		on_idle_readable(c);
		return;
	}
	if (c->connecting) {
		int e = dbk_net_connect_error(c->fd);

		if (e) {
			snprintf(c->err, sizeof(c->err), "connect: %s", strerror(e));
			fail(c, c->err);
			return;
		}
		c->connecting = false;
		revents |= EV_WRITE; /* the request goes now */
	}
	if ((revents & EV_WRITE) && c->sent < c->req_len && !send_rest(c))
		return;
	if (revents & EV_READ)
		on_readable(c);
}

void dbk_hc_init(struct dbk_hc *c, struct ev_loop *loop, size_t max_body, dbk_hc_done_fn done,
                 void *arg)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->fd = -1;
	c->max_body = max_body;
	c->done = done;
	c->arg = arg;
	ev_init(&c->io, on_io);
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
	c->sent = 0;
	c->deadline_ms = deadline_ms;
	c->in.len = 0;
	c->retried = false;
	dbk_hc_answer_init(&c->ans, c->max_body);
	if (c->fd < 0) {
		if (start_connect(c) < 0)
			return -1;
		c->busy = true;
		return 0;
	}
	c->reused = true;
	c->busy = true;
	send_rest(c); /* a failure there has called done */
	return 0;
}

void dbk_hc_expire(struct dbk_hc *c, uint64_t now_ms)
{
	if (!c->busy || now_ms < c->deadline_ms)
		return;
	snprintf(c->err, sizeof(c->err), "%s timed out",
	         c->connecting      ? "connect"
	         : c->ans.head_done ? "response body"
	                            : "response");
	fail(c, c->err);
}

void dbk_hc_free(struct dbk_hc *c)
{
	close_conn(c);
	c->busy = false;
	dbk_buf_free(&c->in);
}
