/* Fuzzes the launcher's command line (contrib/launcher/flags.c: the
 * reference's flags as argparse parses them, plus ours) and what it is
 * rendered into (render.c: haproxy.cfg, the agent's options and argv).
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most
 * 64), each in a heap block of its own.
 *
 * Checked:
 * - the result is one of the four; an error has a non-empty one-line
 *   message;
 * - an accepted command line holds what the launcher promises the agent
 *   and HAProxy: as many ports as hosts (1 to 4096), ports and --port in
 *   1..65535, hosts HAProxy can carry, threshold below max, the policy one
 *   of dbucket-spoa's, scrape periods 0 (not given) or within the agent's
 *   bounds and only for a scraped policy, --force only with
 *   --print-config;
 * - rendering it (run and production addresses) succeeds, and the agent's
 *   argv carries the policy, and one --scrape per server exactly when a
 *   run's policy scrapes. */
#include "fuzz.h"
#include "launcher/flags.h"
#include "launcher/render.h"

#define MAX_ARGS 64

static void render(const struct dbk_launch_flags *f, const struct dbk_render_addrs *a)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	FUZZ_CHECK(out != NULL);
	FUZZ_CHECK(dbk_render_haproxy_cfg(out, f, a, "/usr/sbin/dbucket-spoa") == 0);
	FUZZ_CHECK(dbk_render_agent_env(out, f, a, "/usr/sbin/dbucket-spoa") == 0);
	fclose(out);
	free(text);

	char **v = dbk_render_agent_argv(f, a, "dbucket-spoa");
	FUZZ_CHECK(v != NULL);
	unsigned scrapes = 0;
	bool policy = false;
	for (size_t i = 0; v[i]; i++) {
		if (strcmp(v[i], "--scrape") == 0)
			scrapes++;
		if (strcmp(v[i], "--policy") == 0)
			policy = v[i + 1] && strcmp(v[i + 1], f->policy) == 0;
	}
	FUZZ_CHECK(policy);
	FUZZ_CHECK(scrapes == (!a->production && dbk_flags_scraped(f) ? f->nhosts : 0));
	dbk_render_argv_free(v);
}

static void check_ok(const struct dbk_launch_flags *f)
{
	FUZZ_CHECK(f->nhosts == f->nports && f->nhosts >= 1 && f->nhosts <= 4096);
	FUZZ_CHECK(f->port >= 1 && f->port <= 65535);
	FUZZ_CHECK(f->host[0] == '\0' || dbk_flags_host_ok(f->host));
	for (unsigned i = 0; i < f->nhosts; i++)
		FUZZ_CHECK(dbk_flags_host_ok(f->server_hosts[i]) && f->server_ports[i] >= 1 &&
		           f->server_ports[i] <= 65535);
	FUZZ_CHECK(f->threshold >= 1 && f->threshold < f->max_request_tokens);
	FUZZ_CHECK(strcmp(f->policy, "reference") == 0 || strcmp(f->policy, "ttft") == 0 ||
	           strcmp(f->policy, "p2ttft") == 0);
	FUZZ_CHECK(f->scrape_interval_ms == 0 ||
	           (f->scrape_interval_ms >= DBK_LAUNCH_SCRAPE_MS_MIN &&
	            f->scrape_interval_ms <= DBK_LAUNCH_SCRAPE_INTERVAL_MS_MAX));
	FUZZ_CHECK(f->scrape_timeout_ms == 0 ||
	           (f->scrape_timeout_ms >= DBK_LAUNCH_SCRAPE_MS_MIN &&
	            f->scrape_timeout_ms <= DBK_LAUNCH_SCRAPE_TIMEOUT_MS_MAX));
	FUZZ_CHECK(dbk_flags_scraped(f) || (!f->scrape_interval_ms && !f->scrape_timeout_ms));
	FUZZ_CHECK(!f->force || f->print_config);
	FUZZ_CHECK(!f->dynamic || f->nhosts >= 2);

	struct dbk_render_addrs a;
	char err[256];
	FUZZ_CHECK(dbk_render_addrs_run(&a, "/run/dbucket.fuzz", 12346, err, sizeof(err)) == 0);
	render(f, &a);
	FUZZ_CHECK(dbk_render_addrs_production(&a, "/etc/haproxy/dbucket", err, sizeof(err)) == 0);
	render(f, &a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2];
	int argc;
	char err[512];
	struct dbk_launch_flags f;

	argc = fuzz_argv(data, size, "dbucket", argv, MAX_ARGS);

	enum dbk_flags_result rc = dbk_flags_parse(&f, argc, argv, err, sizeof(err));
	FUZZ_CHECK(rc == DBK_FLAGS_OK || rc == DBK_FLAGS_HELP || rc == DBK_FLAGS_VERSION ||
	           rc == DBK_FLAGS_ERROR);
	if (rc == DBK_FLAGS_ERROR)
		FUZZ_CHECK(err[0] != '\0' && !strchr(err, '\n'));
	if (rc == DBK_FLAGS_OK)
		check_ok(&f);
	dbk_flags_free(&f);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
