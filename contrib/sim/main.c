/* dbucket-sim: replays a request trace against a simulated vLLM fleet
 * under several routing policies and prints one table. Model time only:
 * a whole trace takes seconds of wall time. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numparse.h"
#include "policy.h"
#include "report.h"
#include "sim.h"
#include "../bench/trace.h"  /* dbucket-bench's reader: one trace parser */

#define VERSION "0.1"
#define MAX_POLICIES 16

struct opts {
	const char *trace;
	enum dbk_trace_format format;       /* UNKNOWN: detect */
	double start_s, duration_s;         /* duration 0: to the end */
	unsigned long skip, max_requests;   /* max 0: all */
	double rate_factor;
	unsigned instances;
	const char *gpu;
	/* 0: the GPU profile's default. */
	unsigned long max_model_len, batched, seqs, kv;
	unsigned long short_max_model_len, short_kv;
	double threshold, max_request_tokens, json_overhead;
	double overhead_ms;
	bool no_prefix_caching;
	double slo_ttft_ms, slo_tpot_ms, slo_e2e_ms;
	const char *policies;
	const char *json;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: dbucket-sim --trace FILE [options]\n"
"Replays a Mooncake or Azure trace against N simulated vLLM instances\n"
"(contrib/stub/engine.c) routed by each policy, in model time, and prints\n"
"one row per policy with ratios to least connections.\n"
"\n"
"Trace:\n"
"  --trace FILE                  Mooncake JSONL or Azure CSV (required)\n"
"  --format auto|mooncake|azure  (default auto: by extension, then content)\n"
"  --start-s S                   skip the first S seconds of trace time\n"
"  --duration-s D                keep D seconds of trace time (default all)\n"
"  --skip N                      then drop the first N requests (default 0)\n"
"  --max-requests N              then keep at most N (default all)\n"
"  --rate-factor F               arrivals F times faster: trace time / F\n"
"                                (default 1)\n"
"Cluster:\n"
"  --instances N                 vLLM instances (default 4); the first\n"
"                                ceil(N/2) form the short group\n"
"  --gpu h100|a100               step-time profile and defaults (h100)\n"
"  --max-model-len N             every instance (default 131072)\n"
"  --max-num-batched-tokens N    step token budget (default 8192 h100,\n"
"                                2048 a100)\n"
"  --max-num-seqs N              (default 1024 h100, 256 a100)\n"
"  --kv-capacity-tokens N        KV cache per instance (default 430000)\n"
"  --short-max-model-len N       the short group's max-model-len\n"
"  --short-kv-capacity-tokens N  the short group's KV cache\n"
"  --demo-profile                short group 32768 / 120000, as make demo\n"
"  --no-prefix-caching           as vLLM's flag (caching is on by default)\n"
"  --overhead-ms X               constant delay from decision to engine\n"
"                                (the live path: HAProxy, agent; default 0)\n"
"Routing:\n"
"  --policy LIST                 comma-separated rr, lc, plain, dynamic,\n"
"                                clairvoyant, or all (default all)\n"
"  --server-group-threshold N    tokens where long starts (default 32768):\n"
"                                the balancer's buckets and the report's\n"
"                                short/long classes\n"
"  --max-request-tokens N        upper bound of the long bucket (131072)\n"
"  --json-overhead-bytes N       body bytes besides the prompt's 4 per\n"
"                                token, as the agent sees them (120)\n"
"Report:\n"
"  --slo-ttft-ms X               goodput objectives; 0 = not applied\n"
"  --slo-tpot-ms X               (defaults: TTFT 2000, TPOT 100, E2E 0)\n"
"  --slo-e2e-ms X\n"
"  --json FILE                   also write every metric as JSON\n"
"  --help, --version\n"
"\n"
"Policies: rr round robin; lc fewest requests in flight; plain and\n"
"dynamic the agent's balancer (agent/balancer.c) without and with\n"
"--enable-dynamic-bucket; clairvoyant knows output lengths and engine\n"
"queues and picks the earliest predicted first token among instances\n"
"whose KV cache holds the request beside all committed there.\n"
"Latencies are model time, as vLLM's benchmark client defines them.\n");
}

