/* dbucket-spop-load's SPOP connections: each says HELLO as HAProxy 2.6
 * does, then keeps `depth` NOTIFYs for dbucket-route in flight
 * (pipelining), each with a fresh unique id, the body size and a JSON
 * body sample. Every ACK is checked as HAProxy checks it (a NOTIFY of
 * ours with that stream-id and frame-id, a string set-var txn.server in
 * a well-formed action list). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/conn.h"
#include "load.h"

uint64_t dbk_load_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Marks c dead (once) and closes it if it is open. */
static void conn_dead(struct dbk_load_conn *c)
{
	struct dbk_load *L = c->L;

	if (c->state == CS_DEAD)
		return;
	if (c->state == CS_READY)
		L->nready--;
	c->state = CS_DEAD;
	L->ndead++;
	/* What it had in flight will never be answered. */
	L->err.lost += c->inflight;
	c->inflight = 0;
	c->count = 0;
	if (c->open) {
		c->open = false;
		dbk_conn_close(&c->conn, DBK_CONN_LOCAL);
	}
	dbk_load_advance(L);
}

/* Tops the window up with new NOTIFYs, all stamped with one send time
 * and written together, as HAProxy writes what its streams queued. */
static void conn_fill(struct dbk_load_conn *c)
{
	struct dbk_load *L = c->L;
	uint64_t t = 0;

	if (c->state != CS_READY || L->phase != PH_RUN)
		return;
	if (L->rel_paused || dbk_load_rel_blocked(L)) {
		L->rel_paused = true;
		return;
	}
	while (c->count < c->depth && (L->o.total == 0 || L->sent < (uint64_t)L->o.total) &&
	       dbk_conn_pending(&c->conn) + L->notify_max <= c->out_cap) {
		struct dbk_load_slot *s = &c->slots[(c->head + c->count) % c->depth];
		struct dbk_buf *out = &c->conn.out;
		size_t n;

		if (t == 0)
			t = dbk_load_now_ns();
		s->id_len = (uint8_t)dbk_spb_unique_id(s->id, sizeof(s->id), L->pid, L->wall0_ms,
		                                       ++L->seq);
		s->stream_id = ++L->next_sid;
		s->sent_ns = t;
		s->busy = true;
		/* HAProxy numbers frames per stream from 1; a stream sends
		 * one dbucket-route, so its frame-id is 1. */
		n = dbk_buf_reserve(out, L->notify_max)
		            ? dbk_spb_notify_build((uint8_t *)out->p + out->len, L->notify_max,
		                                   s->stream_id, 1, s->id, s->id_len,
		                                   (int64_t)L->o.body_bytes,
		                                   (const uint8_t *)L->body, L->sample_len)
		            : 0;
		if (n == 0 || n > (size_t)c->frame_max + 4) {
			fprintf(stderr, "dbucket-spop-load: NOTIFY does not fit the frame size\n");
			exit(1);
		}
		out->len += n;
		c->count++;
		c->inflight++;
		L->sent++;
	}
}

void dbk_load_conn_kick(struct dbk_load_conn *c)
{
	conn_fill(c);
	if (c->open)
		dbk_conn_update(&c->conn);
}

/* Tells why the agent sent AGENT-DISCONNECT. */
static void say_disconnect(const struct dbk_load_conn *c, const struct dbk_spop_frame *f,
                           const char *what)
{
	uint32_t code = 0;
	const uint8_t *msg = NULL;
	size_t mlen = 0;

	dbk_spop_disconnect_parse(f, &code, &msg, &mlen);
	fprintf(stderr, "dbucket-spop-load: conn %u: agent %s: status %u %.*s\n", c->idx, what,
	        code, (int)mlen, msg ? (const char *)msg : "");
}

