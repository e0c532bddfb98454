/* dbucket-bench's set-up and tear-down: the requests (a trace file or
 * the synthetic generator, then the selection), the target address with
 * a preflight connect, the output files and the loop. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "lib/fileio.h"
#include "lib/hash.h"
#include "lib/net.h"
#include "synth.h"

/* Traces here are a few MB; this only stops a wrong path (a disk image)
 * from being read whole. */
#define MAX_TRACE_BYTES ((size_t)1 << 30)
#define PREFLIGHT_TIMEOUT_MS 3000

/* --node I/K: the requests a draw by their index gives node I, the same
 * draw in each of the K processes, so that they share the trace. */
#define NODE_SEED 0x6e6f646573ULL
static void keep_node(struct dbk_trace *tr, unsigned i, unsigned k)
{
	size_t n = 0;

	for (size_t j = 0; j < tr->n; j++)
		if (dbk_hash_fmix64(NODE_SEED ^ j) % k == i - 1)
			tr->req[n++] = tr->req[j];
	tr->n = n;
}

/* Fills b->tr from the trace or the generator and applies the selection.
 * 0, or 2 (bad input). */
static int load_requests(struct dbk_bench *b)
{
	const struct dbk_bench_opts *o = &b->o;
	struct dbk_select sel;
	char err[256];

	if (o->synthetic) {
		struct dbk_synth mix;

		if (dbk_synth_parse(o->synthetic, &mix, err, sizeof(err)) != 0 ||
		    dbk_synth_generate(&mix, o->rate, o->slice.max_requests, o->slice.duration_s,
		                       o->seed, &b->tr, err, sizeof(err)) != 0) {
			fprintf(stderr, "dbucket-bench: --synthetic: %s\n", err);
			return 2;
		}
	} else {
		enum dbk_trace_format f = o->slice.format;
		char *data;
		size_t n;

		data = dbk_read_file(o->slice.path, MAX_TRACE_BYTES, &n, err, sizeof(err));
		if (!data) {
			fprintf(stderr, "dbucket-bench: %s\n", err);
			return 2;
		}
		if (!f)
			f = dbk_trace_detect(o->slice.path, data, n);
		if (!f) {
			fprintf(stderr,
			        "dbucket-bench: %s: not a Mooncake "
			        "JSONL or Azure CSV trace (use --format)\n",
			        o->slice.path);
			free(data);
			return 2;
		}
		b->o.slice.format = f;
		if (dbk_trace_parse(f, data, n, &b->tr, err, sizeof(err)) != 0) {
			fprintf(stderr, "dbucket-bench: %s: %s\n", o->slice.path, err);
			free(data);
			return 2;
		}
		free(data);
		if (o->slice.spread_ticks)
			b->spread = dbk_trace_spread(&b->tr, DBK_TRACE_SPREAD_SEED);
	}
	memset(&sel, 0, sizeof(sel));
	/* A synthetic run is already bounded by its own count and
	 * duration; they are not applied twice. */
	sel.start_s = o->synthetic ? 0 : o->slice.start_s;
	sel.duration_s = o->synthetic ? 0 : o->slice.duration_s;
	sel.max_requests = o->slice.max_requests;
	sel.max_model_len = (uint32_t)o->max_model_len;
	sel.skip_overlong = o->skip_overlong;
	dbk_trace_select(&b->tr, &sel, &b->sel);
	if (o->node_k)
		keep_node(&b->tr, o->node_i, o->node_k);
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
static int pick_address(struct dbk_bench *b, struct sockaddr_storage *ss, socklen_t *sl)
{
	struct pollfd pfd;
	char err[320];
	int fd, e = 0;

	if (dbk_net_resolve(b->url.addr, false, ss, sl, err, sizeof(err))) {
		fprintf(stderr, "dbucket-bench: cannot resolve %s\n", err);
		return 2;
	}
	if (!b->o.allow_remote && !dbk_net_addr_is_local((struct sockaddr *)ss)) {
		fprintf(stderr,
		        "dbucket-bench: %s is not a loopback address; "
		        "benchmarks target loopback only (--allow-remote "
		        "overrides)\n",
		        b->url.host);
		return 2;
	}
	fd = dbk_net_connect(ss, *sl);
	if (fd < 0) {
		e = errno;
	} else {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		e = poll(&pfd, 1, PREFLIGHT_TIMEOUT_MS) == 1 ? dbk_net_connect_error(fd)
		                                             : ETIMEDOUT;
	}
	if (fd >= 0)
		close(fd);
	if (e) {
		fprintf(stderr, "dbucket-bench: cannot connect to %s: %s\n", b->url.addr,
		        strerror(e));
		return 1;
	}
	return 0;
}

static int open_outputs(struct dbk_bench *b)
{
	if (b->o.json_path && !(b->json_f = fopen(b->o.json_path, "w"))) {
		fprintf(stderr, "dbucket-bench: cannot write %s: %s\n", b->o.json_path,
		        strerror(errno));
		return 2;
	}
	if (b->o.csv_path && !(b->csv_f = fopen(b->o.csv_path, "w"))) {
		fprintf(stderr, "dbucket-bench: cannot write %s: %s\n", b->o.csv_path,
		        strerror(errno));
		return 2;
	}
	return 0;
}

void dbk_bench_describe(const struct dbk_bench *b)
{
	size_t i, n_long = 0;
	double span = b->tr.req[b->n - 1].t;

	for (i = 0; i < b->n; i++)
		n_long += b->res[i].cls == DBK_CLASS_LONG;
	fprintf(stderr,
	        "dbucket-bench: %zu requests (%zu < %lld tokens, %zu "
	        ">=), arrivals over %.1f s of trace time = %.1f s of model "
	        "time at rate factor %g = %.2f s real at time scale %g\n",
	        b->n, b->n - n_long, b->o.threshold, n_long, span, span / b->o.slice.rate_factor,
	        b->o.slice.rate_factor, dbk_bench_arrival_wall(b, b->n - 1), b->o.time_scale);
	if (b->sel.clipped || b->sel.skipped)
		fprintf(stderr,
		        "dbucket-bench: max-model-len %lld: %zu "
		        "clipped, %zu skipped\n",
		        b->o.max_model_len, b->sel.clipped, b->sel.skipped);
	if (b->tr.n_raised)
		fprintf(stderr,
		        "dbucket-bench: %zu rows with 0 tokens sent "
		        "as 1\n",
		        b->tr.n_raised);
}

void dbk_bench_free(struct dbk_bench *b)
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

int dbk_bench_setup(struct dbk_bench *b)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	char err[256];
	size_t i;
	int rc;

	if (dbk_request_url_parse(b->o.url, b->o.endpoint, &b->url, err, sizeof(err)) != 0) {
		fprintf(stderr, "dbucket-bench: %s\n", err);
		return 2;
	}
	if ((rc = load_requests(b)) != 0)
		return rc;
	b->n = b->tr.n;
	b->res = calloc(b->n, sizeof(*b->res));
	b->slots = calloc(b->n, sizeof(*b->slots));
	b->model_json = dbk_request_json_quote(b->o.model);
	if (!b->res || !b->slots || !b->model_json) {
		fprintf(stderr, "dbucket-bench: out of memory\n");
		return 1;
	}
	for (i = 0; i < b->n; i++) {
		const struct dbk_trace_req *q = &b->tr.req[i];
		struct dbk_result *r = &b->res[i];

		b->slots[i].b = b;
		b->slots[i].i = i;
		r->arrival = q->t / b->o.slice.rate_factor;
		r->prompt_tokens = q->input;
		r->max_tokens = q->output;
		r->prio = dbk_prio_of(&b->o.prio, b->o.seed, i);
		r->cls = q->input >= (uint64_t)b->o.threshold ? DBK_CLASS_LONG : DBK_CLASS_SHORT;
	}
	/* Outputs last: a run that cannot start leaves no empty files, one
	 * that can does not find out at the end that it cannot write. */
	if ((rc = pick_address(b, &ss, &sl)) != 0 || (rc = open_outputs(b)) != 0)
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
