/* dbucket-null-agent: an SPOP agent that decides nothing. It completes
 * the HELLO exchange as a correct agent does (health checks included),
 * then answers every NOTIFY with one fixed set-var, txn.<prefix>.server
 * (naming the --server values in turn when there are several, so that
 * HAProxy spreads requests over as many servers as a real balancer).
 *
 * It is the ceiling of the overhead benchmark: HAProxy plus an agent
 * whose decisions cost nothing. Its I/O follows dbucket-spoa's
 * (agent/spop_server.c) on purpose: every whole frame a read brought in is
 * answered, and all those answers leave in one write; so the gap between
 * the two agents is the decision (decode, balance, encode), not a
 * different way of moving bytes.
 *
 * It can also swallow HAProxy's completion ring (--completion-listen),
 * so that an HAProxy in front of it does the same logging work as one in
 * front of dbucket-spoa. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>

#include "lib/listener.h"
#include "lib/log.h"
#include "lib/net.h"
#include "lib/spop_codec.h"

#define MAX_FRAME 16380         /* what we announce, as dbucket-spoa does */
#define OUT_CAP (64 * 1024)
/* An answer is at most an ACK with one short variable or a DISCONNECT:
 * a frame is handled only while this much room is left for it. */
#define MAX_REPLY 1024
#define MAX_SERVER_NAME 200
#define MAX_SERVERS 16
/* Bounds the work one readable event does on one connection. */
#define READ_ROUNDS 16
#define HELLO_TIMEOUT 5.0
#define CLOSE_TIMEOUT 1.0
#define SINK_BUF 16384

enum nstate { NS_HELLO, NS_READY, NS_CLOSING };

struct nconn {
	ev_io io;
	ev_timer timer;
	struct nagent *a;
	struct nconn *prev, *next;
	int fd;
	enum nstate state;
	bool dead;
	uint32_t frame_max;
	size_t in_len, out_off, out_len;
	uint8_t in[MAX_FRAME + 4];
	uint8_t out[OUT_CAP];
};

/* A completion-ring connection: read and forget. */
struct sink {
	ev_io io;
	struct nagent *a;
	struct sink *prev, *next;
};

struct nagent_stats {
	uint64_t accepted, hellos, healthchecks, notifies, acks, disconnects_sent,
		disconnects_recv, sink_links, sink_bytes;
};

struct nagent {
	struct ev_loop *loop;
	const char *servers[MAX_SERVERS];
	unsigned nservers, next;        /* the next answer names servers[next] */
	struct dbk_listener_set spop, ring;
	struct nconn *conns;
	struct sink *sinks;
	struct nagent_stats st;
};

static size_t out_room(const struct nconn *c)
{
	return OUT_CAP - c->out_len;
}

