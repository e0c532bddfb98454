/* dbucket-bench: replays a request trace (or a synthetic mix) against an
 * OpenAI-compatible server and reports TTFT, TPOT, ITL, E2E, throughput
 * and goodput as vLLM's benchmark client defines them, in total and per
 * length class.
 *
 * One libev loop owns everything: an ev_timer releases requests at their
 * (scaled) arrival times, the client module runs one connection per
 * request, and each completion lands in a per-request result slot. The
 * numbers are computed once the run is over (stats.c). */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "lib/numparse.h"
#include "report.h"
#include "request.h"
#include "stats.h"
#include "trace.h"

#define BENCH_VERSION "0.1.0"
/* Traces here are a few MB; this only stops a wrong path (a disk image)
 * from being read whole. */
#define MAX_TRACE_BYTES ((size_t)1 << 30)
/* Messages a stream may carry beyond max_tokens: chat's role chunk, a
 * final empty chunk; generous so a server's framing never trips it. */
#define STREAM_MSG_SLACK 16
#define PREFLIGHT_TIMEOUT_MS 3000

struct opts {
	const char *trace;
	enum dbk_trace_format format;
	const char *synthetic;
	double rate;
	unsigned long long seed;
	double rate_factor;
	double start_offset, duration;
	long long max_requests;
	long long max_model_len;
	bool skip_overlong;
	const char *url;
	enum dbk_endpoint endpoint;
	const char *model;
	bool allow_remote;
	long long concurrency;
	double timeout;           /* model seconds */
	double time_scale;
	long long threshold;
	struct dbk_slo slo;       /* seconds */
	const char *json_path, *csv_path;
	bool progress;
};

/* Callback context of one request. */
struct slot {
	struct bench *b;
	size_t i;
};

struct bench {
	struct opts o;
	struct ev_loop *loop;
	struct dbk_trace tr;
	struct dbk_select_stats sel;
	struct dbk_url url;
	char *model_json;
	struct dbk_client client;
	struct dbk_result *res;
	struct slot *slots;
	size_t n;
	size_t next_due;          /* requests [0, next_due) have arrived */
	size_t next_send;         /* [0, next_send) have been sent */
	size_t n_done, n_failed;
	bool fd_starved;          /* out of descriptors: wait for a call */
	bool stopping;
	double t_start, t_end;    /* monotonic seconds */
	ev_timer arrival_w, progress_w;
	ev_signal sigint_w, sigterm_w;
	struct dbk_buf req, body;
	FILE *json_f, *csv_f;
};

/* ---- Options. ---- */

