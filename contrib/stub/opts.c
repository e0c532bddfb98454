/* The stub's command line, one table for lib/cli: parsing, bounds, error
 * wording and the --help option lines come from it. What the table cannot
 * say (visible-ASCII names, defaults that depend on --gpu, the engine's
 * own consistency rules) is checked after it, in the same error style. */
#include "opts.h"
#include "loras.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cli.h"
#include "lib/log.h"
#include "lib/version.h"

/* Strings the stub echoes into HTTP headers and logs: no control bytes,
 * and no spaces where a header token or a log tag is meant. */
struct text_rule {
	const char *flag;
	const char *const *value;
	size_t max;
	bool allow_space;
};

static bool printable(const char *s, size_t max, bool allow_space)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch > 0x7e || ch < 0x20 || (ch == ' ' && !allow_space))
			return false;
	}
	return true;
}

static void usage(FILE *f, const struct dbk_opt *table)
{
	fprintf(f, "Usage: vllm-stub [options]\n"
	           "A stand-in for one vLLM OpenAI API server: the same endpoints and\n"
	           "JSON, tokens paced by a model of vLLM's V1 scheduler on one GPU.\n\n");
	dbk_cli_usage(f, table);
	fprintf(f, "\nPrints \"vllm-stub NAME listening on HOST:PORT ...\" on stdout once\n"
	           "ready. SIGTERM or SIGINT stops it (exit 0).\n");
}

static int bad_usage(const char *msg)
{
	fprintf(stderr, "vllm-stub: %s\nTry 'vllm-stub --help'.\n", msg);
	return 2;
}

/* The values the table fills that need resolving before use. */
struct raw {
	long long max_model_len, batched, seqs, kv; /* -1: the --gpu profile's */
	long long max_loras, max_cpu_loras;         /* max_cpu_loras -1: max_loras */
	double lora_load_ms, lora_activate_ms;
	int port, gpu, fault, names, policy;
	const char *completion_fault;
	bool no_prefix_caching, help, version;
};

static int add_lora_module(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_stub_opts *o = ctx;

	return dbk_cli_append(o->lora_modules, &o->n_lora_modules, DBK_STUB_MAX_LORA_MODULES,
	                      "--lora-modules values", v, err, errlen);
}

/* vLLM's --lora-modules takes several values (argparse's nargs='+'):
 * the words after it that are not options are more modules. Whether
 * argv[first] follows a --lora-modules value. */
static bool after_lora_modules(char **argv, int first)
{
	return (first >= 2 && strcmp(argv[first - 2], "--lora-modules") == 0) ||
	       (first >= 1 && strncmp(argv[first - 1], "--lora-modules=", 15) == 0);
}

static const char *const gpus[] = { "h100", "a100", NULL };
static const char *const engine_names[] = { "vllm", "sglang", NULL };
/* In enum dbk_engine_policy's order. */
static const char *const policies[] = { "fcfs", "priority", NULL };
static const char *const faults[] = { "none",        "hang",        "garbage", "huge",
	                              "many-series", "implausible", NULL };

/* Runs the table over argv. 0: parsed; 1: --help or --version printed;
 * -1: a reason in err. */
