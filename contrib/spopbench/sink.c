#include "sink.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define SINK_BUF 16384
/* Bounds the work one readable event does on one connection. */
#define READ_ROUNDS 16

struct link {
	ev_io io;
	struct dbk_sink *s;
	struct dbk_list el;
};

static void link_close(struct link *l)
{
	ev_io_stop(l->s->loop, &l->io);
	close(l->io.fd);
	dbk_list_del(&l->el);
	free(l);
}

static void on_link_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct link *l = (struct link *)w;
	char buf[SINK_BUF];

	(void)loop;
	(void)revents;
	for (int round = 0; round < READ_ROUNDS; round++) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n > 0) {
			l->s->bytes += (uint64_t)n;
			if ((size_t)n < sizeof(buf))
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			link_close(l);
		return;
	}
}

static void link_new(void *arg, int fd)
{
	struct dbk_sink *s = arg;
	struct link *l = malloc(sizeof(*l));

	if (!l) {
		close(fd);
		return;
	}
	l->s = s;
	dbk_list_push(&s->links, &l->el);
	s->accepted++;
	ev_io_init(&l->io, on_link_io, fd, EV_READ);
	ev_io_start(s->loop, &l->io);
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
		link_close(l);
}