static void usage(FILE *f)
{
	fprintf(f,
	"Usage: dbucket-bench [options] [--trace] FILE\n"
	"       dbucket-bench [options] --synthetic MIX --rate R\n"
	"Replays a request trace against an OpenAI-compatible server (vLLM,\n"
	"vllm-stub, or a proxy in front of them) over streaming HTTP and\n"
	"reports TTFT, TPOT, ITL, E2E, throughput and goodput as vLLM's\n"
	"benchmark client defines them, in total and per length class.\n"
	"\n"
	"Source:\n"
	"  --trace FILE             Mooncake JSONL or Azure CSV trace, format\n"
	"                           detected by extension, then by content\n"
	"  --format mooncake|azure  override the detection\n"
	"  --synthetic MIX          NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]],...\n"
	"                           lengths in tokens, uniform in the range;\n"
	"                           output 128 when not given, e.g.\n"
	"                           short=0.9:300-2000,long=0.1:33000-90000:200\n"
	"  --rate R                 synthetic: Poisson arrivals, requests per\n"
	"                           second of model time ('inf': all at once)\n"
	"  --seed N                 synthetic: random seed (default 1)\n"
	"\n"
	"Selection (trace seconds, before --rate-factor):\n"
	"  --start-offset S         skip the first S seconds of the trace\n"
	"  --duration S             then replay S seconds (synthetic: generate\n"
	"                           S seconds of arrivals)\n"
	"  --max-requests N         at most N requests\n"
	"  --max-model-len N        fit prompt + output into N tokens ...\n"
	"  --overlong clip|skip     ... by clipping (output to N-1, then the\n"
	"                           prompt) or by skipping (default clip)\n"
	"  --rate-factor F          arrivals F times faster (default 1)\n"
	"\n"
	"Target:\n"
	"  --url URL                http://HOST[:PORT][/BASE] (default\n"
	"                           http://127.0.0.1:8000)\n"
	"  --endpoint completions|chat\n"
	"                           /v1/completions (default) or\n"
	"                           /v1/chat/completions\n"
	"  --model NAME             model field (default stub-model)\n"
	"  --allow-remote           allow a host that is not loopback\n"
	"  --concurrency-limit N    at most N requests in flight; later ones\n"
	"                           wait (TTFT counts from the send)\n"
	"  --timeout S              per-request limit, model seconds (default\n"
	"                           3600)\n"
	"\n"
	"Measurement:\n"
	"  --time-scale F           the servers run their model clock F times\n"
	"                           faster than real time: arrivals are sent F\n"
	"                           times faster and every latency, duration\n"
	"                           and rate is reported in model time\n"
	"                           (measured x F) (default 1)\n"
	"  --threshold N            length classes: prompts (as sent, after\n"
	"                           clipping) < N and >= N tokens (default\n"
	"                           32768)\n"
	"  --slo-ttft-ms MS, --slo-tpot-ms MS, --slo-e2e-ms MS\n"
	"                           goodput counts requests meeting every SLO\n"
	"                           given\n"
	"\n"
	"Output:\n"
	"  --json FILE              the results as JSON\n"
	"  --csv FILE               one row per request\n"
	"  --progress               a line on stderr every second\n"
	"  --help, --version\n"
	"\n"
	"Prompts are input_length x 4 bytes of text, max_tokens the output\n"
	"length, with ignore_eos, stream and include_usage. Exit status: 0 run\n"
	"done (failed requests are reported, not fatal), 1 runtime error,\n"
	"2 bad usage or input, 130 interrupted (partial results printed).\n");
}

static int bad(const char *fmt, const char *a)
{
	fprintf(stderr, "dbucket-bench: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nTry 'dbucket-bench --help'.\n");
	return 2;
}

