#include "spop_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "conn.h"
#include "connset.h"
#include "log.h"

#define OUT_CAP (64 * 1024)
/* The input loop handles another frame only while a whole frame's worth
 * of room is left for its answer (replies are far smaller: a few hundred
 * bytes), and otherwise waits for the peer to read what we already owe
 * it. Before HELLO, this much is enough for AGENT-HELLO or DISCONNECT. */
#define MAX_REPLY 1024
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
	struct dbk_conn conn;
	struct dbk_spop_server *s;
	unsigned id;
	enum conn_state state;
	uint32_t frame_max; /* ours until HELLO, then the negotiated one */
};

struct dbk_spop_server {
	struct ev_loop *loop;
	struct dbk_spop_server_config cfg;
	struct dbk_spop_handler h;
	struct dbk_connset set;
	unsigned next_id;
	struct dbk_spop_server_stats stats;
	struct dbk_log_limit fail_log;
};

/* The answer to any frame the peer may send now. */
static size_t reply_need(const struct conn *c)
{
	return c->state == ST_HELLO ? MAX_REPLY : (size_t)c->frame_max + 4;
}

/* Room for that answer within OUT_CAP of output owed. */
static bool room_for_reply(const struct conn *c)
{
	return dbk_conn_pending(&c->conn) + reply_need(c) <= OUT_CAP;
}

/* Reading waits while there is no room for an answer. */
static void set_out_high(struct conn *c)
{
	size_t need = reply_need(c);

	c->conn.out_high = need <= OUT_CAP ? OUT_CAP - need : 0;
}

/* Where the next frame goes, with room for want bytes at most and never
 * beyond OUT_CAP owed; NULL when there is none (or no memory). */
static uint8_t *out_tail(struct conn *c, size_t want, size_t *room)
{
	size_t pending = dbk_conn_pending(&c->conn);
	size_t left = pending < OUT_CAP ? OUT_CAP - pending : 0;

	*room = want < left ? want : left;
	if (*room == 0 || !dbk_buf_room(&c->conn.out, *room))
		return NULL;
	return (uint8_t *)c->conn.out.p + c->conn.out.len;
}

static void conn_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct conn *c = conn->arg;
	struct dbk_spop_server *s = c->s;

	(void)why;
	s->stats.closed++;
	s->stats.open--;
	dbk_log(DBK_LOG_DEBUG, "conn-close", "conn=%u", c->id);
	free(c);
}

/* Queues AGENT-DISCONNECT with status. */
static void queue_disconnect(struct conn *c, enum dbk_spop_status st, const char *msg)
{
	size_t room;
	uint8_t *p = out_tail(c, MAX_REPLY, &room);
	size_t n = p ? dbk_spop_disconnect_build(p, room, st, msg) : 0;
	unsigned slot = st <= DBK_SPOP_ERR_RES ? (unsigned)st : DBK_SPOP_ERR_RES + 1;

	c->conn.out.len += n;
	c->s->stats.disconnects[slot]++;
	if (n)
		c->s->stats.frames_out++;
	uint64_t suppressed;
	if (st != DBK_SPOP_OK &&
	    dbk_log_limit_allow(&c->s->fail_log, ev_now(c->s->loop), &suppressed))
		dbk_log(DBK_LOG_WARN, "spop-disconnect",
		        "conn=%u status=%d reason=\"%s\" suppressed=%llu", c->id, (int)st,
		        msg ? msg : dbk_spop_status_str(st), (unsigned long long)suppressed);
}

/* Flushes what we owe, then closes; a peer that will not read it is not
 * waited for beyond CLOSE_TIMEOUT. */
static void conn_closing(struct conn *c)
{
	c->state = ST_CLOSING;
	dbk_conn_drain(&c->conn, CLOSE_TIMEOUT);
}

/* Queues AGENT-DISCONNECT with status and moves to CLOSING. */
static void conn_fail(struct conn *c, enum dbk_spop_status st, const char *msg)
{
	queue_disconnect(c, st, msg);
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
	size_t room;
	uint8_t *p = out_tail(c, MAX_REPLY, &room);
	size_t n = p ? dbk_spop_agent_hello_build(p, room, c->frame_max, h.pipelining) : 0;
	if (n == 0) {
		conn_fail(c, DBK_SPOP_ERR_RES, NULL);
		return;
	}
	c->conn.out.len += n;
	c->s->stats.frames_out++;
	if (h.healthcheck) {
		/* A health check only wants our HELLO; then we hang up. */
		c->s->stats.healthchecks++;
		conn_closing(c);
		return;
	}
	c->s->stats.hellos++;
	c->state = ST_READY;
	set_out_high(c);
	dbk_conn_timeouts(&c->conn, c->s->cfg.frame_timeout, c->s->cfg.idle_timeout);
	dbk_log(DBK_LOG_DEBUG, "spop-hello", "conn=%u max_frame_size=%u pipelining=%d", c->id,
	        c->frame_max, h.pipelining);
}

/* The handler writes the actions; the frame around them is ours, so
 * its ids always echo the NOTIFY's. */
