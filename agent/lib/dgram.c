#include "lib/dgram.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Datagrams read per wakeup before the loop serves others. */
#define DGRAM_ROUNDS 256

/* Nothing to frame and nothing to close: a restarted reader hears the
 * next datagram at once. recvmmsg was tried in the agent and measured no
 * better under HAProxy's load (BENCHMARKS.md, "The ttft policy's cost"). */
static void on_dgram(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_dgram_set *s = w->data;

	(void)loop;
	(void)revents;
	for (int round = 0; round < DGRAM_ROUNDS; round++) {
		ssize_t n = recv(w->fd, s->buf, s->cap, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* EAGAIN, or an error the next datagram clears */
		}
		s->cb(s->arg, s->buf, (size_t)n);
	}
}

int dbk_dgram_init(struct dbk_dgram_set *s, struct ev_loop *loop, size_t cap, dbk_dgram_cb cb,
                   void *arg)
{
	*s = (struct dbk_dgram_set){ .loop = loop, .cb = cb, .arg = arg, .cap = cap };
	s->buf = malloc(cap ? cap : 1);
	return s->buf ? 0 : -1;
}

int dbk_dgram_add(struct dbk_dgram_set *s, int fd)
{
	if (s->n == DBK_LISTENER_MAX)
		return -1;
	ev_io *w = &s->io[s->n++];

	ev_io_init(w, on_dgram, fd, EV_READ);
	w->data = s;
	ev_io_start(s->loop, w);
	return 0;
}

void dbk_dgram_close(struct dbk_dgram_set *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		ev_io_stop(s->loop, &s->io[i]);
		close(s->io[i].fd);
	}
	s->n = 0;
	free(s->buf);
	s->buf = NULL;
}
