#include "completion_rx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/dgram.h"
#include "lib/list.h"
#include "lib/listener.h"
#include "lib/log.h"

/* One whole frame must fit: its length prefix (at most 5 digits and a
 * space) and the longest line we accept. */
#define IN_CAP (DBK_COMPLETION_MAX_LINE + 8)
#define READ_ROUNDS 16
/* From a frame's first byte to its last: HAProxy writes a line whole, a
 * peer that stops half-way is cut. */
#define FRAME_TIMEOUT 5.0

struct econn {
	ev_io io;
	ev_timer frame_timer;
	struct dbk_events *e;
	struct dbk_list link; /* in dbk_events.conns, oldest first */
	bool delivered;       /* has sent a completion line: HAProxy's */
	size_t len;
	char buf[IN_CAP];
};

struct dbk_events {
	struct ev_loop *loop;
	dbk_events_cb cb;
	void *arg;
	struct dbk_listener_set ls;
	struct dbk_dgram_set dgrams;
	struct dbk_list conns;
	struct dbk_events_stats stats;
	struct dbk_ratelimit up_log;
};

static void econn_close(struct econn *c)
{
	struct dbk_events *e = c->e;

	ev_io_stop(e->loop, &c->io);
	ev_timer_stop(e->loop, &c->frame_timer);
	dbk_listener_release(&e->ls, c->io.fd);
	close(c->io.fd);
	dbk_list_del(&c->link);
	e->stats.open--;
	free(c);
}

/* Parses one line and hands it on; counts the ones that are not ours.
 * Returns whether it was a completion line. */
static bool deliver(struct dbk_events *e, const char *msg, size_t msg_len)
{
	struct dbk_completion ev;

	if (dbk_completion_parse(msg, msg_len, &ev) != DBK_COMPLETION_OK) {
		char q[256];

		e->stats.bad_lines++;
		dbk_log(DBK_LOG_DEBUG, "completion-bad-line", "line=\"%s\"",
		        dbk_log_quote(q, sizeof(q), msg, msg_len));
		return false;
	}
	e->stats.lines++;
	e->cb(e->arg, &ev);
	return true;
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
		enum dbk_completion_status st;

		st = dbk_completion_frame(c->buf + off, c->len - off, &msg, &msg_len, &used);
		if (st == DBK_COMPLETION_NEED_MORE)
			break;
		if (st != DBK_COMPLETION_OK)
			return -1;
		off += used;
		if (deliver(e, msg, msg_len))
			c->delivered = true;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	/* The frame timer runs from the first byte of the frame under way. */
	if (!c->len)
		ev_timer_stop(e->loop, &c->frame_timer);
	else if (off || !ev_is_active(&c->frame_timer)) {
		ev_timer_stop(e->loop, &c->frame_timer);
		ev_timer_set(&c->frame_timer, FRAME_TIMEOUT, 0);
		ev_timer_start(e->loop, &c->frame_timer);
	}
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

static void on_frame_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct econn *c = (struct econn *)((char *)w - offsetof(struct econn, frame_timer));

	(void)loop;
	(void)revents;
	c->e->stats.bad_frames++;
	dbk_log(DBK_LOG_WARN, "completion-link-dropped", "reason=\"frame never finished\"");
	econn_close(c);
}

/* The listener is full: the oldest link that never sent a completion
 * line makes way (an idle flood cannot keep HAProxy's ring out; a link
 * that delivered is HAProxy's and stays). */
static int make_room(void *arg, const void *peer)
{
	struct dbk_events *e = arg;
	struct econn *victim = NULL;
	struct dbk_list *it, *nx;

	dbk_list_for_each_safe(it, nx, &e->conns)
	{
		struct econn *c = dbk_list_elem(it, struct econn, link);

		if (!c->delivered && dbk_listener_may_evict(&e->ls, c->io.fd, peer)) {
			victim = c;
			break;
		}
	}
	if (!victim)
		return 0;
	dbk_log(DBK_LOG_DEBUG, "completion-link-dropped", "reason=\"silent, made way\"");
	econn_close(victim);
	return 1;
}

static void econn_new(void *arg, int fd)
{
	struct dbk_events *e = arg;
	struct econn *c = malloc(sizeof(*c));

	if (!c) {
		dbk_log(DBK_LOG_WARN, "completion-link-refused", "reason=\"out of memory\"");
		dbk_listener_release(&e->ls, fd);
		close(fd);
		return;
	}
	c->e = e;
	c->len = 0;
	c->delivered = false;
	ev_timer_init(&c->frame_timer, on_frame_timeout, FRAME_TIMEOUT, 0);
	dbk_list_append(&e->conns, &c->link);
	e->stats.accepted++;
	e->stats.open++;
	ev_io_init(&c->io, on_econn, fd, EV_READ);
	ev_io_start(e->loop, &c->io);
	uint64_t suppressed;
	if (dbk_ratelimit_allow(&e->up_log, ev_now(e->loop), &suppressed))
		dbk_log(DBK_LOG_INFO, "completion-link-up", "open=%u suppressed=%llu",
		        e->stats.open, (unsigned long long)suppressed);
}

/* A datagram is one line. One longer than the buffer is cut, which keeps
 * the leading fields, the only ones read (HAProxy's UDP lines stop at
 * 1024 bytes by default anyway). */
static void on_dgram(void *arg, const char *buf, size_t len)
{
	struct dbk_events *e = arg;

	e->stats.datagrams++;
	deliver(e, buf, len);
}

int dbk_events_add_datagram(struct dbk_events *e, int fd) { return dbk_dgram_add(&e->dgrams, fd); }

struct dbk_events *dbk_events_new(struct ev_loop *loop, unsigned max_conns, dbk_events_cb cb,
                                  void *arg)
{
	struct dbk_events *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->loop = loop;
	e->cb = cb;
	e->arg = arg;
	dbk_list_init(&e->conns);
	dbk_listener_init(&e->ls, loop, "completions", econn_new, e);
	/* One peer may hold half the links, so another (HAProxy) gets in. */
	if (dbk_listener_limit(&e->ls, max_conns, (max_conns + 1) / 2, NULL) < 0 ||
	    dbk_dgram_init(&e->dgrams, loop, IN_CAP, on_dgram, e) < 0) {
		dbk_listener_close(&e->ls);
		free(e);
		return NULL;
	}
	e->ls.make_room = make_room;
	return e;
}

int dbk_events_add_listener(struct dbk_events *e, int fd) { return dbk_listener_add(&e->ls, fd); }

void dbk_events_free(struct dbk_events *e)
{
	if (!e)
		return;
	dbk_listener_close(&e->ls);
	dbk_dgram_close(&e->dgrams);
	while (!dbk_list_empty(&e->conns))
		econn_close(dbk_list_first(&e->conns, struct econn, link));
	free(e);
}

const struct dbk_events_stats *dbk_events_stats(const struct dbk_events *e) { return &e->stats; }
