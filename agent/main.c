/* dbucket-spoa: HAProxy SPOE agent choosing a vLLM server per request by
 * its length and the load in flight. main wires the pieces together; the
 * event loop owns every piece of mutable state from then on. */
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "balancer.h"
#include "config.h"
#include "log.h"
#include "net.h"
#include "route.h"
#include "spoa.h"

struct agent {
	struct dbk_config cfg;
	struct dbk_balancer *bal;
	struct dbk_route route;
	struct dbk_spoa *spoa;
	ev_signal sigterm, sigint;
};

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	dbk_log(DBK_LOG_INFO, "stopping", "signal=%d", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void log_summary(const struct agent *a)
{
	const struct dbk_bal_stats *b = dbk_bal_stats(a->bal);
	const struct dbk_spoa_stats *s = dbk_spoa_stats(a->spoa);

	dbk_log(DBK_LOG_INFO, "summary",
	        "connections=%llu notifies=%llu routed=%llu redirects=%llu releases=%llu "
	        "leases=%zu unknown_releases=%llu refused=%llu",
	        (unsigned long long)s->accepted, (unsigned long long)a->route.stats.notifies,
	        (unsigned long long)a->route.stats.routed, (unsigned long long)b->redirects,
	        (unsigned long long)b->releases, b->leases,
	        (unsigned long long)b->unknown_releases,
	        (unsigned long long)a->route.stats.refused);
}

int main(int argc, char **argv)
{
	static struct agent a; /* large (server name table): keep it off the stack */
	struct dbk_bal_config bc;
	char err[256];
	int rc = 1;

	switch (dbk_config_parse(&a.cfg, argc, argv, err, sizeof(err))) {
	case DBK_CONFIG_HELP:
		dbk_config_usage(stdout, "dbucket-spoa");
		return 0;
	case DBK_CONFIG_VERSION:
		printf("dbucket-spoa %s\n", DBK_VERSION);
		return 0;
	case DBK_CONFIG_ERROR:
		fprintf(stderr, "dbucket-spoa: %s\n", err);
		return 2;
	case DBK_CONFIG_OK:
		break;
	}
	dbk_log_set_level((enum dbk_log_level)a.cfg.log_level);
	signal(SIGPIPE, SIG_IGN);

	dbk_config_balancer(&a.cfg, &bc);
	a.bal = dbk_bal_new(&bc);
	if (!a.bal) {
		fprintf(stderr, "dbucket-spoa: cannot create the balancer\n");
		return 1;
	}
	a.route.bal = a.bal;
	a.route.names = a.cfg.servers;

	struct ev_loop *loop = EV_DEFAULT;
	struct dbk_spoa_config sc = {
		.max_frame_size = a.cfg.max_frame_size,
		.max_connections = a.cfg.max_connections,
	};
	a.spoa = dbk_spoa_new(loop, &sc, &a.route);
	if (!a.spoa) {
		fprintf(stderr, "dbucket-spoa: out of memory\n");
		goto out;
	}
	for (unsigned i = 0; i < a.cfg.nlisten; i++) {
		int fd = dbk_net_listen(a.cfg.listen[i], err, sizeof(err));
		if (fd < 0) {
			fprintf(stderr, "dbucket-spoa: cannot listen on %s\n", err);
			goto out;
		}
		dbk_spoa_add_listener(a.spoa, fd);
		dbk_log(DBK_LOG_INFO, "listening", "addr=%s", a.cfg.listen[i]);
	}

	ev_signal_init(&a.sigterm, on_signal, SIGTERM);
	ev_signal_start(loop, &a.sigterm);
	ev_signal_init(&a.sigint, on_signal, SIGINT);
	ev_signal_start(loop, &a.sigint);

	dbk_log(DBK_LOG_INFO, "started",
	        "version=%s servers=%u mode=%s threshold=%ld max_request_tokens=%ld",
	        DBK_VERSION, a.cfg.nservers, a.cfg.dynamic ? "dynamic" : "plain",
	        a.cfg.threshold, a.cfg.max_request_tokens);
	ev_run(loop, 0);
	rc = 0;
out:
	if (a.spoa) {
		log_summary(&a);
		dbk_spoa_free(a.spoa);
	}
	for (unsigned i = 0; i < a.cfg.nlisten; i++)
		dbk_net_unlink(a.cfg.listen[i]);
	dbk_bal_free(a.bal);
	ev_loop_destroy(loop);
	return rc;
}
