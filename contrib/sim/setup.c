/* The setup's description: the lines at the top of the output and the
 * JSON's "setup"; see modes.h. */
#include "modes.h"

#include <math.h>
#include <string.h>

#include "predict.h"
#include "lib/version.h"

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The fleet's changes, in the command line's own words. */
static void fleet_print(FILE *f, const struct dbk_sim_opts *o)
{
	fprintf(f, "fleet: scale %s; ramp %s; warm-up %g s x %g; ",
	        o->scale_text ? o->scale_text : "none", o->ramp_text ? o->ramp_text : "none",
	        o->warmup_s, o->warmup_factor);
	if (o->fail_instance >= 0)
		fprintf(f, "instance %d fails %g of its requests from %g s; ", o->fail_instance,
		        o->fail_share, o->fail_from_s);
	if (o->slow_instance >= 0) {
		fprintf(f, "instance %d's steps take %gx as long from %g s", o->slow_instance,
		        o->slow_factor, o->slow_from_s);
		if (o->slow_until_s < HUGE_VAL)
			fprintf(f, " until %g s", o->slow_until_s);
		fputs("; ", f);
	}
	fprintf(f, "observe-l7 %s; weights %s\n", o->observe_l7 ? "on" : "off",
	        o->weights_text ? o->weights_text : "none");
}

/* --models: each model's share and instances; the adapters. */
static void models_print(FILE *f, const struct dbk_sim_setup *u)
{
	const struct dbk_sim_models *m = &u->o->models;
	unsigned n[DBK_SIM_MAX_MODELS], off[DBK_SIM_MAX_MODELS];

	dbk_sim_models_count(m->nmodels, u->f.inst_model, u->f.sc.ninstances, u->w.reqs, u->w.n, n,
	                     off);
	fprintf(f, "models %s:", u->o->models_text);
	for (unsigned k = 0; k < m->nmodels; k++)
		fprintf(f, "%s model %u %u instances, %u requests", k ? ";" : "", k, n[k], off[k]);
	if (m->nadapters)
		fprintf(f,
		        "; %u adapters (Zipf %g within a model), %g of conversations on one; "
		        "max-loras %zu, a load %g ms",
		        m->nadapters, DBK_SIM_ZIPF_S, m->adapter_share, u->o->max_loras,
		        u->f.cshort.lora_load_s * 1e3);
	fputc('\n', f);
}

void dbk_sim_setup_print(FILE *f, const struct dbk_sim_setup *u)
{
	const struct dbk_sim_opts *o = u->o;
	const struct dbk_sim_workload *w = &u->w;
	const struct dbk_sim_fleet *fl = &u->f;
	unsigned n = (unsigned)o->instances;

	fprintf(f,
	        "dbucket-sim %s: %s (%s), %zu requests (#%zu..#%zu of %zu in "
	        "the window, %zu in the trace)%s",
	        DBK_VERSION, base_name(o->slice.path), dbk_trace_format_name(w->fmt), w->n,
	        w->first, w->first + w->n - 1, w->window, w->parsed,
	        w->raised ? "; zero lengths raised to 1" : "");
	if (o->slice.spread_ticks)
		fprintf(f, "; ticks spread: %zu of the trace's arrivals moved", w->spread);
	fputc('\n', f);
	fprintf(f,
	        "rate factor %g: arrivals over %.1f s of model time, offered "
	        "%.2f req/s, %.0f input tok/s\n",
	        o->slice.rate_factor, w->span_s, w->span_s > 0 ? (double)w->n / w->span_s : 0,
	        w->span_s > 0 ? w->in_tok / w->span_s : 0);
	fprintf(f, "%u x %s%s; short group 0..%u: max-model-len %u, kv %llu tokens", n, o->gpu,
	        dbk_sim_gpu_count(o->gpu) > 1 ? " in turn" : "", fl->nshort - 1,
	        fl->cshort.max_model_len, (unsigned long long)fl->cshort.kv_capacity_tokens);
	if (fl->nshort < n)
		fprintf(f, "; long group %u..%u: max-model-len %u, kv %llu tokens", fl->nshort,
		        n - 1, fl->clong.max_model_len,
		        (unsigned long long)fl->clong.kv_capacity_tokens);
	fprintf(f, "; budget %u, max-num-seqs %u%s; prefix caching %s\n",
	        fl->clong.max_num_batched_tokens, fl->clong.max_num_seqs,
	        dbk_sim_gpu_count(o->gpu) > 1 ? " (the long group's first)" : "",
	        o->no_prefix_caching ? "off" : "on");
	fprintf(f,
	        "threshold %g tokens; SLO ttft %g ms, tpot %g ms, e2e %g ms "
	        "(0: not applied); overhead %g ms\n",
	        o->threshold, o->slo_ttft_ms, o->slo_tpot_ms, o->slo_e2e_ms, o->overhead_ms);
	if (u->changing)
		fleet_print(f, o);
	if (o->nclasses || o->admission) {
		const struct dbk_admit_config *a = &u->f.sc.admit;

		fprintf(f, "classes %s (critical,standard,sheddable%s); admission %s",
		        o->classes_text ? o->classes_text : "none: all standard",
		        o->classes_drawn ? ", all drawn" : "", o->admission ? "on" : "off");
		if (o->admission)
			fprintf(f, ": standard %g, sheddable %g of %lld ms; retry %s",
			        a->headroom[DBK_CLASS_STANDARD], a->headroom[DBK_CLASS_SHEDDABLE],
			        a->ttft_ms,
			        o->shed_retry_sdk ? "as the SDKs"
			        : o->shed_retry   ? "once"
			                          : "none");
		if (o->admit_queue_s > 0)
			fprintf(f, "; held up to %g s before a shed%s", o->admit_queue_s,
			        o->admit_queue_in_time ? ", let in only in time" : "");
		fputc('\n', f);
	}
	if (o->models.nmodels)
		models_print(f, u);
	fputc('\n', f);
	fflush(f);
}

