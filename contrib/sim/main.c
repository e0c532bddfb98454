/* dbucket-sim: replays a request trace against a simulated vLLM fleet
 * under several routing policies and prints one table. Model time only:
 * a whole trace takes seconds of wall time. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opts.h"
#include "slo.h"
#include "policy.h"
#include "report.h"
#include "sim.h"
#include "bench/trace.h"  /* dbucket-bench's reader: one trace parser */

#define MAX_POLICIES 16

/* Splits the --policy list; "all" is every built-in one. */
static int pick_policies(const char *list, const struct dbk_sim_policy_ops **out,
                         size_t *n)
{
	char buf[256], *tok, *save = NULL;
	size_t i;

	*n = 0;
	if (strcmp(list, "all") == 0) {
		for (i = 0; i < MAX_POLICIES && dbk_sim_policy_at(i); i++)
			out[(*n)++] = dbk_sim_policy_at(i);
		return 0;
	}
	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct dbk_sim_policy_ops *p = dbk_sim_policy_find(tok);

		if (!p || *n == MAX_POLICIES) {
			fprintf(stderr, "dbucket-sim: unknown policy '%s' (see "
			        "--help)\n", tok);
			return -1;
		}
		out[(*n)++] = p;
	}
	return *n ? 0 : -1;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void engine_cfg(const struct opts *o, bool is_short,
                       struct dbk_engine_config *c)
{
	dbk_engine_config_default(c, dbk_gpu_profile_find(o->gpu));
	c->enable_prefix_caching = !o->no_prefix_caching;
	if (o->max_model_len)
		c->max_model_len = (uint32_t)o->max_model_len;
	if (o->batched)
		c->max_num_batched_tokens = (uint32_t)o->batched;
	if (o->seqs)
		c->max_num_seqs = (uint32_t)o->seqs;
	if (o->kv)
		c->kv_capacity_tokens = o->kv;
	if (is_short && o->short_max_model_len)
		c->max_model_len = (uint32_t)o->short_max_model_len;
	if (is_short && o->short_kv)
		c->kv_capacity_tokens = o->short_kv;
}

/* The slice [first, first + n) of the trace as simulator requests,
 * shifted to start at 0 and compressed by the rate factor. */
static void fill_reqs(const struct dbk_trace *tr, size_t first, size_t n,
                      double rate_factor, struct dbk_sim_req *reqs)
{
	size_t k;

	for (k = 0; k < n; k++) {
		const struct dbk_trace_req *r = &tr->req[first + k];

		reqs[k].id = (uint32_t)k;
		reqs[k].arrival_s = (r->t - tr->req[first].t) / rate_factor;
		reqs[k].input_tokens = r->input;
		reqs[k].output_tokens = r->output;
		reqs[k].hash_ids = r->n_hash ? tr->hash + r->hash_off : NULL;
		reqs[k].n_hash_ids = r->n_hash;
		reqs[k].session = r->session;
		reqs[k].has_session = r->has_session;
	}
}

/* Writes text (NULL: memory ran short) to path and frees it; 0 or -1,
 * the reason on stderr. */
static int write_text(const char *path, char *text)
{
	FILE *f;
	int rc;

	if (!text) {
		fprintf(stderr, "dbucket-sim: out of memory writing JSON\n");
		return -1;
	}
	f = fopen(path, "w");
	rc = f ? 0 : -1;
	if (f) {
		if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
			rc = -1;
		if (fclose(f) != 0)
			rc = -1;
	}
	free(text);
	if (rc != 0)
		fprintf(stderr, "dbucket-sim: %s: %s\n", path, strerror(errno));
	return rc;
}

/* One simulation; 0, or -1 with the reason on stderr. */
static int run_one(const struct dbk_sim_config *sc, const struct dbk_sim_req *reqs,
                   size_t n, const struct dbk_sim_policy_ops *pol,
                   struct dbk_sim_result *res)
{
	struct dbk_sim *s;
	char err[256];
	int rc;

