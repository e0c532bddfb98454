#include "sink.h"

#include <stdlib.h>

#include "lib/conn.h"

#define SINK_BUF 16384

struct link {
	struct dbk_conn conn;
	struct dbk_sink *s;
	struct dbk_list el;
};

static void on_link_data(struct dbk_conn *conn)
{
	struct link *l = conn->arg;

	l->s->bytes += conn->in.len;
	dbk_buf_consume(&conn->in, conn->in.len);
}

static void on_link_close(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct link *l = conn->arg;

	(void)why;
	dbk_list_del(&l->el);
	free(l);
}

static const struct dbk_conn_ops link_ops = { .on_data = on_link_data, .on_close = on_link_close };

static void link_new(void *arg, int fd)
{
	struct dbk_sink *s = arg;
	struct link *l = malloc(sizeof(*l));

	if (dbk_conn_accept(l ? &l->conn : NULL, s->loop, fd, NULL, &link_ops, l, SINK_BUF) < 0) {
		free(l);
		return;
	}
	l->s = s;
	dbk_list_push(&s->links, &l->el);
	s->accepted++;
}

static void on_dgram(void *arg, const char *buf, size_t len)
{
	struct dbk_sink *s = arg;

	(void)buf;
	s->datagrams++;
	s->bytes += len;
}

int dbk_sink_add_datagram(struct dbk_sink *s, int fd) { return dbk_dgram_add(&s->dgrams, fd); }

int dbk_sink_init(struct dbk_sink *s, struct ev_loop *loop)
{
	s->loop = loop;
	s->accepted = s->bytes = s->datagrams = 0;
	dbk_list_init(&s->links);
	dbk_listener_init(&s->ls, loop, "completions", link_new, s);
	/* Up to 16 KB of a datagram, about what the agent reads. */
	return dbk_dgram_init(&s->dgrams, loop, SINK_BUF, on_dgram, s);
}

void dbk_sink_close(struct dbk_sink *s)
{
	struct link *l;

	dbk_listener_close(&s->ls);
	dbk_dgram_close(&s->dgrams);
	while ((l = dbk_list_first(&s->links, struct link, el)))
		dbk_conn_close(&l->conn, DBK_CONN_LOCAL);
}