static void on_notify(struct conn *c, const struct dbk_spop_frame *f)
{
	struct dbk_spop_server *s = c->s;
	struct dbk_buf *out = &c->conn.out;
	size_t room = (size_t)c->frame_max + 4;
	struct dbk_spop_writer w;
	enum dbk_spop_status st;

	/* We never offer fragmentation, so every NOTIFY must be whole. */
	if (!(f->flags & DBK_SPOP_FLAG_FIN) || (f->flags & DBK_SPOP_FLAG_ABORT)) {
		conn_fail(c, DBK_SPOP_ERR_FRAG_NOT_SUPP, NULL);
		return;
	}
	s->stats.notifies++;
	/* room_for_reply made sure a whole frame fits within OUT_CAP; the
	 * buffer may still have to grow to it. */
	if (!dbk_buf_room(out, room)) {
		conn_fail(c, DBK_SPOP_ERR_RES, NULL);
		return;
	}
	dbk_spop_writer_init(&w, (uint8_t *)out->p + out->len, room);
	dbk_spop_ack_begin(&w, f->stream_id, f->frame_id);
	st = s->h.notify(s->h.arg, f, &w);
	if (st == DBK_SPOP_OK && dbk_spop_frame_end(&w) == 0)
		st = DBK_SPOP_ERR_RES;
	if (st != DBK_SPOP_OK) {
		conn_fail(c, st, NULL);
		return;
	}
	out->len += w.len;
	s->stats.frames_out++;
	s->stats.acks++;
	/* The work HAProxy's connections do: it keeps this one open when
	 * the server is full. */
	dbk_connset_useful(&c->conn);
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
static void conn_process(struct dbk_conn *conn)
{
	struct conn *c = conn->arg;
	const uint8_t *in = (const uint8_t *)conn->in.p;
	size_t off = 0;

	while (c->state != ST_CLOSING && room_for_reply(c)) {
		struct dbk_spop_frame f;
		enum dbk_spop_status st;
		size_t flen;
		bool complete;

		st = dbk_spop_frame_split(in + off, conn->in.len - off, c->frame_max, &flen,
		                          &complete);
		if (st != DBK_SPOP_OK) {
			conn_fail(c, st, NULL);
			break;
		}
		if (!complete)
			break;
		c->s->stats.frames_in++;
		st = dbk_spop_frame_parse(in + off + 4, flen, &f);
		off += 4 + flen;
		if (st != DBK_SPOP_OK)
			conn_fail(c, st, NULL);
		else if (c->state == ST_HELLO)
			on_hello(c, &f);
		else
			on_ready(c, &f);
	}
	dbk_buf_consume(&conn->in, off);
}

static void conn_timeout(struct dbk_conn *conn)
{
	struct conn *c = conn->arg;

	conn_fail(c, DBK_SPOP_ERR_TIMEOUT,
	          c->state == ST_HELLO ? "no HELLO in time"
	          : conn->partial      ? "frame never finished"
	                               : "idle");
}

static const struct dbk_conn_ops spop_conn_ops = {
	.on_data = conn_process,
	.on_timeout = conn_timeout,
	.on_close = conn_closed,
};

static void conn_new(void *arg, int fd)
{
	struct dbk_spop_server *s = arg;
	struct conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (dbk_conn_accept(c ? &c->conn : NULL, s->loop, fd, &s->set, &spop_conn_ops, c,
	                    (size_t)s->cfg.max_frame_size + 4) < 0) {
		dbk_log(DBK_LOG_ERROR, "conn-refused", "reason=\"out of memory\"");
		free(c);
		return;
	}
	/* Answers are tiny and latency is the product: no Nagle. Fails
	 * harmlessly on unix sockets. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	c->id = ++s->next_id;
	c->state = ST_HELLO;
	c->frame_max = s->cfg.max_frame_size;
	set_out_high(c);
	s->stats.accepted++;
	s->stats.open++;
	dbk_conn_deadline(&c->conn, s->cfg.hello_timeout);
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
	/* Closing what is over a limit at once lets HAProxy fail over to its
	 * own balancing now rather than after a timeout. */
	struct dbk_connset_limits lim = {
		.max_conns = s->cfg.max_connections,
		.max_per_peer = s->cfg.max_connections_per_peer,
		.refused = &s->stats.refused_conns,
		.evicted = &s->stats.evicted_conns,
		.allow = s->cfg.allow,
		.nallow = s->cfg.nallow,
	};
	if (dbk_connset_open(&s->set, loop, "spop", conn_new, s, &lim) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

int dbk_spop_server_add_listener(struct dbk_spop_server *s, int fd)
{
	return dbk_connset_add_listener(&s->set, fd);
}

static void say_bye(struct dbk_conn *conn)
{
	struct conn *c = conn->arg;

	if (c->state != ST_CLOSING)
		queue_disconnect(c, DBK_SPOP_OK, "agent is shutting down");
	dbk_conn_flush_close(conn);
}

void dbk_spop_server_shutdown(struct dbk_spop_server *s) { dbk_connset_close(&s->set, say_bye); }

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
