#include "completion_rx.h"

#include <stdlib.h>

#include "lib/conn.h"
#include "lib/connset.h"
#include "lib/dgram.h"
#include "lib/log.h"

/* One whole frame must fit: its length prefix (at most 5 digits and a
 * space) and the longest line we accept. */
#define IN_CAP (DBK_COMPLETION_MAX_LINE + 8)
/* From a frame's first byte to its last: HAProxy writes a line whole, a
 * peer that stops half-way is cut. */
#define FRAME_TIMEOUT 5.0
/* A link that ended no lease for this long may make way for a new one
 * when the listener is full. HAProxy's ring keeps what it could not send
 * and sends it once it has reconnected. */
#define STALE_S 60.0

struct econn {
	struct dbk_conn conn;
	struct dbk_completion_rx *e;
};

struct dbk_completion_rx {
	struct ev_loop *loop;
	dbk_completion_rx_cb cb;
	void *arg;
	struct dbk_connset set;
	struct dbk_dgram_set dgrams;
	struct dbk_completion_rx_stats stats;
	struct dbk_log_limit up_log;
};

static void econn_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct econn *c = conn->arg;

	if (why == DBK_CONN_TIMEOUT) {
		c->e->stats.bad_frames++;
		dbk_log(DBK_LOG_WARN, "completion-link-dropped", "reason=\"frame never finished\"");
	}
	c->e->stats.open--;
	free(c);
}

/* Parses one line and hands it on; counts the ones that are not ours.
 * Returns whether it ended a lease. */
static bool deliver(struct dbk_completion_rx *e, const char *msg, size_t msg_len)
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
	return e->cb(e->arg, &ev);
}

/* Consumes every whole frame in the buffer; broken framing drops the
 * link. */
static void on_lines(struct dbk_conn *conn)
{
	struct econn *c = conn->arg;
	size_t off = 0;

	for (;;) {
		const char *msg;
		size_t msg_len, used;
		enum dbk_completion_status st;

		st = dbk_completion_frame(conn->in.p + off, conn->in.len - off, &msg, &msg_len,
		                          &used);
		if (st == DBK_COMPLETION_NEED_MORE)
			break;
		if (st != DBK_COMPLETION_OK) {
			c->e->stats.bad_frames++;
			dbk_log(DBK_LOG_WARN, "completion-link-dropped",
			        "reason=\"broken octet-count framing\"");
			dbk_conn_close(conn, DBK_CONN_LOCAL);
			return;
		}
		off += used;
		if (deliver(c->e, msg, msg_len))
			dbk_connset_useful(conn);
	}
	dbk_buf_consume(&conn->in, off);
}

static const struct dbk_conn_ops econn_ops = { .on_data = on_lines, .on_close = econn_closed };

static void econn_new(void *arg, int fd)
{
	struct dbk_completion_rx *e = arg;
	struct econn *c = malloc(sizeof(*c));

	if (dbk_conn_accept(c ? &c->conn : NULL, e->loop, fd, &e->set, &econn_ops, c, IN_CAP) < 0) {
		dbk_log(DBK_LOG_WARN, "completion-link-refused", "reason=\"out of memory\"");
		free(c);
		return;
	}
	c->e = e;
	/* Only a frame under way is timed: an idle link is HAProxy's. */
	dbk_conn_timeouts(&c->conn, FRAME_TIMEOUT, 0);
	e->stats.accepted++;
	e->stats.open++;
	uint64_t suppressed;
	if (dbk_log_limit_allow(&e->up_log, ev_now(e->loop), &suppressed))
		dbk_log(DBK_LOG_INFO, "completion-link-up", "open=%u suppressed=%llu",
		        e->stats.open, (unsigned long long)suppressed);
}

/* A datagram is one line. One longer than the buffer is cut, which keeps
 * the leading fields, the only ones read (HAProxy's UDP lines stop at
 * 1024 bytes by default anyway). */
static void on_dgram(void *arg, const char *buf, size_t len)
{
	struct dbk_completion_rx *e = arg;

	e->stats.datagrams++;
	deliver(e, buf, len);
}

int dbk_completion_rx_add_datagram(struct dbk_completion_rx *e, int fd)
{
	return dbk_dgram_add(&e->dgrams, fd);
}

struct dbk_completion_rx *dbk_completion_rx_new(struct ev_loop *loop, unsigned max_conns,
                                                const struct dbk_net_cidr *allow, unsigned nallow,
                                                dbk_completion_rx_cb cb, void *arg)
{
	struct dbk_completion_rx *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->loop = loop;
	e->cb = cb;
	e->arg = arg;
	/* One peer may hold half the links, so another (HAProxy) gets in. */
	struct dbk_connset_limits lim = {
		.max_conns = max_conns,
		.max_per_peer = (max_conns + 1) / 2,
		.refused = &e->stats.refused,
		.evicted = &e->stats.evicted,
		.stale_s = STALE_S,
		.allow = allow,
		.nallow = nallow,
	};
	if (dbk_connset_open(&e->set, loop, "completions", econn_new, e, &lim) < 0) {
		free(e);
		return NULL;
	}
	if (dbk_dgram_init(&e->dgrams, loop, IN_CAP, on_dgram, e) < 0) {
		dbk_connset_close(&e->set, NULL);
		free(e);
		return NULL;
	}
	dbk_dgram_allow(&e->dgrams, allow, nallow, &e->stats.refused_datagrams);
	return e;
}

int dbk_completion_rx_add_listener(struct dbk_completion_rx *e, int fd)
{
	return dbk_connset_add_listener(&e->set, fd);
}

void dbk_completion_rx_free(struct dbk_completion_rx *e)
{
	if (!e)
		return;
	dbk_connset_close(&e->set, NULL);
	dbk_dgram_close(&e->dgrams);
	free(e);
}

const struct dbk_completion_rx_stats *dbk_completion_rx_stats(const struct dbk_completion_rx *e)
{
	return &e->stats;
}
