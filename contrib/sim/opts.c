/* dbucket-sim's command line; see opts.h. */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/numparse.h"
#include "sim.h"


void dbk_sim_usage(FILE *f)
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
"                                ttft, clairvoyant, cache_aware, power_of_two,\n"
"                                consistent_hash, llm_d, prefixaware, or\n"
"                                all (default)\n"
"  --lb-nodes K                  ttft: K load balancers, each sent a random\n"
"                                1/K of the arrivals, own books, shared\n"
"                                scraped numbers (default 1)\n"
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
"SLO capacity (instead of one run per policy):\n"
"  --slo-capacity                per policy, the highest rate factor at\n"
"                                which the attainment (requests done with\n"
"                                TTFT and TPOT within --slo-ttft-ms and\n"
"                                --slo-tpot-ms, over all requests) is at\n"
"                                least --slo-attainment; bisection from\n"
"                                --rate-factor, doubling or halving (not\n"
"                                below 1/64 of it) until bracketed;\n"
"                                reported as a ratio to lc's\n"
"  --slo-attainment X            target fraction (default 0.90;\n"
"                                BENCHMARKS.md uses 0.85 for Mooncake)\n"
"  --slo-tolerance X             stop when hi / lo - 1 <= X (0.02)\n"
"  --slo-max-evals N             simulations per policy at most (16)\n"
"  --help, --version\n"
"\n"
"Policies: rr round robin; lc fewest requests in flight; plain and\n"
"dynamic the agent's balancer (agent/balancer.c) without and with\n"
"--enable-dynamic-bucket; clairvoyant knows output lengths and engine\n"
"queues and prefix caches and picks the earliest predicted first token\n"
"among instances whose KV cache holds the request beside all committed\n"
"there.\n"
"The peers, with their default parameters (contrib/sim/README.md):\n"
"cache_aware SGLang gateway / vLLM Router prefix tree with balance\n"
"thresholds; power_of_two two random, lower load polled every 5 s;\n"
"consistent_hash ring on the session key; llm_d queue, KV-utilisation\n"
"and prefix-cache scorers (2/2/3) on metrics scraped every 50 ms;\n"
"prefixaware (production-stack) random among the instances holding the\n"
"longest prefix.\n"
"Latencies are model time, as vLLM's benchmark client defines them.\n");
}

enum {
	O_TRACE = 256, O_FORMAT, O_START, O_DURATION, O_SKIP, O_MAXREQ, O_RATE, O_INST, O_GPU,
	O_MML, O_BATCHED, O_SEQS, O_KV, O_SMML, O_SKV, O_DEMO, O_NO_PC, O_OVERHEAD,
	O_POLICY, O_THRESH, O_MAXTOK, O_JSONOV, O_SLO_TTFT, O_SLO_TPOT,
	O_SLO_E2E, O_JSON, O_HELP, O_VERSION, O_SLO_CAP, O_SLO_ATT, O_SLO_TOL,
	O_SLO_EVALS, O_LB_NODES,
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
	{ "slo-capacity", no_argument, NULL, O_SLO_CAP },
	{ "slo-attainment", required_argument, NULL, O_SLO_ATT },
	{ "slo-tolerance", required_argument, NULL, O_SLO_TOL },
	{ "slo-max-evals", required_argument, NULL, O_SLO_EVALS },
	{ "lb-nodes", required_argument, NULL, O_LB_NODES },
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

/* Trace and cluster options; -1 when c is not one of them. */
static int trace_cluster_opt(int c, struct opts *o)
{
	unsigned long u;

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
	case O_LB_NODES:
		if (parse_ulong(optarg, 1, 255, &o->lb_nodes))
			return bad("--lb-nodes wants an integer in 1..255", optarg);
		break;
	default:
		return -1;
	}
	return 0;
}

/* Routing, report and SLO-capacity options; -1 when c is not one of
 * them. */
static int routing_report_opt(int c, struct opts *o)
{
	unsigned long u;

	switch (c) {
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
	case O_SLO_CAP: o->slo_capacity = true; break;
	case O_SLO_ATT:
		if (!dbk_parse_double(optarg, 0.01, 1, &o->search.target))
			return bad("--slo-attainment wants a fraction in 0.01..1", optarg);
		break;
	case O_SLO_TOL:
		if (!dbk_parse_double(optarg, 1e-4, 1, &o->search.rel_tol))
			return bad("--slo-tolerance wants a number in 0.0001..1", optarg);
		break;
	case O_SLO_EVALS:
		if (parse_ulong(optarg, 2, 100, &u))
			return bad("--slo-max-evals wants 2..100", optarg);
		o->search.max_evals = (unsigned)u;
		break;
	default:
		return -1;
	}
	return 0;
}

int dbk_sim_parse_opts(int argc, char **argv, struct opts *o)
{
	int c, rc;

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
	dbk_slo_search_default(&o->search);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case O_HELP: dbk_sim_usage(stdout); exit(0);
		case O_VERSION: printf("dbucket-sim %s\n", DBK_SIM_VERSION); exit(0);
		default:
			rc = trace_cluster_opt(c, o);
			if (rc < 0)
				rc = routing_report_opt(c, o);
			if (rc < 0) {
				fprintf(stderr, "Try 'dbucket-sim --help'.\n");
				return 2;
			}
			if (rc)
				return rc;
		}
	}
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (!o->trace) {
		fprintf(stderr, "dbucket-sim: --trace FILE is required\n"
		        "Try 'dbucket-sim --help'.\n");
		return 2;
	}
	o->search.start = o->rate_factor;
	if (o->slo_capacity && o->slo_ttft_ms == 0 && o->slo_tpot_ms == 0 &&
	    o->slo_e2e_ms == 0) {
		fprintf(stderr, "dbucket-sim: --slo-capacity needs an objective\n");
		return 2;
	}
	if (o->threshold >= o->max_request_tokens) {
		fprintf(stderr, "dbucket-sim: --server-group-threshold must be "
		        "below --max-request-tokens\n");
		return 2;
	}
	return 0;
}

