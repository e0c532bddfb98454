#include "spop_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "list.h"
#include "listener.h"
#include "log.h"
#include "net.h"

#define OUT_CAP (64 * 1024)
/* The input loop handles another frame only while a whole frame's worth
 * of room is left for its answer (replies are far smaller: a few hundred
 * bytes), and otherwise waits for the peer to read what we already owe
 * it. Before HELLO, this much is enough for AGENT-HELLO or DISCONNECT. */
#define MAX_REPLY 1024
/* Bounds the work one readable event may do on one connection, so that
 * a peer that never stops sending cannot starve the others. */
#define READ_ROUNDS 16
#define HELLO_TIMEOUT 5.0
/* From the first byte of a frame to its last. HAProxy writes a frame in
 * one go; a peer that trickles one (slowloris) or stops half-way is cut. */
#define FRAME_TIMEOUT 5.0
/* After HELLO, between frames. Above the SPOE 'timeout idle' HAProxy is
 * told to use, so HAProxy closes its own idle connections first. */
#define IDLE_TIMEOUT 120.0

#define CLOSE_TIMEOUT 1.0

enum conn_state {
	ST_HELLO,   /* waiting for HAPROXY-HELLO */
	ST_READY,   /* NOTIFY frames flow */
	ST_CLOSING, /* flushing our last frame, then close */
};

struct conn {
	ev_io io;
	ev_timer timer;
	struct dbk_spop_server *s;
	struct dbk_list link; /* in s->conns */
	int fd;
	unsigned id;
	enum conn_state state;
	bool dead;    /* close now, without flushing */
	bool partial; /* a frame has begun and not ended */
	ev_tstamp frame_start, last_read;
	uint32_t frame_max; /* ours until HELLO, then the negotiated one */
	size_t in_len;
	size_t out_off, out_len;
	uint8_t *in;  /* our max frame + 4-byte prefix */
	uint8_t *out; /* OUT_CAP */
};

struct dbk_spop_server {
	struct ev_loop *loop;
	struct dbk_spop_server_config cfg;
	struct dbk_spop_handler h;
	struct dbk_listener_set ls;
	struct dbk_list conns;
	unsigned next_id;
	struct dbk_spop_server_stats stats;
	struct dbk_ratelimit fail_log;
};

static size_t out_room(const struct conn *c) { return OUT_CAP - c->out_len; }

/* Room for the answer to any frame the peer may send now. */
static bool room_for_reply(const struct conn *c)
{
	size_t need = c->state == ST_HELLO ? MAX_REPLY : (size_t)c->frame_max + 4;

	return out_room(c) >= need;
}

static void conn_close(struct conn *c)
{
	struct dbk_spop_server *s = c->s;

	ev_io_stop(s->loop, &c->io);
	ev_timer_stop(s->loop, &c->timer);
	dbk_listener_release(&s->ls, c->fd);
	close(c->fd);
	dbk_list_del(&c->link);
	s->stats.closed++;
	s->stats.open--;
	dbk_log(DBK_LOG_DEBUG, "conn-close", "conn=%u", c->id);
	free(c->in);
	free(c->out);
	free(c);
}

/* Flushes what we owe, then closes; a peer that will not read it is not
 * waited for beyond CLOSE_TIMEOUT. */
static void conn_closing(struct conn *c)
{
	c->state = ST_CLOSING;
	ev_timer_stop(c->s->loop, &c->timer);
	ev_timer_set(&c->timer, CLOSE_TIMEOUT, 0);
	ev_timer_start(c->s->loop, &c->timer);
}

/* Queues AGENT-DISCONNECT with status and moves to CLOSING. */
static void conn_fail(struct conn *c, enum dbk_spop_status st, const char *msg)
{
	size_t n = dbk_spop_disconnect_build(c->out + c->out_len, out_room(c), st, msg);
	unsigned slot = st <= DBK_SPOP_ERR_RES ? (unsigned)st : DBK_SPOP_ERR_RES + 1;

	c->out_len += n;
	c->s->stats.disconnects[slot]++;
	if (n)
		c->s->stats.frames_out++;
	uint64_t suppressed;
	if (st != DBK_SPOP_OK &&
	    dbk_ratelimit_allow(&c->s->fail_log, ev_now(c->s->loop), &suppressed))
		dbk_log(DBK_LOG_WARN, "spop-disconnect",
		        "conn=%u status=%d reason=\"%s\" suppressed=%llu", c->id, (int)st,
		        msg ? msg : dbk_spop_status_str(st), (unsigned long long)suppressed);
	conn_closing(c);
}