static bool printable(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

enum {
	OPT_TRACE = 256, OPT_FORMAT, OPT_SYNTHETIC, OPT_RATE, OPT_SEED,
	OPT_START, OPT_DURATION, OPT_MAX_REQ, OPT_MAX_LEN, OPT_OVERLONG,
	OPT_RATE_FACTOR, OPT_URL, OPT_ENDPOINT, OPT_MODEL, OPT_REMOTE,
	OPT_CONC, OPT_TIMEOUT, OPT_TIME_SCALE, OPT_THRESHOLD, OPT_SLO_TTFT,
	OPT_SLO_TPOT, OPT_SLO_E2E, OPT_JSON, OPT_CSV, OPT_PROGRESS, OPT_HELP,
	OPT_VERSION,
};

/* 0 run, 1 exit 0 (help/version), 2 bad usage. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"trace", required_argument, NULL, OPT_TRACE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"synthetic", required_argument, NULL, OPT_SYNTHETIC},
		{"rate", required_argument, NULL, OPT_RATE},
		{"seed", required_argument, NULL, OPT_SEED},
		{"start-offset", required_argument, NULL, OPT_START},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"max-requests", required_argument, NULL, OPT_MAX_REQ},
		{"max-model-len", required_argument, NULL, OPT_MAX_LEN},
		{"overlong", required_argument, NULL, OPT_OVERLONG},
		{"rate-factor", required_argument, NULL, OPT_RATE_FACTOR},
		{"url", required_argument, NULL, OPT_URL},
		{"endpoint", required_argument, NULL, OPT_ENDPOINT},
		{"model", required_argument, NULL, OPT_MODEL},
		{"allow-remote", no_argument, NULL, OPT_REMOTE},
		{"concurrency-limit", required_argument, NULL, OPT_CONC},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"time-scale", required_argument, NULL, OPT_TIME_SCALE},
		{"threshold", required_argument, NULL, OPT_THRESHOLD},
		{"slo-ttft-ms", required_argument, NULL, OPT_SLO_TTFT},
		{"slo-tpot-ms", required_argument, NULL, OPT_SLO_TPOT},
		{"slo-e2e-ms", required_argument, NULL, OPT_SLO_E2E},
		{"json", required_argument, NULL, OPT_JSON},
		{"csv", required_argument, NULL, OPT_CSV},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	bool have_rate = false;
	long long v;
	double d;
	int ch;

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->rate_factor = 1;
	o->url = "http://127.0.0.1:8000";
	o->model = "stub-model";
	o->timeout = 3600;
	o->time_scale = 1;
	o->threshold = 32768;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (ch) {
		case OPT_TRACE:
			o->trace = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "mooncake") == 0)
				o->format = DBK_TRACE_MOONCAKE;
			else if (strcmp(optarg, "azure") == 0)
				o->format = DBK_TRACE_AZURE;
			else
				return bad("--format wants mooncake or azure, "
				           "not '%s'", optarg);
			break;
		case OPT_SYNTHETIC:
			o->synthetic = optarg;
			break;
		case OPT_RATE:
			if (strcmp(optarg, "inf") == 0)
				o->rate = INFINITY;
			else if (!dbk_parse_double(optarg, 1e-9, 1e9, &o->rate))
				return bad("--rate wants requests per second "
				           "> 0 or 'inf', not '%s'", optarg);
			have_rate = true;
			break;
		case OPT_SEED:
			if (!dbk_parse_ll(optarg, 0, LLONG_MAX, &v))
				return bad("--seed wants an integer >= 0, not "
				           "'%s'", optarg);
			o->seed = (unsigned long long)v;
			break;
		case OPT_START:
			if (!dbk_parse_double(optarg, 0, 1e9, &o->start_offset))
				return bad("--start-offset wants seconds >= 0, "
				           "not '%s'", optarg);
			break;
		case OPT_DURATION:
			if (!dbk_parse_double(optarg, 1e-9, 1e9, &o->duration))
				return bad("--duration wants seconds > 0, not "
				           "'%s'", optarg);
			break;
		case OPT_MAX_REQ:
			if (!dbk_parse_ll(optarg, 1, 100000000, &o->max_requests))
				return bad("--max-requests wants 1..100000000, "
				           "not '%s'", optarg);
			break;
		case OPT_MAX_LEN:
			if (!dbk_parse_ll(optarg, 2, DBK_TRACE_MAX_TOKENS,
			                  &o->max_model_len))
				return bad("--max-model-len wants an integer >= "
				           "2, not '%s'", optarg);
			break;
		case OPT_OVERLONG:
			if (strcmp(optarg, "clip") == 0)
				o->skip_overlong = false;
			else if (strcmp(optarg, "skip") == 0)
				o->skip_overlong = true;
			else
				return bad("--overlong wants clip or skip, not "
				           "'%s'", optarg);
			break;
		case OPT_RATE_FACTOR:
			if (!dbk_parse_double(optarg, 1e-6, 1e9, &o->rate_factor))
				return bad("--rate-factor wants a number > 0, "
				           "not '%s'", optarg);
			break;
		case OPT_URL:
			o->url = optarg;
			break;
		case OPT_ENDPOINT:
			if (strcmp(optarg, "completions") == 0)
				o->endpoint = DBK_EP_COMPLETIONS;
			else if (strcmp(optarg, "chat") == 0)
				o->endpoint = DBK_EP_CHAT;
			else
				return bad("--endpoint wants completions or "
				           "chat, not '%s'", optarg);
			break;
		case OPT_MODEL:
			if (!printable(optarg, 256))
				return bad("--model wants 1..256 printable ASCII "
				           "characters, not '%s'", optarg);
			o->model = optarg;
			break;
		case OPT_REMOTE:
			o->allow_remote = true;
			break;
		case OPT_CONC:
			if (!dbk_parse_ll(optarg, 1, 1000000, &o->concurrency))
				return bad("--concurrency-limit wants 1..1000000, "
				           "not '%s'", optarg);
			break;
		case OPT_TIMEOUT:
			if (!dbk_parse_double(optarg, 1e-3, 1e7, &o->timeout))
				return bad("--timeout wants seconds > 0, not "
				           "'%s'", optarg);
			break;
		case OPT_TIME_SCALE:
			if (!dbk_parse_double(optarg, 1e-3, 1e6, &o->time_scale))
				return bad("--time-scale wants a number in "
				           "0.001..1e6, not '%s'", optarg);
			break;
		case OPT_THRESHOLD:
			if (!dbk_parse_ll(optarg, 1, DBK_TRACE_MAX_TOKENS,
			                  &o->threshold))
				return bad("--threshold wants tokens >= 1, not "
				           "'%s'", optarg);
			break;
		case OPT_SLO_TTFT:
		case OPT_SLO_TPOT:
		case OPT_SLO_E2E:
			if (!dbk_parse_double(optarg, 1e-6, 1e12, &d))
				return bad("SLOs want milliseconds > 0, not '%s'",
				           optarg);
			*(ch == OPT_SLO_TTFT ? &o->slo.ttft
			  : ch == OPT_SLO_TPOT ? &o->slo.tpot
			                       : &o->slo.e2e) = d / 1e3;
			break;
		case OPT_JSON:
			o->json_path = optarg;
			break;
		case OPT_CSV:
			o->csv_path = optarg;
			break;
		case OPT_PROGRESS:
			o->progress = true;
			break;
		case OPT_HELP:
			usage(stdout);
			return 1;
		case OPT_VERSION:
			printf("dbucket-bench %s\n", BENCH_VERSION);
			return 1;
		case ':':
			return bad("option '%s' needs a value",
			           argv[optind - 1]);
		default:
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		if (o->trace || optind + 1 < argc)
			return bad("unexpected argument '%s'",
			           argv[o->trace ? optind : optind + 1]);
		o->trace = argv[optind];
	}
	if (!o->trace == !o->synthetic)
		return bad("%s", "give one source: a trace file or "
		           "--synthetic MIX");
	if (o->synthetic && !have_rate)
		return bad("%s", "--synthetic needs --rate");
	if (!o->synthetic && have_rate)
		return bad("%s", "--rate is for --synthetic; scale a trace "
		           "with --rate-factor");
	if (o->synthetic && o->format)
		return bad("%s", "--format is for trace files");
	if (o->synthetic && !o->max_requests && !(o->duration > 0))
		return bad("%s", "--synthetic needs --max-requests or "
		           "--duration");
	if (o->synthetic && o->start_offset > 0)
		return bad("%s", "--start-offset is for trace files");
	if (o->synthetic && isinf(o->rate) && !o->max_requests)
		return bad("%s", "--rate inf needs --max-requests");
	return 0;
}

/* ---- Loading. ---- */

static int read_file(const char *path, char **data, size_t *n)
{
	struct stat st;
	size_t got = 0;
	FILE *f;
	char *p;

	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "dbucket-bench: cannot open %s: %s\n", path,
		        strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > MAX_TRACE_BYTES) {
		fprintf(stderr, "dbucket-bench: %s is not a regular file of "
		        "at most 1 GiB\n", path);
		fclose(f);
		return -1;
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		fprintf(stderr, "dbucket-bench: out of memory\n");
		fclose(f);
		return -1;
	}
	got = fread(p, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		fprintf(stderr, "dbucket-bench: cannot read %s: %s\n", path,
		        strerror(errno));
		fclose(f);
		free(p);
		return -1;
	}
	fclose(f);
	p[got] = 0;
	*data = p;
	*n = got;
	return 0;
}

