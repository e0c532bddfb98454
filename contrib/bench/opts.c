/* dbucket-bench's command line, on lib/cli: one table per help section,
 * so the parser, its errors and --help come from the same lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "lib/cli.h"
#include "lib/log.h"
#include "lib/numparse.h"
#include "lib/version.h"

/* What the tables write before it is checked and converted. */
struct raw {
	struct dbk_bench_opts *o;
	int format, endpoint, overlong; /* choice indexes, -1 not given */
	long long seed;
	double slo_ms[3]; /* ttft, tpot, e2e */
	bool help, version;
};

static const char *const FORMATS[] = { "mooncake", "azure", NULL };
static const char *const ENDPOINTS[] = { "completions", "chat", NULL };
static const char *const OVERLONG[] = { "clip", "skip", NULL };

static int set_rate(void *ctx, const char *v, char *err, size_t errlen)
{
	struct raw *r = ctx;

	if (strcmp(v, "inf") == 0) {
		r->o->rate = INFINITY;
		return 0;
	}
	if (dbk_parse_double(v, 1e-9, 1e9, &r->o->rate))
		return 0;
	dbk_errf(err, errlen,
	         "--rate wants requests per second > 0 or "
	         "'inf', not '%s'",
	         v);
	return -1;
}

/* --node I/K: this process is node I of K (1-based). */
static int set_node(void *ctx, const char *v, char *err, size_t errlen)
{
	struct raw *r = ctx;
	const char *slash = strchr(v, '/');
	unsigned long long i, k;
	char head[24];

	if (slash && (size_t)(slash - v) < sizeof(head)) {
		memcpy(head, v, (size_t)(slash - v));
		head[slash - v] = '\0';
		if (dbk_parse_uint(slash + 1, 1, 64, &k) && dbk_parse_uint(head, 1, k, &i)) {
			r->o->node_i = (unsigned)i;
			r->o->node_k = (unsigned)k;
			return 0;
		}
	}
	dbk_errf(err, errlen, "--node wants I/K, 1 <= I <= K <= 64, not '%s'", v);
	return -1;
}

static int set_model(void *ctx, const char *v, char *err, size_t errlen)
{
	struct raw *r = ctx;
	size_t n = strlen(v), i;
	bool ok = n > 0 && n <= 256;

	for (i = 0; ok && i < n; i++)
		ok = (unsigned char)v[i] >= 0x20 && (unsigned char)v[i] <= 0x7e;
	if (!ok) {
		dbk_errf(err, errlen,
		         "--model wants 1..256 printable ASCII "
		         "characters, not '%s'",
		         v);
		return -1;
	}
	r->o->model = v;
	return 0;
}

/* Designated, so that a field lib/cli adds later starts zeroed. */
#define END                  \
	{                    \
		.name = NULL \
	}
#define NUM(nm, k, d, l, h, meta, hlp)                                                          \
	{                                                                                       \
		.name = nm, .kind = k, .dst = d, .lo = l, .hi = h, .metavar = meta, .help = hlp \
	}
#define STR(nm, d, meta, hlp)                                                           \
	{                                                                               \
		.name = nm, .kind = DBK_OPT_STR, .dst = d, .metavar = meta, .help = hlp \
	}
#define FLAG(nm, d, hlp)                                                \
	{                                                               \
		.name = nm, .kind = DBK_OPT_FLAG, .dst = d, .help = hlp \
	}
#define CHOICE(nm, d, list, meta, hlp)                                                          \
	{                                                                                       \
		.name = nm, .kind = DBK_OPT_CHOICE, .dst = d, .choices = list, .metavar = meta, \
		.help = hlp                                                                     \
	}
#define CALL(nm, f, meta, hlp)                                                          \
	{                                                                               \
		.name = nm, .kind = DBK_OPT_CALL, .fn = f, .metavar = meta, .help = hlp \
	}
#define MAX_ENTRIES 40

/* --help's headings, each on the first option of its section. */
static const struct {
	const char *first, *heading;
} SECTIONS[] = {
	{ "trace", "\nSource:" },
	{ "start-offset", "\nSelection (trace seconds, before --rate-factor):" },
	{ "url", "\nTarget:" },
	{ "time-scale", "\nMeasurement:" },
	{ "json", "\nOutput:" },
};

