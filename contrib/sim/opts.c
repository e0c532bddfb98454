/* dbucket-sim's command line; see opts.h. */
#include "opts.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "lib/cli.h"
#include "policy.h"
#include "policy_ops.h"
#include "predict.h"
#include "sim.h"
#include "model/engine.h"
#include "lib/log.h"
#include "lib/bounds.h"
#include "lib/version.h"

/* In enum dbk_trace_format's order: the choice's index is the format. */
static const char *const formats[] = { "auto", "mooncake", "azure", NULL };

/* Everything the table does not hold on its own: what is left after
 * the table has written every value. */
struct extra {
	int format, max_evals;
	bool demo, help, version;
	const char *log_level;
};

#define NOPTS 70
/* The agent's default, as the help text quotes it. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define STALL_WEIGHT STR(DBK_PRED_STALL_WEIGHT)
#define MML_MAX DBK_ENGINE_MAX_MODEL_LEN_LIMIT
#define TOKENS_MAX 1099511627776.0 /* 2^40 */
#define LORA_LOAD_MS "50"          /* DBK_ENGINE_LORA_LOAD_S */

/* The options in --help order, each section's heading on its first. */
/* --policy's help: every name in the table (policy.h), in its order,
 * on lines of at most 42 characters. */
static const char *policy_list(void)
{
	static char text[1024];
	const struct dbk_sim_policy_ops *p;
	size_t n = 0, line = 0;

	if (text[0])
		return text;
	n = (size_t)snprintf(text, sizeof(text), "comma-separated");
	line = n;
	for (size_t i = 0; (p = dbk_sim_policy_at(i)) != NULL && n < sizeof(text); i++) {
		size_t w = strlen(p->name) + 2;
		bool wrap = line + w > 42;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s,", wrap ? "\n" : " ",
		                      p->name);
		line = wrap ? w - 1 : line + w;
	}
	if (n < sizeof(text))
		snprintf(text + n, sizeof(text) - n, "%sor all (default)",
		         line + 17 > 42 ? "\n" : " ");
	return text;
}

/* A count N: a whole number, strictly (no suffix, no fraction). */
#define COUNT_N(name, ptr, lo, hi, text)                                                     \
	{                                                                                    \
		name, 0, DBK_OPT_SIZE, ptr, lo, hi, .flags = DBK_OPT_STRICT, .metavar = "N", \
		                                    .help = text                             \
	}

/* The options of a fleet that changes (schedule.h), --help's section
 * of them, into t[0..NFLEET_OPTS). */
