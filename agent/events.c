#include "events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listener.h"
#include "log.h"

/* One whole frame must fit: its length prefix (at most 5 digits and a
 * space) and the longest line we accept. */
#define IN_CAP (DBK_COMPLETION_MAX_LINE + 8)
#define READ_ROUNDS 16

struct econn {
	ev_io io;
	struct dbk_events *e;
	struct econn *prev, *next;
	size_t len;
	char buf[IN_CAP];
};

struct dbk_events {
	struct ev_loop *loop;
	unsigned max_conns;
	dbk_events_cb cb;
	void *arg;
	struct dbk_listener_set ls;
	struct econn *conns;
	struct dbk_events_stats stats;
};

static void econn_close(struct econn *c)
{
	struct dbk_events *e = c->e;

	ev_io_stop(e->loop, &c->io);
	close(c->io.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		e->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	e->stats.open--;
	free(c);
}

/* Consumes every whole frame in the buffer. Returns -1 when the framing
 * is broken and the connection must go. */
static int econn_drain(struct econn *c)
{
	struct dbk_events *e = c->e;
	size_t off = 0;

	for (;;) {
		const char *msg;
		size_t msg_len, used;
		struct dbk_completion ev;
		enum dbk_completion_status st;

		st = dbk_completion_frame(c->buf + off, c->len - off, &msg, &msg_len, &used);
		if (st == DBK_COMPLETION_NEED_MORE)
			break;
		if (st != DBK_COMPLETION_OK)
			return -1;
		off += used;
		if (dbk_completion_parse(msg, msg_len, &ev) != DBK_COMPLETION_OK) {
			char q[256];

			e->stats.bad_lines++;
			dbk_log(DBK_LOG_DEBUG, "completion-bad-line", "line=\"%s\"",
			        dbk_log_quote(q, sizeof(q), msg, msg_len));
			continue;
		}
		e->stats.lines++;
		e->cb(e->arg, &ev);
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

static void on_econn(struct ev_loop *loop, ev_io *w, int revents)
{
	struct econn *c = (struct econn *)w;

	(void)loop;
	(void)revents;
	for (int round = 0; round < READ_ROUNDS; round++) {
		size_t want = sizeof(c->buf) - c->len;
		ssize_t n = read(w->fd, c->buf + c->len, want);

		if (n == 0) {
			econn_close(c);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				econn_close(c);
			return;
		}
		c->len += (size_t)n;
		if (econn_drain(c) < 0) {
			c->e->stats.bad_frames++;
			dbk_log(DBK_LOG_WARN, "completion-link-dropped",
			        "reason=\"broken octet-count framing\"");
			econn_close(c);
			return;
		}
		if ((size_t)n < want)
			return;
	}
}

static void econn_new(void *arg, int fd)
{
	struct dbk_events *e = arg;
	struct econn *c = e->stats.open < e->max_conns ? malloc(sizeof(*c)) : NULL;

	if (!c) {
		dbk_log(DBK_LOG_WARN, "completion-link-refused", "limit=%u", e->max_conns);
		close(fd);
		return;
	}
	c->e = e;
	c->len = 0;
	c->prev = NULL;
	c->next = e->conns;
	if (e->conns)
		e->conns->prev = c;
	e->conns = c;
	e->stats.accepted++;
	e->stats.open++;
	ev_io_init(&c->io, on_econn, fd, EV_READ);
	ev_io_start(e->loop, &c->io);
	dbk_log(DBK_LOG_INFO, "completion-link-up", "open=%u", e->stats.open);
}

struct dbk_events *dbk_events_new(struct ev_loop *loop, unsigned max_conns,
                                  dbk_events_cb cb, void *arg)
{
	struct dbk_events *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->loop = loop;
	e->max_conns = max_conns;
	e->cb = cb;
	e->arg = arg;
	dbk_listener_init(&e->ls, loop, "completions", econn_new, e);
	return e;
}

int dbk_events_add_listener(struct dbk_events *e, int fd)
{
	return dbk_listener_add(&e->ls, fd);
}

void dbk_events_free(struct dbk_events *e)
{
	if (!e)
		return;
	dbk_listener_close(&e->ls);
	while (e->conns)
		econn_close(e->conns);
	free(e);
}

const struct dbk_events_stats *dbk_events_stats(const struct dbk_events *e)
{
	return &e->stats;
}