void dbk_sim_json_add(cJSON *o, const struct dbk_sim_member *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (m[i].kind == 's')
			cJSON_AddStringToObject(o, m[i].key, m[i].str);
		else if (m[i].kind == 'b')
			cJSON_AddBoolToObject(o, m[i].key, m[i].num != 0);
		else if (m[i].kind == 'n')
			cJSON_AddNumberToObject(o, m[i].key, m[i].num);
	}
}

void dbk_sim_setup_json(cJSON *setup, const struct dbk_sim_setup *u)
{
	const struct dbk_sim_opts *o = u->o;
	const struct dbk_sim_workload *w = &u->w;
	const struct dbk_engine_config *s = &u->f.cshort, *l = &u->f.clong;
	const struct dbk_sim_member m[] = {
		{ "trace", 's', 0, base_name(o->slice.path) },
		{ "format", 's', 0, dbk_trace_format_name(w->fmt) },
		{ "start_s", 'n', o->slice.start_s, NULL },
		{ "duration_s", 'n', o->slice.duration_s, NULL },
		{ "first_request", 'n', (double)w->first, NULL },
		{ "requests", 'n', (double)w->n, NULL },
		{ "rate_factor", 'n', o->slice.rate_factor, NULL },
		{ "spread_ticks", 'b', o->slice.spread_ticks, NULL },
		{ "arrival_span_s", 'n', w->span_s, NULL },
		{ "instances", 'n', o->instances, NULL },
		{ "short_instances", 'n', u->f.nshort, NULL },
		{ "gpu", 's', 0, o->gpu },
		{ "short_max_model_len", 'n', s->max_model_len, NULL },
		{ "short_kv_capacity_tokens", 'n', (double)s->kv_capacity_tokens, NULL },
		{ "long_max_model_len", 'n', l->max_model_len, NULL },
		{ "long_kv_capacity_tokens", 'n', (double)l->kv_capacity_tokens, NULL },
		{ "max_num_batched_tokens", 'n', l->max_num_batched_tokens, NULL },
		{ "max_num_seqs", 'n', l->max_num_seqs, NULL },
		{ "prefix_caching", 'b', !o->no_prefix_caching, NULL },
		{ "threshold_tokens", 'n', o->threshold, NULL },
		{ "max_request_tokens", 'n', o->max_request_tokens, NULL },
		{ "json_overhead_bytes", 'n', o->json_overhead, NULL },
		{ "overhead_ms", 'n', o->overhead_ms, NULL },
		{ "scrape_flight_ms", 'n', o->scrape_flight_ms, NULL },
		/* The ttft policy's. */
		{ "lb_nodes", 'n', o->lb_nodes ? o->lb_nodes : 1, NULL },
		{ "lb_sticky", 'b', o->lb_sticky, NULL },
		{ "lb_share_ms", o->lb_share_ms >= 0 ? 'n' : 0, o->lb_share_ms, NULL },
		{ "lb_share_books", o->lb_share_ms >= 0 ? 'b' : 0, o->lb_share_books, NULL },
		{ "lb_share_sessions", o->lb_share_ms >= 0 ? 'b' : 0, o->lb_share_sessions, NULL },
		{ "stall_weight", 'n',
		  o->stall_weight >= 0 ? o->stall_weight : DBK_PRED_STALL_WEIGHT, NULL },
		{ "engine_speed", 'n', o->engine_speed, NULL },
		{ "slo_ttft_ms", 'n', o->slo_ttft_ms, NULL },
		{ "slo_tpot_ms", 'n', o->slo_tpot_ms, NULL },
		{ "slo_e2e_ms", 'n', o->slo_e2e_ms, NULL },
	};

	dbk_sim_json_add(setup, m, sizeof(m) / sizeof(m[0]));
	if (o->nclasses || o->admission) {
		const struct dbk_admit_config *a = &u->f.sc.admit;
		const struct dbk_sim_member ad[] = {
			{ "classes", o->classes_text ? 's' : 0, 0, o->classes_text },
			{ "classes_drawn", o->classes_drawn ? 'b' : 0, 1, NULL },
			{ "admission", 'b', o->admission, NULL },
			{ "admit_share_standard", 'n', a->headroom[DBK_CLASS_STANDARD], NULL },
			{ "admit_share_sheddable", 'n', a->headroom[DBK_CLASS_SHEDDABLE], NULL },
			{ "shed_retry", 'b', o->shed_retry, NULL },
			{ "shed_retry_sdk", o->shed_retry_sdk ? 'b' : 0, 1, NULL },
			{ "admit_queue_s", o->admit_queue_s > 0 ? 'n' : 0, o->admit_queue_s, NULL },
			{ "admit_queue_in_time", o->admit_queue_in_time ? 'b' : 0, 1, NULL },
		};
		dbk_sim_json_add(setup, ad, sizeof(ad) / sizeof(ad[0]));
	}
	if (o->models.nmodels) {
		const struct dbk_sim_member mm[] = {
			{ "models", 's', 0, o->models_text },
			{ "adapters", 'n', o->models.nadapters, NULL },
			{ "adapter_share", o->models.nadapters ? 'n' : 0, o->models.adapter_share,
			  NULL },
			{ "max_loras", o->models.nadapters ? 'n' : 0, (double)o->max_loras, NULL },
			{ "lora_load_ms", o->models.nadapters ? 'n' : 0,
			  u->f.cshort.lora_load_s * 1e3, NULL },
		};
		dbk_sim_json_add(setup, mm, sizeof(mm) / sizeof(mm[0]));
	}
	if (!u->changing)
		return;
	const struct dbk_sim_member fl[] = {
		{ "scale", o->scale_text ? 's' : 0, 0, o->scale_text },
		{ "ramp", o->ramp_text ? 's' : 0, 0, o->ramp_text },
		{ "warmup_s", 'n', o->warmup_s, NULL },
		{ "warmup_factor", 'n', o->warmup_factor, NULL },
		{ "fail_instance", o->fail_instance >= 0 ? 'n' : 0, o->fail_instance, NULL },
		{ "fail_from_s", o->fail_instance >= 0 ? 'n' : 0, o->fail_from_s, NULL },
		{ "fail_share", o->fail_instance >= 0 ? 'n' : 0, o->fail_share, NULL },
		{ "slow_instance", o->slow_instance >= 0 ? 'n' : 0, o->slow_instance, NULL },
		{ "slow_from_s", o->slow_instance >= 0 ? 'n' : 0, o->slow_from_s, NULL },
		/* Left out when it is for ever: JSON has no infinity. */
		{ "slow_until_s", o->slow_instance >= 0 && o->slow_until_s < HUGE_VAL ? 'n' : 0,
		  o->slow_until_s, NULL },
		{ "slow_factor", o->slow_instance >= 0 ? 'n' : 0, o->slow_factor, NULL },
		{ "observe_l7", 'b', o->observe_l7, NULL },
		{ "weights", o->weights_text ? 's' : 0, 0, o->weights_text },
	};
	dbk_sim_json_add(setup, fl, sizeof(fl) / sizeof(fl[0]));
}
