#include "lib/conn.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "lib/connset.h"
#include "lib/listener.h"
#include "lib/net.h"

/* Bounds the work one readable event may do on one connection. */
#define READ_ROUNDS 16
/* An input buffer grows when less room than this is left, and starts
 * with at most READ_START. */
#define READ_MIN (8 * 1024)
#define READ_START (64 * 1024)
/* A drained output buffer larger than this is freed, not kept. */
#define OUT_KEEP (256 * 1024)

static void on_io(struct ev_loop *loop, ev_io *w, int revents);
static void on_timer(struct ev_loop *loop, ev_timer *w, int revents);

static void conn_init(struct dbk_conn *c, struct ev_loop *loop, int fd,
                      const struct dbk_conn_ops *ops, void *arg, size_t in_max)
{
	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->ops = ops;
	c->arg = arg;
	c->fd = fd;
	c->in_max = in_max;
	c->out_high = SIZE_MAX;
	dbk_list_init(&c->set_link);
	ev_io_init(&c->io, on_io, fd, 0);
	ev_timer_init(&c->timer, on_timer, 0, 0);
}

/* The one place a conn ends. */
static void conn_end(struct dbk_conn *c)
{
	ev_io_stop(c->loop, &c->io);
	ev_timer_stop(c->loop, &c->timer);
	dbk_connset_forget(c);
	close(c->fd);
	c->fd = -1;
	/* on_close may still read the input (a client's whole answer), take
	 * it (keep_in), and free or re-use c: the buffers are freed from
	 * copies. */
	struct dbk_buf in = c->in, out = c->out;
	bool keep_in = c->keep_in;
	c->ops->on_close(c, c->why);
	if (!keep_in)
		dbk_buf_free(&in);
	dbk_buf_free(&out);
}

void dbk_conn_close(struct dbk_conn *c, enum dbk_conn_why why)
{
	if (c->dead)
		return;
	c->dead = true;
	c->why = why;
	if (!c->busy)
		conn_end(c);
}

static void conn_fail(struct dbk_conn *c, const char *op, int err)
{
	if (c->dead)
		return;
	c->err_op = op;
	c->err_no = err;
	dbk_conn_close(c, DBK_CONN_ERROR);
}

/* Hands the input to the user, then times the frame left under way from
 * when it began: after the frames just handled ended, so a peer whose
 * reads always end mid-frame is timed frame by frame. */
static void conn_process(struct dbk_conn *c)
{
	size_t before = c->in.len;

	c->ops->on_data(c);
	if (c->dead)
		return;
	if (c->in.len && (c->in.len < before || !c->partial))
		c->frame_start = ev_now(c->loop);
	c->partial = c->in.len > 0;
}

static bool may_read(const struct dbk_conn *c)
{
	return !c->draining && !c->dead && dbk_conn_pending(c) <= c->out_high &&
	       c->in.len < c->in_max;
}

static void conn_read(struct dbk_conn *c)
{
	for (int round = 0; round < READ_ROUNDS && may_read(c); round++) {
		size_t want = c->in_max - c->in.len;
		size_t room = c->in.cap ? c->in.cap - 1 - c->in.len : 0;

		/* The buffer doubles when little room is left, so a large
		 * in_max (a client's whole answer) grows it as bytes come. */
		if (room < want && room < READ_MIN) {
			if (!dbk_buf_reserve(&c->in,
			                     c->in.cap > READ_MIN ? c->in.cap : 2 * READ_MIN)) {
				conn_fail(c, "read", ENOMEM);
				return;
			}
			room = c->in.cap - 1 - c->in.len;
		}
		if (want > room)
			want = room;
		ssize_t n = read(c->fd, c->in.p + c->in.len, want);
		if (n == 0) {
			c->in.p[c->in.len] = '\0'; /* the input is a string, even empty */
			dbk_conn_close(c, DBK_CONN_EOF);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				conn_fail(c, "read", errno);
			return;
		}
		c->in.len += (size_t)n;
		c->in.p[c->in.len] = '\0';
		if (c->idle_timeout > 0)
			c->last_read = ev_now(c->loop);
		conn_process(c);
		/* A short read drained the socket: skip the read that would
		 * only say EAGAIN; the watcher tells us when more comes. */
		if ((size_t)n < want)
			return;
	}
}

static void conn_write(struct dbk_conn *c)
{
	if (c->dead || c->connecting || c->out_off == c->out.len)
		return;
	if (dbk_net_send_pending(c->fd, c->out.p, c->out.len, &c->out_off) < 0) {
		if (c->read_after_epipe && (errno == EPIPE || errno == ECONNRESET)) {
			c->out_off = 0;
			dbk_buf_free(&c->out);
			return;
		}
		conn_fail(c, "write", errno);
		return;
	}
	if (c->out_off == c->out.len) {
		c->out_off = 0;
		/* A large request is not kept for the life of the answer. */
		if (c->out.cap > OUT_KEEP)
			dbk_buf_free(&c->out);
		else
			dbk_buf_reset(&c->out);
	} else if (c->out_off > c->out.len / 2) {
		dbk_buf_consume(&c->out, c->out_off);
		c->out_off = 0;
	}
}

static void arm_timer(struct dbk_conn *c, double after)
{
	ev_timer_stop(c->loop, &c->timer);
	ev_timer_set(&c->timer, after > 0 ? after : 0, 0);
	ev_timer_start(c->loop, &c->timer);
}

/* Re-arms the watcher and timer for what the conn waits for now, or
 * ends it once it has nothing left to do. Returns false when it ended. */
