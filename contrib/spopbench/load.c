/* dbucket-spop-load: plays HAProxy toward an SPOP agent, to measure the
 * agent alone. N connections each say HELLO as HAProxy 2.6 does, then
 * keep `depth` NOTIFYs for dbucket-route in flight (pipelining), each
 * with a fresh unique id, the body size and a JSON body sample. Every
 * ACK is checked (a NOTIFY of ours with that stream-id and frame-id, a
 * string set-var txn.server in a well-formed action list); decisions/s
 * and the send-to-ACK latency of each are reported on one line.
 *
 * With --release, the completion line of every decided id goes to the
 * agent's completion listener as HAProxy's ring would send it, so leases
 * are given back and the agent runs in steady state. Without it leases
 * pile up, which is what a memory measurement wants; --total N stops
 * after N decisions, and --defer-release holds the N completion lines
 * until SIGUSR1, with the connections open, so that a script can read
 * the agent's memory at N leases in flight and again once they are gone.
 *
 * Single-threaded on libev; loopback and unix sockets only, so it never
 * loads anything but the machine it runs on. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ev.h>

#include "lib/net.h"
#include "lib/numparse.h"
#include "spb.h"
#include "lib/spop_codec.h"

/* What we announce in our HELLO, as HAProxy does with tune.bufsize 16k. */
#define OUR_FRAME DBK_SPB_HAPROXY_FRAME
#define MAX_ID 48
/* After the run, in-flight NOTIFYs get this long for their ACKs, and
 * queued completion lines this long to leave. */
#define DRAIN_TIMEOUT 5.0
/* Completion lines waiting to be written: above HIGH no new NOTIFY is
 * sent until they fall below LOW, so the client never outruns the
 * agent's completion reader with unbounded memory. */
#define REL_HIGH (1u << 20)
#define REL_LOW  (256u << 10)
/* One completion line is under 100 bytes; deferred lines are kept whole. */
#define REL_LINE_MAX 512
#define READ_ROUNDS 16
#define MAX_CONNECTIONS 1024
#define MAX_DEPTH 4096
#define MAX_TOTAL 100000000ULL
#define MAX_BODY 100000000LL

struct opts {
	const char *connect;
	const char *release;
	unsigned connections;
	unsigned depth;
	double seconds;
	double timeout;
	uint64_t total;
	long long body_bytes;
	unsigned max_tokens;
	bool defer;
};

/* A NOTIFY in flight. The ring of slots is in send order; an ACK is
 * expected for the oldest, and one out of order is found by a scan. */
struct slot {
	uint64_t stream_id;
	uint64_t sent_ns;
	bool busy;
	uint8_t id_len;
	char id[MAX_ID];
};

enum cstate { CS_CONNECTING, CS_HELLO, CS_READY, CS_DEAD };

struct lconn {
	ev_io io;
	struct load *L;
	int fd;
	unsigned idx;
	enum cstate state;
	uint32_t frame_max;
	unsigned depth;                 /* 1 when the agent refused pipelining */
	struct slot *slots;
	unsigned head, count, inflight;
	size_t in_len;
	uint8_t in[OUR_FRAME + 4];
	size_t out_off, out_len, out_cap;
	uint8_t *out;
};

enum phase {
	PH_HELLO,    /* connecting, HELLO */
	PH_RUN,      /* NOTIFYs flow */
	PH_DRAIN,    /* no new NOTIFY, waiting for the ACKs in flight */
	PH_HOLD,     /* --defer-release: waiting for SIGUSR1 */
	PH_RELEASE,  /* writing the last completion lines */
	PH_END,
};

struct errors {
	uint64_t connect, hello, bad_frames, unmatched, no_server, disconnects, closed, lost;
};

struct rlink {
	ev_io io;
	int fd;
	bool connected;
	char *buf;
	size_t off, len, cap;
	size_t lost;                    /* bytes of lines never written */
	uint64_t lines;
};

