/* The stub's connections, as uvicorn keeps them for vLLM: keep-alive
 * with an idle timeout, pipelined requests served in order (one in the
 * engine at a time), 100-continue, and a client that goes away takes its
 * request out of the engine. Bounded work per callback so one busy client
 * cannot starve the others; sockets, parsing and responses come from the
 * shared layer, reply.c and routes.c. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/net.h"
#include "server.h"

/* A client that reads slower than this much buffered output is dropped. */
#define MAX_OUT_BYTES (64u * 1024 * 1024)
#define READ_CHUNK (64 * 1024)
#define MAX_READS_PER_CB 16
#define MAX_REQUESTS_PER_PASS 64

static void process_input(struct dbk_stub_conn *c);

static size_t out_pending(const struct dbk_stub_conn *c) { return c->out.len - c->out_off; }

static void update_idle(struct dbk_stub_conn *c)
{
	struct dbk_stub_server *s = c->s;

	if (s->opt.keep_alive_s > 0 && !c->job && c->in.len == 0 && out_pending(c) == 0 &&
	    !c->close_after_write) {
		c->idle_w.repeat = s->opt.keep_alive_s;
		ev_timer_again(s->loop, &c->idle_w);
	} else {
		ev_timer_stop(s->loop, &c->idle_w);
	}
}

/* 0: all sent or waiting for POLLOUT; -1: the connection must close. */
static int conn_flush(struct dbk_stub_conn *c)
{
	struct ev_loop *loop = c->s->loop;

	if (dbk_net_send_pending(c->fd, c->out.p, c->out.len, &c->out_off) != 0)
		return -1;
	if (out_pending(c) > 0) {
		if (out_pending(c) > MAX_OUT_BYTES)
			return -1;
		ev_io_start(loop, &c->ww);
		return 0;
	}
	dbk_buf_reset(&c->out);
	c->out_off = 0;
	ev_io_stop(loop, &c->ww);
	return c->close_after_write ? -1 : 0;
}

/* Flushes, closes when due, and serves pipelined requests. Never called
 * while the engine is delivering events (see server.h). */
static void conn_kick(struct dbk_stub_conn *c)
{
	if (c->out.oom || conn_flush(c) != 0) {
		dbk_stub_conn_close(c);
		return;
	}
	if (!c->job && !c->close_after_write && c->in.len > 0)
		process_input(c);
	else
		update_idle(c);
}

void dbk_stub_mark_pending(struct dbk_stub_conn *c)
{
	if (dbk_list_empty(&c->pending_link))
		dbk_list_append(&c->s->pending, &c->pending_link);
}

void dbk_stub_kick_pending(struct dbk_stub_server *s)
{
	struct dbk_stub_conn *c;

	while ((c = dbk_list_first(&s->pending, struct dbk_stub_conn, pending_link)) != NULL) {
		dbk_list_del(&c->pending_link);
		conn_kick(c);
	}
}

void dbk_stub_conn_resume(struct dbk_stub_conn *c)
{
	if (!c->reading && !c->close_after_write) {
		c->reading = true;
		ev_io_start(c->s->loop, &c->rw);
	}
}

static void stop_reading(struct dbk_stub_conn *c)
{
	c->reading = false;
	ev_io_stop(c->s->loop, &c->rw);
}

/* Parses one request off c->in and serves it. false: nothing more to do
 * in this pass (incomplete, or refused). */
static bool serve_one(struct dbk_stub_conn *c)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_http_request hr;
	enum dbk_http_result r = dbk_http_parse(c->in.p, c->in.len, &s->lim, &hr);

	if (r == DBK_HTTP_INCOMPLETE) {
		if (hr.head_len && hr.expect_continue && !c->continue_sent) {
			dbk_buf_adds(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
			c->continue_sent = true;
		}
		return false;
	}
	if (r == DBK_HTTP_ERROR) {
		dbk_stub_log_refusal(s, c->peer, hr.status, hr.error);
		dbk_stub_respond_error(c, hr.status, "BadRequestError", hr.error, false, 1);
		return false;
	}
	c->continue_sent = false;
	dbk_stub_route(c, &hr);
	dbk_buf_consume(&c->in, hr.total_len);
	return true;
}

