#include "admin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listener.h"
#include "log.h"
#include "net.h"

#define MAX_REQUEST 4096
#define MAX_CONNS 64
#define IO_TIMEOUT 5.0

struct aconn {
	ev_io io;
	ev_timer timer;
	struct dbk_admin *a;
	struct aconn *prev, *next;
	size_t in_len;
	char in[MAX_REQUEST + 1];
	struct dbk_strbuf out;
	size_t out_off;
};

struct dbk_admin {
	struct ev_loop *loop;
	dbk_admin_handler handler;
	void *arg;
	struct dbk_listener_set ls;
	struct aconn *conns;
	unsigned open;
};

static void aconn_close(struct aconn *c)
{
	struct dbk_admin *a = c->a;

	ev_io_stop(a->loop, &c->io);
	ev_timer_stop(a->loop, &c->timer);
	close(c->io.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	a->open--;
	dbk_sb_free(&c->out);
	free(c);
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Payload Too Large";
	default:  return "Internal Server Error";
	}
}

/* Builds the whole response in c->out and switches to writing. */
static void respond(struct aconn *c, struct dbk_admin_response *r)
{
	if (r->body.failed) {
		dbk_sb_free(&r->body);
		r->status = 500;
		r->content_type = "text/plain";
		dbk_sb_printf(&r->body, "out of memory\n");
	}
	dbk_sb_printf(&c->out,
	              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	              "Connection: close\r\nCache-Control: no-store\r\n\r\n",
	              r->status, reason(r->status), r->content_type, r->body.len);
	dbk_sb_append(&c->out, r->body.data ? r->body.data : "", r->body.len);
	dbk_sb_free(&r->body);
	ev_io_stop(c->a->loop, &c->io);
	ev_io_set(&c->io, c->io.fd, EV_WRITE);
	ev_io_start(c->a->loop, &c->io);
}

static void simple(struct aconn *c, int status, const char *text)
{
	struct dbk_admin_response r = { .status = status, .content_type = "text/plain" };

	dbk_sb_init(&r.body);
	dbk_sb_printf(&r.body, "%s\n", text);
	respond(c, &r);
}

static void handle(struct aconn *c)
{
	char method[8], path[256];

	/* "METHOD SP PATH SP HTTP/x.y": anything else is a 400. */
	if (sscanf(c->in, "%7s %255s HTTP/1.%*c", method, path) != 2) {
		simple(c, 400, "bad request");
		return;
	}
	struct dbk_admin_response r = { .status = 200, .content_type = "text/plain" };
	dbk_sb_init(&r.body);
	c->a->handler(c->a->arg, method, path, &r);
	respond(c, &r);
}

static void on_aconn(struct ev_loop *loop, ev_io *w, int revents)
{
	struct aconn *c = (struct aconn *)w;

	(void)loop;
	if (revents & EV_WRITE) {
		/* Done or failed, the connection goes; otherwise wait for room. */
		if (dbk_net_send_pending(w->fd, c->out.data, c->out.len, &c->out_off) == 0 &&
		    c->out_off < c->out.len)
			return;
		aconn_close(c);
		return;
	}
	ssize_t n = read(w->fd, c->in + c->in_len, MAX_REQUEST - c->in_len);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		aconn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	c->in[c->in_len] = '\0';
	/* Only the request line matters; the headers end the request. */
	if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n"))
		handle(c);
	else if (c->in_len == MAX_REQUEST)
		simple(c, 413, "request too large");
}

static void on_atimer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	aconn_close((struct aconn *)((char *)w - offsetof(struct aconn, timer)));
}

static void aconn_new(void *arg, int fd)
{
	struct dbk_admin *a = arg;
	struct aconn *c = a->open < MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;

	if (!c) {
		close(fd);
		return;
	}
	c->a = a;
	dbk_sb_init(&c->out);
	c->next = a->conns;
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
	a->open++;
	ev_io_init(&c->io, on_aconn, fd, EV_READ);
	ev_io_start(a->loop, &c->io);
	/* A client that never finishes its request is not waited for. */
	ev_timer_init(&c->timer, on_atimer, IO_TIMEOUT, 0);
	ev_timer_start(a->loop, &c->timer);
}

struct dbk_admin *dbk_admin_new(struct ev_loop *loop, dbk_admin_handler h, void *arg)
{
	struct dbk_admin *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->loop = loop;
	a->handler = h;
	a->arg = arg;
	dbk_listener_init(&a->ls, loop, "admin", aconn_new, a);
	return a;
}

int dbk_admin_add_listener(struct dbk_admin *a, int fd)
{
	return dbk_listener_add(&a->ls, fd);
}

void dbk_admin_free(struct dbk_admin *a)
{
	if (!a)
		return;
	dbk_listener_close(&a->ls);
	while (a->conns)
		aconn_close(a->conns);
	free(a);
}