static void on_hello(struct conn *c, const struct dbk_spop_frame *f)
{
	struct dbk_spop_hello h;
	enum dbk_spop_status st;

	if (f->type != DBK_SPOP_HAPROXY_HELLO) {
		conn_fail(c, DBK_SPOP_ERR_INVALID, "expected HAPROXY-HELLO");
		return;
	}
	st = dbk_spop_hello_parse(f, &h);
	if (st != DBK_SPOP_OK) {
		conn_fail(c, st, NULL);
		return;
	}
	if (h.max_frame_size < c->frame_max)
		c->frame_max = h.max_frame_size;
	size_t n = dbk_spop_agent_hello_build(c->out + c->out_len, out_room(c), c->frame_max,
	                                      h.pipelining);
	if (n == 0) {
		conn_fail(c, DBK_SPOP_ERR_RES, NULL);
		return;
	}
	c->out_len += n;
	c->s->stats.frames_out++;
	if (h.healthcheck) {
		/* A health check only wants our HELLO; then we hang up. */
		c->s->stats.healthchecks++;
		conn_closing(c);
		return;
	}
	c->s->stats.hellos++;
	c->state = ST_READY;
	ev_timer_stop(c->s->loop, &c->timer);
	dbk_log(DBK_LOG_DEBUG, "spop-hello", "conn=%u max_frame_size=%u pipelining=%d", c->id,
	        c->frame_max, h.pipelining);
}

/* The handler writes the actions; the frame around them is ours, so
 * its ids always echo the NOTIFY's. */
static void on_notify(struct conn *c, const struct dbk_spop_frame *f)
{
	struct dbk_spop_server *s = c->s;
	struct dbk_spop_writer w;
	enum dbk_spop_status st;

	/* We never offer fragmentation, so every NOTIFY must be whole. */
	if (!(f->flags & DBK_SPOP_FLAG_FIN) || (f->flags & DBK_SPOP_FLAG_ABORT)) {
		conn_fail(c, DBK_SPOP_ERR_FRAG_NOT_SUPP, NULL);
		return;
	}
	s->stats.notifies++;
	/* room_for_reply made sure a whole frame fits. */
	dbk_spop_writer_init(&w, c->out + c->out_len, (size_t)c->frame_max + 4);
	dbk_spop_ack_begin(&w, f->stream_id, f->frame_id);
	st = s->h.notify(s->h.arg, f, &w);
	if (st == DBK_SPOP_OK && dbk_spop_frame_end(&w) == 0)
		st = DBK_SPOP_ERR_RES;
	if (st != DBK_SPOP_OK) {
		conn_fail(c, st, NULL);
		return;
	}
	c->out_len += w.len;
	s->stats.frames_out++;
	s->stats.acks++;
}

static void on_haproxy_disconnect(struct conn *c, const struct dbk_spop_frame *f)
{
	uint32_t code = 0;
	const uint8_t *msg = NULL;
	size_t msg_len = 0;
	char q[128];

	if (dbk_spop_disconnect_parse(f, &code, &msg, &msg_len) != DBK_SPOP_OK) {
		conn_fail(c, DBK_SPOP_ERR_INVALID, NULL);
		return;
	}
	c->s->stats.haproxy_disconnects++;
	dbk_log(code ? DBK_LOG_WARN : DBK_LOG_DEBUG, "haproxy-disconnect",
	        "conn=%u status=%u message=\"%s\"", c->id, code,
	        dbk_log_quote(q, sizeof(q), (const char *)msg, msg_len));
	conn_fail(c, DBK_SPOP_OK, NULL);
}

