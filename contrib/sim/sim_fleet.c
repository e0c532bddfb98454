/* A fleet that changes: slots filled and emptied, new engines, a
 * failing instance and HAProxy's mark-down; see sim.h's config and
 * sim_state.h. */
#include "sim_state.h"

#include "policy.h"

#include <stdlib.h>

#include "lib/hash.h"
#include "lib/log.h"

#define FAIL_SEED 0xfa11ULL

void dbk_sim_tell(struct dbk_sim *s, unsigned i, bool fresh)
{
	struct dbk_sim_inst *in = &s->inst[i];
	bool u = dbk_sim_inst_usable(in);

	if (u == in->told && !fresh)
		return;
	in->told = u;
	if (s->ops->member)
		s->ops->member(s->pst, s, i, u, fresh);
}

void dbk_sim_stats_add(struct dbk_engine_stats *sum, const struct dbk_engine_stats *st)
{
	sum->preemptions_total += st->preemptions_total;
	sum->steps_total += st->steps_total;
	sum->busy_time_s += st->busy_time_s;
	sum->prefix_cache_queries += st->prefix_cache_queries;
	sum->prefix_cache_hits += st->prefix_cache_hits;
	sum->lora_loads += st->lora_loads;
	sum->lora_activations += st->lora_activations;
}

void dbk_sim_slot_stats(const struct dbk_sim *s, unsigned i, struct dbk_engine_stats *out)
{
	struct dbk_engine_stats st;

	*out = s->inst[i].past;
	dbk_engine_get_stats(s->inst[i].e, &st);
	dbk_sim_stats_add(out, &st);
}

/* Slot i is filled. An empty slot gets a new instance: a new engine
 * (empty prefix cache, its /metrics counters at 0) that starts its
 * warm-up. A slot still draining gets its instance back as it is. */
static int join(struct dbk_sim *s, unsigned i)
{
	struct dbk_sim_inst *in = &s->inst[i];
	bool fresh = in->inflight == 0;

	in->present = true;
	if (fresh) {
		if (in->used) {
			struct dbk_engine *e = dbk_engine_new(&in->cfg);

			if (!e)
				return -1;
			dbk_sim_slot_stats(s, i, &in->past);
			dbk_engine_free(in->e);
			in->e = e;
			in->used = false;
			in->ttft_sum_s = 0;
			in->ttft_count = 0;
			in->itl_sum_s = 0;
			in->itl_count = 0;
		}
		in->joined_s = s->now;
		in->consec_err = 0;
		s->new_engines++;
	}
	dbk_sim_tell(s, i, fresh);
	return 0;
}

/* count instances from now on: slots 0..count-1 filled, the others
 * emptied (they drain what they hold). */
int dbk_sim_scale_to(struct dbk_sim *s, unsigned count)
{
	for (unsigned i = 0; i < s->cfg.ninstances; i++) {
		struct dbk_sim_inst *in = &s->inst[i];

		if (i < count && !in->present) {
			if (join(s, i) != 0)
				return -1;
		} else if (i >= count && in->present) {
			in->present = false;
			dbk_sim_tell(s, i, false);
		}
	}
	return 0;
}

/* Whether the failing instance answers request id with a 500: from
 * fail_from_s on, a seeded draw per request under fail_share. The draw
 * is in (0, 1], hence <=: a share of 1 fails every request. */
bool dbk_sim_fails(const struct dbk_sim *s, unsigned i, uint32_t id)
{
	const struct dbk_sim_config *c = &s->cfg;

	if (!(c->fail_share > 0) || i != c->fail_inst || s->now - s->t0 < c->fail_from_s)
		return false;
	uint64_t draw = FAIL_SEED ^ id;
	return dbk_hash_unit(&draw) <= c->fail_share;
}