static int parse_table(int argc, char **argv, struct dbk_stub_opts *o, struct raw *r, int *first,
                       char *err, size_t errlen)
{
	const struct dbk_opt table[] = {
		{ "host", 0, DBK_OPT_STR, &o->host, .metavar = "ADDR",
		  .help = "address to bind (default 127.0.0.1)" },
		{ "port", 0, DBK_OPT_INT, &r->port, 0, 65535, .metavar = "N",
		  .help = "TCP port, 0 = any free one (default 8000)" },
		{ "name", 0, DBK_OPT_STR, &o->name, .metavar = "NAME",
		  .help = "X-Served-By header and log tag (default vllm-stub)" },
		{ "model", 0, DBK_OPT_STR, &o->model, .metavar = "NAME",
		  .help = "served model name (default stub-model)" },
		{ "max-model-len", 0, DBK_OPT_LL, &r->max_model_len, 2,
		  DBK_ENGINE_MAX_MODEL_LEN_LIMIT, .metavar = "N",
		  .help = "context length (default 131072)" },
		{ "max-num-batched-tokens", 0, DBK_OPT_LL, &r->batched, 1,
		  DBK_ENGINE_MAX_MODEL_LEN_LIMIT, .metavar = "N",
		  .help = "token budget per step (default: 8192 on h100,\n2048 on a100)" },
		{ "max-num-seqs", 0, DBK_OPT_LL, &r->seqs, 1, DBK_ENGINE_MAX_SEQS_LIMIT,
		  .metavar = "N",
		  .help = "running requests at most (default: 1024 on h100,\n256 on a100)" },
		{ "kv-capacity-tokens", 0, DBK_OPT_LL, &r->kv, 16, (double)(1ULL << 40),
		  .metavar = "N", .help = "KV cache size in tokens (default 430000)" },
		{ "gpu", 0, DBK_OPT_CHOICE, &r->gpu, .choices = gpus, .metavar = "h100|a100",
		  .help = "performance profile (default h100)" },
		{ "time-scale", 0, DBK_OPT_DOUBLE, &o->time_scale, 1e-3, 1e6, .metavar = "F",
		  .help = "model clock speed-up: 10 = ten times faster\nthan real time (default "
		          "1)" },
		{ "keep-alive-timeout", 0, DBK_OPT_DOUBLE, &o->keep_alive_s, 0, 86400,
		  .metavar = "S",
		  .help = "close idle connections after S seconds,\n0 = never (default 5, as "
		          "uvicorn)" },
		{ "no-prefix-caching", 0, DBK_OPT_FLAG, &r->no_prefix_caching,
		  .help = "as vLLM's flag: no prefix cache (on by default,\nas in vLLM V1)" },
		{ "scheduling-policy", 0, DBK_OPT_CHOICE, &r->policy, .choices = policies,
		  .metavar = "fcfs|priority",
		  .help = "as vLLM's flag: waiting requests first come\nfirst served, or by the "
		          "body's priority\n(lower first), preempting the lowest\n(default fcfs)" },
		{ "engine-names", 0, DBK_OPT_CHOICE, &r->names, .choices = engine_names,
		  .metavar = "vllm|sglang",
		  .help = "/metrics under vLLM's names or SGLang's\n(default vllm)" },
		{ "metrics-fault", 0, DBK_OPT_CHOICE, &r->fault, .choices = faults,
		  .metavar = "none|hang|garbage|huge|many-series|implausible",
		  .help = "for tests: /metrics never answers, answers\nwith what is not "
		          "Prometheus, adds 4 MB of\nunread families (huge) or 900 KB of "
		          "label\nsets of "
		          "a family read (many-series), or says a KV use\nof 85 (implausible) "
		          "(default none)" },
		{ "completion-fault", 0, DBK_OPT_STR, &r->completion_fault,
		  .metavar = "STATUS[:RATIO]",
		  .help = "for tests: completions answer HTTP STATUS\n(500-599), or a share RATIO "
		          "of "
		          "them, while\n/health and /metrics stay fine; POST\n"
		          "/stub/fault?completion=SPEC|none switches it\n(default none)" },
		{ "enable-lora", 0, DBK_OPT_FLAG, &o->enable_lora,
		  .help = "as vLLM's flag: serve LoRA adapters (requests\nname one as their "
		          "model)",
		  .section = "LoRA adapters (agent/model/ENGINE-MODEL.md):" },
		{ "max-loras", 0, DBK_OPT_LL, &r->max_loras, 1, DBK_ENGINE_MAX_LORAS_LIMIT,
		  .metavar = "N",
		  .help = "as vLLM's: GPU slots, the most distinct\nadapters in one batch (default "
		          "1)" },
		{ "max-cpu-loras", 0, DBK_OPT_LL, &r->max_cpu_loras, 1,
		  DBK_ENGINE_MAX_CPU_LORAS_LIMIT, .metavar = "N",
		  .help = "as vLLM's: adapters kept in the CPU cache,\nat least --max-loras "
		          "(default: --max-loras)" },
		{ "lora-modules", 0, DBK_OPT_CALL, o, .fn = add_lora_module,
		  .metavar = "NAME=PATH|JSON ...",
		  .help = "as vLLM's: adapters served from the start,\nname=path or "
		          "{\"name\":...,\"path\":...}; one\nor more after the flag, or the "
		          "flag again" },
		{ "lora-load-ms", 0, DBK_OPT_DOUBLE, &r->lora_load_ms, 0, 3.6e6, .metavar = "MS",
		  .help = "model time to read an adapter that is not\nin the CPU cache (default "
		          "50)" },
		{ "lora-activate-ms", 0, DBK_OPT_DOUBLE, &r->lora_activate_ms, 0, 3.6e6,
		  .metavar = "MS",
		  .help = "model time to copy an adapter from the CPU\ncache into a GPU slot "
		          "(default 4)" },
		{ "allow-runtime-lora-updating", 0, DBK_OPT_FLAG, &o->lora_runtime,
		  .help = "serve /v1/load_lora_adapter and\n/v1/unload_lora_adapter (vLLM: "
		          "the\nenvironment's "
		          "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1,\nwhich the stub reads too)" },
		{ "verbose", 0, DBK_OPT_FLAG, &o->verbose, .help = "log every request",
		  .section = "" },
		{ "help", 0, DBK_OPT_FLAG, &r->help, .help = "print this and exit" },
		{ "version", 0, DBK_OPT_FLAG, &r->version, .help = "print the version and exit" },
		{ 0 },
	};

	int base = 0;

	if (dbk_cli_parse(table, argc, argv, o, first, err, errlen) < 0)
		return -1;
	while (*first < argc && after_lora_modules(argv, *first)) {
		int k = *first;

		while (k < argc && argv[k][0] != '-')
			if (add_lora_module(o, argv[k++], err, errlen) < 0)
				return -1;
		*first = k;
		if (k == argc)
			break;
		/* The options after them, argv[k - 1] standing for argv[0]. */
		base = k - 1;
		if (dbk_cli_parse(table, argc - base, argv + base, o, first, err, errlen) < 0)
			return -1;
		*first += base;
	}
	if (r->help)
		usage(stdout, table);
	else if (r->version)
		printf("vllm-stub %s\n", DBK_VERSION);
	return r->help || r->version;
}