static void on_ready(struct conn *c, const struct dbk_spop_frame *f)
{
	if (f->type == DBK_SPOP_NOTIFY)
		on_notify(c, f);
	else if (f->type == DBK_SPOP_HAPROXY_DISCONNECT)
		on_haproxy_disconnect(c, f);
	else
		conn_fail(c, DBK_SPOP_ERR_INVALID, "unexpected frame type");
}

/* Handles every whole frame in the input buffer that we have room to
 * answer, then keeps the partial rest for the next read. */
static void conn_process(struct conn *c)
{
	size_t off = 0;

	while (c->state != ST_CLOSING && room_for_reply(c)) {
		struct dbk_spop_frame f;
		enum dbk_spop_status st;
		size_t flen;
		bool complete;

		st = dbk_spop_frame_split(c->in + off, c->in_len - off, c->frame_max, &flen,
		                          &complete);
		if (st != DBK_SPOP_OK) {
			conn_fail(c, st, NULL);
			break;
		}
		if (!complete)
			break;
		c->s->stats.frames_in++;
		st = dbk_spop_frame_parse(c->in + off + 4, flen, &f);
		off += 4 + flen;
		if (st != DBK_SPOP_OK)
			conn_fail(c, st, NULL);
		else if (c->state == ST_HELLO)
			on_hello(c, &f);
		else
			on_ready(c, &f);
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	/* What is left began after the frames just handled ended: its timer
	 * starts now, not when the buffer last emptied, so a peer whose reads
	 * always end mid-frame is timed frame by frame. */
	if (c->in_len && (off || !c->partial))
		c->frame_start = ev_now(c->s->loop);
	c->partial = c->in_len > 0;
}

/* Writes what we owe the peer. All answers produced by one batch of
 * frames go out in a single write(). */
static void conn_flush(struct conn *c)
{
	if (dbk_net_send_pending(c->fd, c->out, c->out_len, &c->out_off) < 0) {
		c->dead = true;
		return;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
	} else if (c->out_off > OUT_CAP / 2) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
}

static void conn_read(struct conn *c)
{
	size_t cap = (size_t)c->s->cfg.max_frame_size + 4;

	for (int round = 0; round < READ_ROUNDS && c->state != ST_CLOSING; round++) {
		if (!room_for_reply(c) || c->in_len == cap)
			break;
		size_t want = cap - c->in_len;
		ssize_t n = read(c->fd, c->in + c->in_len, want);
		if (n == 0) {
			/* HAProxy 3.1+ may just close (even with RST): normal. */
			c->dead = true;
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->dead = true;
			return;
		}
		c->in_len += (size_t)n;
		c->last_read = ev_now(c->s->loop);
		conn_process(c);
		/* A short read drained the socket: skip the read that would
		 * only say EAGAIN; the watcher tells us when more comes. */
		if ((size_t)n < want)
			return;
	}
}

/* Re-arms the watcher for what the connection waits for now, or closes
 * it once it has nothing left to do. */
static void conn_settle(struct conn *c)
{
	struct ev_loop *loop = c->s->loop;
	int want = 0;

	if (c->dead || (c->state == ST_CLOSING && c->out_off == c->out_len)) {
		conn_close(c);
		return;
	}
	if (c->state == ST_READY) {
		/* A frame under way must end within frame_timeout of its first
		 * byte; between frames the peer may be silent for idle_timeout. */
		ev_tstamp due = c->partial ? c->frame_start + c->s->cfg.frame_timeout
		                           : c->last_read + c->s->cfg.idle_timeout;
		ev_timer_stop(loop, &c->timer);
		ev_timer_set(&c->timer, due > ev_now(loop) ? due - ev_now(loop) : 0, 0);
		ev_timer_start(loop, &c->timer);
	}
	if (c->state != ST_CLOSING && room_for_reply(c))
		want |= EV_READ;
	if (c->out_off < c->out_len)
		want |= EV_WRITE;
	if (want != (c->io.events & (EV_READ | EV_WRITE))) {
		ev_io_stop(loop, &c->io);
		ev_io_set(&c->io, c->fd, want);
		ev_io_start(loop, &c->io);
	}
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = (struct conn *)w;

	(void)loop;
	if (revents & EV_WRITE) {
		conn_flush(c);
		/* Frames we left unanswered for lack of room can go now. */
		if (!c->dead)
			conn_process(c);
	}
	if ((revents & EV_READ) && !c->dead)
		conn_read(c);
	if (!c->dead)
		conn_flush(c);
	conn_settle(c);
}

static void on_conn_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = (struct conn *)((char *)w - offsetof(struct conn, timer));

	(void)loop;
	(void)revents;
	if (c->state != ST_CLOSING) {
		conn_fail(c, DBK_SPOP_ERR_TIMEOUT,
		          c->state == ST_HELLO ? "no HELLO in time"
		          : c->partial         ? "frame never finished"
		                               : "idle");
		conn_flush(c);
		conn_settle(c);
		return;
	}
	/* A peer that will not read our last frame is not waited for. */
	conn_close(c);
}