/* Fills b->tr from the trace or the generator and applies the selection.
 * 0, or 2 (bad input). */
static int load_requests(struct bench *b)
{
	const struct opts *o = &b->o;
	struct dbk_select sel;
	char err[256];

	if (o->synthetic) {
		struct dbk_synth mix;

		if (dbk_synth_parse(o->synthetic, &mix, err, sizeof(err)) != 0 ||
		    dbk_synth_generate(&mix, o->rate, (size_t)o->max_requests,
		                       o->duration, o->seed, &b->tr, err,
		                       sizeof(err)) != 0) {
			fprintf(stderr, "dbucket-bench: --synthetic: %s\n", err);
			return 2;
		}
	} else {
		enum dbk_trace_format f = o->format;
		char *data;
		size_t n;

		if (read_file(o->trace, &data, &n) != 0)
			return 2;
		if (!f)
			f = dbk_trace_detect(o->trace, data, n);
		if (!f) {
			fprintf(stderr, "dbucket-bench: %s: not a Mooncake "
			        "JSONL or Azure CSV trace (use --format)\n",
			        o->trace);
			free(data);
			return 2;
		}
		b->o.format = f;
		if (dbk_trace_parse(f, data, n, &b->tr, err, sizeof(err)) != 0) {
			fprintf(stderr, "dbucket-bench: %s: %s\n", o->trace, err);
			free(data);
			return 2;
		}
		free(data);
	}
	memset(&sel, 0, sizeof(sel));
	/* A synthetic run is already bounded by its own count and
	 * duration; they are not applied twice. */
	sel.start_s = o->synthetic ? 0 : o->start_offset;
	sel.duration_s = o->synthetic ? 0 : o->duration;
	sel.max_requests = (size_t)o->max_requests;
	sel.max_model_len = (uint32_t)o->max_model_len;
	sel.skip_overlong = o->skip_overlong;
	dbk_trace_select(&b->tr, &sel, &b->sel);
	if (b->tr.n == 0) {
		fprintf(stderr, "dbucket-bench: no requests left after "
		        "--start-offset, --duration and --max-model-len\n");
		return 2;
	}
	return 0;
}

