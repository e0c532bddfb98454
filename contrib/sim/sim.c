/* The cluster simulator's event loop; see sim.h. */
#include "sim_state.h"
#include "u64map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/prompt.h"
#include "lib/list.h"
#include "model/prefix_cache.h"
#include "event_queue.h"
#include "admit.h"
#include "policy.h"
#include "snapshot.h"
#include "lib/log.h"
#include "lib/bounds.h"

void dbk_sim_config_default(struct dbk_sim_config *c)
{
	memset(c, 0, sizeof(*c));
	c->threshold_tokens = 32768;
	c->max_request_tokens = 131072;
	c->json_overhead_bytes = DBK_SIM_JSON_OVERHEAD_BYTES;
	c->stall_weight = -1;
	c->engine_speed = 1;
}

unsigned dbk_sim_short_count(unsigned n) { return n - n / 2; }

void dbk_sim_free(struct dbk_sim *s)
{
	unsigned i;
	size_t k;

	if (!s)
		return;
	if (s->ops)
		dbk_sim_policy_free(s->ops, s->pst);
	dbk_sim_snapshot_free(&s->snap);
	dbk_sim_snapshot_free(&s->flying);
	dbk_sim_holdq_free(&s->held);
	if (s->inst)
		for (i = 0; i < s->cfg.ninstances; i++)
			dbk_engine_free(s->inst[i].e);
	free(s->inst);
	free(s->elig);
	if (s->rs)
		for (k = 0; k < s->n; k++)
			free(s->rs[k].keys);
	free(s->rs);
	dbk_buf_free(&s->text);
	free(s->reqs);
	dbk_evq_free(&s->q);
	dbk_metrics_free(&s->m);
	free(s);
}