#define NFLEET_OPTS 13
static void fleet_table(struct dbk_sim_opts *o, struct dbk_opt *t)
{
	const struct dbk_opt opts[] = {
		{ "scale", 0, DBK_OPT_STR, &o->scale_text, .metavar = "T:N,...",
		  .help = "instances present from model second T\n"
		          "(from the first arrival) on: slots 0..N-1,\n"
		          "first T 0; sets --instances to the\n"
		          "largest N. Leaving: drains; joining\n"
		          "empty: a new engine, cold prefix cache",
		  .section = "A fleet that changes (default: none):" },
		{ "ramp", 0, DBK_OPT_STR, &o->ramp_text, .metavar = "T:X,...",
		  .help = "from model second T on, arrivals X times\n"
		          "as fast as --rate-factor's (first T 0)" },
		{ "warmup-s", 0, DBK_OPT_DOUBLE, &o->warmup_s, 0, 1e9, .metavar = "S",
		  .help = "a new instance's steps are slower for\nits first S seconds (default "
		          "0)" },
		{ "warmup-factor", 0, DBK_OPT_DOUBLE, &o->warmup_factor, 1, 1000, .metavar = "X",
		  .help = "how much slower (default 2)" },
		{ "fail-instance", 0, DBK_OPT_INT, &o->fail_instance, 0, DBK_MAX_SERVERS - 1,
		  .flags = DBK_OPT_STRICT, .metavar = "I",
		  .help = "instance I answers HTTP 500 at once, no\n"
		          "token, its /metrics and health fine" },
		{ "fail-from-s", 0, DBK_OPT_DOUBLE, &o->fail_from_s, 0, 1e12, .metavar = "S",
		  .help = "from model second S on (default 0)" },
		{ "fail-share", 0, DBK_OPT_DOUBLE, &o->fail_share, 1e-6, 1, .metavar = "X",
		  .help = "that share of its requests (default 1)" },
		{ "slow-instance", 0, DBK_OPT_INT, &o->slow_instance, 0, DBK_MAX_SERVERS - 1,
		  .flags = DBK_OPT_STRICT, .metavar = "I",
		  .help = "instance I fails slow: its steps take\n"
		          "--slow-factor times as long, it answers" },
		{ "slow-from-s", 0, DBK_OPT_DOUBLE, &o->slow_from_s, 0, 1e12, .metavar = "S",
		  .help = "from model second S (default 0)" },
		{ "slow-until-s", 0, DBK_OPT_DOUBLE, &o->slow_until_s, 0, 1e12, .metavar = "R",
		  .help = "until R (default: for ever)" },
		{ "slow-factor", 0, DBK_OPT_DOUBLE, &o->slow_factor, 1, 1000, .metavar = "X",
		  .help = "how much slower (default 2)" },
		{ "observe-l7", 0, DBK_OPT_FLAG, &o->observe_l7,
		  .help = "HAProxy's observe layer7, error-limit 10,\n"
		          "on-error mark-down for every policy: 10\n"
		          "5xx in a row take an instance out until\n"
		          "its health check (rise 2, inter 2 s)\n"
		          "brings it back 4 s later" },
		{ "weights", 0, DBK_OPT_STR, &o->weights_text, .metavar = "LIST",
		  .help = "operator weights 1..256 given to the\n"
		          "instances in turn (10,3); the wlc policy\n"
		          "(HAProxy's leastconn) reads them" },
	};

	_Static_assert(sizeof(opts) / sizeof(opts[0]) == NFLEET_OPTS, "NFLEET_OPTS is its size");
	memcpy(t, opts, sizeof(opts));
}

