/* dbucket-null-agent: an SPOP agent that decides nothing. It completes
 * the HELLO exchange as a correct agent does (health checks included),
 * then answers every NOTIFY with one fixed set-var, txn.<prefix>.server
 * (naming the --server values in turn when there are several, so that
 * HAProxy spreads requests over as many servers as a real balancer).
 *
 * It is the ceiling of the overhead benchmark: HAProxy plus an agent
 * whose decisions cost nothing. It runs dbucket-spoa's own SPOP server
 * (lib/spop_server.h) with a handler that names a server, so the gap
 * between the two agents is the decision (decode, balance, encode), not
 * a different way of moving bytes.
 *
 * It can also swallow HAProxy's completion lines (--completion-listen,
 * ring or datagrams), so that an HAProxy in front of it does the same
 * logging work as one in front of dbucket-spoa. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "lib/cli.h"
#include "lib/log.h"
#include "lib/net.h"
#include "lib/spop_server.h"
#include "lib/version.h"
#include "spopbench/sink.h"

#define MAX_FRAME 16380 /* what we announce, as dbucket-spoa does */
#define MAX_SERVER_NAME 200
#define MAX_SERVERS 16

struct opts {
	const char *listen[DBK_LISTENER_MAX], *ring[DBK_LISTENER_MAX];
	unsigned nlisten, nring;
	const char *servers[MAX_SERVERS];
	unsigned nservers;
};

/* The handler: one set-var naming the servers in turn. */
struct namer {
	const struct opts *o;
	unsigned next;
};

static enum dbk_spop_status name_server(void *arg, const struct dbk_spop_frame *f,
                                        struct dbk_spop_writer *w)
{
	struct namer *n = arg;
	struct dbk_spop_data v = dbk_spop_str(n->o->servers[n->next]);

	(void)f;
	n->next = (n->next + 1) % n->o->nservers;
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, "server", &v);
	return DBK_SPOP_OK;
}

static void usage(FILE *out, const struct dbk_opt *opts)
{
	fputs("Usage: dbucket-null-agent [OPTIONS]\n"
	      "\n"
	      "An SPOP agent that decides nothing: it completes HAProxy's HELLO\n"
	      "(health checks too) and answers every NOTIFY with one set-var,\n"
	      "txn.<var-prefix>.server = NAME. The ceiling of the overhead benchmark.\n"
	      "Loopback and unix sockets only.\n"
	      "\n",
	      out);
	dbk_cli_usage(out, opts);
	fputs("\nSIGTERM or SIGINT stops it; it then prints its counters on stderr.\n", out);
}

static int opt_listen(void *ctx, const char *v, char *err, size_t errlen)
{
	struct opts *o = ctx;

	return dbk_cli_append(o->listen, &o->nlisten, DBK_LISTENER_MAX, "--listen", v, err, errlen);
}

static int opt_ring(void *ctx, const char *v, char *err, size_t errlen)
{
	struct opts *o = ctx;

	if (strcmp(v, "none") == 0)
		return 0;
	return dbk_cli_append(o->ring, &o->nring, DBK_LISTENER_MAX, "--completion-listen", v, err,
	                      errlen);
}

static int opt_server(void *ctx, const char *v, char *err, size_t errlen)
{
	struct opts *o = ctx;

	if (strlen(v) == 0 || strlen(v) > MAX_SERVER_NAME) {
		dbk_errf(err, errlen, "--server needs 1 to %d bytes", MAX_SERVER_NAME);
		return -1;
	}
	return dbk_cli_append(o->servers, &o->nservers, MAX_SERVERS, "--server", v, err, errlen);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	bool help = false, version = false;
	const struct dbk_opt opts[] = {
		{ "listen", 0, DBK_OPT_CALL, .fn = opt_listen, .metavar = "ADDR",
		  .help = "where HAProxy connects: HOST:PORT, [IPV6]:PORT\n"
		          "or unix:PATH; repeatable (127.0.0.1:12345)" },
		{ "completion-listen", 0, DBK_OPT_CALL, .fn = opt_ring, .metavar = "ADDR",
		  .help = "also accept HAProxy's completion ring there\n"
		          "(same forms) or its datagrams (udp@HOST:PORT),\n"
		          "and discard them; repeatable (default none)" },
		{ "server", 0, DBK_OPT_CALL, .fn = opt_server, .metavar = "NAME",
		  .help = "the server the answers name (vllm0); repeat\n"
		          "it to name several in turn (at most 16)" },
		{ "help", 'h', DBK_OPT_FLAG, &help, .help = "this text" },
		{ "version", 'V', DBK_OPT_FLAG, &version, .help = "the version" },
		{ .name = NULL },
	};
	char err[256];
	int first;

	if (dbk_cli_parse(opts, argc, argv, o, &first, err, sizeof(err)) < 0) {
		fprintf(stderr, "dbucket-null-agent: %s\n", err);
		return 2;
	}
	if (help) {
		usage(stdout, opts);
		return 0;
	}
	if (version) {
		printf("dbucket-null-agent %s\n", DBK_VERSION);
		return 0;
	}
	if (first != argc) {
		fprintf(stderr, "dbucket-null-agent: unexpected argument '%s'\n", argv[first]);
		return 2;
	}
	if (o->nservers == 0)
		o->servers[o->nservers++] = "vllm0";
	if (o->nlisten == 0)
		o->listen[o->nlisten++] = "127.0.0.1:12345";
	return -1;
}