static void on_hello_frame(struct dbk_load_conn *c, const struct dbk_spop_frame *f)
{
	struct dbk_load *L = c->L;
	struct dbk_spb_agent_hello h;
	enum dbk_spop_status st;

	if (f->type == DBK_SPOP_AGENT_DISCONNECT) {
		say_disconnect(c, f, "refused HELLO");
		L->err.hello++;
		conn_dead(c);
		return;
	}
	st = dbk_spb_agent_hello_parse(f, &h);
	if (st != DBK_SPOP_OK) {
		fprintf(stderr, "dbucket-spop-load: conn %u: bad AGENT-HELLO: %s\n", c->idx,
		        dbk_spop_status_str(st));
		L->err.hello++;
		conn_dead(c);
		return;
	}
	c->frame_max = h.max_frame_size < DBK_LOAD_FRAME ? h.max_frame_size : DBK_LOAD_FRAME;
	if (L->notify_max > (size_t)c->frame_max + 4) {
		fprintf(stderr,
		        "dbucket-spop-load: conn %u: agent's max-frame-size %u is too small for "
		        "a %zu-byte NOTIFY\n",
		        c->idx, c->frame_max, L->notify_max);
		L->err.hello++;
		conn_dead(c);
		return;
	}
	if (!h.pipelining && c->depth > 1) {
		fprintf(stderr, "dbucket-spop-load: conn %u: agent refused pipelining: depth 1\n",
		        c->idx);
		c->depth = 1;
	}
	c->state = CS_READY;
	L->nready++;
	dbk_load_advance(L);
}

/* Finds and frees the slot an ACK answers. Returns false if none. */
static bool take_slot(struct dbk_load_conn *c, const struct dbk_spop_frame *f,
                      struct dbk_load_slot **out)
{
	if (f->frame_id != 1)
		return false;
	for (unsigned i = 0; i < c->count; i++) {
		struct dbk_load_slot *s = &c->slots[(c->head + i) % c->depth];

		if (s->busy && s->stream_id == f->stream_id) {
			s->busy = false;
			c->inflight--;
			*out = s;
			return true;
		}
	}
	return false;
}

/* Slots answered out of order stay in the ring until those before them
 * are answered too; a slot is reused only from the tail. */
static void pop_done(struct dbk_load_conn *c)
{
	while (c->count > 0 && !c->slots[c->head].busy) {
		c->head = (c->head + 1) % c->depth;
		c->count--;
	}
}

static void on_ack(struct dbk_load_conn *c, const struct dbk_spop_frame *f, uint64_t t)
{
	struct dbk_load *L = c->L;
	struct dbk_load_slot *s;
	const uint8_t *srv = NULL;
	size_t srv_len = 0;
	bool found = false;

	if (!(f->flags & DBK_SPOP_FLAG_FIN) || !take_slot(c, f, &s)) {
		/* HAProxy would drop the connection: an ACK for no frame
		 * of ours (or a fragment we never allowed) breaks the
		 * exchange. */
		L->err.unmatched++;
		conn_dead(c);
		return;
	}
	L->acked++;
	if (dbk_spb_ack_find_str(f, DBK_SPOP_SCOPE_TXN, "server", &srv, &srv_len, &found) !=
	    DBK_SPOP_OK) {
		L->err.bad_frames++;
		conn_dead(c);
		return;
	}
	if (!found || srv_len == 0) {
		/* An answer without a decision: HAProxy would balance this
		 * request alone (the agent refused it, e.g. too many leases). */
		L->err.no_server++;
	} else {
		L->decided++;
		if (L->phase == PH_RUN) {
			L->decided_window++;
			dbk_spb_lat_add(L->lat, t - s->sent_ns);
		}
		dbk_load_rel_queue(L, s, srv, srv_len);
	}
	pop_done(c);
}

static void on_frame(struct dbk_load_conn *c, const struct dbk_spop_frame *f, uint64_t t)
{
	if (c->state == CS_HELLO) {
		on_hello_frame(c, f);
		return;
	}
	if (f->type == DBK_SPOP_ACK) {
		on_ack(c, f, t);
		return;
	}
	if (f->type == DBK_SPOP_AGENT_DISCONNECT) {
		say_disconnect(c, f, "disconnected");
		c->L->err.disconnects++;
	} else {
		/* HAProxy takes nothing else from an agent once HELLO is done. */
		c->L->err.bad_frames++;
	}
	conn_dead(c);
}

/* Handles every whole frame read, tops the window up (the new NOTIFYs go
 * out with the conn's one write) and writes the lines of these ACKs. */