double dbk_sim_step_factor(const struct dbk_sim *s, unsigned i)
{
	const struct dbk_sim_config *c = &s->cfg;
	const struct dbk_sim_inst *in = &s->inst[i];
	double f = 1, t = s->now - s->t0;

	if (c->warmup_s > 0 && s->now - in->joined_s < c->warmup_s)
		f *= c->warmup_factor;
	if (c->slow_factor > 0 && i == c->slow_inst && t >= c->slow_from_s && t < c->slow_until_s)
		f *= c->slow_factor;
	return f;
}

size_t dbk_sim_slow_windows(const struct dbk_sim *s, double window_s,
                            struct dbk_sim_slow_window *out, size_t max)
{
	const struct dbk_sim_req *r0 = dbk_sim_req(s, 0);
	size_t n = 0;

	for (uint32_t id = 0; r0 && window_s > 0 && id < s->n; id++) {
		double w = (s->reqs[id].arrival_s - r0->arrival_s) / window_s;
		size_t k = w < (double)max ? (size_t)w : max;

		if (k >= max)
			break;
		bool to = s->rs[id].o.instance == s->cfg.slow_inst;
		uint64_t tok = s->reqs[id].input_tokens;

		for (; n <= k; n++)
			out[n] = (struct dbk_sim_slow_window){ 0 };
		out[k].offered++;
		out[k].sent += to;
		out[k].offered_tokens += tok;
		out[k].sent_tokens += to ? tok : 0;
	}
	return n;
}

/* HAProxy's observe layer7: a 5xx counts against the instance, and
 * error_limit of them in a row mark it down (on-error mark-down) until
 * the health check, which keeps passing, brings it back down_s later. */
int dbk_sim_server_error(struct dbk_sim *s, unsigned i)
{
	struct dbk_sim_inst *in = &s->inst[i];

	s->server_errors++;
	if (!s->cfg.error_limit || in->down || ++in->consec_err < s->cfg.error_limit)
		return 0;
	in->down = true;
	in->consec_err = 0;
	s->marked_down++;
	dbk_sim_tell(s, i, false);
	return dbk_evq_push(&s->q, s->now + s->cfg.down_s, EV_MARK_UP, i);
}

/* ---- Queries. ---- */

bool dbk_sim_usable(const struct dbk_sim *s, unsigned i)
{
	return i < s->cfg.ninstances && dbk_sim_inst_usable(&s->inst[i]) && dbk_sim_serves(s, i);
}

unsigned dbk_sim_nusable(const struct dbk_sim *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->cfg.ninstances; i++)
		n += dbk_sim_inst_usable(&s->inst[i]) && dbk_sim_serves(s, i);
	return n;
}

int dbk_sim_models_setup(struct dbk_sim *s, char *err, size_t errlen)
{
	const struct dbk_sim_config *c = &s->cfg;

	if (c->nmodels == 0)
		return 0;
	if (c->nmodels > DBK_SIM_MAX_MODELS || !c->inst_model) {
		dbk_errf(err, errlen, "models: 1..%u, each instance's given", DBK_SIM_MAX_MODELS);
		return -1;
	}
	for (size_t k = 0; k < s->n; k++)
		if (s->reqs[k].model >= c->nmodels) {
			dbk_errf(err, errlen, "request %zu: model %u of %u", k, s->reqs[k].model,
			         c->nmodels);
			return -1;
		}
	s->elig_words = (c->ninstances + 63) / 64;
	s->elig = calloc(c->nmodels * s->elig_words, sizeof(*s->elig));
	if (!s->elig) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < c->ninstances; i++) {
		if (c->inst_model[i] >= c->nmodels) {
			dbk_errf(err, errlen, "instance %u: model %u of %u", i, c->inst_model[i],
			         c->nmodels);
			return -1;
		}
		s->elig[c->inst_model[i] * s->elig_words + i / 64] |= UINT64_C(1) << (i % 64);
	}
	return 0;
}

const uint64_t *dbk_sim_eligible(const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	return s->elig ? &s->elig[r->model * s->elig_words] : NULL;
}

double dbk_sim_weight(const struct dbk_sim *s, unsigned i)
{
	return s->cfg.weights ? s->cfg.weights[i] : 1.0;
}