struct load {
	struct ev_loop *loop;
	struct opts o;
	struct sockaddr_storage agent_sa, rel_sa;
	socklen_t agent_len, rel_len;
	struct lconn *conns;
	unsigned nready, ndead;
	enum phase phase;
	bool timed_out;
	bool rel_paused;                /* NOTIFYs wait for completion lines to leave */
	uint64_t t_start, t_end;        /* ns, CLOCK_MONOTONIC */
	uint64_t next_sid, seq, sent, acked, decided, decided_window;
	struct errors err;
	struct dbk_spb_lat *lat;
	char *body;
	size_t sample_len;
	size_t notify_max;
	unsigned pid;
	uint64_t wall0_ms;
	char engine_id[64];
	ev_timer deadline, drain, hard;
	ev_signal sigint, sigterm, sigusr1;
	struct rlink rel;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void maybe_advance(struct load *L);
static void conn_kick(struct lconn *c);
static void rel_settle(struct load *L);

/* ---- Addresses ---- */

static bool sa_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_UNIX)
		return true;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
	}
	return false;
}

/* HOST:PORT, [IPV6]:PORT or unix:PATH to a socket address; anything that
 * is not this machine's loopback is refused. */
static int resolve_local(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                         char *err, size_t errlen)
{
	memset(ss, 0, sizeof(*ss));
	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)ss;
		size_t n = strlen(spec + 5);

		if (n == 0 || n >= sizeof(un->sun_path)) {
			snprintf(err, errlen, "%s: path empty or too long", spec);
			return -1;
		}
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, spec + 5, n);
		*len = (socklen_t)sizeof(*un);
		return 0;
	}
	char host[256];
	const char *port;
	size_t hlen;
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');
		if (!rb || rb[1] != ':') {
			snprintf(err, errlen, "%s: want [IPV6]:PORT", spec);
			return -1;
		}
		hlen = (size_t)(rb - spec - 1);
		port = rb + 2;
		if (hlen < sizeof(host))
			memcpy(host, spec + 1, hlen);
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon) {
			snprintf(err, errlen, "%s: want HOST:PORT or unix:PATH", spec);
			return -1;
		}
		hlen = (size_t)(colon - spec);
		port = colon + 1;
		if (hlen < sizeof(host))
			memcpy(host, spec, hlen);
	}
	if (hlen == 0 || hlen >= sizeof(host) || *port == '\0') {
		snprintf(err, errlen, "%s: want HOST:PORT or unix:PATH", spec);
		return -1;
	}
	host[hlen] = '\0';

	struct addrinfo hints, *res;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", spec, gai_strerror(rc));
		return -1;
	}
	rc = -1;
	if (!sa_is_loopback(res->ai_addr) || res->ai_addrlen > sizeof(*ss)) {
		snprintf(err, errlen, "%s: not a loopback address (this tool only loads its own host)",
		         spec);
	} else {
		memcpy(ss, res->ai_addr, res->ai_addrlen);
		*len = res->ai_addrlen;
		rc = 0;
	}
	freeaddrinfo(res);
	return rc;
}

