/* dbucket-spoa: HAProxy SPOE agent choosing a vLLM server per request by
 * its length and the load in flight. main parses the command line, starts
 * the agent and runs the event loop, which owns all mutable state. */
#include <ev.h>
#include <signal.h>
#include <stdio.h>

#include "agent.h"
#include "lib/log.h"
#include "lib/version.h"

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	dbk_log(DBK_LOG_INFO, "stopping", "signal=%d", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct dbk_agent *a = w->data;
	char err[320];

	(void)loop;
	(void)revents;
	if (dbk_agent_reload(a, err, sizeof(err)) < 0)
		dbk_log(DBK_LOG_ERROR, "config-rejected",
		        "reason=\"%s\" effect=\"settings unchanged\"", err);
}

/* One line per pool; with --pool each says its pool, and the NOTIFYs
 * are counted by the front (every pool's). */
static void log_summary(const struct dbk_agent *a)
{
	for (unsigned i = 0; i < a->npools; i++) {
		const struct dbk_pool *p = &a->pools[i];
		const struct dbk_bal_stats *b = dbk_bal_stats(p->bal);
		uint64_t notifies = p->cfg.pool ? a->front.stats.notifies : p->route.stats.notifies;

		dbk_log(DBK_LOG_INFO, "summary",
		        "%s%s%snotifies=%llu decisions=%llu redirects=%llu released=%llu "
		        "expired=%llu leases=%zu unknown_releases=%llu refused=%llu",
		        p->cfg.pool ? "pool=" : "", p->cfg.pool ? p->cfg.pool : "",
		        p->cfg.pool ? " " : "", (unsigned long long)notifies,
		        (unsigned long long)b->decisions, (unsigned long long)b->redirects,
		        (unsigned long long)b->releases, (unsigned long long)b->expired, b->leases,
		        (unsigned long long)b->unknown_releases,
		        (unsigned long long)p->route.stats.refused);
	}
}

int main(int argc, char **argv)
{
	static struct dbk_agent a; /* large (server name table): keep it off the stack */
	ev_signal sigterm, sigint, sighup;
	char err[320];
	int rc = 1;

	struct dbk_config *cfgs[DBK_MAX_POOLS];

	for (unsigned i = 0; i < DBK_MAX_POOLS; i++)
		cfgs[i] = &a.pools[i].cfg;
	switch (dbk_config_parse_pools(cfgs, DBK_MAX_POOLS, &a.npools, argc, argv, err,
	                               sizeof(err))) {
	case DBK_CONFIG_HELP: dbk_config_usage(stdout, "dbucket-spoa"); return 0;
	case DBK_CONFIG_VERSION: printf("dbucket-spoa %s\n", DBK_VERSION); return 0;
	case DBK_CONFIG_ERROR: fprintf(stderr, "dbucket-spoa: %s\n", err); return 2;
	case DBK_CONFIG_OK: break;
	}
	dbk_log_set_level((enum dbk_log_level)dbk_agent_cfg(&a)->log_level);
	signal(SIGPIPE, SIG_IGN);

	/* The watchers come first: a stop sent while the listeners open (a
	 * supervisor that gave up, a test's teardown) is then taken when the
	 * loop runs, as any other, with the summary and the unix sockets
	 * removed, instead of killing the process. No handler runs before
	 * ev_run, so a SIGHUP then reloads a started agent. */
	struct ev_loop *loop = EV_DEFAULT;
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	ev_signal_start(loop, &sigterm);
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_start(loop, &sigint);
	ev_signal_init(&sighup, on_sighup, SIGHUP);
	sighup.data = &a;
	ev_signal_start(loop, &sighup);
	if (dbk_agent_start(&a, loop, err, sizeof(err)) < 0 ||
	    dbk_agent_drop_privileges(&a, err, sizeof(err)) < 0) {
		fprintf(stderr, "dbucket-spoa: %s\n", err);
		goto out;
	}

	for (unsigned i = 0; i < a.npools; i++) {
		const struct dbk_pool *p = &a.pools[i];

		dbk_log(DBK_LOG_INFO, "started",
		        "version=%s %s%s%sservers=%u slots=%u mode=%s threshold=%lld "
		        "max_request_tokens=%lld lease_ttl_s=%lld",
		        DBK_VERSION, p->cfg.pool ? "pool=" : "", p->cfg.pool ? p->cfg.pool : "",
		        p->cfg.pool ? " " : "", p->nstart, p->cfg.nservers,
		        p->cfg.dynamic ? "dynamic" : "plain", p->cfg.threshold,
		        p->cfg.max_request_tokens, p->cfg.lease_ttl_s);
	}
	ev_run(loop, 0);
	log_summary(&a);
	rc = 0;
out:
	dbk_agent_stop(&a);
	ev_loop_destroy(loop);
	return rc;
}
