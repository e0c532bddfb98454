/* One stream connection on a libev loop, under every server and client
 * that speaks over TCP or a unix socket: the conn owns the descriptor,
 * its watcher and timer, an input and an output buffer, and does the
 * syscalls (EINTR, EAGAIN, partial writes, a non-blocking connect). Its
 * user gives callbacks: bytes read, the timer fired, the connection
 * closed (exactly once, with a reason).
 *
 * Back-pressure: reading stops while more than out_high bytes wait to be
 * sent, or while in_max bytes of input are buffered, and resumes when
 * that is no longer so. Reads per readiness event are bounded, so one
 * peer that never stops sending cannot starve the others.
 *
 * Timers: one per conn, in one of two modes. A deadline fires once, at a
 * time set by the user. Frame and idle timeouts fire when a frame that
 * has begun (input left unconsumed) has not ended frame_timeout after its
 * first byte, or when nothing came for idle_timeout after the last read.
 *
 * A user embeds struct dbk_conn in its own connection and may free that
 * in on_close. Closing from inside a callback is deferred to its end, so
 * a callback may close its own conn and return. */
#ifndef DBK_CONN_H
#define DBK_CONN_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "lib/list.h"

struct dbk_connset;

enum dbk_conn_why {
	DBK_CONN_LOCAL,   /* dbk_conn_close, a drain that ended, or an eviction */
	DBK_CONN_EOF,     /* the peer closed its side */
	DBK_CONN_ERROR,   /* a syscall failed: err_op and err_no say which */
	DBK_CONN_TIMEOUT, /* the timer fired with no on_timeout, or while draining */
};

struct dbk_conn;

struct dbk_conn_ops {
	/* Bytes were appended to c->in, or output went out while input
	 * waits (room for its answers). The user consumes what it handled
	 * (dbk_buf_consume) and may queue output, drain or close. */
	void (*on_data)(struct dbk_conn *c);
	/* Optional: the outbound connect is done. */
	void (*on_connect)(struct dbk_conn *c);
	/* Optional: the timer fired (never while draining); NULL closes
	 * with DBK_CONN_TIMEOUT. */
	void (*on_timeout)(struct dbk_conn *c);
	/* Exactly once, the descriptor closed and the slot given back; c->in
	 * still holds the input (freed after the call unless keep_in). The
	 * user may free or re-use what embeds c. */
	void (*on_close)(struct dbk_conn *c, enum dbk_conn_why why);
};

enum dbk_conn_timer { DBK_CONN_T_NONE, DBK_CONN_T_DEADLINE, DBK_CONN_T_FRAME_IDLE };

struct dbk_conn {
	ev_io io;
	ev_timer timer;
	struct ev_loop *loop;
	const struct dbk_conn_ops *ops;
	void *arg; /* the user's */
	/* An accepted conn's set (lib/connset.h), which it leaves on close,
	 * its place there and when it last did useful work. */
	struct dbk_connset *set;
	struct dbk_list set_link;
	ev_tstamp useful_at;
	bool useful; /* has done useful work since it was accepted */
	int fd;
	struct dbk_buf in, out;
	size_t out_off;     /* out[0, out_off) is sent */
	size_t in_max;      /* input buffered at most (reading stops at it) */
	size_t out_high;    /* reading stops while more output than this waits */
	const char *err_op; /* DBK_CONN_ERROR: "connect", "read" or "write" */
	int err_no;
	enum dbk_conn_timer tmode;
	double frame_timeout, idle_timeout; /* seconds, 0: none */
	ev_tstamp frame_start, last_read;
	bool partial;    /* input left unconsumed: a frame under way */
	bool connecting; /* an outbound connect not done yet */
	bool draining;   /* flushing, then closing; reads no more */
	bool dead;       /* closing: at once, or at the end of the callback */
	bool busy;       /* inside one of the conn's callbacks */
	bool keep_in;    /* the input buffer is the user's: never freed here */
	/* A peer that closes early may have answered already (413, 400):
	 * a write that fails with EPIPE or ECONNRESET drops the output, and
	 * the reads find the answer and the end. */
	bool read_after_epipe;
	enum dbk_conn_why why;
};

/* Takes an accepted, non-blocking fd (from set when not NULL, which it
 * joins now and leaves on close) and starts reading. Returns 0, or -1
 * when out of memory (c NULL: the user's allocation failed), the fd then
 * closed and its slot given back, on_close not called. */
int dbk_conn_accept(struct dbk_conn *c, struct ev_loop *loop, int fd, struct dbk_connset *set,
                    const struct dbk_conn_ops *ops, void *arg, size_t in_max);
/* Starts a non-blocking connect to sa (dbk_net_connect); output queued
 * before it is done goes out once it is. Returns 0, or -1 with errno set
 * when it failed at once (on_close not called). */
int dbk_conn_connect(struct dbk_conn *c, struct ev_loop *loop, const struct sockaddr_storage *sa,
                     socklen_t len, const struct dbk_conn_ops *ops, void *arg, size_t in_max);

/* Output not sent yet. */
static inline size_t dbk_conn_pending(const struct dbk_conn *c) { return c->out.len - c->out_off; }

/* Queues n bytes. Outside a callback it is sent at once (what the socket
 * takes) and the rest when there is room. Outside a callback, this and
 * the calls below that return a bool may end the conn before they return
 * (on_close called: a write failed, or a drain is done): they return
 * false then, and c must not be touched. */
bool dbk_conn_send(struct dbk_conn *c, const void *data, size_t n);
/* After output was written into c->out directly outside a callback:
 * sends what the socket takes, waits for room for the rest. */
bool dbk_conn_update(struct dbk_conn *c);
/* Sends what the socket takes now and closes (DBK_CONN_LOCAL): a last
 * word at shutdown, for a peer not waited for. */
void dbk_conn_flush_close(struct dbk_conn *c);

/* A deadline secs from now (replacing the frame and idle timeouts);
 * none when secs <= 0. */
void dbk_conn_deadline(struct dbk_conn *c, double secs);
/* Frame and idle timeouts from now on (0: none), in place of a deadline. */
void dbk_conn_timeouts(struct dbk_conn *c, double frame_timeout, double idle_timeout);

/* Reads no more, sends what is queued and then closes (DBK_CONN_LOCAL);
 * a peer that does not read it is given secs (0: the timer in force is
 * kept) before the close (DBK_CONN_TIMEOUT). */
bool dbk_conn_drain(struct dbk_conn *c, double secs);
/* Closes now, queued output dropped; on_close gets why. */
void dbk_conn_close(struct dbk_conn *c, enum dbk_conn_why why);

#endif
