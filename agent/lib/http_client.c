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
	if (!keep)
		close_conn(c);
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

static enum progress too_big(struct dbk_hc *c)
{
	snprintf(c->err, sizeof(c->err), "body too large (over %zu bytes)", c->max_body);
	return FAILED;
}

static enum progress parse_head(struct dbk_hc *c)
{
	for (;;) {
		enum dbk_http_result r = dbk_http_parse_response(c->in.p, c->in.len,
		                                                 DBK_HC_MAX_HEAD, &c->rsp);

		if (r == DBK_HTTP_INCOMPLETE)
			return MORE;
		if (r == DBK_HTTP_ERROR) {
			snprintf(c->err, sizeof(c->err), "bad response: %s", c->rsp.error);
			return FAILED;
		}
		if (c->rsp.status >= 200)
			break;
		/* An interim answer (100 Continue): the real one follows. */
		dbk_buf_consume(&c->in, c->rsp.head_len);
	}
	c->head_done = true;
	c->raw_off = c->rsp.head_len;
	c->body_len = 0;
	if (c->rsp.framing == DBK_HTTP_BODY_LENGTH && c->rsp.content_length > c->max_body)
		return too_big(c);
	dbk_http_chunked_init(&c->chunked);
	return DONE;
}

/* Decodes the chunks read so far in place: the body goes right after
 * the head, and the bytes not decoded yet right after the body, so the
 * buffer never holds more than the body and one read. */
static enum progress decode_chunks(struct dbk_hc *c)
{
	size_t head = c->rsp.head_len;

	while (c->raw_off < c->in.len && c->chunked.result == DBK_HTTP_INCOMPLETE) {
		struct dbk_http_slice d;
		size_t used = dbk_http_chunked_feed(&c->chunked, c->in.p + c->raw_off,
		                                    c->in.len - c->raw_off, &d);

		if (d.n) {
			if (c->body_len + d.n > c->max_body)
				return too_big(c);
			memmove(c->in.p + head + c->body_len, d.p, d.n);
			c->body_len += d.n;
		}
		c->raw_off += used;
	}
	size_t rest = c->in.len - c->raw_off;
	memmove(c->in.p + head + c->body_len, c->in.p + c->raw_off, rest);
	c->raw_off = head + c->body_len;
	c->in.len = c->raw_off + rest;
	if (c->chunked.result == DBK_HTTP_ERROR) {
		snprintf(c->err, sizeof(c->err), "bad chunked body: %s", c->chunked.error);
		return FAILED;
	}
	return c->chunked.result == DBK_HTTP_COMPLETE ? DONE : MORE;
}

/* Whether the answer is complete, after more bytes came (eof: the server
 * closed). On DONE it has called done. */
static enum progress advance(struct dbk_hc *c, bool eof)
{
	struct dbk_hc_result r = { 0 };
	enum progress p;
	size_t end;

	if (!c->head_done && (p = parse_head(c)) != DONE)
		return p;
	r.status = c->rsp.status;
	r.body = c->in.p + c->rsp.head_len;
	switch (c->rsp.framing) {
	case DBK_HTTP_BODY_NONE: end = c->rsp.head_len; break;
	case DBK_HTTP_BODY_LENGTH:
		end = c->rsp.head_len + c->rsp.content_length;
		if (c->in.len < end)
			return MORE;
		r.body_len = c->rsp.content_length;
		break;
	case DBK_HTTP_BODY_CHUNKED:
		if ((p = decode_chunks(c)) != DONE)
			return p;
		r.body_len = c->body_len;
		end = c->raw_off;
		break;
	default: /* until the server closes */
		r.body_len = c->in.len - c->rsp.head_len;
		if (r.body_len > c->max_body)
			return too_big(c);
		if (!eof)
			return MORE;
		end = c->in.len;
		break;
	}
	/* Bytes past the answer were never asked for: do not trust the
	 * connection with another request. */
	c->in.p[end] = '\0';
	finish(c, &r, c->rsp.keep_alive && c->in.len == end && !eof);
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
			fail(c, c->err);
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
	if (!c->busy)
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
	c->head_done = c->retried = false;
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
	         c->connecting  ? "connect"
	         : c->head_done ? "response body"
	                        : "response");
	fail(c, c->err);
}

void dbk_hc_free(struct dbk_hc *c)
{
	close_conn(c);
	c->busy = false;
	dbk_buf_free(&c->in);
}