/* The flags vLLM leaves to the hardware default take --gpu's profile;
 * then the engine's own rules apply. */
static int resolve_engine(struct dbk_stub_opts *o, const struct raw *r, char *err, size_t errlen)
{
	struct dbk_engine_config *ec = &o->engine;

	ec->gpu = dbk_engine_profile_find(gpus[r->gpu]);
	ec->max_model_len = (uint32_t)r->max_model_len;
	ec->max_num_batched_tokens = r->batched < 0 ? ec->gpu->default_max_num_batched_tokens
	                                            : (uint32_t)r->batched;
	ec->max_num_seqs = r->seqs < 0 ? ec->gpu->default_max_num_seqs : (uint32_t)r->seqs;
	ec->kv_capacity_tokens = r->kv < 0 ? ec->gpu->default_kv_capacity_tokens : (uint64_t)r->kv;
	ec->enable_prefix_caching = !r->no_prefix_caching;
	ec->policy = (enum dbk_engine_policy)r->policy;
	if (o->enable_lora) {
		ec->max_loras = (uint32_t)r->max_loras;
		ec->max_cpu_loras = r->max_cpu_loras < 0 ? 0 : (uint32_t)r->max_cpu_loras;
		ec->lora_load_s = r->lora_load_ms / 1e3;
		ec->lora_activate_s = r->lora_activate_ms / 1e3;
	} else if (o->n_lora_modules) {
		dbk_errf(err, errlen, "--lora-modules needs --enable-lora");
		return -1;
	}
	return dbk_engine_config_check(ec, err, errlen);
}