/* Serves the complete requests buffered on c, one at a time: a request
 * in the engine holds the connection until its response is written. */
static void process_input(struct dbk_stub_conn *c)
{
	int served = 0;

	while (!c->job && !c->close_after_write && c->in.len > 0 &&
	       served < MAX_REQUESTS_PER_PASS && serve_one(c))
		served++;
	if (c->close_after_write && c->reading)
		stop_reading(c); /* nothing more is read on a closing connection */
	if (c->out.oom || conn_flush(c) != 0) {
		dbk_stub_conn_close(c);
		return;
	}
	if (served == MAX_REQUESTS_PER_PASS && !c->job && c->in.len > 0)
		dbk_stub_mark_pending(c); /* more pipelined requests: next pass */
	update_idle(c);
}

void dbk_stub_conn_close(struct dbk_stub_conn *c)
{
	struct dbk_stub_server *s = c->s;

	if (c->job) {
		dbk_stub_job_free(c->job, true);
		c->job = NULL;
	}
	dbk_list_del(&c->pending_link);
	dbk_list_del(&c->link);
	ev_io_stop(s->loop, &c->rw);
	ev_io_stop(s->loop, &c->ww);
	ev_timer_stop(s->loop, &c->idle_w);
	close(c->fd);
	dbk_buf_free(&c->in);
	dbk_buf_free(&c->out);
	free(c);
}

static size_t in_limit(const struct dbk_stub_server *s)
{
	return s->lim.max_head_bytes + s->lim.max_body_bytes;
}

/* Reads what the socket has, up to one byte past the limit (enough for
 * the parser to refuse the request). 0: go on; -1: EOF or an error. */
static int conn_read(struct dbk_stub_conn *c)
{
	size_t limit = in_limit(c->s);

	for (int i = 0; i < MAX_READS_PER_CB && c->in.len <= limit; i++) {
		size_t room = limit + 1 - c->in.len;
		ssize_t n;

		if (room > READ_CHUNK)
			room = READ_CHUNK;
		if (!dbk_buf_reserve(&c->in, room))
			return -1;
		n = recv(c->fd, c->in.p + c->in.len, room, 0);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->in.p[c->in.len] = 0;
			if ((size_t)n < room)
				return 0;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1;
	}
	return 0;
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_stub_conn *c = w->data;
	struct dbk_stub_server *s = c->s;

	(void)loop;
	(void)revents;
	if (conn_read(c) != 0) {
		/* The client is gone, and so is its request (vLLM aborts on
		 * disconnect too). */
		if (c->job)
			dbk_log(DBK_LOG_DEBUG, "client-gone", "stub=%s peer=%s aborted=%s",
			        s->opt.name, c->peer, c->job->id);
		dbk_stub_conn_close(c);
	} else if (!c->job) {
		process_input(c);
	} else if (c->in.len > in_limit(s)) {
		stop_reading(c); /* pipelined data piles up behind a running request */
	}
	dbk_stub_kick_pending(s);
	dbk_stub_maybe_step(s);
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_stub_conn *c = w->data;
	struct dbk_stub_server *s = c->s;

	(void)loop;
	(void)revents;
	conn_kick(c);
	dbk_stub_kick_pending(s);
	dbk_stub_maybe_step(s);
}

static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_stub_conn *c = w->data;

	(void)loop;
	(void)revents;
	if (!c->job && c->in.len == 0 && out_pending(c) == 0)
		dbk_stub_conn_close(c); /* uvicorn's keep-alive timeout */
}

void dbk_stub_accept(void *arg, int fd)
{
	struct dbk_stub_server *s = arg;
	struct dbk_stub_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	/* Each SSE event must leave when produced, not wait for Nagle. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	c->fd = fd;
	dbk_net_sockname(fd, true, c->peer, sizeof(c->peer));
	ev_io_init(&c->rw, read_cb, fd, EV_READ);
	ev_io_init(&c->ww, write_cb, fd, EV_WRITE);
	ev_init(&c->idle_w, idle_cb);
	c->rw.data = c->ww.data = c->idle_w.data = c;
	dbk_list_init(&c->pending_link);
	dbk_list_push(&s->conns, &c->link);
	c->reading = true;
	ev_io_start(s->loop, &c->rw);
	update_idle(c);
}
