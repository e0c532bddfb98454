/* dbucket-bench's program state, shared by its parts: the command line
 * (opts.c), loading the requests and opening what the run needs
 * (setup.c), the event loop that replays them (run.c) and the report
 * (main.c). */
#ifndef DBK_BENCH_BENCH_H
#define DBK_BENCH_BENCH_H

#include <ev.h>
#include <stdbool.h>
#include <stdio.h>

#include "client.h"
#include "priority.h"
#include "request.h"
#include "stats.h"
#include "model/trace.h"

struct dbk_bench_opts {
	/* The trace file, or with --synthetic the generator's count and
	 * duration (its path and window unused). */
	struct dbk_trace_slice slice;
	const char *synthetic;
	double rate; /* 0 when not given */
	unsigned long long seed;
	long long max_model_len;
	bool skip_overlong;
	const char *url;
	unsigned node_i, node_k; /* --node I/K; 0: every request */
	enum dbk_endpoint endpoint;
	const char *model;
	bool allow_remote;
	long long concurrency;
	double timeout; /* model seconds */
	double time_scale;
	long long threshold;
	struct dbk_slo slo; /* seconds */
	const char *json_path, *csv_path;
	bool progress;
	const char *priority_mix; /* --priority-mix, as given; NULL: none */
	struct dbk_prio_mix prio;
};

/* Callback context of one request. */
struct dbk_bench_slot {
	struct dbk_bench *b;
	size_t i;
};

struct dbk_bench {
	struct dbk_bench_opts o;
	struct ev_loop *loop;
	struct dbk_trace tr;
	struct dbk_select_stats sel;
	size_t spread; /* arrivals --spread-ticks moved */
	struct dbk_url url;
	char *model_json;
	struct dbk_client client;
	struct dbk_result *res;
	struct dbk_bench_slot *slots;
	size_t n;
	size_t next_due;  /* requests [0, next_due) have arrived */
	size_t next_send; /* [0, next_send) have been sent */
	size_t n_done, n_failed;
	bool fd_starved; /* out of descriptors: wait for a call */
	bool stopping;
	double t_start, t_end; /* monotonic seconds */
	ev_timer arrival_w, progress_w;
	ev_signal sigint_w, sigterm_w;
	struct dbk_buf req, body;
	FILE *json_f, *csv_f;
};

/* opts.c: the command line. 0 run, 1 exit 0 (--help, --version printed),
 * 2 bad usage (said on stderr). */
int dbk_bench_parse_args(int argc, char **argv, struct dbk_bench_opts *o);

/* setup.c: parses the URL, loads and selects the requests, checks the
 * server answers, opens the outputs and the loop. 0, 1 (runtime error)
 * or 2 (bad input), said on stderr. dbk_bench_free undoes it, whatever
 * its result. */
int dbk_bench_setup(struct dbk_bench *b);
void dbk_bench_describe(const struct dbk_bench *b);
void dbk_bench_free(struct dbk_bench *b);

/* run.c: replays the requests until all are done or a signal stops the
 * run (b->stopping). */
void dbk_bench_run(struct dbk_bench *b);

/* Arrival time of request i, real seconds from the start. */
double dbk_bench_arrival_wall(const struct dbk_bench *b, size_t i);

#endif