/* Fills t (MAX_ENTRIES) for r; returns the entry count. */
static size_t tables(struct raw *r, struct dbk_opt *t)
{
	struct dbk_bench_opts *o = r->o;
	const struct dbk_opt all[] = {
		STR("trace", &o->slice.path, "FILE",
		    "Mooncake JSONL or Azure CSV trace, "
		    "format\ndetected by extension, then by content"),
		CHOICE("format", &r->format, FORMATS, "mooncake|azure", "override the detection"),
		STR("synthetic", &o->synthetic, "MIX",
		    "NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]],...\nlengths in tokens, "
		    "uniform in the range;\noutput 128 when not given, e.g.\n"
		    "short=0.9:300-2000,long=0.1:33000-90000:200"),
		CALL("rate", set_rate, "R",
		     "synthetic: Poisson arrivals, requests "
		     "per\nsecond of model time ('inf': all at once)"),
		NUM("seed", DBK_OPT_LL, &r->seed, 0, 1e18, "N",
		    "synthetic: random seed (default 1)"),
		NUM("start-offset", DBK_OPT_DOUBLE, &o->slice.start_s, 0, 1e9, "S",
		    "skip the first S seconds of the trace"),
		NUM("duration", DBK_OPT_DOUBLE, &o->slice.duration_s, 1e-9, 1e9, "S",
		    "then replay S seconds (synthetic: generate\nS seconds of "
		    "arrivals)"),
		NUM("max-requests", DBK_OPT_SIZE, &o->slice.max_requests, 1, 1e8, "N",
		    "at most N requests"),
		NUM("max-model-len", DBK_OPT_LL, &o->max_model_len, 2, DBK_TRACE_MAX_TOKENS, "N",
		    "fit prompt + output into N tokens ..."),
		CHOICE("overlong", &r->overlong, OVERLONG, "clip|skip",
		       "... by clipping (output to N-1, then the\nprompt) or by "
		       "skipping (default clip)"),
		NUM("rate-factor", DBK_OPT_DOUBLE, &o->slice.rate_factor, 1e-6, 1e9, "F",
		    "arrivals F times faster (default 1)"),
		FLAG("spread-ticks", &o->slice.spread_ticks,
		     "requests that share an arrival time (a\ntrace recorded in ticks: "
		     "Mooncake's ~3 s)\narrive at uniform random times, seeded,\nbefore "
		     "the next tick, in order, as\ndbucket-sim --spread-ticks (default: as\n"
		     "recorded)"),
		CALL("node", set_node, "I/K",
		     "send only the requests a seeded draw gives\nto node I of K: K "
		     "processes, one a node\n(HAProxy), share a trace at random, as\n"
		     "dbucket-sim --lb-nodes K (default: all)"),
		STR("url", &o->url, "URL",
		    "http://HOST[:PORT][/BASE] (default\n"
		    "http://127.0.0.1:8000)"),
		CHOICE("endpoint", &r->endpoint, ENDPOINTS, "completions|chat",
		       "/v1/completions (default) or\n/v1/chat/completions"),
		CALL("model", set_model, "NAME", "model field (default stub-model)"),
		FLAG("allow-remote", &o->allow_remote, "allow a host that is not loopback"),
		NUM("concurrency-limit", DBK_OPT_LL, &o->concurrency, 1, 1e6, "N",
		    "at most N requests in flight; later ones\nwait (TTFT counts "
		    "from the send)"),
		NUM("timeout", DBK_OPT_DOUBLE, &o->timeout, 1e-3, 1e7, "S",
		    "per-request limit, model seconds (default\n3600)"),
		NUM("time-scale", DBK_OPT_DOUBLE, &o->time_scale, 1e-3, 1e6, "F",
		    "the servers run their model clock F times\nfaster than real "
		    "time: arrivals are sent F\ntimes faster and every latency, "
		    "duration\nand rate is reported in model time\n(measured x F) "
		    "(default 1)"),
		NUM("threshold", DBK_OPT_LL, &o->threshold, 1, DBK_TRACE_MAX_TOKENS, "N",
		    "length classes: prompts (as sent, after\nclipping) < N and "
		    ">= N tokens (default\n32768)"),
		NUM("slo-ttft-ms", DBK_OPT_DOUBLE, &r->slo_ms[0], 1e-6, 1e12, "MS",
		    "goodput counts the requests that meet every\nSLO given: time to first token,"),
		NUM("slo-tpot-ms", DBK_OPT_DOUBLE, &r->slo_ms[1], 1e-6, 1e12, "MS",
		    "time per output token,"),
		NUM("slo-e2e-ms", DBK_OPT_DOUBLE, &r->slo_ms[2], 1e-6, 1e12, "MS",
		    "end-to-end latency"),
		STR("priority-mix", &o->priority_mix, "MIX",
		    "CLASS=WEIGHT,... each request's\nX-Request-Class, drawn by weight "
		    "(seeded:\nthe same classes in every run), e.g.\n"
		    "critical=0.3,standard=0.5,sheddable=0.2;\nthe report adds a line per "
		    "class (429s:\nrefused by admission)"),
		STR("json", &o->json_path, "FILE", "the results as JSON"),
		STR("csv", &o->csv_path, "FILE", "one row per request"),
		FLAG("progress", &o->progress, "a line on stderr every second"),
		FLAG("help", &r->help, "this text"),
		FLAG("version", &r->version, "the version"),
		END,
	};
	size_t n = sizeof(all) / sizeof(all[0]);

	_Static_assert(sizeof(all) / sizeof(all[0]) <= MAX_ENTRIES, "raise MAX_ENTRIES");
	memcpy(t, all, sizeof(all));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(SECTIONS) / sizeof(SECTIONS[0]); k++)
			if (t[i].name && strcmp(t[i].name, SECTIONS[k].first) == 0)
				t[i].section = SECTIONS[k].heading;
	return n;
}