static void table(struct dbk_sim_opts *o, struct extra *x, struct dbk_opt *t)
{
	const struct dbk_opt opts[] = {
		{ "trace", 0, DBK_OPT_STR, &o->slice.path, .metavar = "FILE",
		  .help = "Mooncake JSONL or Azure CSV (required)", .section = "Trace:" },
		{ "format", 0, DBK_OPT_CHOICE, &x->format, .choices = formats,
		  .metavar = "auto|mooncake|azure",
		  .help = "(default auto: by extension, then content)" },
		{ "start-s", 0, DBK_OPT_DOUBLE, &o->slice.start_s, 0, 1e12, .metavar = "S",
		  .help = "skip the first S seconds of trace time" },
		{ "duration-s", 0, DBK_OPT_DOUBLE, &o->slice.duration_s, 0, 1e12, .metavar = "D",
		  .help = "keep D seconds of trace time (default all)" },
		COUNT_N("skip", &o->skip, 0, UINT32_MAX,
		        "then drop the first N requests (default 0)"),
		COUNT_N("max-requests", &o->slice.max_requests, 1, UINT32_MAX - 1,
		        "then keep at most N (default all)"),
		{ "rate-factor", 0, DBK_OPT_DOUBLE, &o->slice.rate_factor, 1e-6, 1e9,
		  .metavar = "F", .help = "arrivals F times faster: trace time / F\n(default 1)" },
		{ "spread-ticks", 0, DBK_OPT_FLAG, &o->slice.spread_ticks,
		  .help = "requests that share an arrival time (a\n"
		          "trace recorded in ticks: Mooncake's ~3 s)\n"
		          "arrive at uniform random times, seeded,\n"
		          "before the next tick, in order (default:\n"
		          "as recorded)" },
		{ "instances", 0, DBK_OPT_INT, &o->instances, 1, DBK_MAX_SERVERS,
		  .flags = DBK_OPT_STRICT, .metavar = "N",
		  .help = "vLLM instances (default 4); the first\nceil(N/2) form the short group",
		  .section = "Cluster:" },
		{ "gpu", 0, DBK_OPT_STR, &o->gpu, .metavar = "LIST",
		  .help = "step-time profile and defaults: h100\n"
		          "(default) or a100, or a comma-separated\n"
		          "list given to the instances in turn\n"
		          "(h100,a100: every other one an A100)" },
		COUNT_N("max-model-len", &o->max_model_len, 2, MML_MAX,
		        "every instance (default 131072)"),
		COUNT_N("max-num-batched-tokens", &o->batched, 1, MML_MAX,
		        "step token budget (default 8192 h100,\n2048 a100); the ttft policy is "
		        "told it,\nas the agent's --max-num-batched-tokens"),
		COUNT_N("max-num-seqs", &o->seqs, 1, DBK_ENGINE_MAX_SEQS_LIMIT,
		        "(default 1024 h100, 256 a100)"),
		COUNT_N("kv-capacity-tokens", &o->kv, 16, TOKENS_MAX,
		        "KV cache per instance (default 430000)"),
		COUNT_N("short-max-model-len", &o->short_max_model_len, 2, MML_MAX,
		        "the short group's max-model-len"),
		COUNT_N("short-kv-capacity-tokens", &o->short_kv, 16, TOKENS_MAX,
		        "the short group's KV cache"),
		{ "demo-profile", 0, DBK_OPT_FLAG, &x->demo,
		  .help = "short group 32768 / 120000, as make demo\n"
		          "(the two options above win over it)" },
		{ "no-prefix-caching", 0, DBK_OPT_FLAG, &o->no_prefix_caching,
		  .help = "as vLLM's flag (caching is on by default)" },
		{ "overhead-ms", 0, DBK_OPT_DOUBLE, &o->overhead_ms, 0, 1e7, .metavar = "X",
		  .help = "constant delay from decision to engine\n"
		          "(the live path: HAProxy, agent; default 0)" },
		{ "scrape-flight-ms", 0, DBK_OPT_DOUBLE, &o->scrape_flight_ms, 0, 1e7,
		  .metavar = "X",
		  .help = "a scrape's answer comes back X ms after\n"
		          "the numbers it holds (the agent's\n"
		          "policies; below their 100 ms interval;\n"
		          "default 0)" },
		{ "policy", 0, DBK_OPT_STR, &o->policies, .metavar = "LIST", .help = policy_list(),
		  .section = "Routing:" },
		{ "lb-nodes", 0, DBK_OPT_INT, &o->lb_nodes, 1, 255, .flags = DBK_OPT_STRICT,
		  .metavar = "K",
		  .help = "the agent's policies (ttft, ...): K load\n"
		          "balancers, each sent a random 1/K of the\n"
		          "arrivals, own books, shared scraped\n"
		          "numbers (default 1); lc_per_node: K\n"
		          "HAProxy nodes' leastconn, each counting\n"
		          "its own connections (lc is one node's)" },
		{ "lb-sticky", 0, DBK_OPT_FLAG, &o->lb_sticky,
		  .help = "with --lb-nodes: a conversation's requests\n"
		          "all reach one balancer (an L4 balancer\n"
		          "hashing the client), the others at random" },
		{ "lb-share-ms", 0, DBK_OPT_DOUBLE, &o->lb_share_ms, 0, 1e7, .metavar = "T",
		  .help = "with --lb-nodes: every balancer is charged\n"
		          "with the others' requests T ms after they\n"
		          "are sent and ended T ms after they end\n"
		          "(books shared with a delay, as a replicated\n"
		          "table would; default not shared)" },
		{ "lb-share-books", 0, DBK_OPT_FLAG, &o->lb_share_books,
		  .help = "with --lb-share-ms: share the load only,\n"
		          "not where each prompt went (the others'\n"
		          "requests charged without their prefix)" },
		{ "lb-share-sessions", 0, DBK_OPT_FLAG, &o->lb_share_sessions,
		  .help = "with --lb-share-ms: where each session's\n"
		          "last request went and its prompt length,\n"
		          "learnt T ms later (HAProxy's session\n"
		          "table); the books too with --lb-share-books,\n"
		          "else the table alone" },
		{ "stall-weight", 0, DBK_OPT_DOUBLE, &o->stall_weight, 0, 1e6, .metavar = "W",
		  .help = "ttft: first-token seconds worth one second\n"
		          "of one decoding request stalled by a long\n"
		          "prefill (0: the earliest first token alone;\n"
		          "default the agent's, " STALL_WEIGHT ")" },
		{ "engine-speed", 0, DBK_OPT_DOUBLE, &o->engine_speed, 0.001, 1000, .metavar = "X",
		  .help = "the agent's --engine-speed: the predictor's\n"
		          "engine model X times as fast (default 1,\n"
		          "the simulator's h100; its a100 is about\n"
		          "0.4)" },
		{ "server-group-threshold", 0, DBK_OPT_DOUBLE, &o->threshold, 1, TOKENS_MAX,
		  .metavar = "N",
		  .help = "tokens where long starts (default 32768):\n"
		          "the balancer's buckets and the report's\nshort/long classes" },
		{ "max-request-tokens", 0, DBK_OPT_DOUBLE, &o->max_request_tokens, 1, TOKENS_MAX,
		  .metavar = "N", .help = "upper bound of the long bucket (131072)" },
		{ "json-overhead-bytes", 0, DBK_OPT_DOUBLE, &o->json_overhead, 0, 1e9,
		  .metavar = "N",
		  .help = "body bytes besides the prompt's 4 per\n"
		          "token, as the agent sees them (120)" },
		{ "classes", 0, DBK_OPT_STR, &o->classes_text, .metavar = "C,S,B",
		  .help = "priority classes, shares 1..256 each:\n"
		          "critical, standard, sheddable; sheddable\n"
		          "the longest prompts, the others a seeded\n"
		          "draw (default: every request standard)",
		  .section = "Overload:" },
		{ "classes-drawn", 0, DBK_OPT_FLAG, &o->classes_drawn,
		  .help = "with --classes: sheddable drawn like the\n"
		          "others, whatever the prompt's length (the\n"
		          "live bench's --priority-mix)" },
		{ "admission", 0, DBK_OPT_FLAG, &o->admission,
		  .help = "the agent's admission (agent/admission.c):\n"
		          "a predicting policy sheds a request late\n"
		          "by its wait, or past its class's share of\n"
		          "--slo-ttft-ms while a class above is at\n"
		          "risk; the others shed sheddable\n"
		          "requests when the fleet is saturated\n"
		          "(GIE's detector: mean of max(waiting/5,\n"
		          "KV/0.8) >= 1) or its last second's mean\n"
		          "TTFT is past half the objective, standard\n"
		          "ones past all of it; critical never" },
		{ "admit-share-standard", 0, DBK_OPT_DOUBLE, &o->admit_share[DBK_CLASS_STANDARD], 0,
		  100, .metavar = "X",
		  .help = "with --admission: the share of the TTFT\n"
		          "objective a standard request may take\n"
		          "while critical is at risk, and may wait\n"
		          "when late (default the agent's)" },
		{ "admit-share-sheddable", 0, DBK_OPT_DOUBLE, &o->admit_share[DBK_CLASS_SHEDDABLE],
		  0, 100, .metavar = "X", .help = "the same for a sheddable request" },
		{ "admit-tpot", 0, DBK_OPT_MS, &o->admit_tpot_ms, 1, 3600 * 1000, .metavar = "TIME",
		  .help = "with --admission: the TPOT objective of its\n"
		          "TPOT risk (default the agent's, 100 ms;\n"
		          "routing's and --slo-tpot-ms unchanged)" },
		{ "shed-retry", 0, DBK_OPT_FLAG, &o->shed_retry,
		  .help = "a shed request's client sends it again\n"
		          "once, after its Retry-After" },
		{ "shed-retry-sdk", 0, DBK_OPT_FLAG, &o->shed_retry_sdk,
		  .help = "a shed request's client retries as the openai\n"
		          "SDKs do: twice at most, after the Retry-After\n"
		          "when 1-60 s, else after a backoff of 0.5 s\n"
		          "doubling (jittered)" },
		{ "admit-queue-s", 0, DBK_OPT_DOUBLE, &o->admit_queue_s, 0, 60, .metavar = "S",
		  .help = "a request admission would shed is held at\n"
		          "the balancer instead, decided again, class\n"
		          "by class, oldest first, as requests end and\n"
		          "every 0.1 s, for up to S seconds; then shed\n"
		          "(a study of a \"queue\" verdict; default 0:\n"
		          "off)" },
		{ "admit-queue-in-time", 0, DBK_OPT_FLAG, &o->admit_queue_in_time,
		  .help = "with --admit-queue-s: a held request is let\n"
		          "in only while its predicted first token,\n"
		          "counting its wait, is within --slo-ttft-ms" },
		{ "models", 0, DBK_OPT_STR, &o->models_text, .metavar = "W,W,...",
		  .help = "base models sharing the fleet, traffic\n"
		          "shares 1..256 each; the instances given\n"
		          "to them in proportion (at least one\n"
		          "each, interleaved), a conversation's\n"
		          "model a seeded draw; every policy chooses\n"
		          "among its model's instances only\n"
		          "(default: one model)",
		  .section = "Several models and LoRA adapters:" },
		COUNT_N("adapters", &o->nadapters, 0, DBK_SIM_MAX_ADAPTERS,
		        "with --models: LoRA adapters 1..N,\n"
		        "adapter a of model (a - 1) % M, Zipf\n"
		        "popularity (exponent 1) within a model\n"
		        "(default 0)"),
		{ "adapter-share", 0, DBK_OPT_DOUBLE, &o->models.adapter_share, 0, 1,
		  .metavar = "X",
		  .help = "conversations that use an adapter of\n"
		          "their model (default 0.5)" },
		COUNT_N("max-loras", &o->max_loras, 1, DBK_ENGINE_MAX_LORAS_LIMIT,
		        "with --adapters: every engine's\n"
		        "--max-loras GPU slots (default 4)"),
		{ "lora-load-ms", 0, DBK_OPT_DOUBLE, &o->lora_load_ms, 0, 1e6, .metavar = "X",
		  .help = "with --adapters: what reading an adapter\n"
		          "not in an engine's CPU cache adds to its\n"
		          "step (default the engine model's, " LORA_LOAD_MS ")" },
	};
	const struct dbk_opt tail[] = {
		{ "slo-ttft-ms", 0, DBK_OPT_DOUBLE, &o->slo_ttft_ms, 0, 1e12, .metavar = "X",
		  .help = "goodput objectives; 0 = not applied", .section = "Report:" },
		{ "slo-tpot-ms", 0, DBK_OPT_DOUBLE, &o->slo_tpot_ms, 0, 1e12, .metavar = "X",
		  .help = "(defaults: TTFT 2000, TPOT 100, E2E 0)" },
		{ "slo-e2e-ms", 0, DBK_OPT_DOUBLE, &o->slo_e2e_ms, 0, 1e12, .metavar = "X" },
		{ "json", 0, DBK_OPT_STR, &o->json, .metavar = "FILE",
		  .help = "also write every metric as JSON" },
		{ "slo-capacity", 0, DBK_OPT_FLAG, &o->slo_capacity,
		  .help = "per policy, the highest rate factor at\n"
		          "which the attainment (requests done with\n"
		          "TTFT and TPOT within --slo-ttft-ms and\n"
		          "--slo-tpot-ms, over all requests) is at\n"
		          "least --slo-attainment; bisection from\n"
		          "--rate-factor, doubling or halving (not\n"
		          "below 1/64 of it) until bracketed;\n"
		          "reported as a ratio to lc's",
		  .section = "SLO capacity (instead of one run per policy):" },
		{ "slo-attainment", 0, DBK_OPT_DOUBLE, &o->search.target, 0.01, 1, .metavar = "X",
		  .help = "target fraction (default 0.90;\n"
		          "BENCHMARKS.md uses 0.85 for Mooncake)" },
		{ "slo-tolerance", 0, DBK_OPT_DOUBLE, &o->search.rel_tol, 1e-4, 1, .metavar = "X",
		  .help = "stop when hi / lo - 1 <= X (0.02)" },
		{ "slo-max-evals", 0, DBK_OPT_INT, &x->max_evals, 2, 100, .flags = DBK_OPT_STRICT,
		  .metavar = "N", .help = "simulations per policy at most (16)" },
		{ "log-level", 0, DBK_OPT_STR, &x->log_level, .metavar = "LEVEL",
		  .help = "debug, info (default), warn or error;\n"
		          "debug logs what the agent's policies\n"
		          "learn of each instance's speed (event\n"
		          "learn) and, after each run, what each\n"
		          "instance was sent and served (event\n"
		          "instance), on stderr" },
		{ "help", 0, DBK_OPT_FLAG, &x->help, .help = "this text" },
		{ "version", 0, DBK_OPT_FLAG, &x->version, .help = "the version" },
		{ .name = NULL },
	};
	const size_t nhead = sizeof(opts) / sizeof(opts[0]), ntail = sizeof(tail) / sizeof(tail[0]);

	_Static_assert(sizeof(opts) / sizeof(opts[0]) + NFLEET_OPTS +
	                               sizeof(tail) / sizeof(tail[0]) ==
	                       NOPTS + 1,
	               "NOPTS is the table's size");
	memcpy(t, opts, sizeof(opts));
	fleet_table(o, t + nhead);
	memcpy(t + nhead + NFLEET_OPTS, tail, ntail * sizeof(tail[0]));
}

