#include "admin.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The request parser the stub serves OpenAI clients with: strict,
 * bounded and fuzzed (tests/fuzz/fuzz_stub_http.c). */
#include "lib/http1.h"
#include "lib/conn.h"
#include "lib/connset.h"
#include "lib/fileio.h"
#include "lib/log.h"
#include "lib/net.h"

/* Request line and header fields together; a longer request line is a
 * 414, whole: the target is never cut to fit. */
#define MAX_HEAD 4096
/* A body is read (so the connection ends cleanly) and ignored. */
#define MAX_BODY 4096
#define MAX_REQUEST (MAX_HEAD + MAX_BODY)
#define MAX_METHOD 16
/* From accept to the whole request: a client that dawdles is dropped. */
#define IO_TIMEOUT 5.0
/* A token is a line of visible characters, its file no larger than this. */
#define MAX_TOKEN_FILE 4096

struct aconn {
	struct dbk_conn conn;
	struct dbk_admin *a;
	struct dbk_admin_via via;
	char local[64]; /* via.local_addr */
};

struct dbk_admin {
	struct ev_loop *loop;
	dbk_admin_handler handler;
	void *arg;
	struct dbk_connset set;
	struct dbk_admin_config cfg;
	struct dbk_admin_policy policy;
	char *token; /* policy.token, ours */
	struct dbk_log_limit refuse_log;
};

static void aconn_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	(void)why;
	free(conn->arg);
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
	               "Connection: close\r\nCache-Control: no-store\r\n%s\r\n",
	               r->status, dbk_http_reason(r->status), r->content_type, r->body.len,
	               r->status == 401 ? "WWW-Authenticate: Bearer realm=\"dbucket\"\r\n" : "");
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

/* A request the guard refused: answered, and logged (a burst at most). */
static void refuse(struct aconn *c, int status, const char *why)
{
	uint64_t suppressed;
	char peer[64];

	if (dbk_log_limit_allow(&c->a->refuse_log, ev_now(c->a->loop), &suppressed)) {
		dbk_net_sockname(c->conn.fd, true, peer, sizeof(peer));
		dbk_log(DBK_LOG_WARN, "admin-refused",
		        "status=%d reason=\"%s\" peer=%s suppressed=%llu", status, why,
		        c->via.unix_socket ? "unix" : peer, (unsigned long long)suppressed);
	}
	simple(c, status, why);
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
	/* A whole request: this connection is no idle one to make way. */
	dbk_connset_useful(&c->conn);
	if (req.method.n > MAX_METHOD) {
		simple(c, 405, "method not allowed");
		return true;
	}
	const char *why;
	int refused = dbk_admin_guard(&c->a->policy, &c->via, &req, &why);
	if (refused) {
		refuse(c, refused, why);
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

/* Where the connection came in: a unix socket, or the IP the client
 * reached (a name Host may give). What it cannot tell is neither. */
static void learn_via(struct aconn *c, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const void *ip = NULL;
	int family = AF_INET;

	c->via.local_addr = c->local;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_UNIX) {
		c->via.unix_socket = true;
	} else if (ss.ss_family == AF_INET) {
		ip = &((const struct sockaddr_in *)&ss)->sin_addr;
	} else if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)&ss)->sin6_addr;

		ip = IN6_IS_ADDR_V4MAPPED(a6) ? (const void *)&a6->s6_addr[12] : (const void *)a6;
		family = IN6_IS_ADDR_V4MAPPED(a6) ? AF_INET : AF_INET6;
	}
	if (ip && !inet_ntop(family, ip, c->local, sizeof(c->local)))
		c->local[0] = '\0';
}

static void aconn_new(void *arg, int fd)
{
	struct dbk_admin *a = arg;
	struct aconn *c = calloc(1, sizeof(*c));

	if (dbk_conn_accept(c ? &c->conn : NULL, a->loop, fd, &a->set, &aconn_ops, c, MAX_REQUEST) <
	    0) {
		free(c);
		return;
	}
	c->a = a;
	learn_via(c, fd);
	/* A client that never finishes its request is not waited for. */
	dbk_conn_deadline(&c->conn, IO_TIMEOUT);
}

/* The token: the file's first line, visible characters, not empty. */
static char *read_token(const char *path, size_t *len, char *err, size_t errlen)
{
	char *t = dbk_read_file(path, MAX_TOKEN_FILE, len, err, errlen);

	if (!t)
		return NULL;
	while (*len && strchr(" \t\r\n", t[*len - 1]))
		t[--*len] = '\0';
	for (size_t i = 0; i < *len; i++)
		if (t[i] <= ' ' || t[i] > '~') {
			dbk_errf(err, errlen, "%s: a token is one word of visible characters",
			         path);
			free(t);
			return NULL;
		}
	if (*len == 0) {
		dbk_errf(err, errlen, "%s: empty token", path);
		free(t);
		return NULL;
	}
	return t;
}

int dbk_admin_reload(struct dbk_admin *a, char *err, size_t errlen)
{
	size_t len;
	char *t;

	if (!a || !a->cfg.token_file)
		return 0;
	t = read_token(a->cfg.token_file, &len, err, errlen);
	if (!t)
		return -1;
	free(a->token);
	a->token = t;
	a->policy.token = t;
	a->policy.token_len = len;
	return 0;
}

struct dbk_admin *dbk_admin_new(struct ev_loop *loop, const struct dbk_admin_config *cfg,
                                dbk_admin_handler h, void *arg, char *err, size_t errlen)
{
	struct dbk_admin *a = calloc(1, sizeof(*a));

	if (!a) {
		dbk_errf(err, errlen, "out of memory");
		return NULL;
	}
	a->loop = loop;
	a->handler = h;
	a->arg = arg;
	a->cfg = *cfg;
	a->policy = (struct dbk_admin_policy){ .read_only = cfg->read_only,
		                               .public_mask = cfg->public_mask,
		                               .hosts = cfg->hosts,
		                               .nhosts = cfg->nhosts };
	if (dbk_admin_reload(a, err, errlen) < 0) {
		free(a);
		return NULL;
	}
	/* One client (a scraper, a stuck script) leaves room for others, and
	 * an idle one makes way for a new one when all are taken. */
	struct dbk_connset_limits lim = { .max_conns = cfg->max_conns,
		                          .max_per_peer = (cfg->max_conns + 3) / 4 };
	if (dbk_connset_open(&a->set, loop, "admin", aconn_new, a, &lim) < 0) {
		dbk_errf(err, errlen, "out of memory");
		free(a->token);
		free(a);
		return NULL;
	}
	return a;
}

int dbk_admin_add_listener(struct dbk_admin *a, int fd)
{
	return dbk_connset_add_listener(&a->set, fd);
}

void dbk_admin_free(struct dbk_admin *a)
{
	if (!a)
		return;
	dbk_connset_close(&a->set, NULL);
	free(a->token);
	free(a);
}
