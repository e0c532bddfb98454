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
 * loads anything but the machine it runs on. This file sets the run up;
 * load.h says where the rest lives. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/net.h"
#include "load.h"

/* HOST:PORT, [IPV6]:PORT or unix:PATH to a socket address; anything that
 * is not this machine's loopback is refused. */
static int resolve_local(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char err[256];

	if (dbk_net_resolve(spec, false, ss, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "dbucket-spop-load: %s\n", err);
		return -1;
	}
	if (!dbk_net_addr_is_local((const struct sockaddr *)ss)) {
		fprintf(stderr,
		        "dbucket-spop-load: %s: not a loopback address (this tool only loads its "
		        "own host)\n",
		        spec);
		return -1;
	}
	return 0;
}

/* The body sample every NOTIFY carries: the body's first bytes; for a
 * body longer than the sample its JSON is cut, as HAProxy's
 * bytes(0,15000) cuts it. Then the largest NOTIFY (longest id and
 * stream-id), which must fit our frame. Returns 0 or an exit status. */
static int make_sample(struct dbk_load *L)
{
	size_t full_len = (size_t)L->o.body_bytes;
	static uint8_t probe[DBK_LOAD_FRAME + 64];
	char id[DBK_LOAD_MAX_ID];

	char *full = malloc(full_len);

	L->sample_len = full_len < DBK_SPB_SAMPLE_MAX ? full_len : DBK_SPB_SAMPLE_MAX;
	L->body = malloc(L->sample_len);
	if (!full || !L->body ||
	    dbk_spb_body_fill(full, full_len, full_len, (unsigned)L->o.max_tokens) == 0) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		free(full);
		return 1;
	}
	memcpy(L->body, full, L->sample_len);
	free(full);
	memset(id, 'F', sizeof(id));
	L->notify_max = dbk_spb_notify_build(probe, sizeof(probe), UINT64_MAX, 1, id,
	                                     DBK_LOAD_MAX_ID - 1, (int64_t)L->o.body_bytes,
	                                     (const uint8_t *)L->body, L->sample_len);
	if (L->notify_max == 0 || L->notify_max > DBK_LOAD_FRAME + 4) {
		fprintf(stderr, "dbucket-spop-load: a NOTIFY would exceed %d bytes\n",
		        DBK_LOAD_FRAME);
		return 2;
	}
	return 0;
}

/* Everything but the connections. Returns 0 or an exit status. */
static int setup(struct dbk_load *L)
{
	if (resolve_local(L->o.connect, &L->agent_sa, &L->agent_len) < 0 ||
	    (L->o.release && resolve_local(L->o.release, &L->rel_sa, &L->rel_len) < 0))
		return 2;
	L->pid = (unsigned)getpid() & 0xffff;
	L->wall0_ms = dbk_wall_ms();
	snprintf(L->engine_id, sizeof(L->engine_id), "dbucket-spop-load-%u-%" PRIu64, L->pid,
	         L->wall0_ms);
	L->lat = malloc(sizeof(*L->lat));
	L->conns = calloc((size_t)L->o.connections, sizeof(*L->conns));
	if (!L->lat || !L->conns) {
		fprintf(stderr, "dbucket-spop-load: out of memory\n");
		return 1;
	}
	dbk_spb_lat_init(L->lat);
	return make_sample(L);
}

int main(int argc, char **argv)
{
	static struct dbk_load L; /* static: the signal watchers point into it */
	int rc = dbk_load_parse_opts(argc, argv, &L.o);

	if (rc >= 0)
		return rc;
	rc = setup(&L);
	if (rc)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	L.loop = ev_default_loop(EVFLAG_AUTO);
	if (!L.loop) {
		fprintf(stderr, "dbucket-spop-load: no event loop\n");
		return 1;
	}
	dbk_load_phases_init(&L);
	if (L.o.release && dbk_load_rel_start(&L) < 0) {
		fprintf(stderr, "dbucket-spop-load: completion link to %s: %s\n", L.o.release,
		        strerror(errno));
		return 1;
	}
	for (int i = 0; i < L.o.connections; i++)
		dbk_load_conn_start(&L, (unsigned)i);
	dbk_load_advance(&L);
	if (L.phase != PH_END)
		ev_run(L.loop, 0);

	rc = dbk_load_error_count(&L.err) == 0 && !L.timed_out ? 0 : 1;
	dbk_load_conns_close(&L);
	dbk_load_rel_close(&L);
	free(L.body);
	free(L.lat);
	ev_loop_destroy(L.loop);
	return rc;
}