static void conn_new(void *arg, int fd)
{
	struct dbk_spop_server *s = arg;
	struct conn *c;
	int one = 1;

	c = calloc(1, sizeof(*c));
	if (c) {
		c->in = malloc((size_t)s->cfg.max_frame_size + 4);
		c->out = malloc(OUT_CAP);
	}
	if (!c || !c->in || !c->out) {
		dbk_log(DBK_LOG_ERROR, "conn-refused", "reason=\"out of memory\"");
		if (c) {
			free(c->in);
			free(c->out);
		}
		free(c);
		dbk_listener_release(&s->ls, fd);
		close(fd);
		return;
	}
	/* Answers are tiny and latency is the product: no Nagle. Fails
	 * harmlessly on unix sockets. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	c->fd = fd;
	c->id = ++s->next_id;
	c->state = ST_HELLO;
	c->frame_max = s->cfg.max_frame_size;
	c->last_read = ev_now(s->loop);
	dbk_list_push(&s->conns, &c->link);
	s->stats.accepted++;
	s->stats.open++;
	ev_io_init(&c->io, on_conn_io, fd, EV_READ);
	ev_io_start(s->loop, &c->io);
	ev_timer_init(&c->timer, on_conn_timer, s->cfg.hello_timeout, 0);
	ev_timer_start(s->loop, &c->timer);
	dbk_log(DBK_LOG_DEBUG, "conn-open", "conn=%u", c->id);
}

struct dbk_spop_server *dbk_spop_server_new(struct ev_loop *loop,
                                            const struct dbk_spop_server_config *c,
                                            const struct dbk_spop_handler *h)
{
	struct dbk_spop_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = loop;
	s->cfg = *c;
	if (s->cfg.hello_timeout <= 0)
		s->cfg.hello_timeout = HELLO_TIMEOUT;
	if (s->cfg.frame_timeout <= 0)
		s->cfg.frame_timeout = FRAME_TIMEOUT;
	if (s->cfg.idle_timeout <= 0)
		s->cfg.idle_timeout = IDLE_TIMEOUT;
	s->h = *h;
	dbk_list_init(&s->conns);
	dbk_listener_init(&s->ls, loop, "spop", conn_new, s);
	/* Closing what is over a limit at once lets HAProxy fail over to its
	 * own balancing now rather than after a timeout. */
	if (dbk_listener_limit(&s->ls, s->cfg.max_connections, s->cfg.max_connections_per_peer,
	                       &s->stats.refused_conns) < 0) {
		dbk_listener_close(&s->ls);
		free(s);
		return NULL;
	}
	return s;
}

int dbk_spop_server_add_listener(struct dbk_spop_server *s, int fd)
{
	return dbk_listener_add(&s->ls, fd);
}

void dbk_spop_server_shutdown(struct dbk_spop_server *s)
{
	struct conn *c;

	dbk_listener_close(&s->ls);
	while ((c = dbk_list_first(&s->conns, struct conn, link))) {
		if (c->state != ST_CLOSING)
			conn_fail(c, DBK_SPOP_OK, "agent is shutting down");
		conn_flush(c);
		conn_close(c);
	}
}

void dbk_spop_server_free(struct dbk_spop_server *s)
{
	if (!s)
		return;
	dbk_spop_server_shutdown(s);
	free(s);
}

const struct dbk_spop_server_stats *dbk_spop_server_stats(const struct dbk_spop_server *s)
{
	return &s->stats;
}