/* *bound counts the sockets we created, whose files (unix sockets) are
 * ours to remove at exit; a path another process listens on is not. */
static int add_listeners(int (*add)(void *, int), int (*add_udp)(void *, int), void *to,
                         const char *const *specs, unsigned n, unsigned *bound)
{
	char err[256];

	for (unsigned i = 0; i < n; i++) {
		bool udp;
		int fd = dbk_net_open(specs[i], &udp, err, sizeof(err));

		if (fd < 0) {
			fprintf(stderr, "dbucket-null-agent: %s\n", err);
			return -1;
		}
		(*bound)++;
		/* A benchmark tool has no business on a public address. */
		if (!dbk_net_is_local(fd)) {
			fprintf(stderr, "dbucket-null-agent: %s is not a loopback address\n",
			        specs[i]);
			close(fd);
			return -1;
		}
		if (udp && !add_udp) {
			fprintf(stderr, "dbucket-null-agent: %s: udp@ is for completions only\n",
			        specs[i]);
			close(fd);
			return -1;
		}
		if ((udp ? add_udp : add)(to, fd) < 0) {
			fprintf(stderr, "dbucket-null-agent: too many listeners\n");
			close(fd);
			return -1;
		}
	}
	return 0;
}

static int add_spop(void *s, int fd) { return dbk_spop_server_add_listener(s, fd); }
static int add_sink(void *s, int fd) { return dbk_listener_add(&((struct dbk_sink *)s)->ls, fd); }
static int add_sink_udp(void *s, int fd) { return dbk_sink_add_datagram(s, fd); }

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void print_counters(const struct dbk_spop_server_stats *st, const struct dbk_sink *sink)
{
	uint64_t sent = 0;

	for (size_t i = 0; i < sizeof(st->disconnects) / sizeof(st->disconnects[0]); i++)
		sent += st->disconnects[i];
	fprintf(stderr,
	        "dbucket-null-agent: accepted=%" PRIu64 " hellos=%" PRIu64 " healthchecks=%" PRIu64
	        " notifies=%" PRIu64 " acks=%" PRIu64 " disconnects_sent=%" PRIu64
	        " disconnects_received=%" PRIu64 " completion_links=%" PRIu64
	        " completion_bytes=%" PRIu64 " completion_datagrams=%" PRIu64 "\n",
	        st->accepted, st->hellos, st->healthchecks, st->notifies, st->acks, sent,
	        st->haproxy_disconnects, sink->accepted, sink->bytes, sink->datagrams);
}

/* Serves until SIGTERM or SIGINT; returns the exit status. */
static int serve(struct ev_loop *loop, const struct opts *o)
{
	const struct dbk_spop_server_config sc = { .max_frame_size = MAX_FRAME };
	struct namer namer = { o, 0 };
	const struct dbk_spop_handler h = { name_server, &namer };
	struct dbk_spop_server *spop = dbk_spop_server_new(loop, &sc, &h);
	struct dbk_sink sink;
	unsigned blisten = 0, bring = 0;
	ev_signal sigterm, sigint;
	int rc = 1;

	if (!spop) {
		fprintf(stderr, "dbucket-null-agent: out of memory\n");
		return 1;
	}
	if (dbk_sink_init(&sink, loop) < 0) {
		fprintf(stderr, "dbucket-null-agent: out of memory\n");
		dbk_spop_server_free(spop);
		return 1;
	}
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);
	if (add_listeners(add_spop, NULL, spop, o->listen, o->nlisten, &blisten) == 0 &&
	    add_listeners(add_sink, add_sink_udp, &sink, o->ring, o->nring, &bring) == 0) {
		ev_run(loop, 0);
		rc = 0;
	}
	/* Leave as dbucket-spoa leaves: a DISCONNECT "normal" where the
	 * socket takes it at once, so HAProxy does not count an error. */
	dbk_spop_server_shutdown(spop);
	dbk_sink_close(&sink);
	for (unsigned i = 0; i < blisten; i++)
		dbk_net_unlink(o->listen[i]);
	for (unsigned i = 0; i < bring; i++)
		dbk_net_unlink(o->ring[i]);
	if (rc == 0)
		print_counters(dbk_spop_server_stats(spop), &sink);
	dbk_spop_server_free(spop);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	dbk_log_set_level(DBK_LOG_WARN);
	signal(SIGPIPE, SIG_IGN);
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "dbucket-null-agent: no event loop\n");
		return 1;
	}
	rc = serve(loop, &o);
	ev_loop_destroy(loop);
	return rc;
}
