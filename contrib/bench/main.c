/* dbucket-bench: replays a request trace (or a synthetic mix) against an
 * OpenAI-compatible server and reports TTFT, TPOT, ITL, E2E, throughput
 * and goodput as vLLM's benchmark client defines them, in total and per
 * length class. The parts: opts.c (command line), setup.c (requests,
 * target, outputs), run.c (the replay), report.c (the tables). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "report.h"
#include "lib/version.h"

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* One descriptor per request in flight: take what we may. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
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

static int report(struct dbk_bench *b)
{
	struct dbk_summary s[DBK_REPORT_COLUMNS];
	struct dbk_run_info info;
	char url[1400];
	double dur = (b->t_end - b->t_start) * b->o.time_scale;
	int c, rc = 0;

	for (c = 0; c < DBK_REPORT_COLUMNS; c++)
		if (dbk_stats_summarize(b->res, b->n, c == 0 ? DBK_STATS_ALL : c - 1, &b->o.slo,
		                        dur, &s[c]) != 0) {
			fprintf(stderr, "dbucket-bench: out of memory\n");
			return 1;
		}
	snprintf(url, sizeof(url), "http://%s%s", b->url.authority, b->url.path);
	memset(&info, 0, sizeof(info));
	info.version = DBK_VERSION;
	info.trace_path = b->o.slice.path;
	info.format = b->o.synthetic ? "synthetic" : dbk_trace_format_name(b->o.slice.format);
	info.synthetic = b->o.synthetic;
	info.rate = b->o.rate;
	info.seed = b->o.seed;
	info.rate_factor = b->o.slice.rate_factor;
	info.time_scale = b->o.time_scale;
	info.url = url;
	info.endpoint = b->o.endpoint == DBK_EP_CHAT ? "chat" : "completions";
	info.model = b->o.model;
	info.threshold = (uint32_t)b->o.threshold;
	info.max_model_len = (uint32_t)b->o.max_model_len;
	info.skip_overlong = b->o.skip_overlong;
	info.start_offset = b->o.slice.start_s;
	info.duration_limit = b->o.slice.duration_s;
	info.max_requests = b->o.slice.max_requests;
	info.concurrency_limit = (size_t)b->o.concurrency;
	info.timeout = b->o.timeout;
	info.slo = b->o.slo;
	info.clipped = b->sel.clipped;
	info.skipped = b->sel.skipped;
	info.raised = b->tr.n_raised;
	info.spread_ticks = b->o.slice.spread_ticks;
	info.spread = b->spread;
	info.interrupted = b->stopping;
	dbk_report_table(stdout, &info, s, b->res, b->n);
	dbk_prio_report(stdout, &b->o.prio, b->res, b->n, &b->o.slo, dur);
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

int main(int argc, char **argv)
{
	struct dbk_bench *b;
	int rc;

	/* The client struct holds a 64 KiB read buffer: heap, not stack. */
	b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "dbucket-bench: out of memory\n");
		return 1;
	}
	rc = dbk_bench_parse_args(argc, argv, &b->o);
	if (rc != 0) {
		free(b);
		return rc == 1 ? 0 : 2;
	}
	raise_fd_limit();
	rc = dbk_bench_setup(b);
	if (rc == 0) {
		dbk_bench_describe(b);
		dbk_bench_run(b);
		rc = report(b);
		if (b->stopping)
			rc = 130;
	}
	dbk_bench_free(b);
	free(b);
	return rc;
}