/* Resolves the URL, applies the loopback rule and checks that the server
 * accepts connections, so that a typo fails now and not as N failed
 * requests. 0, 1 (cannot connect) or 2 (refused by the rules). */
static int pick_address(struct bench *b, struct sockaddr_storage *ss,
                        socklen_t *sl)
{
	struct addrinfo hints, *res = NULL, *ai;
	int rc, last_err = 0;
	bool any = false;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(b->url.host, b->url.port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "dbucket-bench: cannot resolve %s: %s\n",
		        b->url.host, gai_strerror(rc));
		return 2;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		int fd, err = 0;
		socklen_t el = sizeof(err);

		if (!b->o.allow_remote && !dbk_addr_is_loopback(ai->ai_addr))
			continue;
		any = true;
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
		            SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last_err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
			if (errno != EINPROGRESS) {
				last_err = errno;
				close(fd);
				continue;
			}
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, PREFLIGHT_TIMEOUT_MS) != 1)
				err = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
			                    &el) != 0)
				err = errno;
			if (err) {
				last_err = err;
				close(fd);
				continue;
			}
		}
		close(fd);
		memcpy(ss, ai->ai_addr, ai->ai_addrlen);
		*sl = ai->ai_addrlen;
		freeaddrinfo(res);
		return 0;
	}
	freeaddrinfo(res);
	if (!any) {
		fprintf(stderr, "dbucket-bench: %s is not a loopback address; "
		        "benchmarks target loopback only (--allow-remote "
		        "overrides)\n", b->url.host);
		return 2;
	}
	fprintf(stderr, "dbucket-bench: cannot connect to %s:%s: %s\n",
	        b->url.host, b->url.port, strerror(last_err));
	return 1;
}

/* ---- The run. ---- */

static double arrival_wall(const struct bench *b, size_t i)
{
	return b->tr.req[i].t / (b->o.rate_factor * b->o.time_scale);
}

static void check_end(struct bench *b)
{
	if (b->n_done == b->n && !b->stopping) {
		b->t_end = dbk_client_now();
		ev_break(b->loop, EVBREAK_ALL);
	}
}

static void record_failure(struct bench *b, size_t i, const char *what,
                           int err)
{
	struct dbk_result *r = &b->res[i];

	r->done = true;
	r->ok = false;
	snprintf(r->error, sizeof(r->error), "%s: %s", what, strerror(err));
	b->n_done++;
	b->n_failed++;
}

static void pump(struct bench *b);