static void conn_process(struct dbk_conn *conn)
{
	struct dbk_load_conn *c = conn->arg;
	struct dbk_load *L = c->L;
	const uint8_t *in = (const uint8_t *)conn->in.p;
	uint64_t t = dbk_load_now_ns();
	size_t off = 0;

	/* Each pass consumes a whole frame or stops. */
	while (c->state == CS_HELLO || c->state == CS_READY) {
		struct dbk_spop_frame f;
		size_t flen;
		bool complete;

		if (dbk_spop_frame_split(in + off, conn->in.len - off, DBK_LOAD_FRAME, &flen,
		                         &complete) != DBK_SPOP_OK ||
		    (complete && dbk_spop_frame_parse(in + off + 4, flen, &f) != DBK_SPOP_OK)) {
			L->err.bad_frames++;
			conn_dead(c);
			return;
		}
		if (!complete)
			break;
		off += 4 + flen;
		on_frame(c, &f, t);
	}
	if (c->state == CS_DEAD)
		return;
	dbk_buf_consume(&conn->in, off);
	conn_fill(c);
	if (L->o.release)
		dbk_load_rel_settle(L); /* writes the lines of these ACKs, then advances */
	else
		dbk_load_advance(L);
}

static void conn_connected(struct dbk_conn *conn)
{
	struct dbk_load_conn *c = conn->arg;

	conn->out.len = dbk_spb_hello_build((uint8_t *)conn->out.p, c->out_cap, DBK_LOAD_FRAME,
	                                    false, c->L->engine_id);
	c->state = CS_HELLO;
}

/* The agent closed, the connection broke, or it never connected. */
static void conn_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_load_conn *c = conn->arg;
	struct dbk_load *L = c->L;

	if (!c->open)
		return; /* ours: conn_dead or the end */
	c->open = false;
	if (why == DBK_CONN_ERROR && strcmp(conn->err_op, "connect") == 0) {
		fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", c->idx, L->o.connect,
		        strerror(conn->err_no));
		L->err.connect++;
	} else {
		if (why == DBK_CONN_EOF)
			fprintf(stderr, "dbucket-spop-load: conn %u: agent closed the connection\n",
			        c->idx);
		L->err.closed++;
	}
	conn_dead(c);
}

static const struct dbk_conn_ops load_conn_ops = {
	.on_data = conn_process,
	.on_connect = conn_connected,
	.on_close = conn_closed,
};

void dbk_load_conn_start(struct dbk_load *L, unsigned i)
{
	struct dbk_load_conn *c = &L->conns[i];

	c->L = L;
	c->idx = i;
	c->depth = (unsigned)L->o.depth;
	c->frame_max = DBK_LOAD_FRAME;
	/* Room for a whole window of the largest NOTIFY. */
	c->out_cap = c->depth * L->notify_max + 256;
	c->slots = calloc(c->depth, sizeof(*c->slots));
	if (!c->slots) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		exit(1);
	}
	c->state = CS_CONNECTING;
	if (dbk_conn_connect(&c->conn, L->loop, &L->agent_sa, L->agent_len, &load_conn_ops, c,
	                     DBK_LOAD_FRAME + 4) < 0) {
		fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", i, L->o.connect,
		        strerror(errno));
		L->err.connect++;
		c->state = CS_DEAD;
		L->ndead++;
		return;
	}
	if (!dbk_buf_reserve(&c->conn.out, c->out_cap)) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		exit(1);
	}
	c->open = true;
}

unsigned dbk_load_inflight(const struct dbk_load *L)
{
	unsigned n = 0;

	for (int i = 0; i < L->o.connections; i++)
		n += L->conns[i].inflight;
	return n;
}

void dbk_load_conns_close(struct dbk_load *L)
{
	uint8_t bye[128];
	size_t n = dbk_spb_haproxy_disconnect_build(bye, sizeof(bye), 0, "normal");

	for (int i = 0; i < L->o.connections && L->conns; i++) {
		struct dbk_load_conn *c = &L->conns[i];

		/* Leave as HAProxy leaves an idle connection; best effort. */
		if (c->state == CS_READY && dbk_conn_pending(&c->conn) == 0 && n)
			dbk_buf_add(&c->conn.out, bye, n);
		if (c->open) {
			c->open = false;
			dbk_conn_flush_close(&c->conn);
		}
		free(c->slots);
	}
	free(L->conns);
	L->conns = NULL;
}