static void nconn_close(struct nconn *c)
{
	struct nagent *a = c->a;

	ev_io_stop(a->loop, &c->io);
	ev_timer_stop(a->loop, &c->timer);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void closing_in(struct nconn *c, double secs)
{
	c->state = NS_CLOSING;
	ev_timer_stop(c->a->loop, &c->timer);
	ev_timer_set(&c->timer, secs, 0);
	ev_timer_start(c->a->loop, &c->timer);
}

/* Queues an AGENT-DISCONNECT, then the connection closes once it left. */
static void nconn_fail(struct nconn *c, enum dbk_spop_status st, const char *msg)
{
	c->out_len += dbk_spop_disconnect_build(c->out + c->out_len, out_room(c), st, msg);
	c->a->st.disconnects_sent++;
	closing_in(c, CLOSE_TIMEOUT);
}

static void on_hello(struct nconn *c, const struct dbk_spop_frame *f)
{
	struct dbk_spop_hello h;
	enum dbk_spop_status st;

	if (f->type != DBK_SPOP_HAPROXY_HELLO) {
		nconn_fail(c, DBK_SPOP_ERR_INVALID, "expected HAPROXY-HELLO");
		return;
	}
	st = dbk_spop_hello_parse(f, &h);
	if (st != DBK_SPOP_OK) {
		nconn_fail(c, st, NULL);
		return;
	}
	if (h.max_frame_size < c->frame_max)
		c->frame_max = h.max_frame_size;
	size_t n = dbk_spop_agent_hello_build(c->out + c->out_len, out_room(c), c->frame_max,
	                                      h.pipelining);
	if (n == 0) {
		nconn_fail(c, DBK_SPOP_ERR_RES, NULL);
		return;
	}
	c->out_len += n;
	if (h.healthcheck) {
		/* A health check wants our HELLO and nothing else. */
		c->a->st.healthchecks++;
		closing_in(c, CLOSE_TIMEOUT);
		return;
	}
	c->a->st.hellos++;
	c->state = NS_READY;
	ev_timer_stop(c->a->loop, &c->timer);
}

static void on_ready(struct nconn *c, const struct dbk_spop_frame *f)
{
	struct dbk_spop_writer w;
	struct dbk_spop_data v;

	switch (f->type) {
	case DBK_SPOP_NOTIFY:
		/* No fragmentation was offered: every NOTIFY comes whole. */
		if (!(f->flags & DBK_SPOP_FLAG_FIN) || (f->flags & DBK_SPOP_FLAG_ABORT)) {
			nconn_fail(c, DBK_SPOP_ERR_FRAG_NOT_SUPP, NULL);
			return;
		}
		c->a->st.notifies++;
		size_t cap = out_room(c);
		if (cap > (size_t)c->frame_max + 4)
			cap = (size_t)c->frame_max + 4;
		dbk_spop_writer_init(&w, c->out + c->out_len, cap);
		dbk_spop_ack_begin(&w, f->stream_id, f->frame_id);
		v = dbk_spop_str(c->a->servers[c->a->next]);
		c->a->next = (c->a->next + 1) % c->a->nservers;
		dbk_spop_ack_set_var(&w, DBK_SPOP_SCOPE_TXN, "server", &v);
		if (dbk_spop_frame_end(&w) == 0) {
			nconn_fail(c, DBK_SPOP_ERR_RES, NULL);
			return;
		}
		c->out_len += w.len;
		c->a->st.acks++;
		return;
	case DBK_SPOP_HAPROXY_DISCONNECT:
		c->a->st.disconnects_recv++;
		nconn_fail(c, DBK_SPOP_OK, NULL);
		return;
	default:
		nconn_fail(c, DBK_SPOP_ERR_INVALID, "unexpected frame type");
		return;
	}
}

/* Answers every whole frame in the buffer while there is room for the
 * answer; keeps a partial frame for the next read. */
static void nconn_process(struct nconn *c)
{
	size_t off = 0;

	while (c->state != NS_CLOSING && out_room(c) >= MAX_REPLY) {
		struct dbk_spop_frame f;
		enum dbk_spop_status st;
		size_t flen;
		bool complete;

		st = dbk_spop_frame_split(c->in + off, c->in_len - off, c->frame_max, &flen,
		                          &complete);
		if (st != DBK_SPOP_OK) {
			nconn_fail(c, st, NULL);
			break;
		}
		if (!complete)
			break;
		st = dbk_spop_frame_parse(c->in + off + 4, flen, &f);
		off += 4 + flen;
		if (st != DBK_SPOP_OK)
			nconn_fail(c, st, NULL);
		else if (c->state == NS_HELLO)
			on_hello(c, &f);
		else
			on_ready(c, &f);
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

static void nconn_flush(struct nconn *c)
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

static void nconn_read(struct nconn *c)
{
	for (int round = 0; round < READ_ROUNDS && c->state != NS_CLOSING; round++) {
		if (out_room(c) < MAX_REPLY || c->in_len == sizeof(c->in))
			return;
		size_t want = sizeof(c->in) - c->in_len;
		ssize_t n = read(c->fd, c->in + c->in_len, want);

		if (n == 0) {
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
		nconn_process(c);
		/* A short read emptied the socket. */
		if ((size_t)n < want)
			return;
	}
}

static void nconn_settle(struct nconn *c)
{
	int want = 0;

	if (c->dead || (c->state == NS_CLOSING && c->out_off == c->out_len)) {
		nconn_close(c);
		return;
	}
	if (c->state != NS_CLOSING && out_room(c) >= MAX_REPLY)
		want |= EV_READ;
	if (c->out_off < c->out_len)
		want |= EV_WRITE;
	if (want != (c->io.events & (EV_READ | EV_WRITE))) {
		ev_io_stop(c->a->loop, &c->io);
		ev_io_set(&c->io, c->fd, want);
		ev_io_start(c->a->loop, &c->io);
	}
}

static void on_nconn_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct nconn *c = (struct nconn *)w;

	(void)loop;
	if (revents & EV_WRITE) {
		nconn_flush(c);
		/* Frames left unanswered for lack of room can go now. */
		if (!c->dead)
			nconn_process(c);
	}
	if ((revents & EV_READ) && !c->dead)
		nconn_read(c);
	if (!c->dead)
		nconn_flush(c);
	nconn_settle(c);
}

static void on_nconn_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct nconn *c = (struct nconn *)((char *)w - offsetof(struct nconn, timer));

	(void)loop;
	(void)revents;
	if (c->state == NS_HELLO) {
		nconn_fail(c, DBK_SPOP_ERR_TIMEOUT, "no HELLO in time");
		nconn_flush(c);
		nconn_settle(c);
		return;
	}
	/* A peer that will not read our last frame is not waited for. */
	nconn_close(c);
}

static void nconn_new(void *arg, int fd)
{
	struct nagent *a = arg;
	struct nconn *c = malloc(sizeof(*c));
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	/* Answers are tiny and latency is the product: no Nagle (fails
	 * harmlessly on unix sockets). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->a = a;
	c->fd = fd;
	c->state = NS_HELLO;
	c->dead = false;
	c->frame_max = MAX_FRAME;
	c->in_len = c->out_off = c->out_len = 0;
	c->prev = NULL;
	c->next = a->conns;
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
	a->st.accepted++;
	ev_io_init(&c->io, on_nconn_io, fd, EV_READ);
	ev_io_start(a->loop, &c->io);
	ev_timer_init(&c->timer, on_nconn_timer, HELLO_TIMEOUT, 0);
	ev_timer_start(a->loop, &c->timer);
}

/* ---- The completion ring's sink ---- */

static void sink_close(struct sink *s)
{
	struct nagent *a = s->a;

	ev_io_stop(a->loop, &s->io);
	close(s->io.fd);
	if (s->prev)
		s->prev->next = s->next;
	else
		a->sinks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

static void on_sink_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sink *s = (struct sink *)w;
	char buf[SINK_BUF];

	(void)loop;
	(void)revents;
	for (int round = 0; round < READ_ROUNDS; round++) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n > 0) {
			s->a->st.sink_bytes += (uint64_t)n;
			if ((size_t)n < sizeof(buf))
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			sink_close(s);
		return;
	}
}

static void sink_new(void *arg, int fd)
{
	struct nagent *a = arg;
	struct sink *s = malloc(sizeof(*s));

	if (!s) {
		close(fd);
		return;
	}
	s->a = a;
	s->prev = NULL;
	s->next = a->sinks;
	if (a->sinks)
		a->sinks->prev = s;
	a->sinks = s;
	a->st.sink_links++;
	ev_io_init(&s->io, on_sink_io, fd, EV_READ);
	ev_io_start(a->loop, &s->io);
}

/* ---- Start-up ---- */

static void usage(FILE *o)
{
	fputs("Usage: dbucket-null-agent [OPTIONS]\n"
	      "\n"
	      "An SPOP agent that decides nothing: it completes HAProxy's HELLO\n"
	      "(health checks too) and answers every NOTIFY with one set-var,\n"
	      "txn.<var-prefix>.server = NAME. The ceiling of the overhead benchmark.\n"
	      "Loopback and unix sockets only.\n"
	      "\n"
	      "  --listen ADDR              where HAProxy connects: HOST:PORT, [IPV6]:PORT\n"
	      "                             or unix:PATH; repeatable (127.0.0.1:12345)\n"
	      "  --completion-listen ADDR   also accept HAProxy's completion ring there\n"
	      "                             and discard it (same forms; default none)\n"
	      "  --server NAME              the server the answers name (vllm0); repeat\n"
	      "                             it to name several in turn (at most 16)\n"
	      "  -h, --help                 this text\n"
	      "\n"
	      "SIGTERM or SIGINT stops it; it then prints its counters on stderr.\n",
	      o);
}

/* *bound counts the sockets we created, whose files (unix sockets) are
 * ours to remove at exit; a path another process listens on is not. */
static int add_listeners(struct dbk_listener_set *ls, const char *const *specs, unsigned n,
                         unsigned *bound)
{
	char err[256];

	for (unsigned i = 0; i < n; i++) {
		int fd = dbk_net_listen(specs[i], err, sizeof(err));

		if (fd < 0) {
			fprintf(stderr, "dbucket-null-agent: %s\n", err);
			return -1;
		}
		(*bound)++;
		/* A benchmark tool has no business on a public address. */
		if (!dbk_net_is_local(fd)) {
			fprintf(stderr, "dbucket-null-agent: %s is not a loopback address\n", specs[i]);
			close(fd);
			return -1;
		}
		if (dbk_listener_add(ls, fd) < 0) {
			fprintf(stderr, "dbucket-null-agent: too many listeners\n");
			close(fd);
			return -1;
		}
	}
	return 0;
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "completion-listen", required_argument, NULL, 'c' },
		{ "server", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *listen[DBK_LISTENER_MAX], *ring[DBK_LISTENER_MAX];
	unsigned nlisten = 0, nring = 0, blisten = 0, bring = 0;
	struct nagent a;
	int opt, rc = 1;

	memset(&a, 0, sizeof(a));
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (nlisten == DBK_LISTENER_MAX) {
				fprintf(stderr, "dbucket-null-agent: at most %d --listen\n",
				        DBK_LISTENER_MAX);
				return 2;
			}
			listen[nlisten++] = optarg;
			break;
		case 'c':
			if (nring == DBK_LISTENER_MAX) {
				fprintf(stderr, "dbucket-null-agent: at most %d --completion-listen\n",
				        DBK_LISTENER_MAX);
				return 2;
			}
			if (strcmp(optarg, "none") != 0)
				ring[nring++] = optarg;
			break;
		case 's':
			if (a.nservers == MAX_SERVERS) {
				fprintf(stderr, "dbucket-null-agent: at most %d --server\n", MAX_SERVERS);
				return 2;
			}
			if (strlen(optarg) == 0 || strlen(optarg) > MAX_SERVER_NAME) {
				fprintf(stderr, "dbucket-null-agent: --server needs 1 to %d bytes\n",
				        MAX_SERVER_NAME);
				return 2;
			}
			a.servers[a.nservers++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "dbucket-null-agent: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (a.nservers == 0)
		a.servers[a.nservers++] = "vllm0";
	if (nlisten == 0)
		listen[nlisten++] = "127.0.0.1:12345";
	dbk_log_set_level(DBK_LOG_WARN);
	signal(SIGPIPE, SIG_IGN);

	a.loop = ev_default_loop(EVFLAG_AUTO);
	if (!a.loop) {
		fprintf(stderr, "dbucket-null-agent: no event loop\n");
		return 1;
	}
	dbk_listener_init(&a.spop, a.loop, "spop", nconn_new, &a);
	dbk_listener_init(&a.ring, a.loop, "completions", sink_new, &a);
	ev_signal sigterm, sigint;
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_start(a.loop, &sigterm);
	ev_signal_start(a.loop, &sigint);
	if (add_listeners(&a.spop, listen, nlisten, &blisten) == 0 &&
	    add_listeners(&a.ring, ring, nring, &bring) == 0) {
		ev_run(a.loop, 0);
		rc = 0;
	}

	dbk_listener_close(&a.spop);
	dbk_listener_close(&a.ring);
	for (unsigned i = 0; i < blisten; i++)
		dbk_net_unlink(listen[i]);
	for (unsigned i = 0; i < bring; i++)
		dbk_net_unlink(ring[i]);
	/* Leave as dbucket-spoa leaves: a DISCONNECT "normal" where the
	 * socket takes it at once, so HAProxy does not count an error. */
	while (a.conns) {
		struct nconn *c = a.conns;

		if (c->state == NS_READY && out_room(c) >= MAX_REPLY)
			nconn_fail(c, DBK_SPOP_OK, "agent is shutting down");
		nconn_flush(c);
		nconn_close(c);
	}
	while (a.sinks)
		sink_close(a.sinks);
	if (rc == 0)
		fprintf(stderr,
		        "dbucket-null-agent: accepted=%" PRIu64 " hellos=%" PRIu64
		        " healthchecks=%" PRIu64 " notifies=%" PRIu64 " acks=%" PRIu64
		        " disconnects_sent=%" PRIu64 " disconnects_received=%" PRIu64
		        " completion_links=%" PRIu64 " completion_bytes=%" PRIu64 "\n",
		        a.st.accepted, a.st.hellos, a.st.healthchecks, a.st.notifies, a.st.acks,
		        a.st.disconnects_sent, a.st.disconnects_recv, a.st.sink_links,
		        a.st.sink_bytes);
	ev_loop_destroy(a.loop);
	return rc;
}
