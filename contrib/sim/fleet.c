/* The fleet from the command line; see fleet.h. */
#include "fleet.h"

#include <stdlib.h>
#include <string.h>

unsigned dbk_sim_gpu_count(const char *list)
{
	unsigned n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

const struct dbk_engine_profile *dbk_sim_gpu_at(const char *list, unsigned i)
{
	char name[16];
	unsigned k = i % dbk_sim_gpu_count(list);

	for (; k > 0; k--)
		list = strchr(list, ',') + 1;
	size_t len = strcspn(list, ",");
	if (len >= sizeof(name))
		return NULL;
	memcpy(name, list, len);
	name[len] = '\0';
	return dbk_engine_profile_find(name);
}

/* Instance i's engine: its GPU profile's defaults, then what the command
 * line overrides, for every instance or the short group. */
static void engine_cfg(const struct dbk_sim_opts *o, unsigned i, bool is_short,
                       struct dbk_engine_config *c)
{
	dbk_engine_config_default(c, dbk_sim_gpu_at(o->gpu, i));
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
	if (o->models.nadapters) /* vLLM's --enable-lora --max-loras */
		c->max_loras = (uint32_t)o->max_loras;
	if (o->models.nadapters && o->lora_load_ms >= 0)
		c->lora_load_s = o->lora_load_ms / 1e3;
}

int dbk_sim_fleet_build(struct dbk_sim_fleet *f, const struct dbk_sim_opts *o)
{
	unsigned i, n = (unsigned)o->instances;
	struct dbk_sim_config *sc = &f->sc;

	memset(f, 0, sizeof(*f));
	f->engines = calloc(n, sizeof(*f->engines));
	if (!f->engines)
		return -1;
	f->nshort = dbk_sim_short_count(n);
	for (i = 0; i < n; i++)
		engine_cfg(o, i, i < f->nshort, &f->engines[i]);
	f->cshort = f->engines[0];
	f->clong = f->engines[f->nshort < n ? f->nshort : 0];
	dbk_sim_config_default(sc);
	sc->ninstances = n;
	sc->engines = f->engines;
	sc->lora_load_s = f->engines[0].max_loras ? f->engines[0].lora_load_s : 0;
	sc->overhead_s = o->overhead_ms / 1e3;
	sc->scrape_flight_s = o->scrape_flight_ms / 1e3;
	sc->lb_nodes = (unsigned)o->lb_nodes;
	sc->lb_sticky = o->lb_sticky;
	sc->lb_share = o->lb_share_ms >= 0;
	sc->lb_share_books = o->lb_share_books;
	sc->lb_share_sessions = o->lb_share_sessions;
	sc->lb_share_s = sc->lb_share ? o->lb_share_ms / 1e3 : 0;
	sc->stall_weight = o->stall_weight;
	sc->engine_speed = o->engine_speed;
	sc->ttft_budget_tokens = (double)o->batched;
	sc->threshold_tokens = o->threshold;
	sc->max_request_tokens = o->max_request_tokens;
	sc->json_overhead_bytes = o->json_overhead;
	sc->slo.ttft_s = o->slo_ttft_ms / 1e3;
	sc->slo.tpot_s = o->slo_tpot_ms / 1e3;
	sc->slo.e2e_s = o->slo_e2e_ms / 1e3;
	sc->scale = o->scale;
	sc->nscale = o->nscale;
	sc->warmup_s = o->warmup_s;
	sc->warmup_factor = o->warmup_factor;
	dbk_admit_config_default(&sc->admit);
	sc->admit.enabled = o->admission;
	if (o->slo_ttft_ms > 0) /* else the agent's default objective */
		sc->admit.ttft_ms = (long long)o->slo_ttft_ms;
	sc->admit.tpot_ms = o->admit_tpot_ms;
	for (int k = DBK_CLASS_STANDARD; k < DBK_CLASS_N; k++)
		if (o->admit_share[k] >= 0)
			sc->admit.headroom[k] = o->admit_share[k];
	sc->shed_retry = o->shed_retry;
	sc->shed_retry_sdk = o->shed_retry_sdk;
	sc->admit_queue_s = o->admit_queue_s;
	sc->admit_queue_in_time = o->admit_queue_in_time;
	if (o->fail_instance >= 0) {
		sc->fail_inst = (unsigned)o->fail_instance;
		sc->fail_from_s = o->fail_from_s;
		sc->fail_share = o->fail_share;
	}
	if (o->slow_instance >= 0) {
		sc->slow_inst = (unsigned)o->slow_instance;
		sc->slow_from_s = o->slow_from_s;
		sc->slow_until_s = o->slow_until_s;
		sc->slow_factor = o->slow_factor;
	}
	if (o->observe_l7) { /* HAProxy's defaults: error-limit 10; rise 2 x inter 2 s */
		sc->error_limit = 10;
		sc->down_s = 4;
	}
	if (o->nweights) {
		if (!(f->weights = calloc(n, sizeof(*f->weights))))
			return -1;
		for (i = 0; i < n; i++)
			f->weights[i] = o->weights[i % o->nweights];
		sc->weights = f->weights;
	}
	if (o->models.nmodels) {
		if (!(f->inst_model = calloc(n, sizeof(*f->inst_model))) ||
		    dbk_sim_models_instances(&o->models, n, f->inst_model) != 0)
			return -1;
		sc->nmodels = o->models.nmodels;
		sc->inst_model = f->inst_model;
	}
	return 0;
}

void dbk_sim_fleet_free(struct dbk_sim_fleet *f)
{
	free(f->engines);
	free(f->weights);
	free(f->inst_model);
	f->inst_model = NULL;
	f->engines = NULL;
	f->weights = NULL;
}
