#include "lib/dgram.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Datagrams read per wakeup before the loop serves others. */
#define DGRAM_ROUNDS 256

static bool allowed(const struct dbk_dgram_set *s, const struct sockaddr_storage *from)
{
	for (unsigned i = 0; i < s->nallow; i++)
		if (dbk_net_cidr_match(&s->allow[i], (const struct sockaddr *)from))
			return true;
	return false;
}

/* Logged, but at most a few lines a second: a sender left out by
 * mistake (HAProxy's own address missing from --allow-from) shows at
 * once, a flood does not flood the log. */
static void refuse(struct dbk_dgram_set *s, const struct sockaddr_storage *from)
{
	uint64_t suppressed;
	char p[64];

	(*s->refused)++;
	if (dbk_log_limit_allow(&s->refuse_log, ev_now(s->loop), &suppressed)) {
		dbk_net_addr_name(from, p, sizeof(p));
		dbk_log(DBK_LOG_WARN, "datagram-refused",
		        "reason=not-allowed peer=%s suppressed=%llu", p,
		        (unsigned long long)suppressed);
	}
}

/* Nothing to frame and nothing to close: a restarted reader hears the
 * next datagram at once. recvmmsg was tried in the agent and measured no
 * better under HAProxy's load (BENCHMARKS.md, "The ttft policy's cost"). */
static void on_dgram(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_dgram_set *s = w->data;

	(void)loop;
	(void)revents;
	for (int round = 0; round < DGRAM_ROUNDS; round++) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(w->fd, s->buf, s->cap, 0, (struct sockaddr *)&from, &fromlen);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* EAGAIN, or an error the next datagram clears */
		}
		if (s->nallow && !allowed(s, &from)) {
			refuse(s, &from);
			continue;
		}
		s->cb(s->arg, s->buf, (size_t)n);
	}
}

void dbk_dgram_allow(struct dbk_dgram_set *s, const struct dbk_net_cidr *allow, unsigned nallow,
                     uint64_t *refused)
{
	s->allow = allow;
	s->nallow = nallow;
	s->refused = refused;
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
