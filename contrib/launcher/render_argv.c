/* dbucket-spoa's command line for a run or for production (render.h):
 * the listeners, the runtime API, the balancing flags, the policy and, in
 * a run whose agent scrapes, where each server's /metrics is; with
 * --layout per-model, a pool per model's backend. */
#include "render.h"

#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

/* --scrape NAME=URL for server i of a run: the launcher knows where each
 * server is (HAProxy's discovery would come too late: the agent starts
 * first). NULL when out of memory. */
static char *scrape_arg(const struct dbk_launch_flags *f, unsigned i)
{
	const char *h = f->server_hosts[i];
	bool v6 = strchr(h, ':') && h[0] != '[';
	int n = snprintf(NULL, 0, "vllm%u=http://%s%s%s:%ld", i, v6 ? "[" : "", h, v6 ? "]" : "",
	                 f->server_ports[i]);
	char *s = malloc((size_t)n + 1);

	if (s)
		snprintf(s, (size_t)n + 1, "vllm%u=http://%s%s%s:%ld", i, v6 ? "[" : "", h,
		         v6 ? "]" : "", f->server_ports[i]);
	return s;
}

/* The policy and its scraping periods, after the fixed part of the argv. */
static size_t policy_argv(char **v, size_t n, const struct dbk_launch_flags *f)
{
	char num[32];

	if (!(v[n++] = xstrdup("--policy")) || !(v[n++] = xstrdup(f->policy)))
		return 0;
	if (f->admission && !(v[n++] = xstrdup("--admission")))
		return 0;
	const long long ms[2] = { f->scrape_interval_ms, f->scrape_timeout_ms };
	const char *flag[2] = { "--scrape-interval", "--scrape-timeout" };
	for (size_t k = 0; k < 2; k++) {
		if (!ms[k])
			continue;
		snprintf(num, sizeof(num), "%lld", ms[k]);
		if (!(v[n++] = xstrdup(flag[k])) || !(v[n++] = xstrdup(num)))
			return 0;
	}
	return n;
}

/* Server i of a run: its --scrape when the agent scrapes, then its name.
 * NULL model: every server. */
static size_t servers_argv(char **v, size_t n, const struct dbk_launch_flags *f, const char *model)
{
	char name[32];

	for (unsigned i = 0; dbk_flags_scrapes(f) && i < f->nhosts; i++)
		if ((!model || strcmp(f->server_models[i], model) == 0) &&
		    (!(v[n++] = xstrdup("--scrape")) || !(v[n++] = scrape_arg(f, i))))
			return 0;
	/* Named, in order, so that the agent needs HAProxy for nothing but
	 * states and sessions. */
	for (unsigned i = 0; i < f->nhosts; i++) {
		if (model && strcmp(f->server_models[i], model) != 0)
			continue;
		snprintf(name, sizeof(name), "vllm%u", i);
		if (!(v[n++] = xstrdup(name)))
			return 0;
	}
	return n;
}

/* --layout per-model: a --pool per model's backend, with its servers in a
 * run; production's pools read theirs from HAProxy. */
static size_t pools_argv(char **v, size_t n, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a)
{
	const char *models[DBK_LAUNCH_MAX_MODELS];
	unsigned nm = dbk_flags_models(f, models);
	char name[DBK_LAUNCH_MODEL_MAX + 1];

	for (unsigned m = 0; m < nm && n; m++) {
		dbk_flags_backend_name(models[m], name, sizeof(name));
		if (!(v[n++] = xstrdup("--pool")) || !(v[n++] = xstrdup(name)))
			return 0;
		if (!a->production)
			n = servers_argv(v, n, f, models[m]);
	}
	return n;
}

char **dbk_render_agent_argv(const struct dbk_launch_flags *f, const struct dbk_render_addrs *a,
                             const char *agent_path)
{
	char num[2][32];
	/* Fixed part, the policy's, a --pool pair per model, then the names
	 * (and --scrape pairs) in a run: fits 30 + 2M + 3N. */
	size_t cap = 30 + 2 * (size_t)f->nmodels + (a->production ? 0 : 3 * (size_t)f->nhosts),
	       n = 0;
	char **v = calloc(cap + 1, sizeof(*v));

	if (!v)
		return NULL;
	snprintf(num[0], sizeof(num[0]), "%lld", f->threshold);
	snprintf(num[1], sizeof(num[1]), "%lld", f->max_request_tokens);
	const char *fixed[] = {
		agent_path,
		"--listen",
		a->agent_listen,
		"--completion-listen",
		a->agent_completions,
		"--completion-listen",
		a->agent_completions_udp,
		"--admin-listen",
		a->agent_admin,
		"--haproxy-socket",
		a->agent_haproxy_socket,
		"--server-group-threshold",
		num[0],
		"--max-request-tokens",
		num[1],
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!(v[n++] = xstrdup(fixed[i])))
			goto fail;
	if (f->dynamic && !(v[n++] = xstrdup("--enable-dynamic-bucket")))
		goto fail;
	if ((n = policy_argv(v, n, f)) == 0)
		goto fail;
	if (f->per_model)
		n = pools_argv(v, n, f, a);
	else if (!a->production)
		n = servers_argv(v, n, f, NULL);
	if (n == 0)
		goto fail;
	v[n] = NULL;
	return v;
fail:
	dbk_render_argv_free(v);
	return NULL;
}

void dbk_render_argv_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}
