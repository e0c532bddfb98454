#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/conn.h"
#include "resp.h"
#include "sse.h"
#include "stream.h"

/* The most one read takes (lib/conn bounds the reads per callback). */
#define READ_BYTES (64 * 1024)
/* Kept from a non-200 body for the error message. */
#define ERROR_BODY_BYTES 512

struct dbk_call {
	struct dbk_client *cl;
	struct dbk_list link; /* in cl->calls */
	struct dbk_conn conn;
	struct dbk_resp resp;
	struct dbk_sse sse;
	struct dbk_stream st;
	double t_read;   /* when the bytes being decoded were read */
	char error[160]; /* first failure, "" if none */
	bool timed_out;
	char ebody[ERROR_BODY_BYTES];
	size_t ebody_len;
	dbk_call_done_fn fn;
	void *ctx;
};

double dbk_client_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dbk_client_init(struct dbk_client *c, struct ev_loop *loop, const struct sockaddr *addr,
                     socklen_t addrlen, double timeout_s)
{
	memset(c, 0, sizeof(*c));
	dbk_list_init(&c->calls);
	c->loop = loop;
	memcpy(&c->addr, addr, addrlen);
	c->addrlen = addrlen;
	c->timeout_s = timeout_s;
}

static void set_error(struct dbk_call *k, const char *what, int err)
{
	if (k->error[0])
		return;
	if (err)
		snprintf(k->error, sizeof(k->error), "%s: %s", what, strerror(err));
	else
		snprintf(k->error, sizeof(k->error), "%s", what);
}

/* Reports the call and frees it: the conn is closed. */
static void report(struct dbk_call *k)
{
	struct dbk_client *c = k->cl;
	struct dbk_call_result r;
	char why[160];

	memset(&r, 0, sizeof(r));
	r.t0 = k->st.t0;
	r.status = k->resp.status;
	r.served_by = k->resp.served_by;
	r.timed_out = k->timed_out;
	if (k->error[0]) {
		r.error = k->error;
	} else if (k->resp.status != 200) {
		dbk_stream_error_summary(k->resp.status, k->ebody, k->ebody_len, why, sizeof(why));
		snprintf(k->error, sizeof(k->error), "%s", why);
		r.error = k->error;
	} else if (!dbk_stream_result(&k->st, &r.ttft, &r.e2e, &r.tokens, k->error,
	                              sizeof(k->error))) {
		r.error = k->error;
	} else {
		r.ok = true;
		r.itl = dbk_stream_take_itl(&k->st, &r.n_itl);
	}

	dbk_list_del(&k->link);
	c->n_calls--;
	dbk_resp_free(&k->resp);
	dbk_sse_free(&k->sse);
	dbk_stream_free(&k->st);
	/* The callback may start calls: everything of this one is gone
	 * but the result, which lives in k until free. */
	k->fn(k->ctx, &r);
	free(k);
}

static void finish(struct dbk_call *k) { dbk_conn_close(&k->conn, DBK_CONN_LOCAL); }

static void on_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_call *k = conn->arg;

	if (why == DBK_CONN_EOF && dbk_resp_eof(&k->resp) == DBK_RESP_ERROR)
		set_error(k, k->resp.err, 0);
	else if (why == DBK_CONN_ERROR)
		set_error(k, conn->err_op, conn->err_no);
	report(k);
}

static int on_event(void *ctx, const char *data, size_t n)
{
	struct dbk_call *k = ctx;

	/* Positive: the SSE codes are negative, the stream keeps the reason. */
	return dbk_stream_event(&k->st, data, n, k->t_read) != 0 ? 1 : 0;
}

static int on_body(void *ctx, const char *p, size_t n)
{
	struct dbk_call *k = ctx;
	int rc;

	if (k->resp.status != 200) {
		size_t room = sizeof(k->ebody) - k->ebody_len;

		if (n > room)
			n = room;
		memcpy(k->ebody + k->ebody_len, p, n);
		k->ebody_len += n;
		return 0;
	}
	rc = dbk_sse_feed(&k->sse, p, n, on_event, k);
	if (rc == DBK_SSE_TOO_BIG)
		set_error(k, "stream event too large", 0);
	else if (rc == DBK_SSE_NOMEM)
		set_error(k, "out of memory", 0);
	/* Otherwise the stream has recorded its own reason. */
	return rc;
}

static void on_read(struct dbk_conn *conn)
{
	struct dbk_call *k = conn->arg;

	/* One timestamp per read: events that arrive together are seen
	 * together, as by any client. */
	k->t_read = dbk_client_now();
	dbk_resp_feed(&k->resp, conn->in.p, conn->in.len, on_body, k);
	dbk_buf_consume(&conn->in, conn->in.len);
	if (k->resp.state == DBK_RESP_ERROR) {
		if (!k->error[0] && !k->st.error[0])
			set_error(k, k->resp.err, 0);
		else if (!k->error[0])
			set_error(k, k->st.error, 0);
		finish(k);
		return;
	}
	if (k->resp.state == DBK_RESP_DONE)
		finish(k);
}

static void on_deadline(struct dbk_conn *conn)
{
	struct dbk_call *k = conn->arg;

	/* The caller words it: it knows the timeout in its own units. */
	k->timed_out = true;
	set_error(k, "timeout", 0);
	finish(k);
}

static const struct dbk_conn_ops call_ops = {
	.on_data = on_read,
	.on_timeout = on_deadline,
	.on_close = on_closed,
};

int dbk_client_start(struct dbk_client *c, struct dbk_buf *req, size_t max_msgs,
                     dbk_call_done_fn fn, void *ctx)
{
	struct dbk_call *k;
	int err;
	double t0;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	/* TTFT and E2E count from here, before connect, as vLLM's client
	 * counts from before it asks its pool for a connection. */
	t0 = dbk_client_now();
	if (dbk_conn_connect(&k->conn, c->loop, &c->addr, c->addrlen, &call_ops, k, READ_BYTES) <
	    0) {
		err = errno;
		free(k);
		return -err;
	}
	k->cl = c;
	k->conn.read_after_epipe = true;
	/* Sent once the connect is done; reads start then too, since a
	 * server may answer (413, 400) before it has read the whole body. */
	k->conn.out = *req;
	memset(req, 0, sizeof(*req));
	k->fn = fn;
	k->ctx = ctx;
	dbk_resp_init(&k->resp);
	dbk_sse_init(&k->sse, DBK_SSE_MAX_EVENT);
	dbk_stream_init(&k->st, t0, max_msgs);
	dbk_conn_deadline(&k->conn, c->timeout_s);
	dbk_list_push(&c->calls, &k->link);
	c->n_calls++;
	return 0;
}

void dbk_client_abort_all(struct dbk_client *c, const char *why)
{
	struct dbk_call *k;

	while ((k = dbk_list_first(&c->calls, struct dbk_call, link))) {
		set_error(k, why, 0);
		finish(k);
	}
}