static void on_done(void *ctx, const struct dbk_call_result *cr)
{
	struct slot *s = ctx;
	struct bench *b = s->b;
	struct dbk_result *r = &b->res[s->i];
	double F = b->o.time_scale;
	size_t k;

	if (b->stopping) {
		/* Interrupted: neither completed nor failed. */
		free(cr->itl);
		return;
	}
	r->done = true;
	r->status = cr->status;
	r->ok = cr->ok;
	snprintf(r->served_by, sizeof(r->served_by), "%s", cr->served_by);
	if (cr->ok) {
		/* Model time: the server's clock ran F times faster. */
		r->ttft = cr->ttft * F;
		r->e2e = cr->e2e * F;
		r->output_tokens = cr->tokens;
		r->itl = cr->itl;
		r->n_itl = cr->n_itl;
		for (k = 0; k < r->n_itl; k++)
			r->itl[k] *= F;
	} else {
		if (cr->timed_out)
			snprintf(r->error, sizeof(r->error), "timeout after "
			         "%g s", b->o.timeout);
		else
			snprintf(r->error, sizeof(r->error), "%s",
			         cr->error ? cr->error : "failed");
		free(cr->itl);
		b->n_failed++;
	}
	b->n_done++;
	/* A descriptor is free again, maybe a concurrency slot too. */
	b->fd_starved = false;
	pump(b);
	check_end(b);
}

static void pump(struct bench *b)
{
	while (!b->stopping && !b->fd_starved && b->next_send < b->next_due &&
	       (!b->o.concurrency ||
	        b->client.n_calls < (size_t)b->o.concurrency)) {
		size_t i = b->next_send;
		const struct dbk_trace_req *q = &b->tr.req[i];
		struct dbk_req_spec spec;
		int rc;

		memset(&spec, 0, sizeof(spec));
		spec.ep = b->o.endpoint;
		spec.model_json = b->model_json;
		spec.input = q->input;
		spec.output = q->output;
		spec.hash = q->n_hash ? b->tr.hash + q->hash_off : NULL;
		spec.n_hash = q->n_hash;
		spec.index = i;
		spec.session = q->session;
		spec.has_session = q->has_session;
		dbk_request_build(&b->req, &b->body, &b->url, &spec);
		if (b->req.oom) {
			dbk_buf_free(&b->req);
			record_failure(b, i, "building the request", ENOMEM);
			b->next_send++;
			continue;
		}
		b->res[i].started = true;
		b->res[i].sent = (dbk_client_now() - b->t_start) *
		                 b->o.time_scale;
		rc = dbk_client_start(&b->client, &b->req,
		                      (size_t)q->output + STREAM_MSG_SLACK,
		                      on_done, &b->slots[i]);
		if ((rc == -EMFILE || rc == -ENFILE) && b->client.n_calls) {
			/* Out of descriptors: this one goes when a call
			 * ends (its wait shows up as late send). */
			b->res[i].started = false;
			b->fd_starved = true;
			break;
		}
		b->next_send++;
		if (rc != 0)
			record_failure(b, i, "connect", -rc);
	}
}

static void arm_arrivals(struct bench *b)
{
	double delay;

	if (b->next_due >= b->n || b->stopping)
		return;
	delay = arrival_wall(b, b->next_due) -
	        (dbk_client_now() - b->t_start);
	ev_timer_set(&b->arrival_w, delay > 0 ? delay : 0, 0);
	ev_timer_start(b->loop, &b->arrival_w);
}

static void arrival_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct bench *b = w->data;
	double now = dbk_client_now() - b->t_start;

	(void)loop;
	(void)revents;
	/* libev may wake a little early; 1 ms of slack avoids a spin of
	 * zero-length timers. */
	while (b->next_due < b->n && arrival_wall(b, b->next_due) <= now + 1e-3)
		b->next_due++;
	pump(b);
	arm_arrivals(b);
	check_end(b);
}

static void print_progress(const struct bench *b)
{
	double el = dbk_client_now() - b->t_start;

	fprintf(stderr, "dbucket-bench: %.0f s (model %.0f s): sent %zu/%zu, "
	        "done %zu, failed %zu, in flight %zu\n", el,
	        el * b->o.time_scale, b->next_send, b->n,
	        b->n_done - b->n_failed, b->n_failed, b->client.n_calls);
}

static void progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	print_progress(w->data);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct bench *b = w->data;

	(void)revents;
	if (b->stopping)
		return;
	fprintf(stderr, "dbucket-bench: signal %d, stopping\n", w->signum);
	b->t_end = dbk_client_now();
	b->stopping = true;
	dbk_client_abort_all(&b->client, "interrupted");
	ev_break(loop, EVBREAK_ALL);
}