	s = dbk_sim_new(sc, reqs, n, pol, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", pol->name, err);
		return -1;
	}
	rc = dbk_sim_run(s, err, sizeof(err));
	if (rc == 0 && dbk_sim_result(s, res) != 0) {
		snprintf(err, sizeof(err), "out of memory in the metrics");
		rc = -1;
	}
	dbk_sim_free(s);
	if (rc != 0)
		fprintf(stderr, "dbucket-sim: %s: %s\n", pol->name, err);
	return rc;
}

struct cap_ctx {
	const struct dbk_sim_config *sc;
	const struct dbk_trace *tr;
	struct dbk_sim_req *reqs;
	size_t first, n;
	const struct dbk_sim_policy_ops *pol;
	double target;
	struct dbk_sim_result last;
	double hit_at_capacity;  /* prefix-cache hit rate at the capacity */
	double best_rate;
};

/* Prefix-cache hit rate of a run: hit tokens over looked-up tokens, as
 * vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total. */
static double hit_rate(const struct dbk_sim_result *r)
{
	return r->prefix_cache_queries
	               ? (double)r->prefix_cache_hits / (double)r->prefix_cache_queries
	               : 0;
}

/* Attainment: requests that completed within every objective, over all
 * requests (failures count against it). */
static int cap_eval(void *ctx, double rate, double *attain)
{
	struct cap_ctx *c = ctx;
	const struct dbk_class_summary *all;

	fill_reqs(c->tr, c->first, c->n, rate, c->reqs);
	if (run_one(c->sc, c->reqs, c->n, c->pol, &c->last) != 0)
		return -1;
	all = &c->last.cls[DBK_CLASS_ALL];
	*attain = all->requests ? (double)all->good / (double)all->requests : 0;
	if (*attain >= c->target && rate > c->best_rate) {
		c->best_rate = rate;
		c->hit_at_capacity = hit_rate(&c->last);
	}
	return 0;
}

