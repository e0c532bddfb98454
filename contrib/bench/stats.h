/* Benchmark metrics as agent/model/ENGINE-MODEL.md defines them
 * (vLLM's own benchmark client): TTFT, TPOT, ITL, E2E, throughputs and
 * goodput over per-request results. Pure. All times here are seconds of
 * model time; the caller scales what it measured. */
#ifndef DBK_BENCH_STATS_H
#define DBK_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dbk_class { DBK_CLASS_SHORT = 0, DBK_CLASS_LONG = 1 };
/* Summaries: the total and one per class. */
#define DBK_STATS_ALL (-1)

struct dbk_result {
	double arrival;   /* scheduled, from the start of the run */
	double sent;      /* actual send time, same origin */
	double ttft, e2e; /* valid when ok */
	uint32_t prompt_tokens, max_tokens;
	uint32_t output_tokens; /* usage, else counted chunks; when ok */
	int status;             /* HTTP status, 0 when none was read */
	bool ok;
	bool started; /* sent (sent is valid) */
	bool done;    /* finished, either way */
	uint8_t cls;  /* enum dbk_class */
	uint8_t prio; /* index in --priority-mix, DBK_PRIO_NONE without */
	double *itl;  /* gaps between choices messages, when ok */
	size_t n_itl;
	char served_by[64];
	char error[160]; /* why it failed, "" when ok */
};

/* Only the SLOs given (> 0) are applied. */
struct dbk_slo {
	double ttft, tpot, e2e;
};

struct dbk_dist {
	size_t n;
	double mean, median, p90, p99, max; /* NAN when n == 0 */
};

struct dbk_summary {
	size_t requests, completed, failed;
	uint64_t input_tokens, output_tokens; /* of completed requests */
	double duration;
	double req_throughput, out_throughput, in_throughput;
	double goodput; /* NAN when no SLO is given */
	size_t good;
	struct dbk_dist ttft, tpot, itl, e2e;
};

/* np.percentile's default (linear between closest ranks) over sorted
 * values, p in 0..100; NAN when n == 0. */
double dbk_stats_percentile(const double *sorted, size_t n, double p);

/* Sorts v in place, then fills d. */
void dbk_stats_dist(double *v, size_t n, struct dbk_dist *d);

/* (e2e - ttft) / (output - 1) for outputs longer than one token; false
 * (no TPOT) otherwise. */
bool dbk_stats_tpot(double ttft, double e2e, uint32_t output, double *tpot);

/* Every given SLO met (value <= SLO). A request with no TPOT meets a TPOT
 * SLO, as in vLLM, which counts it as 0. */
bool dbk_stats_slo_met(const struct dbk_slo *slo, const struct dbk_result *r);
bool dbk_stats_slo_any(const struct dbk_slo *slo);

/* Summary of the results of class cls (or DBK_STATS_ALL) over a run of
 * duration seconds. 0, or -1 when out of memory. */
int dbk_stats_summarize(const struct dbk_result *r, size_t n, int cls, const struct dbk_slo *slo,
                        double duration, struct dbk_summary *out);

#endif