static const char *const intro =
        "Usage: dbucket-sim --trace FILE [options]\n"
        "Replays a Mooncake or Azure trace against N simulated vLLM instances\n"
        "(agent/model/engine.c) routed by each policy, in model time, and prints\n"
        "one row per policy with ratios to least connections.\n";

static const char *const policies_text =
        "Policies: rr round robin; lc fewest requests in flight; plain and\n"
        "dynamic the agent's balancer (agent/balancer.c) without and with\n"
        "--enable-dynamic-bucket; clairvoyant knows output lengths and engine\n"
        "queues and prefix caches and picks the earliest predicted first token\n"
        "among instances whose KV cache holds the request beside all committed\n"
        "there.\n"
        "The peers, with their default parameters (contrib/sim/README.md):\n"
        "cache_aware SGLang gateway / vLLM Router prefix tree with balance\n"
        "thresholds, below the match threshold the least loaded\n"
        "(cache_aware_legacy: the smallest tree); power_of_two as the vLLM\n"
        "Router runs against vLLM, a random choice (power_of_two_informed: of\n"
        "two random, the lower load polled every 30 s plus its own in flight);\n"
        "consistent_hash ring on the session key (consistent_hash_seed1..3:\n"
        "other ring layouts, by name only, not in all); llm_d queue,\n"
        "KV-utilisation and prefix-cache scorers (2/2/3) on metrics scraped\n"
        "every 50 ms, each pod at its own phase (llm_d_active: with the\n"
        "active-request scorer, weight 2; llm_d_lora, by name only: with the\n"
        "GIE's LoRA affinity scorer on scraped vllm:lora_requests_info, weight 2);\n"
        "llm_d_latency llm-d's predicted-latency profile: an online regression\n"
        "of each pod's TTFT and TPOT, the pods within the SLOs, weighted\n"
        "towards the least headroom (llm_d_latency_most, by name only: the\n"
        "most headroom);\n"
        "prefixaware (production-stack) random among the instances holding the\n"
        "longest prefix; wlc HAProxy's leastconn with the servers' weights\n"
        "(--weights; in all only with them).\n"
        "Latencies are model time, as vLLM's benchmark client defines them.\n";

