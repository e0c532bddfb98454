#include "admin.h"

#include <stdlib.h>
#include <string.h>

/* The request parser the stub serves OpenAI clients with: strict,
 * bounded and fuzzed (tests/fuzz/fuzz_stub_http.c). */
#include "lib/http1.h"
#include "lib/conn.h"
#include "lib/list.h"
#include "lib/listener.h"
#include "lib/log.h"

/* Request line and header fields together; a longer request line is a
 * 414, whole: the target is never cut to fit. */
#define MAX_HEAD 4096
/* A body is read (so the connection ends cleanly) and ignored. */
#define MAX_BODY 4096
#define MAX_REQUEST (MAX_HEAD + MAX_BODY)
#define MAX_METHOD 16
/* From accept to the whole request: a client that dawdles is dropped. */
#define IO_TIMEOUT 5.0

struct aconn {
	struct dbk_conn conn;
	struct dbk_admin *a;
	struct dbk_list link; /* in dbk_admin.conns */
};

struct dbk_admin {
	struct ev_loop *loop;
	dbk_admin_handler handler;
	void *arg;
	struct dbk_listener_set ls;
	struct dbk_list conns;
};

static void aconn_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct aconn *c = conn->arg;

	(void)why;
	dbk_list_del(&c->link);
	free(c);
}

/* Builds the whole response in the output and closes once it is sent
 * (or when the request's time is up). */
static void respond(struct aconn *c, struct dbk_admin_response *r)
{
	struct dbk_buf *out = &c->conn.out;

	if (r->body.oom) {
		dbk_buf_free(&r->body);
		r->status = 500;
		r->content_type = "text/plain";
		dbk_buf_printf(&r->body, "out of memory\n");
	}
	dbk_buf_printf(out,
	               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	               "Connection: close\r\nCache-Control: no-store\r\n\r\n",
	               r->status, dbk_http_reason(r->status), r->content_type, r->body.len);
	dbk_buf_add(out, r->body.p ? r->body.p : "", r->body.len);
	dbk_buf_free(&r->body);
	dbk_conn_drain(&c->conn, 0);
}

static void simple(struct aconn *c, int status, const char *text)
{
	struct dbk_admin_response r = { .status = status, .content_type = "text/plain" };

	dbk_buf_init(&r.body);
	dbk_buf_printf(&r.body, "%s\n", text);
	respond(c, &r);
}

/* Answers once the request is whole or known to be bad. Returns whether
 * it was. */
static bool handle(struct aconn *c)
{
	static const struct dbk_http_limits lim = { .max_head_bytes = MAX_HEAD,
		                                    .max_body_bytes = MAX_BODY };
	struct dbk_http_request req;
	char method[MAX_METHOD + 1], path[MAX_HEAD];

	switch (dbk_http_parse(c->conn.in.p, c->conn.in.len, &lim, &req)) {
	case DBK_HTTP_INCOMPLETE: return false;
	case DBK_HTTP_ERROR: simple(c, req.status, req.error); return true;
	case DBK_HTTP_COMPLETE: break;
	}
	if (req.method.n > MAX_METHOD) {
		simple(c, 405, "method not allowed");
		return true;
	}
	/* Both fit: the head, and so the target, is under MAX_HEAD. */
	memcpy(method, req.method.p, req.method.n);
	method[req.method.n] = '\0';
	memcpy(path, req.target.p, req.target.n);
	path[req.target.n] = '\0';
	struct dbk_admin_response r = { .status = 200, .content_type = "text/plain" };
	dbk_buf_init(&r.body);
	c->a->handler(c->a->arg, method, path, &r);
	respond(c, &r);
	return true;
}

static void on_request(struct dbk_conn *conn)
{
	struct aconn *c = conn->arg;

	/* The parser's limits refuse a request before it fills the buffer. */
	if (!handle(c) && conn->in.len == MAX_REQUEST)
		simple(c, 413, "request too large");
}

static const struct dbk_conn_ops aconn_ops = { .on_data = on_request, .on_close = aconn_closed };

static void aconn_new(void *arg, int fd)
{
	struct dbk_admin *a = arg;
	struct aconn *c = calloc(1, sizeof(*c));

	if (dbk_conn_accept(c ? &c->conn : NULL, a->loop, fd, &a->ls, &aconn_ops, c, MAX_REQUEST) <
	    0) {
		free(c);
		return;
	}
	c->a = a;
	dbk_list_append(&a->conns, &c->link);
	/* A client that never finishes its request is not waited for. */
	dbk_conn_deadline(&c->conn, IO_TIMEOUT);
}

struct dbk_admin *dbk_admin_new(struct ev_loop *loop, unsigned max_conns, dbk_admin_handler h,
                                void *arg)
{
	struct dbk_admin *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->loop = loop;
	a->handler = h;
	a->arg = arg;
	dbk_list_init(&a->conns);
	/* One client (a scraper, a stuck script) leaves room for others. */
	if (dbk_listener_open(&a->ls, loop, "admin", aconn_new, a, max_conns, (max_conns + 3) / 4,
	                      NULL) < 0) {
		free(a);
		return NULL;
	}
	return a;
}

int dbk_admin_add_listener(struct dbk_admin *a, int fd) { return dbk_listener_add(&a->ls, fd); }

void dbk_admin_free(struct dbk_admin *a)
{
	if (!a)
		return;
	dbk_listener_close(&a->ls);
	while (!dbk_list_empty(&a->conns))
		dbk_conn_close(&dbk_list_first(&a->conns, struct aconn, link)->conn,
		               DBK_CONN_LOCAL);
	free(a);
}
