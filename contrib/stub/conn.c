/* The stub's connections, as uvicorn keeps them for vLLM: keep-alive
 * with an idle timeout, pipelined requests served in order (one in the
 * engine at a time), 100-continue, and a client that goes away takes its
 * request out of the engine. Bounded work per callback so one busy client
 * cannot starve the others; sockets, parsing and responses come from the
 * shared layer, reply.c and routes.c. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "lib/net.h"
#include "server.h"

/* A client that reads slower than this much buffered output is dropped. */
#define MAX_OUT_BYTES (64u * 1024 * 1024)
#define MAX_REQUESTS_PER_PASS 64

static void process_input(struct dbk_stub_conn *c);

static bool idle(const struct dbk_stub_conn *c)
{
	return !c->job && c->conn.in.len == 0 && dbk_conn_pending(&c->conn) == 0 && c->out.len == 0;
}

/* uvicorn's keep-alive timeout runs while nothing is under way. */
static void update_idle(struct dbk_stub_conn *c)
{
	struct dbk_stub_server *s = c->s;

	if (s->opt.keep_alive_s > 0 && idle(c) && !c->close_after_write)
		dbk_conn_deadline(&c->conn, s->opt.keep_alive_s);
	else
		dbk_conn_deadline(&c->conn, 0);
}

/* Hands what the responses wrote to the conn and sends what the socket
 * takes. Returns false when c is closing (a last response, too much owed)
 * or gone: no more input is served then. */
static bool conn_send(struct dbk_stub_conn *c)
{
	struct dbk_conn *conn = &c->conn;

	if (c->out.len) {
		if (dbk_conn_pending(conn) == 0) {
			/* The usual case: no copy. */
			struct dbk_buf t = conn->out;

			conn->out = c->out;
			conn->out_off = 0;
			c->out = t;
		} else {
			dbk_buf_add(&conn->out, c->out.p, c->out.len);
		}
		dbk_buf_reset(&c->out);
	}
	if (c->out.oom || conn->out.oom || dbk_conn_pending(conn) > MAX_OUT_BYTES) {
		dbk_conn_close(conn, DBK_CONN_LOCAL);
		return false;
	}
	if (c->close_after_write) {
		/* Nothing more is read on a closing connection. */
		dbk_conn_drain(conn, 0);
		return false;
	}
	return dbk_conn_update(conn);
}

/* Sends, closes when due, and serves pipelined requests. Never called
 * while the engine is delivering events (see server.h). */
static void conn_kick(struct dbk_stub_conn *c)
{
	if (!conn_send(c))
		return;
	if (!c->job && c->conn.in.len > 0)
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
	/* Reading stopped only at the input's bound: serving what is
	 * pipelined, at the next kick, makes room. */
	dbk_stub_mark_pending(c);
}

/* Carries on decoding the chunked body of hr (whose head is parsed),
 * as uvicorn reads one; when complete, hr is the request with its
 * decoded body, as if it had come with a Content-Length. */
static enum dbk_http_result read_chunked(struct dbk_stub_conn *c, struct dbk_http_request *hr)
{
	struct dbk_buf *in = &c->conn.in;
	struct dbk_http_body *b = &c->req_body;
	enum dbk_http_result r;

	if (!c->req_body_started)
		dbk_http_body_init(b, hr->head_len, c->s->lim.max_body_bytes);
	c->req_body_started = true;
	r = dbk_http_body_dechunk(b, in->p, &in->len);
	if (r == DBK_HTTP_ERROR) {
		hr->status = b->too_large ? 413 : 400;
		hr->error = b->too_large ? "body too large" : b->chunked.error;
	} else if (r == DBK_HTTP_COMPLETE) {
		c->req_body_started = false;
		hr->body = (struct dbk_http_slice){ in->p + b->start, b->len };
		hr->content_length = b->len;
		hr->total_len = b->raw_off;
	}
	return r;
}

/* Parses one request off the input and serves it. false: nothing more
 * to do in this pass (incomplete, or refused). */
static bool serve_one(struct dbk_stub_conn *c)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_buf *in = &c->conn.in;
	struct dbk_http_request hr;
	enum dbk_http_result r = dbk_http_parse(in->p, in->len, &s->lim, &hr);

	if (r == DBK_HTTP_INCOMPLETE && hr.chunked)
		r = read_chunked(c, &hr);
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
	dbk_buf_consume(in, hr.total_len);
	return true;
}

/* Serves the complete requests buffered on c, one at a time: a request
 * in the engine holds the connection until its response is written. */
static void process_input(struct dbk_stub_conn *c)
{
	int served = 0;

	while (!c->job && !c->close_after_write && c->conn.in.len > 0 &&
	       served < MAX_REQUESTS_PER_PASS && serve_one(c))
		served++;
	if (!conn_send(c))
		return;
	if (served == MAX_REQUESTS_PER_PASS && !c->job && c->conn.in.len > 0)
		dbk_stub_mark_pending(c); /* more pipelined requests: next pass */
	update_idle(c);
}

void dbk_stub_conn_close(struct dbk_stub_conn *c) { dbk_conn_close(&c->conn, DBK_CONN_LOCAL); }

static void on_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_stub_conn *c = conn->arg;
	struct dbk_stub_server *s = c->s;

	if (c->job) {
		/* The client is gone, and so is its request (vLLM aborts on
		 * disconnect too). */
		if (why == DBK_CONN_EOF ||
		    (why == DBK_CONN_ERROR && strcmp(conn->err_op, "read") == 0))
			dbk_log(DBK_LOG_DEBUG, "client-gone", "stub=%s peer=%s aborted=%s",
			        s->opt.name, c->peer, c->job->id);
		dbk_stub_job_free(c->job, true);
		c->job = NULL;
	}
	dbk_list_del(&c->pending_link);
	dbk_list_del(&c->link);
	dbk_buf_free(&c->out);
	free(c);
}

/* Input is read up to one byte past the limit (enough for the parser to
 * refuse the request); pipelined data piles up to there behind a running
 * request, and reading waits. */
static void on_input(struct dbk_conn *conn)
{
	struct dbk_stub_conn *c = conn->arg;
	struct dbk_stub_server *s = c->s;

	if (!c->job)
		process_input(c);
	dbk_stub_kick_pending(s);
	dbk_stub_maybe_step(s);
}

static void on_idle(struct dbk_conn *conn)
{
	struct dbk_stub_conn *c = conn->arg;

	if (idle(c))
		dbk_conn_close(conn, DBK_CONN_TIMEOUT); /* uvicorn's keep-alive timeout */
}

static const struct dbk_conn_ops stub_conn_ops = {
	.on_data = on_input,
	.on_timeout = on_idle,
	.on_close = on_closed,
};

void dbk_stub_accept(void *arg, int fd)
{
	struct dbk_stub_server *s = arg;
	struct dbk_stub_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (dbk_conn_accept(c ? &c->conn : NULL, s->loop, fd, NULL, &stub_conn_ops, c,
	                    s->lim.max_head_bytes + s->lim.max_body_bytes + 1) < 0) {
		free(c);
		return;
	}
	/* Each SSE event must leave when produced, not wait for Nagle. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	dbk_net_sockname(fd, true, c->peer, sizeof(c->peer));
	dbk_list_init(&c->pending_link);
	dbk_list_push(&s->conns, &c->link);
	update_idle(c);
}
