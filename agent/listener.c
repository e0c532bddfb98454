#include "listener.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "net.h"

/* Bounds the work of one readable event, so that a connection storm on
 * one listener cannot starve the connections already open. */
#define ACCEPTS_PER_EVENT 64

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_listener_set *s = ((struct dbk_listener *)w)->set;

	(void)loop;
	(void)revents;
	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		int fd = accept(w->fd, NULL, NULL);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				dbk_log(DBK_LOG_WARN, "accept-failed", "for=%s error=\"%s\"", s->what,
				        strerror(errno));
			return;
		}
		if (dbk_net_nonblock(fd) < 0) {
			close(fd);
			continue;
		}
		s->cb(s->arg, fd);
	}
}

void dbk_listener_init(struct dbk_listener_set *s, struct ev_loop *loop,
                       const char *what, dbk_accept_cb cb, void *arg)
{
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->what = what;
	s->cb = cb;
	s->arg = arg;
}

int dbk_listener_add(struct dbk_listener_set *s, int fd)
{
	if (s->n == DBK_LISTENER_MAX)
		return -1;
	struct dbk_listener *l = &s->ls[s->n++];
	l->set = s;
	ev_io_init(&l->io, on_accept, fd, EV_READ);
	ev_io_start(s->loop, &l->io);
	return 0;
}

void dbk_listener_close(struct dbk_listener_set *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		ev_io_stop(s->loop, &s->ls[i].io);
		close(s->ls[i].io.fd);
	}
	s->n = 0;
}