/* --slo-capacity: one search per policy, then the table. */
static int capacity_mode(const struct opts *o, const struct dbk_sim_config *sc,
                         struct dbk_sim_req *reqs, const struct dbk_trace *tr,
                         size_t first, size_t n,
                         const struct dbk_sim_policy_ops **pol, size_t npol)
{
	struct dbk_slo_result res[MAX_POLICIES];
	double hit[MAX_POLICIES];
	char *text;
	size_t k, lc = npol;

	printf("SLO capacity: highest rate factor with >= %.0f%% of requests "
	       "within TTFT %g ms and TPOT %g ms; search from %g, tolerance "
	       "%g, at most %u runs\n\n", o->search.target * 100,
	       o->slo_ttft_ms, o->slo_tpot_ms, o->search.start,
	       o->search.rel_tol, o->search.max_evals);
	printf("%-16s %10s %8s %18s %7s %6s %6s\n", "policy", "capacity", "vs lc",
	       "attained", "hit %", "runs", "closed");
	for (k = 0; k < npol; k++) {
		struct cap_ctx c;

		memset(&c, 0, sizeof(c));
		c.sc = sc;
		c.tr = tr;
		c.reqs = reqs;
		c.first = first;
		c.n = n;
		c.pol = pol[k];
		c.target = o->search.target;

		if (dbk_slo_capacity(&o->search, cap_eval, &c, &res[k]) != 0)
			return 1;
		hit[k] = c.hit_at_capacity;
		if (strcmp(pol[k]->name, "lc") == 0)
			lc = k;
	}
	for (k = 0; k < npol; k++) {
		char ratio[16] = "-";

		if (lc < npol && res[lc].rate > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", res[k].rate / res[lc].rate);
		char met[40];

		if (res[k].rate > 0)
			snprintf(met, sizeof(met), "%.1f%%", 100 * res[k].attain);
		else /* how close it came, and where */
			snprintf(met, sizeof(met), "max %.1f%% at %.3g",
			         100 * res[k].best_attain, res[k].best_attain_rate);
		printf("%-16s %10.4g %8s %18s %7.1f %6u %6s\n", pol[k]->name,
		       res[k].rate, ratio, met, 100 * hit[k],
		       res[k].evals, res[k].closed ? "yes" : "no");
	}
	if (o->json) {
		cJSON *root = cJSON_CreateObject();
		cJSON *arr = root ? cJSON_AddArrayToObject(root, "capacity") : NULL;

		for (k = 0; arr && k < npol; k++) {
			cJSON *e = cJSON_CreateObject();

			if (!e || !cJSON_AddItemToArray(arr, e))
				break;
			cJSON_AddStringToObject(e, "policy", pol[k]->name);
			cJSON_AddNumberToObject(e, "rate_factor", res[k].rate);
			if (lc < npol && res[lc].rate > 0)
				cJSON_AddNumberToObject(e, "ratio_to_lc",
				                        res[k].rate / res[lc].rate);
			cJSON_AddNumberToObject(e, "attainment", res[k].attain);
			cJSON_AddNumberToObject(e, "best_attainment", res[k].best_attain);
			cJSON_AddNumberToObject(e, "best_attainment_rate_factor",
			                        res[k].best_attain_rate);
			cJSON_AddNumberToObject(e, "prefix_cache_hit_rate", hit[k]);
			cJSON_AddNumberToObject(e, "runs", res[k].evals);
			cJSON_AddBoolToObject(e, "closed", res[k].closed);
		}
		cJSON_AddNumberToObject(root, "target", o->search.target);
		cJSON_AddNumberToObject(root, "tolerance", o->search.rel_tol);
		cJSON_AddNumberToObject(root, "instances", o->instances);
		text = root ? cJSON_Print(root) : NULL;
		cJSON_Delete(root);
		if (write_text(o->json, text) != 0)
			return 1;
	}
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* What main prints at the top and records in the JSON's "setup". */
struct setup {
	const struct opts *o;
	enum dbk_trace_format fmt;
	size_t first, n, window, parsed;
	bool raised;
	double span, in_tok;
	unsigned nshort;
	struct dbk_engine_config cshort, clong;
};

static void print_setup(const struct setup *u)
{
	const struct opts *o = u->o;

	printf("dbucket-sim %s: %s (%s), %zu requests (#%zu..#%zu of %zu in "
	       "the window, %zu in the trace)%s\n", DBK_SIM_VERSION,
	       base_name(o->trace), dbk_trace_format_name(u->fmt), u->n,
	       u->first, u->first + u->n - 1, u->window, u->parsed,
	       u->raised ? "; zero lengths raised to 1" : "");
	printf("rate factor %g: arrivals over %.1f s of model time, offered "
	       "%.2f req/s, %.0f input tok/s\n", o->rate_factor, u->span,
	       u->span > 0 ? (double)u->n / u->span : 0,
	       u->span > 0 ? u->in_tok / u->span : 0);
	printf("%u x %s; short group 0..%u: max-model-len %u, kv %llu tokens",
	       o->instances, o->gpu, u->nshort - 1, u->cshort.max_model_len,
	       (unsigned long long)u->cshort.kv_capacity_tokens);
	if (u->nshort < o->instances)
		printf("; long group %u..%u: max-model-len %u, kv %llu tokens",
		       u->nshort, o->instances - 1, u->clong.max_model_len,
		       (unsigned long long)u->clong.kv_capacity_tokens);
	printf("; budget %u, max-num-seqs %u; prefix caching %s\n",
	       u->clong.max_num_batched_tokens, u->clong.max_num_seqs,
	       o->no_prefix_caching ? "off" : "on");
	printf("threshold %g tokens; SLO ttft %g ms, tpot %g ms, e2e %g ms "
	       "(0: not applied); overhead %g ms\n\n", o->threshold,
	       o->slo_ttft_ms, o->slo_tpot_ms, o->slo_e2e_ms, o->overhead_ms);
	fflush(stdout);
}

static void add_setup_json(cJSON *setup, const struct setup *u)
{
	const struct opts *o = u->o;

	cJSON_AddStringToObject(setup, "trace", base_name(o->trace));
	cJSON_AddStringToObject(setup, "format", dbk_trace_format_name(u->fmt));
	cJSON_AddNumberToObject(setup, "start_s", o->start_s);
	cJSON_AddNumberToObject(setup, "duration_s", o->duration_s);
	cJSON_AddNumberToObject(setup, "first_request", (double)u->first);
	cJSON_AddNumberToObject(setup, "requests", (double)u->n);
	cJSON_AddNumberToObject(setup, "rate_factor", o->rate_factor);
	cJSON_AddNumberToObject(setup, "arrival_span_s", u->span);
	cJSON_AddNumberToObject(setup, "instances", o->instances);
	cJSON_AddNumberToObject(setup, "short_instances", u->nshort);
	cJSON_AddStringToObject(setup, "gpu", o->gpu);
	cJSON_AddNumberToObject(setup, "short_max_model_len", u->cshort.max_model_len);
	cJSON_AddNumberToObject(setup, "short_kv_capacity_tokens",
	                        (double)u->cshort.kv_capacity_tokens);
	cJSON_AddNumberToObject(setup, "long_max_model_len", u->clong.max_model_len);
	cJSON_AddNumberToObject(setup, "long_kv_capacity_tokens",
	                        (double)u->clong.kv_capacity_tokens);
	cJSON_AddNumberToObject(setup, "max_num_batched_tokens",
	                        u->clong.max_num_batched_tokens);
	cJSON_AddNumberToObject(setup, "max_num_seqs", u->clong.max_num_seqs);
	cJSON_AddBoolToObject(setup, "prefix_caching", !o->no_prefix_caching);
	cJSON_AddNumberToObject(setup, "threshold_tokens", o->threshold);
	cJSON_AddNumberToObject(setup, "max_request_tokens", o->max_request_tokens);
	cJSON_AddNumberToObject(setup, "json_overhead_bytes", o->json_overhead);
	cJSON_AddNumberToObject(setup, "overhead_ms", o->overhead_ms);
	cJSON_AddNumberToObject(setup, "slo_ttft_ms", o->slo_ttft_ms);
	cJSON_AddNumberToObject(setup, "slo_tpot_ms", o->slo_tpot_ms);
	cJSON_AddNumberToObject(setup, "slo_e2e_ms", o->slo_e2e_ms);
}

/* The default mode: one run per policy, the tables, the JSON. 0 or 1. */
static int runs_mode(const struct setup *u, const struct dbk_sim_config *sc,
                     const struct dbk_sim_req *reqs,
                     const struct dbk_sim_policy_ops **pol, size_t npol)
{
	struct dbk_sim_run_report runs[MAX_POLICIES];
	const struct opts *o = u->o;
	size_t k;
	int baseline;

	memset(runs, 0, sizeof(runs));
	for (k = 0; k < npol; k++) {
		double t0 = wall_now();

		if (run_one(sc, reqs, u->n, pol[k], &runs[k].res) != 0)
			return 1;
		runs[k].policy = pol[k]->name;
		runs[k].wall_s = wall_now() - t0;
	}
	baseline = dbk_sim_report_find(runs, npol, "lc");
	dbk_sim_report_table(stdout, runs, npol, baseline);
	printf("\n%-16s %9s %9s %8s %9s %9s %9s\n", "policy", "preempt", "redirect",
	       "too-long", "refused", "busy %", "hit %");
	for (k = 0; k < npol; k++) {
		const struct dbk_sim_result *r = &runs[k].res;

		printf("%-16s %9llu %9llu %8llu %9llu %9.1f %9.1f\n", runs[k].policy,
		       (unsigned long long)r->preemptions,
		       (unsigned long long)r->redirects,
		       (unsigned long long)r->too_long,
		       (unsigned long long)r->refused,
		       r->duration_s > 0 ? 100.0 * r->busy_s /
		                           (r->duration_s * o->instances) : 0,
		       100 * hit_rate(r));
	}
	if (o->json) {
		cJSON *root = dbk_sim_report_json(runs, npol, baseline);
		cJSON *setup = root ? cJSON_AddObjectToObject(root, "setup") : NULL;
		char *text = NULL;

		if (setup) {
			add_setup_json(setup, u);
			text = cJSON_Print(root);
		}
		cJSON_Delete(root);
		if (write_text(o->json, text) != 0)
			return 1;
	}
	return 0;
}

/* Reads and parses the trace, then keeps its slice: the time window,
 * then the count. 0, or 1 with the reason on stderr. */
static int load_trace(const struct opts *o, struct dbk_trace *tr,
                      struct setup *u)
{
	struct dbk_select sel;
	struct dbk_select_stats sst;
	size_t len = 0, last;
	char *buf, err[256];
	int rc;

	memset(tr, 0, sizeof(*tr));
	buf = read_file(o->trace, &len);
	if (!buf) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", o->trace, strerror(errno));
		return 1;
	}
	u->fmt = o->format != DBK_TRACE_UNKNOWN ? o->format
	                                        : dbk_trace_detect(o->trace, buf, len);
	rc = dbk_trace_parse(u->fmt, buf, len, tr, err, sizeof(err));
	free(buf);
	if (rc != 0) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", o->trace, err);
		return 1;
	}
	u->parsed = tr->n;
	/* The time window; no max-model-len here: a request too long for
	 * the instance it is sent to fails there, as vLLM's 400 does. */
	memset(&sel, 0, sizeof(sel));
	sel.start_s = o->start_s;
	sel.duration_s = o->duration_s;
	dbk_trace_select(tr, &sel, &sst);
	u->window = tr->n;
	u->raised = tr->n_raised > 0;
	u->first = o->skip < tr->n ? o->skip : tr->n;
	last = tr->n;
	if (o->max_requests && last - u->first > o->max_requests)
		last = u->first + o->max_requests;
	u->n = last - u->first;
	if (u->n == 0) {
		fprintf(stderr, "dbucket-sim: no request left in the slice\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	const struct dbk_sim_policy_ops *pol[MAX_POLICIES];
	struct dbk_engine_config *ecfg = NULL;
	struct dbk_sim_config sc;
	struct dbk_sim_req *reqs = NULL;
	struct dbk_trace tr;
	struct setup u;
	size_t npol = 0, k;
	unsigned i;
	int rc, ret = 1;

	rc = dbk_sim_parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (pick_policies(o.policies, pol, &npol) != 0)
		return 2;
	memset(&u, 0, sizeof(u));
	u.o = &o;
	if (load_trace(&o, &tr, &u) != 0)
		goto out;
	reqs = calloc(u.n, sizeof(*reqs));
	ecfg = calloc(o.instances, sizeof(*ecfg));
	if (!reqs || !ecfg) {
		fprintf(stderr, "dbucket-sim: out of memory\n");
		goto out;
	}
	/* Shifted to start at 0 and compressed by the rate factor. */
	fill_reqs(&tr, u.first, u.n, o.rate_factor, reqs);
	for (k = 0; k < u.n; k++)
		u.in_tok += reqs[k].input_tokens;
	u.span = reqs[u.n - 1].arrival_s;

	u.nshort = dbk_sim_short_count(o.instances);
	engine_cfg(&o, true, &u.cshort);
	engine_cfg(&o, false, &u.clong);
	for (i = 0; i < o.instances; i++)
		ecfg[i] = i < u.nshort ? u.cshort : u.clong;
	dbk_sim_config_default(&sc);
	sc.ninstances = o.instances;
	sc.engines = ecfg;
	sc.overhead_s = o.overhead_ms / 1e3;
	sc.lb_nodes = (unsigned)o.lb_nodes;
	sc.threshold_tokens = o.threshold;
	sc.max_request_tokens = o.max_request_tokens;
	sc.json_overhead_bytes = o.json_overhead;
	sc.slo.ttft_s = o.slo_ttft_ms / 1e3;
	sc.slo.tpot_s = o.slo_tpot_ms / 1e3;
	sc.slo.e2e_s = o.slo_e2e_ms / 1e3;

	print_setup(&u);
	if (o.slo_capacity)
		ret = capacity_mode(&o, &sc, reqs, &tr, u.first, u.n, pol, npol);
	else
		ret = runs_mode(&u, &sc, reqs, pol, npol);
out:
	free(reqs);
	free(ecfg);
	dbk_trace_free(&tr);
	return ret;
}