static void describe_plan(const struct bench *b)
{
	size_t i, n_long = 0;
	double span = b->tr.req[b->n - 1].t;

	for (i = 0; i < b->n; i++)
		n_long += b->res[i].cls == DBK_CLASS_LONG;
	fprintf(stderr, "dbucket-bench: %zu requests (%zu < %lld tokens, %zu "
	        ">=), arrivals over %.1f s of trace time = %.1f s of model "
	        "time at rate factor %g = %.2f s real at time scale %g\n",
	        b->n, b->n - n_long, b->o.threshold, n_long, span,
	        span / b->o.rate_factor, b->o.rate_factor,
	        arrival_wall(b, b->n - 1), b->o.time_scale);
	if (b->sel.clipped || b->sel.skipped)
		fprintf(stderr, "dbucket-bench: max-model-len %lld: %zu "
		        "clipped, %zu skipped\n", b->o.max_model_len,
		        b->sel.clipped, b->sel.skipped);
	if (b->tr.n_raised)
		fprintf(stderr, "dbucket-bench: %zu rows with 0 tokens sent "
		        "as 1\n", b->tr.n_raised);
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* One descriptor per request in flight: take what we may. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int open_outputs(struct bench *b)
{
	if (b->o.json_path && !(b->json_f = fopen(b->o.json_path, "w"))) {
		fprintf(stderr, "dbucket-bench: cannot write %s: %s\n",
		        b->o.json_path, strerror(errno));
		return 2;
	}
	if (b->o.csv_path && !(b->csv_f = fopen(b->o.csv_path, "w"))) {
		fprintf(stderr, "dbucket-bench: cannot write %s: %s\n",
		        b->o.csv_path, strerror(errno));
		return 2;
	}
	return 0;
}

static int close_output(FILE *f, const char *path)
{
	if (!f)
		return 0;
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "dbucket-bench: error writing %s\n", path);
		return 1;
	}
	return 0;
}

static int report(struct bench *b)
{
	struct dbk_summary s[DBK_REPORT_COLUMNS];
	struct dbk_run_info info;
	char url[1400];
	double dur = (b->t_end - b->t_start) * b->o.time_scale;
	int c, rc = 0;

	for (c = 0; c < DBK_REPORT_COLUMNS; c++)
		if (dbk_summarize(b->res, b->n, c == 0 ? DBK_STATS_ALL : c - 1,
		                  &b->o.slo, dur, &s[c]) != 0) {
			fprintf(stderr, "dbucket-bench: out of memory\n");
			return 1;
		}
	snprintf(url, sizeof(url), "http://%s%s", b->url.authority,
	         b->url.path);
	memset(&info, 0, sizeof(info));
	info.version = BENCH_VERSION;
	info.trace_path = b->o.trace;
	info.format = b->o.synthetic ? "synthetic"
	                             : dbk_trace_format_name(b->o.format);
	info.synthetic = b->o.synthetic;
	info.rate = b->o.rate;
	info.seed = b->o.seed;
	info.rate_factor = b->o.rate_factor;
	info.time_scale = b->o.time_scale;
	info.url = url;
	info.endpoint = b->o.endpoint == DBK_EP_CHAT ? "chat" : "completions";
	info.model = b->o.model;
	info.threshold = (uint32_t)b->o.threshold;
	info.max_model_len = (uint32_t)b->o.max_model_len;
	info.skip_overlong = b->o.skip_overlong;
	info.start_offset = b->o.start_offset;
	info.duration_limit = b->o.duration;
	info.max_requests = (size_t)b->o.max_requests;
	info.concurrency_limit = (size_t)b->o.concurrency;
	info.timeout = b->o.timeout;
	info.slo = b->o.slo;
	info.clipped = b->sel.clipped;
	info.skipped = b->sel.skipped;
	info.raised = b->tr.n_raised;
	info.interrupted = b->stopping;
	dbk_report_table(stdout, &info, s, b->res, b->n);
	fflush(stdout);
	if (b->json_f && dbk_report_json(b->json_f, &info, s, b->res, b->n))
		rc = 1;
	if (b->csv_f && dbk_report_csv(b->csv_f, b->res, b->n))
		rc = 1;
	rc |= close_output(b->json_f, b->o.json_path);
	rc |= close_output(b->csv_f, b->o.csv_path);
	b->json_f = b->csv_f = NULL;
	return rc;
}