struct dbk_sim *dbk_sim_new(const struct dbk_sim_config *c, const struct dbk_sim_req *reqs,
                            size_t n, const struct dbk_sim_policy_ops *ops, char *err,
                            size_t errlen)
{
	struct dbk_sim *s;
	size_t k;
	unsigned i;

	if (c->ninstances < 1 || c->ninstances > DBK_MAX_SERVERS) {
		dbk_errf(err, errlen, "instances must be in 1..%u", DBK_MAX_SERVERS);
		return NULL;
	}
	if (!c->engines) {
		dbk_errf(err, errlen, "no engine configurations");
		return NULL;
	}
	if (!(c->overhead_s >= 0) || !isfinite(c->overhead_s)) {
		dbk_errf(err, errlen, "overhead must be a finite number >= 0");
		return NULL;
	}
	if (c->nscale && (!c->scale || c->scale[0].t_s != 0)) {
		dbk_errf(err, errlen, "the scale's first step is at 0 s");
		return NULL;
	}
	for (k = 0; k < c->nscale; k++)
		if (!(c->scale[k].v >= 1 && c->scale[k].v <= c->ninstances)) {
			dbk_errf(err, errlen, "the scale's counts must be in 1..%u", c->ninstances);
			return NULL;
		}
	if (c->fail_share > 0 && (c->fail_share > 1 || c->fail_inst >= c->ninstances)) {
		dbk_errf(err, errlen,
		         "the failing instance must be one of 0..%u, its share in 0..1",
		         c->ninstances - 1);
		return NULL;
	}
	if (c->slow_factor > 0 && (!(c->slow_factor >= 1) || c->slow_inst >= c->ninstances)) {
		dbk_errf(err, errlen, "the slow instance must be one of 0..%u, its factor >= 1",
		         c->ninstances - 1);
		return NULL;
	}
	if (c->warmup_s > 0 && !(c->warmup_factor >= 1)) {
		dbk_errf(err, errlen, "the warm-up factor must be >= 1");
		return NULL;
	}
	if (n >= DBK_SIM_NONE) {
		dbk_errf(err, errlen, "too many requests");
		return NULL;
	}
	for (k = 0; k < n; k++) {
		if (reqs[k].id != k || !isfinite(reqs[k].arrival_s) ||
		    (k > 0 && reqs[k].arrival_s < reqs[k - 1].arrival_s)) {
			dbk_errf(err, errlen,
			         "request %zu: ids must be 0..n-1 in "
			         "order of non-decreasing finite arrival",
			         k);
			return NULL;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		dbk_errf(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *c;
	s->cfg.engines = NULL; /* the copies live in s->inst */
	s->ops = ops;
	s->n = n;
	s->hold_next_s = -1;
	dbk_evq_init(&s->q);
	dbk_metrics_init(&s->m, &c->slo);
	s->reqs = malloc((n ? n : 1) * sizeof(*s->reqs));
	s->rs = calloc(n ? n : 1, sizeof(*s->rs));
	s->inst = calloc(c->ninstances, sizeof(*s->inst));
	if (!s->reqs || !s->rs || !s->inst) {
		dbk_errf(err, errlen, "out of memory");
		dbk_sim_free(s);
		return NULL;
	}
	if (n)
		memcpy(s->reqs, reqs, n * sizeof(*reqs));
	for (k = 0; k < n; k++) {
		s->rs[k].o.instance = DBK_SIM_NONE;
		dbk_list_init(&s->rs[k].live);
	}
	for (i = 0; i < c->ninstances; i++) {
		struct dbk_sim_inst *in = &s->inst[i];

		in->cfg = c->engines[i];
		dbk_list_init(&in->live);
		in->present = in->told = true;
		in->joined_s = -HUGE_VAL;
		if (dbk_engine_config_check(&in->cfg, err, errlen) != 0) {
			char why[160];

			snprintf(why, sizeof(why), "%s", err);
			dbk_errf(err, errlen, "instance %u: %s", i, why);
			dbk_sim_free(s);
			return NULL;
		}
		s->any_caching |= in->cfg.enable_prefix_caching;
		in->e = dbk_engine_new(&in->cfg);
		if (!in->e) {
			dbk_errf(err, errlen, "out of memory");
			dbk_sim_free(s);
			return NULL;
		}
	}
	if (dbk_sim_models_setup(s, err, errlen) != 0) {
		dbk_sim_free(s);
		return NULL;
	}
	if (ops->scrape && c->scrape_flight_s >= ops->tick_s) {
		dbk_errf(err, errlen,
		         "a scrape's flight (%g s) must be shorter than its interval (%g s)",
		         c->scrape_flight_s, ops->tick_s);
		dbk_sim_free(s);
		return NULL;
	}
	if (ops->scrape && (dbk_sim_snapshot_init(&s->snap, c->ninstances) != 0 ||
	                    dbk_sim_snapshot_init(&s->flying, c->ninstances) != 0)) {
		dbk_errf(err, errlen, "out of memory");
		dbk_sim_free(s);
		return NULL;
	}
	s->pst = dbk_sim_policy_new(ops, &s->cfg, err, errlen);
	if (!s->pst) {
		dbk_sim_free(s);
		return NULL;
	}
	return s;
}

/* ---- Request bookkeeping. ---- */

bool dbk_sim_req_is_long(const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	return (double)r->input_tokens >= s->cfg.threshold_tokens;
}

static void live_link(struct dbk_sim *s, uint32_t id, unsigned i)
{
	dbk_list_append(&s->inst[i].live, &s->rs[id].live);
	s->inst[i].inflight++;
}

static void live_unlink(struct dbk_sim *s, uint32_t id, unsigned i)
{
	dbk_list_del(&s->rs[id].live);
	s->inst[i].inflight--;
}

/* The one place a request ends: metrics, the instance's list and the
 * policy all hear of it here, so none can see it twice. */
static void end_request(struct dbk_sim *s, uint32_t id, bool ok, enum dbk_sim_fail why)
{
	struct dbk_sim_rstate *r = &s->rs[id];
	const struct dbk_sim_req *q = &s->reqs[id];
	bool is_long = dbk_sim_req_is_long(s, q);

	r->o.ends++;
	if (r->o.ends > 1)
		return; /* a bug; the conservation test catches it */
	s->ended++;
	r->o.status = ok ? DBK_SIM_DONE : DBK_SIM_FAILED;
	r->o.fail = why;
	free(r->keys);
	r->keys = NULL;
	r->n_keys = 0;
	struct dbk_sim_prio *p = &s->prio[dbk_sim_req_class(q)];

	p->offered++;
	p->shed += why == DBK_SIM_FAIL_SHED;
	p->admitted += r->o.instance != DBK_SIM_NONE;
	bool good = false;
	if (ok)
		good = dbk_metrics_completed(&s->m, is_long, r->o.first_token_s - q->arrival_s,
		                             r->o.last_token_s - q->arrival_s, q->input_tokens,
		                             r->o.tokens);
	else
		dbk_metrics_failed(&s->m, is_long);
	p->good += good;
	dbk_sim_retry_end(s, id, ok);
	if (q->model < DBK_SIM_MAX_MODELS) {
		s->model_offered[q->model]++;
		s->model_good[q->model] += good;
	}
	if (s->now > s->last_end)
		s->last_end = s->now;
	if (r->o.instance != DBK_SIM_NONE) {
		s->hold_wake = true; /* room on a server: the held may go */
		live_unlink(s, id, r->o.instance);
		if (s->ops->release)
			s->ops->release(s->pst, s, q, r->o.instance);
	}
}

/* ---- Engine steps. ---- */

static int start_step(struct dbk_sim *s, unsigned i)
{
	struct dbk_sim_inst *in = &s->inst[i];
	double d = dbk_engine_begin_step(in->e);

	if (d <= 0)
		return 0;
	d *= dbk_sim_step_factor(s, i);
	in->stepping = true;
	in->step_end = s->now + d;
	return dbk_evq_push(&s->q, in->step_end, EV_STEP_END, i);
}

static void on_engine_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct dbk_sim *s = ctx;
	uint32_t id = (uint32_t)(uintptr_t)ev->cookie;
	struct dbk_sim_rstate *r = &s->rs[id];

	switch (ev->type) {
	case DBK_ENGINE_EV_TOKEN:
		if (r->o.tokens == 0) {
			struct dbk_sim_inst *in = &s->inst[r->o.instance];
			r->o.first_token_s = s->now;
			in->ttft_sum_s += s->now - r->submitted_s;
			in->ttft_count++;
		} else {
			struct dbk_sim_inst *in = &s->inst[r->o.instance];
			in->itl_sum_s += s->now - r->o.last_token_s;
			in->itl_count++;
			dbk_metrics_itl(&s->m, dbk_sim_req_is_long(s, &s->reqs[id]),
			                s->now - r->o.last_token_s);
		}
		r->o.last_token_s = s->now;
		r->o.tokens++;
		break;
	case DBK_ENGINE_EV_FINISHED:
		r->has_handle = false;
		s->inst[r->o.instance].consec_err = 0;
		end_request(s, id, true, DBK_SIM_FAIL_NONE);
		break;
	case DBK_ENGINE_EV_PREEMPTED:
		r->o.preemptions++;
		r->preempt_seq = ++s->preempt_counter;
		break;
	}
}

static int submit(struct dbk_sim *s, uint32_t id)
{
	struct dbk_sim_rstate *r = &s->rs[id];
	const struct dbk_sim_req *q = &s->reqs[id];
	struct dbk_sim_inst *in = &s->inst[r->o.instance];
	int rc;

	in->sent++;
	in->sent_tokens += q->input_tokens;
	if (dbk_sim_fails(s, r->o.instance, id)) {
		unsigned i = r->o.instance;

		end_request(s, id, false, DBK_SIM_FAIL_SERVER);
		return dbk_sim_server_error(s, i);
	}
	in->used = true;
	if (q->lora) {
		const struct dbk_engine_submission sub = {
			.prompt_tokens = q->input_tokens,
			.keys = r->keys,
			.n_keys = r->n_keys,
			.max_output_tokens = q->output_tokens,
			.lora = q->lora,
			.cookie = (void *)(uintptr_t)id,
		};
		rc = dbk_engine_submit_req(in->e, &sub, &r->handle);
	} else {
		rc = dbk_engine_submit_keys(in->e, q->input_tokens, r->keys, r->n_keys,
		                            q->output_tokens, (void *)(uintptr_t)id, &r->handle);
	}
	if (rc == DBK_ENGINE_E_NOMEM)
		return -1;
	if (rc != DBK_ENGINE_OK) {
		if (rc == DBK_ENGINE_E_TOO_LONG)
			s->too_long++;
		end_request(s, id, false,
		            rc == DBK_ENGINE_E_TOO_LONG ? DBK_SIM_FAIL_TOO_LONG
		                                        : DBK_SIM_FAIL_ENGINE);
		return 0;
	}
	r->has_handle = true;
	r->submitted_s = s->now;
	r->o.status = DBK_SIM_QUEUED;
	if (!in->stepping)
		return start_step(s, r->o.instance);
	return 0;
}

/* The keys the stub would compute from the bench's prompt for these
 * hash ids: the same text (dbk_prompt_write), the same hasher. */
static int key_prompt(struct dbk_sim *s, uint32_t id)
{
	const struct dbk_sim_req *q = &s->reqs[id];
	struct dbk_sim_rstate *r = &s->rs[id];
	struct dbk_prefix_cache_hasher h;
	struct dbk_req_spec spec;

	/* Only engines with a cache use keys. */
	if (!q->hash_ids || q->n_hash_ids == 0 || !s->any_caching)
		return 0;
	memset(&spec, 0, sizeof(spec));
	spec.input = q->input_tokens;
	spec.hash = q->hash_ids;
	spec.n_hash = q->n_hash_ids;
	spec.index = id;
	dbk_buf_reset(&s->text);
	dbk_prompt_write(&s->text, &spec);
	if (s->text.oom)
		return -1;
	/* vLLM hashes a block with its request's adapter (the LoRA extra
	 * key): an adapter's blocks match only its own requests'. */
	dbk_prefix_cache_hasher_init(&h,
	                             q->lora ? dbk_u64map_mix64_pair(DBK_BLOCK_ROOT_TEXT, q->lora)
	                                     : DBK_BLOCK_ROOT_TEXT,
	                             q->input_tokens / DBK_KV_BLOCK_TOKENS);
	dbk_prefix_cache_hasher_feed(&h, s->text.p, s->text.len);
	if (h.oom) {
		dbk_prefix_cache_hasher_free(&h);
		return -1;
	}
	r->keys = dbk_prefix_cache_hasher_take(&h, &r->n_keys);
	return 0;
}

/* Refused by admission: with admit_queue_s held at the balancer first
 * (decided again until its bound); then its client may send it again
 * (sim_retry.c); else it ends here, never sent. */
static int shed(struct dbk_sim *s, uint32_t id, int retry_s)
{
	int held = dbk_sim_hold(s, id), again;

	if (held != 0)
		return held < 0 ? -1 : 0;
	again = dbk_sim_retry(s, id, retry_s);
	if (again != 0)
		return again < 0 ? -1 : 0;
	end_request(s, id, false, DBK_SIM_FAIL_SHED);
	return 0;
}

int dbk_sim_route(struct dbk_sim *s, uint32_t id)
{
	struct dbk_sim_rstate *r = &s->rs[id];
	int c = 0;

	/* A retry keeps the keys of its first send. */
	if (!r->keys && key_prompt(s, id) != 0)
		return -1;
	/* Its model's servers are the only candidates while it is routed. */
	s->routing_model = s->cfg.nmodels ? s->reqs[id].model + 1u : 0;
	/* A policy that predicts nothing: the saturation rule first, as the
	 * agent's reference mode and the GIE decide before choosing. */
	if (s->cfg.admit.enabled && !s->ops->admits) {
		dbk_sim_ttft_window_update(&s->ttftw, s);
		c = dbk_sim_admit(s, NULL, &s->reqs[id], NULL, &s->ttftw);
	}
	/* No instance to send it to: HAProxy's 503. */
	if (c == 0)
		c = dbk_sim_nusable(s) ? s->ops->choose(s->pst, s, &s->reqs[id]) : DBK_SIM_REFUSE;
	s->routing_model = 0;
	if (c == DBK_SIM_POLICY_ERROR)
		return -1;
	if (DBK_SIM_IS_SHED(c))
		return shed(s, id, DBK_SIM_SHED_RETRY_S(c));
	if (c < 0 || (unsigned)c >= s->cfg.ninstances) {
		s->refused++;
		end_request(s, id, false, DBK_SIM_FAIL_REFUSED);
		return 0;
	}
	r->o.instance = (uint32_t)c;
	r->o.status = DBK_SIM_ROUTED;
	live_link(s, id, (unsigned)c);
	bool other = s->cfg.nmodels && s->cfg.inst_model[c] != s->reqs[id].model;
	if (!dbk_sim_inst_usable(&s->inst[c]) ||
	    other) { /* the policy's mistake: counted, failed */
		s->misrouted++;
		s->wrong_model += other;
		end_request(s, id, false, DBK_SIM_FAIL_ABSENT);
		return 0;
	}
	if (s->cfg.overhead_s > 0)
		return dbk_evq_push(&s->q, s->now + s->cfg.overhead_s, EV_SUBMIT, id);
	return submit(s, id);
}

/* The policy's next tick. Over an idle stretch (every request that
 * arrived has ended) it skips to the last tick at or before the next
 * arrival: the ticks in between would scrape the same idle fleet, and at
 * a low rate factor they would outnumber every other event by far. */
static double next_tick(const struct dbk_sim *s)
{
	double dt = s->ops->tick_s, next = s->now + dt, gap;

	if (s->ended == s->arrived && s->arrived < s->n) {
		gap = s->reqs[s->arrived].arrival_s - s->now;
		if (gap > 2 * dt)
			next = s->now + dt * floor(gap / dt);
	}
	return next;
}

int dbk_sim_run(struct dbk_sim *s, char *err, size_t errlen)
{
	struct dbk_event ev;
	size_t k;

	if (s->ran) {
		dbk_errf(err, errlen, "a simulation runs once");
		return -1;
	}
	s->ran = true;
	s->t0 = s->n ? s->reqs[0].arrival_s : 0;
	if (s->cfg.nscale) {
		if (dbk_sim_scale_to(s, (unsigned)s->cfg.scale[0].v) != 0)
			goto oom;
		for (k = 1; k < s->cfg.nscale; k++)
			if (dbk_evq_push(&s->q, s->t0 + s->cfg.scale[k].t_s, EV_SCALE, (uint32_t)k))
				goto oom;
	}
	if (s->n) {
		s->now = s->last_end = s->reqs[0].arrival_s;
		if (dbk_evq_push(&s->q, s->reqs[0].arrival_s, EV_ARRIVAL, 0))
			goto oom;
		/* The first tick at the first arrival, pushed after it:
		 * the arrival is routed first, on empty knowledge. */
		if ((s->ops->tick || s->ops->scrape) && s->ops->tick_s > 0 &&
		    dbk_evq_push(&s->q, s->reqs[0].arrival_s, EV_TICK, 0))
			goto oom;
	}
	while (dbk_evq_pop(&s->q, &ev)) {
		int rc = 0;

		s->now = ev.t;
		s->events++;
		switch (ev.kind) {
		case EV_ARRIVAL:
			s->arrived = ev.arg + 1;
			rc = dbk_sim_route(s, ev.arg);
			/* Arrivals are queued one at a time, after the
			 * routing of the previous one, so that its
			 * submission (at the same instant when there is no
			 * overhead) comes first and the heap stays small. */
			if (rc == 0 && ev.arg + 1 < s->n)
				rc = dbk_evq_push(&s->q, s->reqs[ev.arg + 1].arrival_s, EV_ARRIVAL,
				                  ev.arg + 1);
			break;
		case EV_SUBMIT: rc = submit(s, ev.arg); break;
		case EV_STEP_END: {
			struct dbk_sim_inst *in = &s->inst[ev.arg];

			in->stepping = false;
			dbk_engine_end_step(in->e, on_engine_event, s);
			if (dbk_engine_has_work(in->e))
				rc = start_step(s, ev.arg);
			break;
		}
		case EV_TICK:
			if (s->ops->scrape && s->cfg.scrape_flight_s > 0) {
				dbk_sim_snapshot_scrape(&s->flying, s);
				rc = dbk_evq_push(&s->q, s->now + s->cfg.scrape_flight_s, EV_ANSWER,
				                  0);
			} else {
				if (s->ops->scrape)
					dbk_sim_snapshot_scrape(&s->snap, s);
				if (s->ops->tick)
					s->ops->tick(s->pst, s);
			}
			/* Ticks stop with the last request, or the queue
			 * would never drain. */
			if (rc == 0 && s->ended < s->n)
				rc = dbk_evq_push(&s->q, next_tick(s), EV_TICK, 0);
			break;
		case EV_ANSWER: {
			struct dbk_sim_snapshot t = s->snap;

			s->snap = s->flying;
			s->flying = t;
			if (s->ops->tick)
				s->ops->tick(s->pst, s);
			break;
		}
		case EV_SCALE: rc = dbk_sim_scale_to(s, (unsigned)s->cfg.scale[ev.arg].v); break;
		case EV_RETRY: rc = dbk_sim_route(s, ev.arg); break;
		case EV_HOLD: /* a later one may have been pushed before it */
			if (ev.t == s->hold_next_s)
				rc = dbk_sim_hold_walk(s);
			break;
		case EV_MARK_UP:
			s->inst[ev.arg].down = false;
			dbk_sim_tell(s, ev.arg, false);
			break;
		default: break;
		}
		if (rc == 0 && s->hold_wake) {
			s->hold_wake = false;
			rc = dbk_sim_hold_at(s, s->now);
		}
		if (rc != 0)
			goto oom;
	}
	for (k = 0; k < s->n; k++)
		if (s->rs[k].o.ends != 1) {
			dbk_errf(err, errlen,
			         "request %zu ended %u times (an "
			         "engine stalled?)",
			         k, s->rs[k].o.ends);
			s->error = true;
			return -1;
		}
	return 0;
oom:
	dbk_errf(err, errlen, "out of memory, or the policy failed");
	s->error = true;
	return -1;
}

/* Where the run's requests went, slot by slot: the herding and idling
 * a fleet-wide total hides (a server sent 262 requests beside one sent
 * 4; ttft.md, "Stop 50: fourteen configurations never run before"). */
static void log_instance(const struct dbk_sim *s, unsigned i, const struct dbk_engine_stats *st)
{
	const struct dbk_sim_inst *in = &s->inst[i];

	dbk_log(DBK_LOG_DEBUG, "instance",
	        "policy=%s instance=%u requests=%llu prompt_tokens=%.0f busy_s=%.3f "
	        "steps=%llu preemptions=%llu hit_tokens=%llu",
	        s->ops->name, i, (unsigned long long)in->sent, in->sent_tokens, st->busy_time_s,
	        (unsigned long long)st->steps_total, (unsigned long long)st->preemptions_total,
	        (unsigned long long)st->prefix_cache_hits);
}

int dbk_sim_result(struct dbk_sim *s, struct dbk_sim_result *out)
{
	unsigned i;
	int rc = 0;

	if (!s->summarized) {
		struct dbk_sim_result *r = &s->res;
		struct dbk_sim_policy_stats ps;

		memset(r, 0, sizeof(*r));
		r->duration_s = s->n ? s->last_end - s->reqs[0].arrival_s : 0;
		rc = dbk_metrics_summarize(&s->m, r->duration_s, r->cls);
		struct dbk_engine_stats st = { 0 };

		for (i = 0; i < s->cfg.ninstances; i++) {
			struct dbk_engine_stats slot;

			dbk_sim_slot_stats(s, i, &slot);
			log_instance(s, i, &slot);
			dbk_sim_stats_add(&st, &slot);
		}
		r->preemptions = st.preemptions_total;
		r->steps = st.steps_total;
		r->busy_s = st.busy_time_s;
		r->prefix_cache_queries = st.prefix_cache_queries;
		r->prefix_cache_hits = st.prefix_cache_hits;
		r->server_errors = s->server_errors;
		r->misrouted = s->misrouted;
		r->marked_down = s->marked_down;
		r->new_engines = s->new_engines;
		r->wrong_model = s->wrong_model;
		memcpy(r->model_offered, s->model_offered, sizeof(r->model_offered));
		memcpy(r->model_good, s->model_good, sizeof(r->model_good));
		r->lora_loads = st.lora_loads;
		r->lora_activations = st.lora_activations;
		memcpy(r->prio, s->prio, sizeof(r->prio));
		r->retry_sdk = s->cfg.shed_retry_sdk;
		r->events = s->events;
		r->refused = s->refused;
		r->too_long = s->too_long;
		memset(&ps, 0, sizeof(ps));
		if (s->ops->stats)
			s->ops->stats(s->pst, &ps);
		r->redirects = ps.redirects;
		r->policy_leases = ps.leases;
		s->summarized = true;
		if (rc)
			s->error = true;
	}
	*out = s->res;
	return s->error ? -1 : rc;
}

double dbk_sim_result_hit_rate(const struct dbk_sim_result *r)
{
	return r->prefix_cache_queries
	               ? (double)r->prefix_cache_hits / (double)r->prefix_cache_queries
	               : 0;
}

/* ---- Queries. ---- */

void dbk_sim_first_tokens(const struct dbk_sim *s, unsigned i, double *sum_s, uint64_t *count)
{
	*sum_s = s->inst[i].ttft_sum_s;
	*count = s->inst[i].ttft_count;
}

void dbk_sim_token_gaps(const struct dbk_sim *s, unsigned i, double *sum_s, uint64_t *count)
{
	*sum_s = s->inst[i].itl_sum_s;
	*count = s->inst[i].itl_count;
}

const struct dbk_sim_scrape *dbk_sim_scraped(const struct dbk_sim *s, unsigned i)
{
	return dbk_sim_snapshot_get(&s->snap, i);
}

const struct dbk_sim_outcome *dbk_sim_outcome(const struct dbk_sim *s, uint32_t id)
{
	return id < s->n ? &s->rs[id].o : NULL;
}

size_t dbk_sim_unfinished(const struct dbk_sim *s) { return s->n - s->ended; }

size_t dbk_sim_nrequests(const struct dbk_sim *s) { return s->n; }

unsigned dbk_sim_ninstances(const struct dbk_sim *s) { return s->cfg.ninstances; }

double dbk_sim_now(const struct dbk_sim *s) { return s->now; }

const struct dbk_sim_config *dbk_sim_config(const struct dbk_sim *s) { return &s->cfg; }

const struct dbk_engine *dbk_sim_engine(const struct dbk_sim *s, unsigned i)
{
	return s->inst[i].e;
}

const struct dbk_engine_config *dbk_sim_engine_config(const struct dbk_sim *s, unsigned i)
{
	return &s->inst[i].cfg;
}

unsigned dbk_sim_inflight(const struct dbk_sim *s, unsigned i) { return s->inst[i].inflight; }

double dbk_sim_step_end(const struct dbk_sim *s, unsigned i)
{
	return s->inst[i].stepping ? s->inst[i].step_end : s->now;
}

/* The request whose link l is, or DBK_SIM_NONE at instance i's head. */
static uint32_t live_id(const struct dbk_sim *s, unsigned i, const struct dbk_list *l)
{
	if (l == &s->inst[i].live)
		return DBK_SIM_NONE;
	return (uint32_t)(dbk_list_elem(l, struct dbk_sim_rstate, live) - s->rs);
}

uint32_t dbk_sim_live_first(const struct dbk_sim *s, unsigned i)
{
	return live_id(s, i, s->inst[i].live.next);
}

uint32_t dbk_sim_live_next(const struct dbk_sim *s, uint32_t id)
{
	const struct dbk_sim_rstate *r = &s->rs[id];

	if (dbk_list_empty(&r->live)) /* ended: detached */
		return DBK_SIM_NONE;
	return live_id(s, r->o.instance, r->live.next);
}

const struct dbk_sim_req *dbk_sim_req(const struct dbk_sim *s, uint32_t id)
{
	return id < s->n ? &s->reqs[id] : NULL;
}

bool dbk_sim_req_handle(const struct dbk_sim *s, uint32_t id, uint64_t *h)
{
	if (id >= s->n || !s->rs[id].has_handle)
		return false;
	*h = s->rs[id].handle;
	return true;
}

uint64_t dbk_sim_req_preempt_seq(const struct dbk_sim *s, uint32_t id)
{
	return s->rs[id].preempt_seq;
}

const uint64_t *dbk_sim_req_keys(const struct dbk_sim *s, uint32_t id, uint32_t *n)
{
	*n = id < s->n ? s->rs[id].n_keys : 0;
	return *n ? s->rs[id].keys : NULL;
}

uint32_t dbk_sim_cached_tokens(const struct dbk_sim *s, unsigned i, uint32_t id)
{
	if (id >= s->n || i >= s->cfg.ninstances)
		return 0;
	return dbk_engine_hit_tokens(s->inst[i].e, s->reqs[id].input_tokens, s->rs[id].keys,
	                             s->rs[id].n_keys);
}