/* The --lora-modules values as the server will add them (a bad one is
 * bad usage, not a failed start). */
static int check_lora_modules(const struct dbk_stub_opts *o, char *err, size_t errlen)
{
	struct dbk_stub_loras trial = { 0 };
	uint32_t id;
	int rc = 0;

	for (unsigned i = 0; i < o->n_lora_modules && rc == 0; i++)
		rc = dbk_stub_loras_add_module(&trial, o->lora_modules[i], &id, err, errlen);
	dbk_stub_loras_free(&trial);
	return rc;
}

/* vLLM's envs.VLLM_ALLOW_RUNTIME_LORA_UPDATING: "1" or "true", any
 * case, spaces around ignored. */
static bool env_runtime_lora(void)
{
	const char *v = getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING");
	char t[8];
	size_t n = 0;

	if (!v)
		return false;
	while (*v == ' ' || *v == '\t')
		v++;
	while (v[n] && v[n] != ' ' && v[n] != '\t' && n < sizeof(t) - 1) {
		t[n] = (char)tolower((unsigned char)v[n]);
		n++;
	}
	t[n] = '\0';
	return strcmp(t, "1") == 0 || strcmp(t, "true") == 0;
}

int dbk_stub_parse_args(int argc, char **argv, struct dbk_stub_opts *o)
{
	struct raw r = {
		.max_model_len = 131072,
		.batched = -1,
		.seqs = -1,
		.kv = -1,
		.max_loras = 1,
		.max_cpu_loras = -1,
		.lora_load_ms = DBK_ENGINE_LORA_LOAD_S * 1e3,
		.lora_activate_ms = DBK_ENGINE_LORA_ACTIVATE_S * 1e3,
		.port = 8000,
	};
	const struct text_rule texts[] = {
		{ "host", &o->host, 255, false },
		{ "name", &o->name, 128, false },
		{ "model", &o->model, 256, true },
	};
	char err[256];
	int first = argc, rc;

	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->name = "vllm-stub";
	o->model = "stub-model";
	o->time_scale = 1.0;
	o->keep_alive_s = 5.0;
	rc = parse_table(argc, argv, o, &r, &first, err, sizeof(err));
	if (rc != 0)
		return rc < 0 ? bad_usage(err) : 1;
	if (first < argc) {
		dbk_errf(err, sizeof(err), "unexpected argument '%s'", argv[first]);
		return bad_usage(err);
	}
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (!printable(*texts[i].value, texts[i].max, texts[i].allow_space)) {
			dbk_errf(err, sizeof(err),
			         "--%s wants 1 to %zu %s ASCII characters, got '%s'", texts[i].flag,
			         texts[i].max, texts[i].allow_space ? "printable" : "visible",
			         *texts[i].value);
			return bad_usage(err);
		}
	}
	o->port = (unsigned)r.port;
	o->metrics_fault = (enum dbk_stub_metrics_fault)r.fault;
	o->sglang_names = r.names == 1;
	if (r.completion_fault && dbk_stub_parse_fault(r.completion_fault, &o->completion_fault,
	                                               &o->completion_fault_ratio) < 0) {
		dbk_errf(err, sizeof(err),
		         "--completion-fault wants none or STATUS[:RATIO] (500-599, 0-1], got '%s'",
		         r.completion_fault);
		return bad_usage(err);
	}
	if (resolve_engine(o, &r, err, sizeof(err)) != 0 || check_lora_modules(o, err, sizeof(err)))
		return bad_usage(err);
	o->lora_runtime = o->lora_runtime || env_runtime_lora();
	return 0;
}