static int connect_nb(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (dbk_net_nonblock(fd) < 0 ||
	    (connect(fd, (const struct sockaddr *)ss, len) < 0 && errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	/* HAProxy writes a NOTIFY as soon as it has one: no Nagle here
	 * either (fails harmlessly on unix sockets). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void set_events(struct ev_loop *loop, ev_io *io, int want)
{
	if (want == (io->events & (EV_READ | EV_WRITE)))
		return;
	ev_io_stop(loop, io);
	ev_io_set(io, io->fd, want);
	if (want)
		ev_io_start(loop, io);
}

/* ---- Completion lines ---- */

static bool rel_blocked(const struct load *L)
{
	return L->o.release && !L->o.defer && L->rel.fd >= 0 && L->rel.len - L->rel.off > REL_HIGH;
}

/* Queues the completion line of a decided id. Deferred lines are all
 * kept (bounded by --total); immediate ones are bounded by REL_HIGH plus
 * one window of ACKs, since sending stops above REL_HIGH. */
static void rel_queue(struct load *L, const struct slot *s, const uint8_t *srv, size_t srv_len)
{
	struct rlink *r = &L->rel;

	if (!L->o.release || r->fd < 0)
		return;
	if (r->cap - r->len < REL_LINE_MAX) {
		if (r->off > 0) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		if (r->cap - r->len < REL_LINE_MAX) {
			size_t ncap = r->cap ? r->cap * 2 : 1u << 20;
			char *nb = realloc(r->buf, ncap);

			if (!nb) {
				fprintf(stderr, "dbucket-spop-load: out of memory for completion lines\n");
				exit(1);
			}
			r->buf = nb;
			r->cap = ncap;
		}
	}
	size_t n = dbk_spb_completion_build(r->buf + r->len, r->cap - r->len, s->id, s->id_len,
	                                    (const char *)srv, srv_len, wall_ms());
	if (n == 0) {
		L->err.no_server++;   /* a server name too long for a line */
		return;
	}
	r->len += n;
	r->lines++;
}

static void end_run(struct load *L);

/* Without its completion lines the agent would pile up leases, which is
 * not the steady state asked for: the run ends here. */
static void rel_lost(struct load *L)
{
	struct rlink *r = &L->rel;

	L->err.closed++;
	ev_io_stop(L->loop, &r->io);
	close(r->fd);
	r->fd = -1;
	r->lost = r->len - r->off;
	r->off = r->len = 0;
	if (L->phase == PH_RUN)
		end_run(L);
}

static void rel_flush(struct load *L)
{
	struct rlink *r = &L->rel;

	if (r->fd < 0 || !r->connected || (L->o.defer && L->phase != PH_RELEASE))
		return;
	if (dbk_net_send_pending(r->fd, r->buf, r->len, &r->off) < 0) {
		fprintf(stderr, "dbucket-spop-load: completion link: %s\n", strerror(errno));
		rel_lost(L);
		return;
	}
	if (r->off < r->len)
		return;
	r->off = r->len = 0;
}

static void rel_settle(struct load *L)
{
	struct rlink *r = &L->rel;

	rel_flush(L);
	if (r->fd >= 0) {
		bool pending = r->len > r->off && (!L->o.defer || L->phase == PH_RELEASE);

		set_events(L->loop, &r->io, !r->connected || pending ? EV_WRITE : 0);
	}
	/* Enough lines left (or the link is gone and they never will):
	 * the connections that paused for them go on. */
	if (L->rel_paused && (r->len - r->off < REL_LOW || r->fd < 0)) {
		L->rel_paused = false;
		for (unsigned i = 0; i < L->o.connections && L->phase == PH_RUN; i++)
			conn_kick(&L->conns[i]);
	}
	maybe_advance(L);
}

static void on_rel_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct load *L = (struct load *)((char *)w - offsetof(struct load, rel.io));
	struct rlink *r = &L->rel;

	(void)loop;
	(void)revents;
	if (!r->connected) {
		int e = 0;
		socklen_t el = sizeof(e);

		if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
			fprintf(stderr, "dbucket-spop-load: completion link to %s: %s\n", L->o.release,
			        strerror(e ? e : errno));
			L->err.connect++;
			ev_io_stop(L->loop, &r->io);
			close(r->fd);
			r->fd = -1;
			maybe_advance(L);
			return;
		}
		r->connected = true;
	}
	rel_settle(L);
}

/* ---- SPOP connections ---- */

static void conn_dead(struct lconn *c)
{
	struct load *L = c->L;

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
	maybe_advance(L);
}

static void conn_flush(struct lconn *c)
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
static void conn_fill(struct lconn *c)
{
	struct load *L = c->L;
	uint64_t t = 0;

	if (c->state != CS_READY || L->phase != PH_RUN)
		return;
	if (L->rel_paused || rel_blocked(L)) {
		L->rel_paused = true;
		return;
	}
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	while (c->count < c->depth && (L->o.total == 0 || L->sent < L->o.total) &&
	       c->out_cap - c->out_len >= L->notify_max) {
		struct slot *s = &c->slots[(c->head + c->count) % c->depth];
		size_t n;

		if (t == 0)
			t = now_ns();
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

static void conn_settle(struct lconn *c)
{
	if (c->state == CS_DEAD)
		return;
	set_events(c->L->loop, &c->io,
	           EV_READ | (c->state == CS_CONNECTING || c->out_off < c->out_len ? EV_WRITE : 0));
}

static void conn_kick(struct lconn *c)
{
	conn_fill(c);
	if (c->state == CS_READY)
		conn_flush(c);
	conn_settle(c);
}

static void on_hello_frame(struct lconn *c, const struct dbk_spop_frame *f)
{
	struct load *L = c->L;
	struct dbk_spb_agent_hello h;
	enum dbk_spop_status st;

	if (f->type == DBK_SPOP_AGENT_DISCONNECT) {
		uint32_t code = 0;
		const uint8_t *msg = NULL;
		size_t mlen = 0;

		dbk_spop_disconnect_parse(f, &code, &msg, &mlen);
		fprintf(stderr, "dbucket-spop-load: conn %u: agent refused HELLO: status %u %.*s\n",
		        c->idx, code, (int)mlen, msg ? (const char *)msg : "");
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
	c->frame_max = h.max_frame_size < OUR_FRAME ? h.max_frame_size : OUR_FRAME;
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
	maybe_advance(L);
}

/* Finds and frees the slot an ACK answers. Returns false if none. */
static bool take_slot(struct lconn *c, const struct dbk_spop_frame *f, struct slot **out)
{
	if (f->frame_id != 1)
		return false;
	for (unsigned i = 0; i < c->count; i++) {
		struct slot *s = &c->slots[(c->head + i) % c->depth];

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
static void pop_done(struct lconn *c)
{
	while (c->count > 0 && !c->slots[c->head].busy) {
		c->head = (c->head + 1) % c->depth;
		c->count--;
	}
}

static void on_ack(struct lconn *c, const struct dbk_spop_frame *f, uint64_t t)
{
	struct load *L = c->L;
	struct slot *s;
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
		rel_queue(L, s, srv, srv_len);
	}
	pop_done(c);
}

static void on_frame(struct lconn *c, const struct dbk_spop_frame *f, uint64_t t)
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
		uint32_t code = 0;
		const uint8_t *msg = NULL;
		size_t mlen = 0;

		dbk_spop_disconnect_parse(f, &code, &msg, &mlen);
		fprintf(stderr, "dbucket-spop-load: conn %u: agent disconnected: status %u %.*s\n",
		        c->idx, code, (int)mlen, msg ? (const char *)msg : "");
		c->L->err.disconnects++;
	} else {
		/* HAProxy takes nothing else from an agent once HELLO is done. */
		c->L->err.bad_frames++;
	}
	conn_dead(c);
}

static void conn_process(struct lconn *c, uint64_t t)
{
	size_t off = 0;

	/* Each pass consumes a whole frame or stops. */
	while (c->state == CS_HELLO || c->state == CS_READY) {
		struct dbk_spop_frame f;
		size_t flen;
		bool complete;

		if (dbk_spop_frame_split(c->in + off, c->in_len - off, OUR_FRAME, &flen,
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

static void conn_read(struct lconn *c)
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
		conn_process(c, now_ns());
		if ((size_t)n < want)
			return;
	}
}

static void on_conn_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct lconn *c = (struct lconn *)w;
	struct load *L = c->L;

	(void)loop;
	if (c->state == CS_CONNECTING) {
		int e = 0;
		socklen_t el = sizeof(e);

		if (!(revents & EV_WRITE))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
			fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", c->idx, L->o.connect,
			        strerror(e ? e : errno));
			L->err.connect++;
			conn_dead(c);
			return;
		}
		c->out_len = dbk_spb_hello_build(c->out, c->out_cap, OUR_FRAME, false, L->engine_id);
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
		rel_settle(L);  /* writes the lines of these ACKs, then advances */
	else
		maybe_advance(L);
}

/* ---- Phases ---- */

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static uint64_t error_count(const struct errors *e)
{
	return e->connect + e->hello + e->bad_frames + e->unmatched + e->no_server +
	       e->disconnects + e->closed + e->lost;
}

static void print_result(struct load *L)
{
	const struct errors *e = &L->err;
	uint64_t errors = error_count(e);
	double el = L->t_end > L->t_start ? secs(L->t_end - L->t_start) : 0;

	printf("result connections=%u depth=%u body_bytes=%lld release=%s seconds=%.3f "
	       "decisions=%" PRIu64 " rate=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f "
	       "max_us=%.1f mean_us=%.1f errors=%" PRIu64 " connect=%" PRIu64 " hello=%" PRIu64
	       " bad_frames=%" PRIu64 " unmatched=%" PRIu64 " no_server=%" PRIu64
	       " disconnects=%" PRIu64 " closed=%" PRIu64 " lost=%" PRIu64 " sent=%" PRIu64
	       " acked=%" PRIu64 "%s\n",
	       L->o.connections, L->o.depth, L->o.body_bytes,
	       !L->o.release ? "no" : L->o.defer ? "deferred" : "yes", el, L->decided_window,
	       el > 0 ? (double)L->decided_window / el : 0.0,
	       dbk_spb_lat_quantile(L->lat, 0.50) / 1e3, dbk_spb_lat_quantile(L->lat, 0.90) / 1e3,
	       dbk_spb_lat_quantile(L->lat, 0.99) / 1e3, (double)L->lat->max_ns / 1e3,
	       L->lat->count ? L->lat->sum_ns / (double)L->lat->count / 1e3 : 0.0, errors,
	       e->connect, e->hello, e->bad_frames, e->unmatched, e->no_server, e->disconnects,
	       e->closed, e->lost, L->sent, L->acked, L->timed_out ? " timed_out=1" : "");
	fflush(stdout);
}

static unsigned inflight(const struct load *L)
{
	unsigned n = 0;

	for (unsigned i = 0; i < L->o.connections; i++)
		n += L->conns[i].inflight;
	return n;
}

static void end_run(struct load *L)
{
	L->t_end = now_ns();
	L->phase = PH_DRAIN;
	ev_timer_stop(L->loop, &L->deadline);
	ev_timer_set(&L->drain, DRAIN_TIMEOUT, 0);
	ev_timer_start(L->loop, &L->drain);
}

static void enter_release(struct load *L)
{
	L->phase = PH_RELEASE;
	ev_timer_stop(L->loop, &L->drain);
	ev_timer_set(&L->drain, DRAIN_TIMEOUT, 0);
	ev_timer_start(L->loop, &L->drain);
	rel_settle(L);
}

/* Moves through the phases as their conditions are met. Called after
 * anything that may complete one (all HELLOs done, last ACK, lines
 * written, a connection lost). */
static void maybe_advance(struct load *L)
{
	/* At most one step per phase, so this loop is bounded. */
	for (int step = 0; step < PH_END; step++) {
		enum phase before = L->phase;

		switch (L->phase) {
		case PH_HELLO:
			/* The run starts once every connection said HELLO (or
			 * failed) and the completion link, if any, is up. */
			if (L->nready + L->ndead < L->o.connections ||
			    (L->o.release && L->rel.fd >= 0 && !L->rel.connected))
				return;
			if (L->nready == 0 || (L->o.release && L->rel.fd < 0)) {
				L->t_start = L->t_end = now_ns();
				print_result(L);
				L->phase = PH_END;
				ev_break(L->loop, EVBREAK_ALL);
				return;
			}
			L->phase = PH_RUN;
			L->t_start = now_ns();
			if (L->o.total == 0) {
				ev_timer_set(&L->deadline, L->o.seconds, 0);
				ev_timer_start(L->loop, &L->deadline);
			}
			for (unsigned i = 0; i < L->o.connections; i++)
				conn_kick(&L->conns[i]);
			break;
		case PH_RUN:
			if (L->nready == 0 ||
			    (L->o.total && L->sent >= L->o.total && inflight(L) == 0))
				end_run(L);
			break;
		case PH_DRAIN:
			if (inflight(L) != 0 && L->nready > 0)
				return;
			L->err.lost += inflight(L);
			print_result(L);
			if (L->o.defer && L->rel.fd >= 0) {
				L->phase = PH_HOLD;
				ev_timer_stop(L->loop, &L->drain);
				printf("holding leases=%" PRIu64 " pid=%d (SIGUSR1 releases them, "
				       "SIGTERM exits without releasing)\n",
				       L->rel.lines, (int)getpid());
				fflush(stdout);
				return;
			}
			enter_release(L);
			break;
		case PH_HOLD:
			return;
		case PH_RELEASE:
			if (L->rel.fd >= 0 && L->rel.len > L->rel.off)
				return;
			if (L->o.release && L->rel.fd >= 0)
				printf("released lines=%" PRIu64 "\n", L->rel.lines);
			else if (L->o.release)
				printf("released lines=%" PRIu64 " (completion link lost, the last "
				       "%zu bytes of them unsent)\n",
				       L->rel.lines, L->rel.lost);
			fflush(stdout);
			L->phase = PH_END;
			ev_break(L->loop, EVBREAK_ALL);
			return;
		case PH_END:
			return;
		}
		if (L->phase == before)
			return;
	}
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct load *L = (struct load *)((char *)w - offsetof(struct load, deadline));

	(void)loop;
	(void)revents;
	if (L->phase == PH_RUN) {
		end_run(L);
		maybe_advance(L);
	}
}

/* Bounds the drain and the release: what is still owed then is lost. */
static void on_drain(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct load *L = (struct load *)((char *)w - offsetof(struct load, drain));

	(void)loop;
	(void)revents;
	if (L->phase == PH_DRAIN) {
		L->err.lost += inflight(L);
		for (unsigned i = 0; i < L->o.connections; i++)
			L->conns[i].inflight = 0;
		maybe_advance(L);
	} else if (L->phase == PH_RELEASE) {
		fprintf(stderr, "dbucket-spop-load: %zu bytes of completion lines not written\n",
		        L->rel.len - L->rel.off);
		L->timed_out = true;
		L->phase = PH_END;
		ev_break(L->loop, EVBREAK_ALL);
	}
}

static void on_hard(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct load *L = (struct load *)((char *)w - offsetof(struct load, hard));

	(void)revents;
	fprintf(stderr, "dbucket-spop-load: --timeout reached\n");
	L->timed_out = true;
	if (L->phase <= PH_DRAIN) {
		if (L->phase < PH_DRAIN)
			L->t_end = now_ns();
		L->err.lost += inflight(L);
		print_result(L);
	}
	L->phase = PH_END;
	ev_break(loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct load *L = w->data;

	(void)revents;
	if (w->signum == SIGUSR1) {
		if (L->phase == PH_HOLD)
			enter_release(L);
		return;
	}
	/* First SIGINT/SIGTERM ends the run cleanly (and a hold without
	 * releasing); a second one ends everything now. */
	if (L->phase == PH_RUN) {
		end_run(L);
		maybe_advance(L);
		return;
	}
	if (L->phase == PH_HELLO || L->phase == PH_DRAIN) {
		L->t_end = L->t_end ? L->t_end : now_ns();
		print_result(L);
	}
	L->phase = PH_END;
	ev_break(loop, EVBREAK_ALL);
}

/* ---- Start-up ---- */

static void usage(FILE *o)
{
	fputs("Usage: dbucket-spop-load [OPTIONS]\n"
	      "\n"
	      "Plays HAProxy 2.6 toward an SPOP agent: HELLO, then pipelined NOTIFYs for\n"
	      "dbucket-route (unique id, blen, a JSON body sample), every ACK checked for a\n"
	      "txn.server set-var. Prints one line:\n"
	      "  result ... decisions=N rate=PER_SEC p50_us= p90_us= p99_us= errors=N ...\n"
	      "Loopback and unix sockets only.\n"
	      "\n"
	      "  --connect ADDR        the agent: HOST:PORT, [IPV6]:PORT or unix:PATH\n"
	      "                        (127.0.0.1:12345)\n"
	      "  --connections N       SPOP connections (4)\n"
	      "  --depth N             NOTIFYs in flight per connection (16)\n"
	      "  --seconds S           measure for S seconds (5; at most 3600)\n"
	      "  --total N             instead, stop after N decisions\n"
	      "  --body-bytes N        request body size: blen, and the sample (cut at 15000\n"
	      "                        bytes, as haproxy/dbucket.spoe.conf does) (100)\n"
	      "  --max-tokens N        max_tokens in the body (16)\n"
	      "  --release ADDR        send each decided id's completion line to the agent's\n"
	      "                        completion listener, so its lease is released\n"
	      "  --defer-release       with --release and --total: hold the lines, print\n"
	      "                        'holding leases=N pid=P' and wait, connections open;\n"
	      "                        SIGUSR1 sends them and exits, SIGTERM exits\n"
	      "                        without them (the agent keeps those leases)\n"
	      "  --timeout S           hard limit on the whole run (600)\n"
	      "  -h, --help            this text\n"
	      "\n"
	      "Exit status 0 when every NOTIFY got a valid ACK naming a server, 1 otherwise.\n",
	      o);
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	if (dbk_parse_double(s, lo, hi, out))
		return 0;
	fprintf(stderr, "dbucket-spop-load: %s wants a number in [%g, %g]\n", opt, lo, hi);
	return -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "connect", required_argument, NULL, 'a' },
		{ "connections", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 's' },
		{ "total", required_argument, NULL, 'n' },
		{ "body-bytes", required_argument, NULL, 'b' },
		{ "max-tokens", required_argument, NULL, 'm' },
		{ "release", required_argument, NULL, 'r' },
		{ "defer-release", no_argument, NULL, 'D' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	double v;

	*o = (struct opts){ .connect = "127.0.0.1:12345", .connections = 4, .depth = 16,
		            .seconds = 5, .timeout = 600, .body_bytes = 100, .max_tokens = 16 };
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': o->connect = optarg; break;
		case 'r': o->release = optarg; break;
		case 'D': o->defer = true; break;
		case 'h': usage(stdout); exit(0);
		case 'c':
			if (parse_num("--connections", optarg, 1, MAX_CONNECTIONS, &v))
				return -1;
			o->connections = (unsigned)v;
			break;
		case 'd':
			if (parse_num("--depth", optarg, 1, MAX_DEPTH, &v))
				return -1;
			o->depth = (unsigned)v;
			break;
		case 's':
			if (parse_num("--seconds", optarg, 0.01, 3600, &v))
				return -1;
			o->seconds = v;
			break;
		case 't':
			if (parse_num("--timeout", optarg, 0.1, 86400, &v))
				return -1;
			o->timeout = v;
			break;
		case 'n':
			if (parse_num("--total", optarg, 1, (double)MAX_TOTAL, &v))
				return -1;
			o->total = (uint64_t)v;
			break;
		case 'b':
			if (parse_num("--body-bytes", optarg, DBK_SPB_BODY_MIN, (double)MAX_BODY, &v))
				return -1;
			o->body_bytes = (long long)v;
			break;
		case 'm':
			if (parse_num("--max-tokens", optarg, 0, 99999, &v))
				return -1;
			o->max_tokens = (unsigned)v;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "dbucket-spop-load: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o->defer && (!o->release || !o->total)) {
		fprintf(stderr, "dbucket-spop-load: --defer-release needs --release and --total\n");
		return -1;
	}
	return 0;
}

static void cleanup(struct load *L)
{
	uint8_t bye[128];
	size_t n = dbk_spb_haproxy_disconnect_build(bye, sizeof(bye), 0, "normal");

	for (unsigned i = 0; i < L->o.connections; i++) {
		struct lconn *c = &L->conns[i];

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
	if (L->rel.fd >= 0) {
		ev_io_stop(L->loop, &L->rel.io);
		close(L->rel.fd);
	}
	free(L->rel.buf);
	free(L->body);
	free(L->lat);
}

int main(int argc, char **argv)
{
	static struct load L;   /* static: the signal watchers point into it */
	char err[256];

	if (parse_opts(argc, argv, &L.o) < 0)
		return 2;
	if (resolve_local(L.o.connect, &L.agent_sa, &L.agent_len, err, sizeof(err)) < 0 ||
	    (L.o.release && resolve_local(L.o.release, &L.rel_sa, &L.rel_len, err, sizeof(err)) < 0)) {
		fprintf(stderr, "dbucket-spop-load: %s\n", err);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	L.pid = (unsigned)getpid() & 0xffff;
	L.wall0_ms = wall_ms();
	snprintf(L.engine_id, sizeof(L.engine_id), "dbucket-spop-load-%u-%" PRIu64, L.pid,
	         L.wall0_ms);
	L.rel.fd = -1;
	L.sample_len = L.o.body_bytes < DBK_SPB_SAMPLE_MAX ? (size_t)L.o.body_bytes
	                                                  : DBK_SPB_SAMPLE_MAX;
	L.body = malloc(L.sample_len);
	L.lat = malloc(sizeof(*L.lat));
	L.conns = calloc(L.o.connections, sizeof(*L.conns));
	if (!L.body || !L.lat || !L.conns) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		return 1;
	}
	dbk_spb_lat_init(L.lat);
	/* The sample is the body's first bytes; for a body longer than the
	 * sample its JSON is cut, as HAProxy's bytes(0,15000) cuts it. */
	if (L.o.body_bytes <= DBK_SPB_SAMPLE_MAX) {
		dbk_spb_body_fill(L.body, L.sample_len, L.sample_len, L.o.max_tokens);
	} else {
		char *full = malloc((size_t)L.o.body_bytes);

		if (!full || dbk_spb_body_fill(full, (size_t)L.o.body_bytes, (size_t)L.o.body_bytes,
		                               L.o.max_tokens) == 0) {
			fprintf(stderr, "dbucket-spop-load: out of memory\n");
			return 1;
		}
		memcpy(L.body, full, L.sample_len);
		free(full);
	}
	{
		/* The largest NOTIFY: longest id and stream-id. */
		static uint8_t probe[OUR_FRAME + 64];
		char id[MAX_ID];

		memset(id, 'F', sizeof(id));
		L.notify_max = dbk_spb_notify_build(probe, sizeof(probe), UINT64_MAX, 1, id, MAX_ID - 1,
		                                    (int64_t)L.o.body_bytes,
		                                    (const uint8_t *)L.body, L.sample_len);
		if (L.notify_max == 0 || L.notify_max > OUR_FRAME + 4) {
			fprintf(stderr, "dbucket-spop-load: a NOTIFY would exceed %d bytes\n", OUR_FRAME);
			return 2;
		}
	}

	L.loop = ev_default_loop(EVFLAG_AUTO);
	if (!L.loop) {
		fprintf(stderr, "dbucket-spop-load: no event loop\n");
		return 1;
	}
	ev_timer_init(&L.deadline, on_deadline, L.o.seconds, 0);
	ev_timer_init(&L.drain, on_drain, DRAIN_TIMEOUT, 0);
	ev_timer_init(&L.hard, on_hard, L.o.timeout, 0);
	ev_timer_start(L.loop, &L.hard);
	ev_signal_init(&L.sigint, on_signal, SIGINT);
	ev_signal_init(&L.sigterm, on_signal, SIGTERM);
	ev_signal_init(&L.sigusr1, on_signal, SIGUSR1);
	L.sigint.data = L.sigterm.data = L.sigusr1.data = &L;
	ev_signal_start(L.loop, &L.sigint);
	ev_signal_start(L.loop, &L.sigterm);
	ev_signal_start(L.loop, &L.sigusr1);

	if (L.o.release) {
		L.rel.fd = connect_nb(&L.rel_sa, L.rel_len);
		if (L.rel.fd < 0) {
			fprintf(stderr, "dbucket-spop-load: completion link to %s: %s\n", L.o.release,
			        strerror(errno));
			return 1;
		}
		ev_io_init(&L.rel.io, on_rel_io, L.rel.fd, EV_WRITE);
		ev_io_start(L.loop, &L.rel.io);
	}
	for (unsigned i = 0; i < L.o.connections; i++) {
		struct lconn *c = &L.conns[i];

		c->L = &L;
		c->idx = i;
		c->depth = L.o.depth;
		c->frame_max = OUR_FRAME;
		/* Room for a whole window of the largest NOTIFY. */
		c->out_cap = (size_t)L.o.depth * L.notify_max + 256;
		c->out = malloc(c->out_cap);
		c->slots = calloc(L.o.depth, sizeof(*c->slots));
		if (!c->out || !c->slots) {
			fprintf(stderr, "dbucket-spop-load: out of memory\n");
			return 1;
		}
		c->state = CS_CONNECTING;
		c->fd = connect_nb(&L.agent_sa, L.agent_len);
		if (c->fd < 0) {
			fprintf(stderr, "dbucket-spop-load: conn %u to %s: %s\n", i, L.o.connect,
			        strerror(errno));
			L.err.connect++;
			c->state = CS_DEAD;
			L.ndead++;
			continue;
		}
		ev_io_init(&c->io, on_conn_io, c->fd, EV_READ | EV_WRITE);
		ev_io_start(L.loop, &c->io);
	}
	maybe_advance(&L);
	if (L.phase != PH_END)
		ev_run(L.loop, 0);

	int rc = error_count(&L.err) == 0 && !L.timed_out ? 0 : 1;
	cleanup(&L);
	ev_loop_destroy(L.loop);
	return rc;
}