static void usage(FILE *f, const struct dbk_opt *t)
{
	const struct dbk_sim_policy_ops *p;

	fprintf(f, "%s\n", intro);
	dbk_cli_usage(f, t);
	fprintf(f, "\n%s", policies_text);
	fprintf(f, "The agent's own, as dbucket-spoa --policy NAME runs them:\n");
	for (size_t i = 0; (p = dbk_sim_policy_agent(i)) != NULL; i++) {
		const struct dbk_policy_ops *a = p->arg;

		/* Its --help words, rewrapped at 72 columns. */
		size_t col = (size_t)fprintf(f, "%s", a->name);
		for (const char *w = a->help; *w;) {
			size_t len = strcspn(w, " \n");
			bool wrap = col + 1 + len > 72;
			col = wrap ? len : col + 1 + len;
			fprintf(f, "%s%.*s", wrap ? "\n" : " ", (int)len, w);
			w += len + (w[len] != '\0');
		}
		fprintf(f, ".\n");
	}
}

/* --scale, --ramp, --weights and the failing instance: parsed and
 * checked against each other. 0, or -1 with the reason in err. */
static int fleet_opts(struct dbk_sim_opts *o, char *err, size_t errlen)
{
	char why[200];

	if (o->scale_text) {
		if (dbk_sim_steps_parse(o->scale_text, 1, DBK_MAX_SERVERS, 1, o->scale,
		                        DBK_SIM_MAX_STEPS, &o->nscale, why, sizeof(why)) != 0) {
			dbk_errf(err, errlen, "--scale: %s", why);
			return -1;
		}
		o->instances = 1;
		for (size_t k = 0; k < o->nscale; k++)
			if (o->scale[k].v > o->instances)
				o->instances = (int)o->scale[k].v;
	}
	if (o->ramp_text &&
	    dbk_sim_steps_parse(o->ramp_text, 1e-3, 1e3, 0, o->ramp, DBK_SIM_MAX_STEPS, &o->nramp,
	                        why, sizeof(why)) != 0) {
		dbk_errf(err, errlen, "--ramp: %s", why);
		return -1;
	}
	if (o->weights_text && dbk_sim_weights_parse(o->weights_text, o->weights, DBK_MAX_SERVERS,
	                                             &o->nweights, why, sizeof(why)) != 0) {
		dbk_errf(err, errlen, "--weights: %s", why);
		return -1;
	}
	if (o->classes_text) {
		if (dbk_sim_weights_parse(o->classes_text, o->class_share, DBK_CLASS_N,
		                          &o->nclasses, why, sizeof(why)) != 0) {
			dbk_errf(err, errlen, "--classes: %s", why);
			return -1;
		}
		if (o->nclasses != DBK_CLASS_N) {
			dbk_errf(err, errlen, "--classes: three shares, C,S,B");
			return -1;
		}
	}
	if (o->models_text) {
		size_t nm;

		if (dbk_sim_weights_parse(o->models_text, o->models.share, DBK_SIM_MAX_MODELS, &nm,
		                          why, sizeof(why)) != 0) {
			dbk_errf(err, errlen, "--models: %s", why);
			return -1;
		}
		o->models.nmodels = (unsigned)nm;
		if (nm > (size_t)o->instances) {
			dbk_errf(err, errlen, "--models: %zu models, %d instances", nm,
			         o->instances);
			return -1;
		}
	}
	if (o->nadapters && !o->models_text) {
		dbk_errf(err, errlen, "--adapters needs --models");
		return -1;
	}
	o->models.nadapters = (unsigned)o->nadapters;
	if (o->slow_instance >= o->instances) {
		dbk_errf(err, errlen, "--slow-instance: %d is not one of the %d instances",
		         o->slow_instance, o->instances);
		return -1;
	}
	if (o->fail_instance >= o->instances) {
		dbk_errf(err, errlen, "--fail-instance: %d is not one of the %d instances",
		         o->fail_instance, o->instances);
		return -1;
	}
	return 0;
}