static bool conn_settle(struct dbk_conn *c)
{
	int want = 0;

	if (c->dead || (c->draining && c->out_off == c->out.len)) {
		c->dead = true;
		conn_end(c);
		return false;
	}
	if (c->tmode == DBK_CONN_T_FRAME_IDLE && !c->draining) {
		ev_tstamp now = ev_now(c->loop);

		if (c->partial && c->frame_timeout > 0)
			arm_timer(c, c->frame_start + c->frame_timeout - now);
		else if (!c->partial && c->idle_timeout > 0)
			arm_timer(c, c->last_read + c->idle_timeout - now);
		else if (ev_is_active(&c->timer))
			ev_timer_stop(c->loop, &c->timer);
	}
	if (c->connecting || c->out_off < c->out.len)
		want |= EV_WRITE;
	if (!c->connecting && may_read(c))
		want |= EV_READ;
	if (want != (c->io.events & (EV_READ | EV_WRITE))) {
		ev_io_stop(c->loop, &c->io);
		ev_io_set(&c->io, c->fd, want);
		if (want)
			ev_io_start(c->loop, &c->io);
	}
	return true;
}

static void conn_connected(struct dbk_conn *c)
{
	int e = dbk_net_connect_error(c->fd);

	if (e) {
		conn_fail(c, "connect", e);
		return;
	}
	c->connecting = false;
	if (c->ops->on_connect)
		c->ops->on_connect(c);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_conn *c = (struct dbk_conn *)w;

	(void)loop;
	c->busy = true;
	if (c->connecting) {
		if (revents & EV_WRITE)
			conn_connected(c);
	} else if (revents & EV_WRITE) {
		conn_write(c);
		/* Input left unanswered for lack of room can go now. */
		if (!c->dead && !c->draining && c->in.len)
			conn_process(c);
	}
	if ((revents & EV_READ) && !c->connecting)
		conn_read(c);
	/* All the answers to one batch of input go out in one write. */
	conn_write(c);
	c->busy = false;
	conn_settle(c);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_conn *c = (struct dbk_conn *)((char *)w - offsetof(struct dbk_conn, timer));

	(void)loop;
	(void)revents;
	c->busy = true;
	/* A peer that will not read our last words is not waited for. */
	if (c->draining || !c->ops->on_timeout)
		dbk_conn_close(c, DBK_CONN_TIMEOUT);
	else
		c->ops->on_timeout(c);
	conn_write(c);
	c->busy = false;
	conn_settle(c);
}

int dbk_conn_accept(struct dbk_conn *c, struct ev_loop *loop, int fd, struct dbk_connset *set,
                    const struct dbk_conn_ops *ops, void *arg, size_t in_max)
{
	if (c)
		conn_init(c, loop, fd, ops, arg, in_max);
	if (!c || !dbk_buf_reserve(&c->in, in_max < READ_START ? in_max : READ_START)) {
		if (set)
			dbk_listener_release(&set->ls, fd);
		close(fd);
		return -1;
	}
	if (set) {
		/* Joins at the back: it has waited least, so it makes way
		 * after those idle longer. */
		c->set = set;
		c->useful_at = ev_now(loop);
		dbk_list_append(&set->conns, &c->set_link);
	}
	ev_io_set(&c->io, fd, EV_READ);
	ev_io_start(loop, &c->io);
	return 0;
}

int dbk_conn_connect(struct dbk_conn *c, struct ev_loop *loop, const struct sockaddr_storage *sa,
                     socklen_t len, const struct dbk_conn_ops *ops, void *arg, size_t in_max)
{
	int fd = dbk_net_connect(sa, len);

	if (fd < 0)
		return -1;
	conn_init(c, loop, fd, ops, arg, in_max);
	c->connecting = true;
	ev_io_set(&c->io, fd, EV_WRITE);
	ev_io_start(loop, &c->io);
	return 0;
}

bool dbk_conn_update(struct dbk_conn *c)
{
	if (c->busy)
		return true;
	c->busy = true;
	conn_write(c);
	c->busy = false;
	return conn_settle(c);
}

bool dbk_conn_send(struct dbk_conn *c, const void *data, size_t n)
{
	dbk_buf_add(&c->out, data, n);
	if (c->out.oom) {
		conn_fail(c, "write", ENOMEM);
		return c->busy; /* inside a callback the close waits for its end */
	}
	return dbk_conn_update(c);
}

void dbk_conn_flush_close(struct dbk_conn *c)
{
	c->busy = true; /* a failed write closes it below, once */
	conn_write(c);
	c->busy = false;
	if (!c->dead) {
		c->dead = true;
		c->why = DBK_CONN_LOCAL;
	}
	conn_end(c);
}

void dbk_conn_deadline(struct dbk_conn *c, double secs)
{
	c->tmode = DBK_CONN_T_DEADLINE;
	if (secs > 0)
		arm_timer(c, secs);
	else
		ev_timer_stop(c->loop, &c->timer);
}

void dbk_conn_timeouts(struct dbk_conn *c, double frame_timeout, double idle_timeout)
{
	c->tmode = DBK_CONN_T_FRAME_IDLE;
	c->frame_timeout = frame_timeout;
	c->idle_timeout = idle_timeout;
	/* Reads are timed from now on (only an idle timeout needs them). */
	c->last_read = ev_now(c->loop);
	ev_timer_stop(c->loop, &c->timer);
	dbk_conn_update(c);
}

bool dbk_conn_drain(struct dbk_conn *c, double secs)
{
	c->draining = true;
	if (secs > 0)
		dbk_conn_deadline(c, secs);
	return dbk_conn_update(c);
}