static void bench_free(struct bench *b)
{
	size_t i;

	for (i = 0; b->res && i < b->n; i++)
		free(b->res[i].itl);
	free(b->res);
	free(b->slots);
	free(b->model_json);
	dbk_trace_free(&b->tr);
	dbk_buf_free(&b->req);
	dbk_buf_free(&b->body);
	if (b->json_f)
		fclose(b->json_f);
	if (b->csv_f)
		fclose(b->csv_f);
	if (b->loop)
		ev_loop_destroy(b->loop);
}

static int setup(struct bench *b)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	char err[256];
	size_t i;
	int rc;

	if (dbk_url_parse(b->o.url, b->o.endpoint, &b->url, err,
	                  sizeof(err)) != 0) {
		fprintf(stderr, "dbucket-bench: %s\n", err);
		return 2;
	}
	if ((rc = load_requests(b)) != 0)
		return rc;
	b->n = b->tr.n;
	b->res = calloc(b->n, sizeof(*b->res));
	b->slots = calloc(b->n, sizeof(*b->slots));
	b->model_json = dbk_json_quote(b->o.model);
	if (!b->res || !b->slots || !b->model_json) {
		fprintf(stderr, "dbucket-bench: out of memory\n");
		return 1;
	}
	for (i = 0; i < b->n; i++) {
		const struct dbk_trace_req *q = &b->tr.req[i];
		struct dbk_result *r = &b->res[i];

		b->slots[i].b = b;
		b->slots[i].i = i;
		r->arrival = q->t / b->o.rate_factor;
		r->prompt_tokens = q->input;
		r->max_tokens = q->output;
		r->cls = q->input >= (uint64_t)b->o.threshold ? DBK_CLASS_LONG
		                                             : DBK_CLASS_SHORT;
	}
	/* Outputs last: a run that cannot start leaves no empty files, one
	 * that can does not find out at the end that it cannot write. */
	if ((rc = pick_address(b, &ss, &sl)) != 0 ||
	    (rc = open_outputs(b)) != 0)
		return rc;
	b->loop = ev_loop_new(EVFLAG_AUTO);
	if (!b->loop) {
		fprintf(stderr, "dbucket-bench: cannot initialise libev\n");
		return 1;
	}
	dbk_client_init(&b->client, b->loop, (struct sockaddr *)&ss, sl,
	                b->o.timeout / b->o.time_scale);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench *b;
	int rc;

	/* The client struct holds a 64 KiB read buffer: heap, not stack. */
	b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "dbucket-bench: out of memory\n");
		return 1;
	}
	rc = parse_args(argc, argv, &b->o);
	if (rc != 0) {
		free(b);
		return rc == 1 ? 0 : 2;
	}
	raise_fd_limit();
	rc = setup(b);
	if (rc != 0) {
		bench_free(b);
		free(b);
		return rc;
	}
	describe_plan(b);

	ev_init(&b->arrival_w, arrival_cb);
	b->arrival_w.data = b;
	ev_timer_init(&b->progress_w, progress_cb, 1.0, 1.0);
	b->progress_w.data = b;
	ev_signal_init(&b->sigint_w, signal_cb, SIGINT);
	ev_signal_init(&b->sigterm_w, signal_cb, SIGTERM);
	b->sigint_w.data = b->sigterm_w.data = b;
	ev_signal_start(b->loop, &b->sigint_w);
	ev_signal_start(b->loop, &b->sigterm_w);
	if (b->o.progress)
		ev_timer_start(b->loop, &b->progress_w);

	ev_now_update(b->loop);
	b->t_start = dbk_client_now();
	arrival_cb(b->loop, &b->arrival_w, 0);
	if (b->n_done < b->n)
		ev_run(b->loop, 0);
	if (b->o.progress)
		print_progress(b);

	rc = report(b);
	if (b->stopping)
		rc = 130;
	bench_free(b);
	free(b);
	return rc;
}
