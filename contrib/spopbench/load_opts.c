/* dbucket-spop-load's command line, on the shared table-driven parser. */
#include <stdio.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/version.h"
#include "load.h"

#define MAX_CONNECTIONS 1024
#define MAX_DEPTH 4096
#define MAX_TOTAL 1e8
#define MAX_BODY 1e8

static void usage(FILE *out, const struct dbk_opt *opts)
{
	fputs("Usage: dbucket-spop-load [OPTIONS]\n"
	      "\n"
	      "Plays HAProxy 2.6 toward an SPOP agent: HELLO, then pipelined NOTIFYs for\n"
	      "dbucket-route (unique id, blen, a JSON body sample), every ACK checked for a\n"
	      "txn.server set-var. Prints one line:\n"
	      "  result ... decisions=N rate=PER_SEC p50_us= p90_us= p99_us= errors=N ...\n"
	      "Loopback and unix sockets only.\n"
	      "\n",
	      out);
	dbk_cli_usage(out, opts);
	fputs("\nExit status 0 when every NOTIFY got a valid ACK naming a server, 1 otherwise.\n",
	      out);
}

int dbk_load_parse_opts(int argc, char **argv, struct dbk_load_opts *o)
{
	const struct dbk_opt opts[] = {
		{ "connect", 0, DBK_OPT_STR, &o->connect, .metavar = "ADDR",
		  .help = "the agent: HOST:PORT, [IPV6]:PORT or unix:PATH\n(127.0.0.1:12345)" },
		{ "connections", 0, DBK_OPT_INT, &o->connections, 1, MAX_CONNECTIONS,
		  .metavar = "N", .help = "SPOP connections (4)" },
		{ "depth", 0, DBK_OPT_INT, &o->depth, 1, MAX_DEPTH, .metavar = "N",
		  .help = "NOTIFYs in flight per connection (16)" },
		{ "seconds", 0, DBK_OPT_DOUBLE, &o->seconds, 0.01, 3600, .metavar = "S",
		  .help = "measure for S seconds (5; at most 3600)" },
		{ "total", 0, DBK_OPT_LL, &o->total, 1, MAX_TOTAL, .metavar = "N",
		  .help = "instead, stop after N decisions" },
		{ "body-bytes", 0, DBK_OPT_LL, &o->body_bytes, DBK_SPB_BODY_MIN, MAX_BODY,
		  .metavar = "N",
		  .help = "request body size: blen, and the sample (cut at 15000\n"
		          "bytes, as haproxy/dbucket.spoe.conf does) (100)" },
		{ "max-tokens", 0, DBK_OPT_INT, &o->max_tokens, 0, 99999, .metavar = "N",
		  .help = "max_tokens in the body (16)" },
		{ "release", 0, DBK_OPT_STR, &o->release, .metavar = "ADDR",
		  .help = "send each decided id's completion line to the agent's\n"
		          "completion listener, so its lease is released" },
		{ "defer-release", 0, DBK_OPT_FLAG, &o->defer,
		  .help = "with --release and --total: hold the lines, print\n"
		          "'holding leases=N pid=P' and wait, connections open;\n"
		          "SIGUSR1 sends them and exits, SIGTERM exits\n"
		          "without them (the agent keeps those leases)" },
		{ "timeout", 0, DBK_OPT_DOUBLE, &o->timeout, 0.1, 86400, .metavar = "S",
		  .help = "hard limit on the whole run (600)" },
		{ "help", 'h', DBK_OPT_FLAG, &o->help, .help = "this text" },
		{ "version", 'V', DBK_OPT_FLAG, &o->version, .help = "the version" },
		{ .name = NULL },
	};
	char err[256];
	int first;

	*o = (struct dbk_load_opts){ .connect = "127.0.0.1:12345",
		                     .connections = 4,
		                     .depth = 16,
		                     .seconds = 5,
		                     .timeout = 600,
		                     .body_bytes = 100,
		                     .max_tokens = 16 };
	if (dbk_cli_parse(opts, argc, argv, NULL, &first, err, sizeof(err)) < 0) {
		fprintf(stderr, "dbucket-spop-load: %s\n", err);
		return 2;
	}
	if (o->help) {
		usage(stdout, opts);
		return 0;
	}
	if (o->version) {
		printf("dbucket-spop-load %s\n", DBK_VERSION);
		return 0;
	}
	if (first != argc) {
		fprintf(stderr, "dbucket-spop-load: unexpected argument '%s'\n", argv[first]);
		return 2;
	}
	if (o->defer && (!o->release || !o->total)) {
		fprintf(stderr, "dbucket-spop-load: --defer-release needs --release and --total\n");
		return 2;
	}
	return -1;
}