static void usage(FILE *f, const struct dbk_opt *t)
{
	fputs("Usage: dbucket-bench [options] [--trace] FILE\n"
	      "       dbucket-bench [options] --synthetic MIX --rate R\n"
	      "Replays a request trace against an OpenAI-compatible server "
	      "(vLLM,\nvllm-stub, or a proxy in front of them) over streaming "
	      "HTTP and\nreports TTFT, TPOT, ITL, E2E, throughput and goodput "
	      "as vLLM's\nbenchmark client defines them, in total and per "
	      "length class.\n",
	      f);
	dbk_cli_usage(f, t);
	fputs("\nPrompts are input_length x 4 bytes of text, max_tokens the "
	      "output\nlength, with ignore_eos, stream and include_usage. "
	      "Exit status: 0 run\ndone (failed requests are reported, not "
	      "fatal), 1 runtime error,\n2 bad usage or input, 130 "
	      "interrupted (partial results printed).\n",
	      f);
}

static int bad(const char *why)
{
	fprintf(stderr, "dbucket-bench: %s\nTry 'dbucket-bench --help'.\n", why);
	return 2;
}

/* Options may come before and after the trace file, as getopt's
 * permutation allowed: parse, take one argument, parse the rest. */
static int parse_all(const struct dbk_opt *t, int argc, char **argv, struct raw *r, char *err,
                     size_t errlen)
{
	int first;

	for (;;) {
		if (dbk_cli_parse(t, argc, argv, r, &first, err, errlen) != 0)
			return -1;
		if (first >= argc || r->help || r->version)
			return 0;
		if (r->o->slice.path) {
			dbk_errf(err, errlen, "unexpected argument '%s'", argv[first]);
			return -1;
		}
		r->o->slice.path = argv[first];
		/* argv[first] stands as the program name of the rest. */
		argc -= first;
		argv += first;
	}
}

/* The rules between options; NULL when they hold. */
static const char *conflicts(const struct dbk_bench_opts *o, bool have_rate)
{
	if (!o->slice.path == !o->synthetic)
		return "give one source: a trace file or --synthetic MIX";
	if (o->synthetic && !have_rate)
		return "--synthetic needs --rate";
	if (!o->synthetic && have_rate)
		return "--rate is for --synthetic; scale a trace with "
		       "--rate-factor";
	if (o->synthetic && o->slice.format)
		return "--format is for trace files";
	if (o->synthetic && !o->slice.max_requests && !(o->slice.duration_s > 0))
		return "--synthetic needs --max-requests or --duration";
	if (o->synthetic && o->slice.start_s > 0)
		return "--start-offset is for trace files";
	if (o->synthetic && o->slice.spread_ticks)
		return "--spread-ticks is for trace files";
	if (o->synthetic && isinf(o->rate) && !o->slice.max_requests)
		return "--rate inf needs --max-requests";
	return NULL;
}

int dbk_bench_parse_args(int argc, char **argv, struct dbk_bench_opts *o)
{
	struct raw r = { o, -1, -1, -1, 1, { 0, 0, 0 }, false, false };
	struct dbk_opt t[MAX_ENTRIES];
	const char *why;
	char err[512];

	memset(o, 0, sizeof(*o));
	o->slice.rate_factor = 1;
	o->url = "http://127.0.0.1:8000";
	o->model = "stub-model";
	o->timeout = 3600;
	o->time_scale = 1;
	o->threshold = 32768;
	tables(&r, t);
	if (parse_all(t, argc, argv, &r, err, sizeof(err)) != 0)
		return bad(err);
	if (r.help) {
		usage(stdout, t);
		return 1;
	}
	if (r.version) {
		printf("dbucket-bench %s\n", DBK_VERSION);
		return 1;
	}
	o->seed = (unsigned long long)r.seed;
	o->slice.format = r.format < 0    ? DBK_TRACE_UNKNOWN
	                  : r.format == 0 ? DBK_TRACE_MOONCAKE
	                                  : DBK_TRACE_AZURE;
	o->endpoint = r.endpoint == 1 ? DBK_EP_CHAT : DBK_EP_COMPLETIONS;
	o->skip_overlong = r.overlong == 1;
	o->slo.ttft = r.slo_ms[0] / 1e3;
	o->slo.tpot = r.slo_ms[1] / 1e3;
	o->slo.e2e = r.slo_ms[2] / 1e3;
	why = conflicts(o, o->rate != 0);
	if (!why && o->priority_mix && dbk_prio_parse(o->priority_mix, &o->prio, err, sizeof(err)))
		why = err;
	return why ? bad(why) : 0;
}