/* Prints msg; returns 1 (exit at once: the status is already 2). */
static int usage_error(const char *msg)
{
	fprintf(stderr, "dbucket-sim: %s\nTry 'dbucket-sim --help'.\n", msg);
	return 1;
}

static void defaults(struct dbk_sim_opts *o, struct extra *x)
{
	memset(o, 0, sizeof(*o));
	memset(x, 0, sizeof(*x));
	o->slice.rate_factor = 1;
	o->instances = 4;
	o->threshold = 32768;
	o->max_request_tokens = 131072;
	o->json_overhead = DBK_SIM_JSON_OVERHEAD_BYTES;
	o->slo_ttft_ms = 2000;
	o->slo_tpot_ms = 100;
	o->policies = "all";
	o->gpu = "h100";
	o->stall_weight = -1;
	o->engine_speed = 1;
	o->lb_share_ms = -1;
	o->warmup_factor = 2;
	o->fail_instance = -1;
	o->fail_share = 1;
	o->slow_instance = -1;
	o->slow_until_s = HUGE_VAL;
	o->slow_factor = 2;
	o->models.adapter_share = 0.5;
	o->models.seed = DBK_SIM_MODELS_SEED;
	o->max_loras = 4;
	o->lora_load_ms = -1;
	o->admit_share[DBK_CLASS_STANDARD] = o->admit_share[DBK_CLASS_SHEDDABLE] = -1;
	o->admit_tpot_ms = DBK_ADMIT_DEFAULT_TPOT_MS;
	dbk_slo_search_default(&o->search);
	x->max_evals = (int)o->search.max_evals;
}