enum {
	O_TRACE = 256, O_FORMAT, O_START, O_DURATION, O_SKIP, O_MAXREQ, O_RATE, O_INST, O_GPU,
	O_MML, O_BATCHED, O_SEQS, O_KV, O_SMML, O_SKV, O_DEMO, O_NO_PC, O_OVERHEAD,
	O_POLICY, O_THRESH, O_MAXTOK, O_JSONOV, O_SLO_TTFT, O_SLO_TPOT,
	O_SLO_E2E, O_JSON, O_HELP, O_VERSION,
};

static const struct option longopts[] = {
	{ "trace", required_argument, NULL, O_TRACE },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "start-s", required_argument, NULL, O_START },
	{ "duration-s", required_argument, NULL, O_DURATION },
	{ "skip", required_argument, NULL, O_SKIP },
	{ "max-requests", required_argument, NULL, O_MAXREQ },
	{ "rate-factor", required_argument, NULL, O_RATE },
	{ "instances", required_argument, NULL, O_INST },
	{ "gpu", required_argument, NULL, O_GPU },
	{ "max-model-len", required_argument, NULL, O_MML },
	{ "max-num-batched-tokens", required_argument, NULL, O_BATCHED },
	{ "max-num-seqs", required_argument, NULL, O_SEQS },
	{ "kv-capacity-tokens", required_argument, NULL, O_KV },
	{ "short-max-model-len", required_argument, NULL, O_SMML },
	{ "short-kv-capacity-tokens", required_argument, NULL, O_SKV },
	{ "demo-profile", no_argument, NULL, O_DEMO },
	{ "no-prefix-caching", no_argument, NULL, O_NO_PC },
	{ "overhead-ms", required_argument, NULL, O_OVERHEAD },
	{ "policy", required_argument, NULL, O_POLICY },
	{ "server-group-threshold", required_argument, NULL, O_THRESH },
	{ "max-request-tokens", required_argument, NULL, O_MAXTOK },
	{ "json-overhead-bytes", required_argument, NULL, O_JSONOV },
	{ "slo-ttft-ms", required_argument, NULL, O_SLO_TTFT },
	{ "slo-tpot-ms", required_argument, NULL, O_SLO_TPOT },
	{ "slo-e2e-ms", required_argument, NULL, O_SLO_E2E },
	{ "json", required_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *what, const char *val)
{
	fprintf(stderr, "dbucket-sim: %s, not '%s'\nTry 'dbucket-sim --help'.\n",
	        what, val);
	return 2;
}

