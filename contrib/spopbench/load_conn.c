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

#include "lib/net.h"
#include "load.h"

#define READ_ROUNDS 16

uint64_t dbk_load_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void dbk_load_set_events(struct ev_loop *loop, ev_io *io, int want)
{
	if (want == (io->events & (EV_READ | EV_WRITE)))
		return;
	ev_io_stop(loop, io);
	ev_io_set(io, io->fd, want);
	if (want)
		ev_io_start(loop, io);
}

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
	ev_io_stop(L->loop, &c->io);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	dbk_load_advance(L);
}

static void conn_flush(struct dbk_load_conn *c)
{
	if (dbk_net_send_pending(c->fd, c->out, c->out_len, &c->out_off) < 0) {
		c->L->err.closed++;
		conn_dead(c);
		return;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
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
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	while (c->count < c->depth && (L->o.total == 0 || L->sent < (uint64_t)L->o.total) &&
	       c->out_cap - c->out_len >= L->notify_max) {
		struct dbk_load_slot *s = &c->slots[(c->head + c->count) % c->depth];
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
		n = dbk_spb_notify_build(c->out + c->out_len, c->out_cap - c->out_len, s->stream_id,
		                         1, s->id, s->id_len, (int64_t)L->o.body_bytes,
		                         (const uint8_t *)L->body, L->sample_len);
		if (n == 0 || n > (size_t)c->frame_max + 4) {
			fprintf(stderr, "dbucket-spop-load: NOTIFY does not fit the frame size\n");
			exit(1);
		}
		c->out_len += n;
		c->count++;
		c->inflight++;
		L->sent++;
	}
}

static void conn_settle(struct dbk_load_conn *c)
{
	if (c->state == CS_DEAD)
		return;
	bool send = c->state == CS_CONNECTING || c->out_off < c->out_len;

	dbk_load_set_events(c->L->loop, &c->io, EV_READ | (send ? EV_WRITE : 0));
}

void dbk_load_conn_kick(struct dbk_load_conn *c)
{
	conn_fill(c);
	if (c->state == CS_READY)
		conn_flush(c);
	conn_settle(c);
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

static void conn_process(struct dbk_load_conn *c, uint64_t t)
{
	size_t off = 0;

	/* Each pass consumes a whole frame or stops. */
	while (c->state == CS_HELLO || c->state == CS_READY) {
		struct dbk_spop_frame f;
		size_t flen;
		bool complete;

		if (dbk_spop_frame_split(c->in + off, c->in_len - off, DBK_LOAD_FRAME, &flen,
		                         &complete) != DBK_SPOP_OK ||
		    (complete && dbk_spop_frame_parse(c->in + off + 4, flen, &f) != DBK_SPOP_OK)) {
			c->L->err.bad_frames++;
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
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
}

static void conn_read(struct dbk_load_conn *c)
{
	for (int round = 0; round < READ_ROUNDS && c->state != CS_DEAD; round++) {
		size_t want = sizeof(c->in) - c->in_len;
		ssize_t n = read(c->fd, c->in + c->in_len, want);

		if (n == 0) {
			fprintf(stderr, "dbucket-spop-load: conn %u: agent closed the connection\n",
			        c->idx);
			c->L->err.closed++;
			conn_dead(c);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->L->err.closed++;
				conn_dead(c);
			}
			return;
		}
		c->in_len += (size_t)n;
		conn_process(c, dbk_load_now_ns());
		if ((size_t)n < want)
			return;
	}
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_load_conn *c = (struct dbk_load_conn *)w;
	struct dbk_load *L = c->L;

	(void)loop;
	if (c->state == CS_CONNECTING) {
		if (!(revents & EV_WRITE))
			return;
		int e = dbk_net_connect_error(c->fd);
		if (e != 0) {
			fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", c->idx,
			        L->o.connect, strerror(e));
			L->err.connect++;
			conn_dead(c);
			return;
		}
		c->out_len = dbk_spb_hello_build(c->out, c->out_cap, DBK_LOAD_FRAME, false,
		                                 L->engine_id);
		c->state = CS_HELLO;
	}
	if (revents & EV_READ)
		conn_read(c);
	if (c->state == CS_DEAD)
		return;
	conn_fill(c);
	conn_flush(c);
	conn_settle(c);
	if (L->o.release)
		dbk_load_rel_settle(L); /* writes the lines of these ACKs, then advances */
	else
		dbk_load_advance(L);
}

void dbk_load_conn_start(struct dbk_load *L, unsigned i)
{
	struct dbk_load_conn *c = &L->conns[i];

	c->L = L;
	c->idx = i;
	c->depth = (unsigned)L->o.depth;
	c->frame_max = DBK_LOAD_FRAME;
	/* Room for a whole window of the largest NOTIFY. */
	c->out_cap = c->depth * L->notify_max + 256;
	c->out = malloc(c->out_cap);
	c->slots = calloc(c->depth, sizeof(*c->slots));
	if (!c->out || !c->slots) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		exit(1);
	}
	c->state = CS_CONNECTING;
	c->fd = dbk_net_connect(&L->agent_sa, L->agent_len);
	if (c->fd < 0) {
		fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", i, L->o.connect,
		        strerror(errno));
		L->err.connect++;
		c->state = CS_DEAD;
		L->ndead++;
		return;
	}
	ev_io_init(&c->io, on_conn_io, c->fd, EV_READ | EV_WRITE);
	ev_io_start(L->loop, &c->io);
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
		if (c->state == CS_READY && c->out_off == c->out_len && n)
			(void)!send(c->fd, bye, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (c->fd >= 0) {
			ev_io_stop(L->loop, &c->io);
			close(c->fd);
		}
		free(c->slots);
		free(c->out);
	}
	free(L->conns);
	L->conns = NULL;
}
