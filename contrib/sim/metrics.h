/* Serving metrics as vLLM's benchmark client defines them
 * (ENGINE-MODEL.md, "Metrics"): TTFT, TPOT, ITL, E2E, request and output
 * token throughput, goodput under SLOs; in total and per length class.
 *
 * Pure: the simulator feeds model times in seconds. Failures are counted
 * apart and never enter a latency. */
#ifndef DBK_SIM_METRICS_H
#define DBK_SIM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length classes: below the threshold (short) or at/above it (long),
 * and both together. */
enum dbk_sim_class { DBK_CLASS_ALL = 0, DBK_CLASS_SHORT, DBK_CLASS_LONG, DBK_NCLASSES };

const char *dbk_metrics_class_name(enum dbk_sim_class c);

/* Service-level objectives in seconds; 0 means not applied. A request is
 * "good" when it completed and meets every applied one (vLLM's
 * --goodput: ttft, tpot, e2el). */
struct dbk_slo {
	double ttft_s, tpot_s, e2e_s;
};

struct dbk_dist {
	size_t n;
	double mean, p50, p90, p99, max;
};

struct dbk_class_summary {
	uint64_t requests; /* completed + failed */
	uint64_t completed, failed, good;
	uint64_t input_tokens, output_tokens; /* of completed requests */
	double req_per_s;                     /* completed / duration */
	double tok_per_s;                     /* output tokens / duration */
	double goodput;                       /* good / duration */
	struct dbk_dist ttft, tpot, itl, e2e; /* seconds */
};

struct dbk_dvec {
	double *v;
	size_t n, cap;
};

struct dbk_metrics {
	struct dbk_slo slo;
	/* Index 0: short, 1: long. */
	struct dbk_dvec ttft[2], tpot[2], itl[2], e2e[2];
	uint64_t completed[2], failed[2], good[2];
	uint64_t in_tok[2], out_tok[2];
	bool oom; /* a sample was lost to memory */
};

void dbk_metrics_init(struct dbk_metrics *m, const struct dbk_slo *slo);
void dbk_metrics_free(struct dbk_metrics *m);

/* One gap between consecutive tokens of a request. */
void dbk_metrics_itl(struct dbk_metrics *m, bool is_long, double gap_s);
/* A completed request: ttft and e2e from its send time. Whether it met
 * every objective (good). */
/* Whether a request whose first token came ttft_s after its send and
 * its last e2e_s after it, with out_tokens tokens, meets every
 * objective of slo (TPOT as vLLM's client computes it). */
bool dbk_metrics_meets(const struct dbk_slo *slo, double ttft_s, double e2e_s, uint32_t out_tokens);
bool dbk_metrics_completed(struct dbk_metrics *m, bool is_long, double ttft_s, double e2e_s,
                           uint32_t in_tokens, uint32_t out_tokens);
void dbk_metrics_failed(struct dbk_metrics *m, bool is_long);

/* Fills out[DBK_NCLASSES]. Reorders the stored samples (selection), so
 * call it once. Returns -1 when memory runs short (out then partial). */
int dbk_metrics_summarize(struct dbk_metrics *m, double duration_s, struct dbk_class_summary *out);

/* The q-quantile (0..1) of v[0..n) with numpy's default linear
 * interpolation; reorders v. O(n). 0 when n == 0. */
double dbk_metrics_quantile(double *v, size_t n, double q);

#endif