static int parse_ulong(const char *s, unsigned long lo, unsigned long hi,
                       unsigned long *out)
{
	char *e;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoul(s, &e, 10);
	if (errno || *e || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;
	unsigned long u;

	memset(o, 0, sizeof(*o));
	o->rate_factor = 1;
	o->instances = 4;
	o->gpu = "h100";
	o->threshold = 32768;
	o->max_request_tokens = 131072;
	o->json_overhead = DBK_SIM_JSON_OVERHEAD_BYTES;
	o->slo_ttft_ms = 2000;
	o->slo_tpot_ms = 100;
	o->policies = "all";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_TRACE: o->trace = optarg; break;
		case O_FORMAT:
			if (strcmp(optarg, "auto") == 0)
				o->format = DBK_TRACE_UNKNOWN;
			else if (strcmp(optarg, "mooncake") == 0)
				o->format = DBK_TRACE_MOONCAKE;
			else if (strcmp(optarg, "azure") == 0)
				o->format = DBK_TRACE_AZURE;
			else
				return bad("--format wants auto, mooncake or azure", optarg);
			break;
		case O_START:
			if (!dbk_parse_double(optarg, 0, 1e12, &o->start_s))
				return bad("--start-s wants seconds >= 0", optarg);
			break;
		case O_DURATION:
			if (!dbk_parse_double(optarg, 0, 1e12, &o->duration_s))
				return bad("--duration-s wants seconds >= 0", optarg);
			break;
		case O_SKIP:
			if (parse_ulong(optarg, 0, UINT32_MAX, &o->skip))
				return bad("--skip wants a count", optarg);
			break;
		case O_MAXREQ:
			if (parse_ulong(optarg, 1, UINT32_MAX - 1, &o->max_requests))
				return bad("--max-requests wants a positive count", optarg);
			break;
		case O_RATE:
			if (!dbk_parse_double(optarg, 1e-6, 1e9, &o->rate_factor))
				return bad("--rate-factor wants a positive number", optarg);
			break;
		case O_INST:
			if (parse_ulong(optarg, 1, DBK_SIM_MAX_INSTANCES, &u))
				return bad("--instances wants 1..4096", optarg);
			o->instances = (unsigned)u;
			break;
		case O_GPU:
			if (!dbk_gpu_profile_find(optarg))
				return bad("--gpu wants h100 or a100", optarg);
			o->gpu = optarg;
			break;
		case O_MML:
			if (parse_ulong(optarg, 2, DBK_ENGINE_MAX_MODEL_LEN_LIMIT, &o->max_model_len))
				return bad("--max-model-len wants an integer >= 2", optarg);
			break;
		case O_BATCHED:
			if (parse_ulong(optarg, 1, DBK_ENGINE_MAX_MODEL_LEN_LIMIT, &o->batched))
				return bad("--max-num-batched-tokens wants a positive integer", optarg);
			break;
		case O_SEQS:
			if (parse_ulong(optarg, 1, DBK_ENGINE_MAX_SEQS_LIMIT, &o->seqs))
				return bad("--max-num-seqs wants a positive integer", optarg);
			break;
		case O_KV:
			if (parse_ulong(optarg, 16, 1UL << 40, &o->kv))
				return bad("--kv-capacity-tokens wants an integer >= 16", optarg);
			break;
		case O_SMML:
			if (parse_ulong(optarg, 2, DBK_ENGINE_MAX_MODEL_LEN_LIMIT, &o->short_max_model_len))
				return bad("--short-max-model-len wants an integer >= 2", optarg);
			break;
		case O_SKV:
			if (parse_ulong(optarg, 16, 1UL << 40, &o->short_kv))
				return bad("--short-kv-capacity-tokens wants an integer >= 16", optarg);
			break;
		case O_DEMO:
			/* contrib/demo.sh's short stubs. */
			o->short_max_model_len = 32768;
			o->short_kv = 120000;
			break;
		case O_NO_PC:
			o->no_prefix_caching = true;
			break;
		case O_OVERHEAD:
			if (!dbk_parse_double(optarg, 0, 1e7, &o->overhead_ms))
				return bad("--overhead-ms wants a number >= 0", optarg);
			break;
		case O_POLICY: o->policies = optarg; break;
		case O_THRESH:
			if (!dbk_parse_double(optarg, 1, 1099511627776.0, &o->threshold))
				return bad("--server-group-threshold wants a positive number", optarg);
			break;
		case O_MAXTOK:
			if (!dbk_parse_double(optarg, 1, 1099511627776.0, &o->max_request_tokens))
				return bad("--max-request-tokens wants a positive number", optarg);
			break;
		case O_JSONOV:
			if (!dbk_parse_double(optarg, 0, 1e9, &o->json_overhead))
				return bad("--json-overhead-bytes wants a number >= 0", optarg);
			break;
		case O_SLO_TTFT:
			if (!dbk_parse_double(optarg, 0, 1e12, &o->slo_ttft_ms))
				return bad("--slo-ttft-ms wants a number >= 0", optarg);
			break;
		case O_SLO_TPOT:
			if (!dbk_parse_double(optarg, 0, 1e12, &o->slo_tpot_ms))
				return bad("--slo-tpot-ms wants a number >= 0", optarg);
			break;
		case O_SLO_E2E:
			if (!dbk_parse_double(optarg, 0, 1e12, &o->slo_e2e_ms))
				return bad("--slo-e2e-ms wants a number >= 0", optarg);
			break;
		case O_JSON: o->json = optarg; break;
		case O_HELP: usage(stdout); exit(0);
		case O_VERSION: printf("dbucket-sim %s\n", VERSION); exit(0);
		default:
			fprintf(stderr, "Try 'dbucket-sim --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (!o->trace) {
		fprintf(stderr, "dbucket-sim: --trace FILE is required\n"
		        "Try 'dbucket-sim --help'.\n");
		return 2;
	}
	if (o->threshold >= o->max_request_tokens) {
		fprintf(stderr, "dbucket-sim: --server-group-threshold must be "
		        "below --max-request-tokens\n");
		return 2;
	}
	return 0;
}

/* Splits the --policy list; "all" is every built-in one. */
static int pick_policies(const char *list, const struct dbk_sim_policy_ops **out,
                         size_t *n)
{
	char buf[256], *tok, *save = NULL;
	size_t i;

	*n = 0;
	if (strcmp(list, "all") == 0) {
		for (i = 0; i < MAX_POLICIES && dbk_sim_policy_at(i); i++)
			out[(*n)++] = dbk_sim_policy_at(i);
		return 0;
	}
	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct dbk_sim_policy_ops *p = dbk_sim_policy_find(tok);

		if (!p || *n == MAX_POLICIES) {
			fprintf(stderr, "dbucket-sim: unknown policy '%s' (rr, lc, "
			        "plain, dynamic, clairvoyant, all)\n", tok);
			return -1;
		}
		out[(*n)++] = p;
	}
	return *n ? 0 : -1;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void engine_cfg(const struct opts *o, bool is_short,
                       struct dbk_engine_config *c)
{
	dbk_engine_config_default(c, dbk_gpu_profile_find(o->gpu));
	c->enable_prefix_caching = !o->no_prefix_caching;
	if (o->max_model_len)
		c->max_model_len = (uint32_t)o->max_model_len;
	if (o->batched)
		c->max_num_batched_tokens = (uint32_t)o->batched;
	if (o->seqs)
		c->max_num_seqs = (uint32_t)o->seqs;
	if (o->kv)
		c->kv_capacity_tokens = o->kv;
	if (is_short && o->short_max_model_len)
		c->max_model_len = (uint32_t)o->short_max_model_len;
	if (is_short && o->short_kv)
		c->kv_capacity_tokens = o->short_kv;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

int main(int argc, char **argv)
{
	struct opts o;
	const struct dbk_sim_policy_ops *pol[MAX_POLICIES];
	struct dbk_sim_run_report runs[MAX_POLICIES];
	struct dbk_engine_config *ecfg = NULL, cshort, clong;
	struct dbk_sim_config sc;
	struct dbk_sim_req *reqs = NULL;
	struct dbk_trace tr;
	struct dbk_select sel;
	struct dbk_select_stats sst;
	enum dbk_trace_format fmt;
	size_t npol = 0, len = 0, n = 0, k, first, last, n_parsed;
	unsigned i, nshort;
	char *buf, err[256];
	double in_tok = 0, span;
	int rc, ret = 1, baseline;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (pick_policies(o.policies, pol, &npol) != 0)
		return 2;
	buf = read_file(o.trace, &len);
	if (!buf) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", o.trace, strerror(errno));
		return 1;
	}
	fmt = o.format != DBK_TRACE_UNKNOWN ? o.format
	                                    : dbk_trace_detect(o.trace, buf, len);
	memset(&tr, 0, sizeof(tr));
	rc = dbk_trace_parse(fmt, buf, len, &tr, err, sizeof(err));
	free(buf);
	if (rc != 0) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", o.trace, err);
		dbk_trace_free(&tr);
		return 1;
	}
	n_parsed = tr.n;
	/* The time window; no max-model-len here: a request too long for
	 * the instance it is sent to fails there, as vLLM's 400 does. */
	memset(&sel, 0, sizeof(sel));
	sel.start_s = o.start_s;
	sel.duration_s = o.duration_s;
	dbk_trace_select(&tr, &sel, &sst);
	/* Then the count slice, shifted to start at 0 and compressed by
	 * the rate factor. */
	first = o.skip < tr.n ? o.skip : tr.n;
	last = tr.n;
	if (o.max_requests && last - first > o.max_requests)
		last = first + o.max_requests;
	n = last - first;
	if (n == 0) {
		fprintf(stderr, "dbucket-sim: no request left in the slice\n");
		dbk_trace_free(&tr);
		return 1;
	}
	reqs = calloc(n, sizeof(*reqs));
	ecfg = calloc(o.instances, sizeof(*ecfg));
	if (!reqs || !ecfg) {
		fprintf(stderr, "dbucket-sim: out of memory\n");
		goto out;
	}
	for (k = 0; k < n; k++) {
		const struct dbk_trace_req *r = &tr.req[first + k];

		reqs[k].id = (uint32_t)k;
		reqs[k].arrival_s = (r->t - tr.req[first].t) / o.rate_factor;
		reqs[k].input_tokens = r->input;
		reqs[k].output_tokens = r->output;
		reqs[k].hash_ids = r->n_hash ? tr.hash + r->hash_off : NULL;
		reqs[k].n_hash_ids = r->n_hash;
		reqs[k].session = r->session;
		reqs[k].has_session = r->has_session;
		in_tok += r->input;
	}
	span = reqs[n - 1].arrival_s;

	nshort = dbk_sim_short_count(o.instances);
	engine_cfg(&o, true, &cshort);
	engine_cfg(&o, false, &clong);
	for (i = 0; i < o.instances; i++)
		ecfg[i] = i < nshort ? cshort : clong;
	dbk_sim_config_default(&sc);
	sc.ninstances = o.instances;
	sc.engines = ecfg;
	sc.overhead_s = o.overhead_ms / 1e3;
	sc.threshold_tokens = o.threshold;
	sc.max_request_tokens = o.max_request_tokens;
	sc.json_overhead_bytes = o.json_overhead;
	sc.slo.ttft_s = o.slo_ttft_ms / 1e3;
	sc.slo.tpot_s = o.slo_tpot_ms / 1e3;
	sc.slo.e2e_s = o.slo_e2e_ms / 1e3;

	printf("dbucket-sim %s: %s (%s), %zu requests (#%zu..#%zu of %zu in "
	       "the window, %zu in the trace)%s\n", VERSION, base_name(o.trace),
	       dbk_trace_format_name(fmt), n, first, last - 1, tr.n, n_parsed,
	       tr.n_raised ? "; zero lengths raised to 1" : "");
	printf("rate factor %g: arrivals over %.1f s of model time, offered "
	       "%.2f req/s, %.0f input tok/s\n", o.rate_factor, span,
	       span > 0 ? (double)n / span : 0, span > 0 ? in_tok / span : 0);
	printf("%u x %s; short group 0..%u: max-model-len %u, kv %llu tokens",
	       o.instances, o.gpu, nshort - 1, cshort.max_model_len,
	       (unsigned long long)cshort.kv_capacity_tokens);
	if (nshort < o.instances)
		printf("; long group %u..%u: max-model-len %u, kv %llu tokens",
		       nshort, o.instances - 1, clong.max_model_len,
		       (unsigned long long)clong.kv_capacity_tokens);
	printf("; budget %u, max-num-seqs %u\n", clong.max_num_batched_tokens,
	       clong.max_num_seqs);
	printf("threshold %g tokens; SLO ttft %g ms, tpot %g ms, e2e %g ms "
	       "(0: not applied); overhead %g ms\n\n", o.threshold,
	       o.slo_ttft_ms, o.slo_tpot_ms, o.slo_e2e_ms, o.overhead_ms);
	fflush(stdout);

	for (k = 0; k < npol; k++) {
		struct dbk_sim *s;
		double t0 = wall_now();

		s = dbk_sim_new(&sc, reqs, n, pol[k], err, sizeof(err));
		if (!s) {
			fprintf(stderr, "dbucket-sim: %s: %s\n", pol[k]->name, err);
			goto out;
		}
		rc = dbk_sim_run(s, err, sizeof(err));
		if (rc == 0 && dbk_sim_result(s, &runs[k].res) != 0) {
			snprintf(err, sizeof(err), "out of memory in the metrics");
			rc = -1;
		}
		dbk_sim_free(s);
		if (rc != 0) {
			fprintf(stderr, "dbucket-sim: %s: %s\n", pol[k]->name, err);
			goto out;
		}
		runs[k].policy = pol[k]->name;
		runs[k].wall_s = wall_now() - t0;
	}
	baseline = dbk_sim_report_find(runs, npol, "lc");
	dbk_sim_report_table(stdout, runs, npol, baseline);
	printf("\n%-12s %9s %9s %8s %9s %9s\n", "policy", "preempt", "redirect",
	       "too-long", "refused", "busy %");
	for (k = 0; k < npol; k++) {
		const struct dbk_sim_result *r = &runs[k].res;

		printf("%-12s %9llu %9llu %8llu %9llu %9.1f\n", runs[k].policy,
		       (unsigned long long)r->preemptions,
		       (unsigned long long)r->redirects,
		       (unsigned long long)r->too_long,
		       (unsigned long long)r->refused,
		       r->duration_s > 0 ? 100.0 * r->busy_s /
		                           (r->duration_s * o.instances) : 0);
	}
	if (o.json) {
		cJSON *root = dbk_sim_report_json(runs, npol, baseline);
		cJSON *setup = root ? cJSON_AddObjectToObject(root, "setup") : NULL;
		char *text = NULL;
		FILE *f;

		if (setup) {
			cJSON_AddStringToObject(setup, "trace", base_name(o.trace));
			cJSON_AddStringToObject(setup, "format",
			                        dbk_trace_format_name(fmt));
			cJSON_AddNumberToObject(setup, "start_s", o.start_s);
			cJSON_AddNumberToObject(setup, "duration_s", o.duration_s);
			cJSON_AddNumberToObject(setup, "first_request", (double)first);
			cJSON_AddNumberToObject(setup, "requests", (double)n);
			cJSON_AddNumberToObject(setup, "rate_factor", o.rate_factor);
			cJSON_AddNumberToObject(setup, "arrival_span_s", span);
			cJSON_AddNumberToObject(setup, "instances", o.instances);
			cJSON_AddNumberToObject(setup, "short_instances", nshort);
			cJSON_AddStringToObject(setup, "gpu", o.gpu);
			cJSON_AddNumberToObject(setup, "short_max_model_len", cshort.max_model_len);
			cJSON_AddNumberToObject(setup, "short_kv_capacity_tokens",
			                        (double)cshort.kv_capacity_tokens);
			cJSON_AddNumberToObject(setup, "long_max_model_len", clong.max_model_len);
			cJSON_AddNumberToObject(setup, "long_kv_capacity_tokens",
			                        (double)clong.kv_capacity_tokens);
			cJSON_AddNumberToObject(setup, "max_num_batched_tokens",
			                        clong.max_num_batched_tokens);
			cJSON_AddNumberToObject(setup, "max_num_seqs", clong.max_num_seqs);
			cJSON_AddNumberToObject(setup, "threshold_tokens", o.threshold);
			cJSON_AddNumberToObject(setup, "max_request_tokens", o.max_request_tokens);
			cJSON_AddNumberToObject(setup, "json_overhead_bytes", o.json_overhead);
			cJSON_AddNumberToObject(setup, "overhead_ms", o.overhead_ms);
			cJSON_AddNumberToObject(setup, "slo_ttft_ms", o.slo_ttft_ms);
			cJSON_AddNumberToObject(setup, "slo_tpot_ms", o.slo_tpot_ms);
			cJSON_AddNumberToObject(setup, "slo_e2e_ms", o.slo_e2e_ms);
			text = cJSON_Print(root);
		}
		cJSON_Delete(root);
		if (!text) {
			fprintf(stderr, "dbucket-sim: out of memory writing JSON\n");
			goto out;
		}
		f = fopen(o.json, "w");
		rc = f ? 0 : -1;
		if (f) {
			if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
				rc = -1;
			if (fclose(f) != 0)
				rc = -1;
		}
		free(text);
		if (rc != 0) {
			fprintf(stderr, "dbucket-sim: %s: %s\n", o.json,
			        strerror(errno));
			goto out;
		}
	}
	ret = 0;
out:
	free(reqs);
	free(ecfg);
	dbk_trace_free(&tr);
	return ret;
}
