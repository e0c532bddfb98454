/* The launcher's usage line and --help, worded and wrapped as argparse
 * prints the reference's (tests compare them), with our options after. */
#include <stdio.h>

#include "flags.h"

static const char usage_text[] =
        "usage: dbucket [-h] [--port PORT] [--host HOST]\n"
        "               [--server-hosts SERVER_HOSTS [SERVER_HOSTS ...]]\n"
        "               [--server-ports SERVER_PORTS [SERVER_PORTS ...]]\n"
        "               [--max-retries MAX_RETRIES] [--retry-delay RETRY_DELAY]\n"
        "               [--server-group-threshold SERVER_GROUP_THRESHOLD]\n"
        "               [--max-request-tokens MAX_REQUEST_TOKENS]\n"
        "               [--enable-dynamic-bucket] [--print-config DIR]\n"
        "               [--runtime-dir DIR] [--agent PATH] [--haproxy PATH]\n"
        "               [--access-log] [--version]\n";

void dbk_flags_usage(FILE *out) { fputs(usage_text, out); }

void dbk_flags_help(FILE *out)
{
	fputs(usage_text, out);
	fprintf(out,
	        "\n"
	        "Length-aware load balancer for vLLM fleets, with the command line of the\n"
	        "reference proxy (hybrid_proxy_server.py): runs HAProxy in front of the\n"
	        "servers and dbucket-spoa choosing the server of each request, both\n"
	        "configured from these flags, until SIGTERM or SIGINT.\n"
	        "\n"
	        "options (the reference's, same defaults):\n"
	        "  -h, --help            show this help message and exit\n"
	        "  --port PORT           where clients connect (%d)\n"
	        "  --host HOST           the address HAProxy binds (%s; \"\" for every\n"
	        "                        address)\n"
	        "  --server-hosts SERVER_HOSTS [SERVER_HOSTS ...]\n"
	        "                        hosts of the vLLM servers, one per server, in order\n"
	        "                        (%s)\n"
	        "  --server-ports SERVER_PORTS [SERVER_PORTS ...]\n"
	        "                        their ports, as many as hosts (%d)\n"
	        "  --max-retries MAX_RETRIES\n"
	        "                        attempts per request before giving up (%d): becomes\n"
	        "                        HAProxy's `retries MAX_RETRIES-1` (0 if below 2),\n"
	        "                        before any byte of the response, on a refused\n"
	        "                        connection, an empty response or a 503, redispatched\n"
	        "                        to another server\n"
	        "  --retry-delay RETRY_DELAY\n"
	        "                        accepted and ignored (%g): HAProxy has no retry\n"
	        "                        backoff; it redispatches at once\n"
	        "  --server-group-threshold SERVER_GROUP_THRESHOLD\n"
	        "                        tokens (body bytes / 4) where the long bucket starts\n"
	        "                        (%d)\n"
	        "  --max-request-tokens MAX_REQUEST_TOKENS\n"
	        "                        upper bound of the long bucket (%d)\n"
	        "  --enable-dynamic-bucket\n"
	        "                        split the servers into a short group (first half)\n"
	        "                        and a long group (second half); needs 2 servers\n"
	        "\n"
	        "options of dbucket:\n"
	        "  --print-config DIR    write haproxy.cfg, dbucket.spoe.conf,\n"
	        "                        dbucket-spoa.env and README.dbucket for a production\n"
	        "                        install into DIR, and exit\n"
	        "  --runtime-dir DIR     where the generated configuration and the unix\n"
	        "                        sockets between HAProxy and the agent live (a new\n"
	        "                        directory under $XDG_RUNTIME_DIR or $TMPDIR, removed\n"
	        "                        at exit); the agent's /state and /metrics are on\n"
	        "                        DIR/admin.sock\n"
	        "  --agent PATH          the dbucket-spoa to run (the one beside dbucket,\n"
	        "                        then ../sbin/, then $PATH)\n"
	        "  --haproxy PATH        the haproxy to run ($PATH, then /usr/sbin,\n"
	        "                        /usr/local/sbin)\n"
	        "  --access-log          HAProxy's access log, one line per request, on\n"
	        "                        stderr (off: only errors, warnings and one line\n"
	        "                        per lifecycle event)\n"
	        "  --version             show the version and exit\n"
	        "\n"
	        "Exit status: 0 when stopped by SIGTERM, SIGINT or SIGHUP (or after --help,\n"
	        "--version or --print-config), 1 when HAProxy or the agent failed, 2 for a\n"
	        "bad command line. See dbucket(1).\n",
	        DBK_LAUNCH_DEFAULT_PORT, DBK_LAUNCH_DEFAULT_HOST, DBK_LAUNCH_DEFAULT_SERVER_HOST,
	        DBK_LAUNCH_DEFAULT_SERVER_PORT, DBK_LAUNCH_DEFAULT_MAX_RETRIES,
	        DBK_LAUNCH_DEFAULT_RETRY_DELAY, DBK_LAUNCH_DEFAULT_THRESHOLD,
	        DBK_LAUNCH_DEFAULT_MAX_REQUEST_TOKENS);
}