int dbk_sim_opts_parse(int argc, char **argv, struct dbk_sim_opts *o, int *status)
{
	struct dbk_opt t[NOPTS + 1];
	struct extra x;
	char err[256];
	int first;

	defaults(o, &x);
	table(o, &x, t);
	*status = 2;
	if (dbk_cli_parse(t, argc, argv, NULL, &first, err, sizeof(err)) != 0)
		return usage_error(err);
	if (x.help || x.version) {
		if (x.help)
			usage(stdout, t);
		else
			printf("dbucket-sim %s\n", DBK_VERSION);
		*status = 0;
		return 1;
	}
	if (first < argc) {
		dbk_errf(err, sizeof(err), "unexpected argument '%s'", argv[first]);
		return usage_error(err);
	}
	if (x.log_level) {
		int lvl = dbk_log_level_parse(x.log_level);
		if (lvl < 0)
			return usage_error("--log-level: debug, info, warn or error");
		dbk_log_set_level((enum dbk_log_level)lvl);
	}
	if (!o->slice.path)
		return usage_error("--trace FILE is required");
	o->slice.format = (enum dbk_trace_format)x.format;
	for (unsigned i = 0; i < dbk_sim_gpu_count(o->gpu); i++)
		if (!dbk_sim_gpu_at(o->gpu, i)) {
			dbk_errf(err, sizeof(err), "--gpu: '%s' names other than h100 and a100",
			         o->gpu);
			return usage_error(err);
		}
	if (fleet_opts(o, err, sizeof(err)) != 0)
		return usage_error(err);
	o->search.max_evals = (unsigned)x.max_evals;
	o->search.start = o->slice.rate_factor;
	if (x.demo) { /* contrib/demo.sh's short stubs */
		if (!o->short_max_model_len)
			o->short_max_model_len = 32768;
		if (!o->short_kv)
			o->short_kv = 120000;
	}
	if (o->slo_capacity && o->slo_ttft_ms == 0 && o->slo_tpot_ms == 0 && o->slo_e2e_ms == 0) {
		fprintf(stderr, "dbucket-sim: --slo-capacity needs an objective\n");
		return 1;
	}
	if (o->lb_share_books && o->lb_share_ms < 0) {
		fprintf(stderr, "dbucket-sim: --lb-share-books needs --lb-share-ms\n");
		return 1;
	}
	if (o->lb_share_sessions && o->lb_share_ms < 0) {
		fprintf(stderr, "dbucket-sim: --lb-share-sessions needs --lb-share-ms\n");
		return 1;
	}
	if (o->lb_share_ms >= 0 && o->lb_nodes < 2) {
		fprintf(stderr, "dbucket-sim: --lb-share-ms needs --lb-nodes 2 or more\n");
		return 1;
	}
	if (o->lb_sticky && o->lb_nodes < 2) {
		fprintf(stderr, "dbucket-sim: --lb-sticky needs --lb-nodes 2 or more\n");
		return 1;
	}
	if (o->threshold >= o->max_request_tokens) {
		fprintf(stderr, "dbucket-sim: --server-group-threshold must be "
		                "below --max-request-tokens\n");
		return 1;
	}
	return 0;
}
