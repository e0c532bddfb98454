/* vLLM V1 scheduler model; see engine.h and ENGINE-MODEL.md.
 *
 * Faithful to vllm/v1/core/sched/scheduler.py (schedule()):
 *  - running requests first, in admission order, each taking
 *    min(tokens it still lacks, budget left);
 *  - a running request that cannot get its KV blocks preempts the newest
 *    running request (running.pop()), possibly itself, which ends the
 *    running pass;
 *  - waiting requests are admitted in queue order only when nothing was preempted
 *    this step, while budget is left, running < max_num_seqs and the
 *    blocks for the first chunk are free (no watermark in V1);
 *  - num_computed_tokens advances when the step is scheduled; a token is
 *    sampled when a request has computed all its known tokens, so the last
 *    prefill chunk yields the first token and each decode one more.
 *
 * Prefix caching, as kv_cache_manager.py (vllm-project/vllm at 003df29)
 * does it: a request admitted with nothing computed (new, or preempted)
 * first looks up its chained block keys (get_computed_blocks), at most
 * num_tokens - 1 tokens' worth, since the last token is always computed
 * for its logits; the hit blocks are shared (ref count), the rest
 * allocated; every block that the scheduled tokens fill is keyed at once
 * (allocate_slots -> cache_blocks), output blocks included, so a
 * preempted request finds its own blocks again if nobody evicted them.
 *
 * --scheduling-policy priority, as scheduler.py and request_queue.py
 * (vllm-project/vllm, scheduler.py at 00024d3, request_queue.py at
 * 0097c7e) do it: the waiting queue is ordered by (priority, arrival),
 * lower first, a preempted request included (it keeps its arrival, so
 * it goes back to its place, not to the front); the victim of a
 * preemption is the running request with the highest (priority,
 * arrival), and if it was already scheduled in this step its tokens go
 * back to the budget. Nothing else changes: running requests are still
 * served first in admission order, and a waiting request of a better
 * priority never preempts a running one. */
#include "model/engine_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether a goes before b in the priority queue: (priority, arrival). */
static bool prio_before(const struct req *a, const struct req *b)
{
	return a->priority != b->priority ? a->priority < b->priority : a->arrival < b->arrival;
}

/* Into the waiting queue: FCFS at the back (new) or the front
 * (preempted); by priority in its place, searched from the back since
 * most arrivals are the latest of their priority. */
static void waiting_add(struct dbk_engine *e, struct req *r, bool preempted)
{
	struct dbk_list *at = e->waiting.head.prev;

	r->where = Q_WAITING;
	if (e->cfg.policy == DBK_ENGINE_FCFS) {
		q_add(&e->waiting, r, preempted);
		return;
	}
	while (at != &e->waiting.head && prio_before(r, dbk_list_elem(at, struct req, link)))
		at = at->prev;
	dbk_list_push(at, &r->link);
	e->waiting.n++;
}

/* The running request a preemption evicts: the newest (FCFS), or the
 * one with the highest (priority, arrival). */
static struct req *victim_of(const struct dbk_engine *e)
{
	struct req *v = q_last(&e->running), *x;

	if (e->cfg.policy == DBK_ENGINE_FCFS)
		return v;
	for (x = q_first(&e->running); x; x = q_next(&e->running, x))
		if (prio_before(v, x))
			v = x;
	return v;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct dbk_engine *dbk_engine_new(const struct dbk_engine_config *cfg)
{
	char err[160];
	struct dbk_engine *e;
	size_t n;

	if (!cfg || dbk_engine_config_check(cfg, err, sizeof(err)) != 0)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = *cfg;
	q_init(&e->running);
	q_init(&e->waiting);
	q_init(&e->zombies);
	e->blocks_total = cfg->kv_capacity_tokens / DBK_KV_BLOCK_TOKENS;
	e->pool = dbk_prefix_cache_new((uint32_t)e->blocks_total, cfg->enable_prefix_caching);
	dbk_handles_init(&e->handles);
	n = cfg->max_num_seqs;
	e->sched = calloc(n, sizeof(*e->sched));
	/* dbk_engine_step_time's three columns, in one allocation. */
	e->tmp_new = calloc(n, 2 * sizeof(uint32_t) + sizeof(bool));
	if (e->tmp_new) {
		e->tmp_done = e->tmp_new + n;
		e->tmp_prefill = (bool *)(e->tmp_done + n);
	}
	e->cap_events = 3 * n;
	e->events = calloc(e->cap_events, sizeof(*e->events));
	if (!e->pool || !e->sched || !e->tmp_new || !e->events || dbk_engine_lora_init(e) != 0) {
		dbk_engine_free(e);
		return NULL;
	}
	return e;
}

static void req_free(struct req *r)
{
	free(r->table);
	free(r->keys);
	free(r);
}

static void free_queue(struct queue *q)
{
	struct dbk_list *it, *nx;

	dbk_list_for_each_safe(it, nx, &q->head) req_free(dbk_list_elem(it, struct req, link));
	q_init(q);
}

void dbk_engine_free(struct dbk_engine *e)
{
	if (!e)
		return;
	free_queue(&e->running);
	free_queue(&e->waiting);
	free_queue(&e->zombies);
	dbk_handles_free(&e->handles);
	free(e->sched);
	free(e->tmp_new); /* and tmp_done, tmp_prefill */
	free(e->events);
	dbk_engine_lora_free(e);
	dbk_prefix_cache_free(e->pool);
	free(e);
}

/* ---- Handles (handles.h). ---- */

static void slot_release(struct dbk_engine *e, struct req *r)
{
	dbk_handles_remove(&e->handles, r->slot);
	req_free(r);
}

static uint64_t handle_of(const struct dbk_engine *e, const struct req *r)
{
	return dbk_handles_of(&e->handles, r->slot);
}

/* A request leaving the engine while a step or a delivery may still
 * point at it is parked until that is over. */
static void retire(struct dbk_engine *e, struct req *r)
{
	r->gone = true;
	if (e->in_step || e->delivering) {
		q_add(&e->zombies, r, false);
		return;
	}
	slot_release(e, r);
}

static void release_zombies(struct dbk_engine *e)
{
	struct req *r;

	while ((r = q_first(&e->zombies)) != NULL) {
		q_remove(&e->zombies, r);
		slot_release(e, r);
	}
}

/* Back to the pool, last block first; keyed blocks stay cached. */
static void free_blocks(struct dbk_engine *e, struct req *r)
{
	dbk_prefix_cache_release(e->pool, r->table, r->blocks);
	r->blocks = 0;
	r->n_keyed = 0;
}

/* Keys of blocks past the caller's: the request's own (its output, or a
 * prompt tail nobody shares), so that only this request, re-admitted
 * after a preemption, can hit them. */
static void extend_keys(struct req *r, uint32_t upto)
{
	for (; r->n_keys < upto; r->n_keys++) {
		uint64_t in[2] = { r->salt, r->n_keys };
		uint64_t parent = r->n_keys ? r->keys[r->n_keys - 1] : DBK_BLOCK_ROOT_TEXT;

		r->keys[r->n_keys] = dbk_prefix_cache_hash(parent, in, sizeof(in));
	}
}

static int req_init(struct dbk_engine *e, struct req *r, uint32_t prompt, uint32_t max_out,
                    const uint64_t *keys, uint32_t n_keys)
{
	uint64_t total = (uint64_t)prompt + max_out;

	r->prompt = prompt;
	r->max_out = max_out;
	r->table = malloc(cdiv(total, DBK_KV_BLOCK_TOKENS) * sizeof(*r->table));
	if (!r->table)
		return -1;
	if (!e->cfg.enable_prefix_caching)
		return 0;
	r->keys = malloc((total / DBK_KV_BLOCK_TOKENS + 1) * sizeof(*r->keys));
	if (!r->keys)
		return -1;
	if (n_keys > prompt / DBK_KV_BLOCK_TOKENS)
		n_keys = prompt / DBK_KV_BLOCK_TOKENS;
	if (keys && n_keys)
		memcpy(r->keys, keys, (size_t)n_keys * sizeof(*keys));
	r->n_keys = keys ? n_keys : 0;
	r->salt = ++e->next_salt;
	return 0;
}

int dbk_engine_submit(struct dbk_engine *e, uint32_t prompt_tokens, uint32_t max_output_tokens,
                      void *cookie, uint64_t *handle)
{
	return dbk_engine_submit_keys(e, prompt_tokens, NULL, 0, max_output_tokens, cookie, handle);
}

int dbk_engine_submit_keys(struct dbk_engine *e, uint32_t prompt_tokens, const uint64_t *keys,
                           uint32_t n_keys, uint32_t max_output_tokens, void *cookie,
                           uint64_t *handle)
{
	const struct dbk_engine_submission sub = {
		.prompt_tokens = prompt_tokens,
		.keys = keys,
		.n_keys = n_keys,
		.max_output_tokens = max_output_tokens,
		.cookie = cookie,
	};

	return dbk_engine_submit_req(e, &sub, handle);
}

int dbk_engine_submit_req(struct dbk_engine *e, const struct dbk_engine_submission *sub,
                          uint64_t *handle)
{
	struct req *r;
	uint64_t h;

	if (sub->prompt_tokens == 0 || sub->max_output_tokens == 0)
		return DBK_ENGINE_E_INVAL;
	if ((uint64_t)sub->prompt_tokens + sub->max_output_tokens > e->cfg.max_model_len)
		return DBK_ENGINE_E_TOO_LONG;
	if (sub->lora && e->cfg.max_loras == 0)
		return DBK_ENGINE_E_NO_LORA;
	r = calloc(1, sizeof(*r));
	if (!r)
		return DBK_ENGINE_E_NOMEM;
	if (req_init(e, r, sub->prompt_tokens, sub->max_output_tokens, sub->keys, sub->n_keys) ||
	    dbk_handles_add(&e->handles, r, &r->slot, &h) != 0) {
		req_free(r);
		return DBK_ENGINE_E_NOMEM;
	}
	r->cookie = sub->cookie;
	r->priority = sub->priority;
	r->lora = sub->lora;
	if (dbk_engine_lora_submitted(e, r) != 0) {
		slot_release(e, r);
		return DBK_ENGINE_E_NOMEM;
	}
	r->arrival = e->next_arrival++;
	waiting_add(e, r, false);
	if (handle)
		*handle = h;
	return DBK_ENGINE_OK;
}

int dbk_engine_abort(struct dbk_engine *e, uint64_t handle)
{
	struct req *r = dbk_engine_lookup(e, handle);

	if (!r || r->silenced)
		return DBK_ENGINE_E_UNKNOWN;
	r->silenced = true;
	if (r->gone)
		return DBK_ENGINE_OK; /* finished, events pending: muted */
	if (r->where == Q_RUNNING)
		q_remove(&e->running, r);
	else if (r->where == Q_WAITING)
		q_remove(&e->waiting, r);
	r->where = Q_NONE;
	free_blocks(e, r);
	e->st.requests_aborted++;
	dbk_engine_lora_gone(e, r);
	retire(e, r);
	return DBK_ENGINE_OK;
}

static void push_event(struct dbk_engine *e, enum dbk_engine_event_type t, struct req *r)
{
	struct dbk_engine_event *ev;

	if (e->n_events == e->cap_events)
		return; /* cannot happen: see cap_events */
	ev = &e->events[e->n_events++];
	ev->type = t;
	ev->handle = handle_of(e, r);
	ev->cookie = r->cookie;
	ev->n_output = r->out;
	ev->prompt_tokens = r->prompt;
	ev->max_output_tokens = r->max_out;
}

static void preempt(struct dbk_engine *e, struct req *victim)
{
	q_remove(&e->running, victim);
	free_blocks(e, victim);
	victim->computed = 0;
	victim->preemptions++;
	waiting_add(e, victim, true);
	e->st.preemptions_total++;
	e->last.num_preempted++;
	push_event(e, DBK_ENGINE_EV_PREEMPTED, victim);
}

static uint32_t num_tokens(const struct req *r) { return r->prompt + r->out; }

/* Blocks for n_new more tokens after the computed ones, then keys for
 * every block those tokens fill (vLLM's allocate_slots). */
static bool try_alloc(struct dbk_engine *e, struct req *r, uint32_t n_new)
{
	uint64_t upto = (uint64_t)r->computed + n_new;
	uint64_t need = cdiv(upto, DBK_KV_BLOCK_TOKENS);
	uint32_t extra = need > r->blocks ? (uint32_t)(need - r->blocks) : 0;
	uint32_t full;

	if (dbk_prefix_cache_alloc(e->pool, extra, r->table + r->blocks) != 0)
		return false;
	r->blocks += extra;
	if (!e->cfg.enable_prefix_caching)
		return true;
	if (upto > num_tokens(r))
		upto = num_tokens(r);
	full = (uint32_t)(upto / DBK_KV_BLOCK_TOKENS);
	extend_keys(r, full);
	for (; r->n_keyed < full; r->n_keyed++)
		dbk_prefix_cache_insert(e->pool, r->table[r->n_keyed], r->keys[r->n_keyed]);
	return true;
}

/* Admission of a request with nothing computed: its cached prefix, then
 * blocks for a first chunk of at most budget tokens. false (nothing
 * changed) when the blocks are not there. */
static bool admit_alloc(struct dbk_engine *e, struct req *r, uint32_t budget, uint32_t *n_new)
{
	uint32_t hit = 0, evictable = 0, n, fresh;

	if (e->cfg.enable_prefix_caching) {
		uint32_t max_blocks = (num_tokens(r) - 1) / DBK_KV_BLOCK_TOKENS;

		extend_keys(r, max_blocks);
		hit = dbk_prefix_cache_match(e->pool, r->keys, max_blocks, &evictable);
	}
	n = num_tokens(r) - hit * DBK_KV_BLOCK_TOKENS;
	if (n > budget)
		n = budget;
	fresh = (uint32_t)cdiv((uint64_t)hit * DBK_KV_BLOCK_TOKENS + n, DBK_KV_BLOCK_TOKENS) - hit;
	/* Hit blocks nobody holds leave the free queue when taken. */
	if ((uint64_t)fresh + evictable > dbk_prefix_cache_num_free(e->pool))
		return false;
	dbk_prefix_cache_take(e->pool, r->keys, hit, r->table);
	r->blocks = r->n_keyed = hit;
	r->computed = hit * DBK_KV_BLOCK_TOKENS;
	r->cached_tokens = r->computed;
	if (!try_alloc(e, r, n))
		return false; /* unreachable: checked above */
	if (e->cfg.enable_prefix_caching) {
		if (r->preemptions == 0) {
			e->st.prefix_cache_requests++;
			e->st.prefix_cache_queries += num_tokens(r);
			e->st.prefix_cache_hits += r->computed;
		} else {
			e->st.preempted_prefix_queries += num_tokens(r);
			e->st.preempted_prefix_hits += r->computed;
		}
	}
	*n_new = n;
	return true;
}

static void add_sched(struct dbk_engine *e, struct req *r, uint32_t n_new)
{
	struct sched *s = &e->sched[e->n_sched++];

	s->r = r;
	s->n_new = n_new;
	s->done = r->computed;
	s->prefill = r->computed < r->prefill_target;
	r->computed += n_new;
	if (s->prefill)
		e->last.num_prefill_reqs++;
	else
		e->last.num_decode_reqs++;
	e->last.num_scheduled_tokens += n_new;
}

/* A victim scheduled earlier in this step (only under priority: FCFS
 * evicts the newest, which is never before r) gives its tokens back. */
static void unschedule(struct dbk_engine *e, const struct req *v, uint32_t *budget)
{
	for (uint32_t i = 0; i < e->n_sched; i++) {
		const struct sched *s = &e->sched[i];

		if (s->r != v)
			continue;
		*budget += s->n_new;
		e->last.num_scheduled_tokens -= s->n_new;
		if (s->prefill)
			e->last.num_prefill_reqs--;
		else
			e->last.num_decode_reqs--;
		memmove(&e->sched[i], &e->sched[i + 1], (e->n_sched - i - 1) * sizeof(*s));
		e->n_sched--;
		return;
	}
}

/* Running requests, admission order, each taking what it lacks out of
 * *budget; one that cannot get its blocks preempts victim_of's choice
 * (maybe itself, which ends the pass). Returns whether anything was
 * preempted. */
static bool schedule_running(struct dbk_engine *e, uint32_t *budget)
{
	struct req *r = q_first(&e->running);
	bool preempted = false;

	while (r && *budget > 0) {
		uint32_t n = num_tokens(r) - r->computed;

		if (n > *budget)
			n = *budget;
		while (!try_alloc(e, r, n)) {
			struct req *victim = victim_of(e);

			if (victim != r)
				unschedule(e, victim, budget);
			preempt(e, victim);
			preempted = true;
			if (victim == r)
				return true;
		}
		add_sched(e, r, n);
		*budget -= n;
		r = q_next(&e->running, r);
	}
	return preempted;
}

/* Waiting requests in the queue's order (FCFS or priority), while
 * budget, seats and blocks last. One whose LoRA adapter would take the
 * step past max_loras is skipped in place (vLLM pops it and puts it
 * back in front after the pass: the same order). */
static void schedule_waiting(struct dbk_engine *e, uint32_t budget)
{
	struct req *r = q_first(&e->waiting), *next;

	while (r && budget > 0 && e->running.n < e->cfg.max_num_seqs) {
		uint32_t n;

		next = q_next(&e->waiting, r);
		if (!dbk_engine_lora_admits(e, r)) {
			r = next;
			continue;
		}
		if (!admit_alloc(e, r, budget, &n))
			break;
		q_remove(&e->waiting, r);
		r->where = Q_RUNNING;
		r->prefill_target = num_tokens(r);
		q_add(&e->running, r, false);
		add_sched(e, r, n);
		dbk_engine_lora_admitted(e, r);
		e->last.num_new_admitted++;
		budget -= n;
		r = next;
	}
}

double dbk_engine_begin_step(struct dbk_engine *e)
{
	uint32_t budget = e->cfg.max_num_batched_tokens;
	double d;

	if (e->in_step || e->delivering)
		return 0;
	memset(&e->last, 0, sizeof(e->last));
	e->n_sched = 0;
	e->n_events = 0;
	/* Nobody is admitted in a step that preempted. */
	bool preempted = schedule_running(e, &budget);

	dbk_engine_lora_batch_begin(e);
	if (!preempted)
		schedule_waiting(e, budget);
	if (e->n_sched == 0) {
		/* Unreachable with a checked config (a lone request always
		 * fits); kept so a bug cannot spin a caller at zero cost. */
		return 0;
	}
	for (uint32_t i = 0; i < e->n_sched; i++) {
		e->tmp_new[i] = e->sched[i].n_new;
		e->tmp_done[i] = e->sched[i].done;
		e->tmp_prefill[i] = e->sched[i].prefill;
	}
	d = dbk_engine_step_time(e->cfg.gpu, e->n_sched, e->tmp_new, e->tmp_done, e->tmp_prefill);
	/* The worker loads the batch's adapters before its forward pass. */
	if (e->cfg.max_loras)
		d += dbk_engine_lora_apply(e);
	e->last.duration_s = d;
	e->st.steps_total++;
	e->st.busy_time_s += d;
	e->in_step = true;
	return d;
}

static void deliver(struct dbk_engine *e, dbk_engine_event_fn cb, void *ctx)
{
	size_t i;

	e->delivering = true;
	/* n_events cannot grow during delivery: only steps push events. */
	for (i = 0; i < e->n_events; i++) {
		const struct dbk_engine_event *ev = &e->events[i];
		struct req *r = dbk_engine_lookup(e, ev->handle);

		if (!r || r->silenced)
			continue;
		if (cb)
			cb(ctx, ev);
	}
	e->delivering = false;
	e->n_events = 0;
}

void dbk_engine_end_step(struct dbk_engine *e, dbk_engine_event_fn cb, void *ctx)
{
	uint32_t i;

	if (!e->in_step)
		return;
	for (i = 0; i < e->n_sched; i++) {
		struct req *r = e->sched[i].r;

		if (r->gone || r->computed < num_tokens(r))
			continue; /* aborted, or a non-final prefill chunk */
		r->out++;
		e->st.generation_tokens_total++;
		if (!r->sampled_once) {
			r->sampled_once = true;
			e->st.prompt_tokens_total += r->prompt;
		}
		push_event(e, DBK_ENGINE_EV_TOKEN, r);
		if (r->out >= r->max_out) {
			q_remove(&e->running, r);
			r->where = Q_NONE;
			free_blocks(e, r);
			e->st.requests_finished++;
			push_event(e, DBK_ENGINE_EV_FINISHED, r);
			dbk_engine_lora_gone(e, r);
			retire(e, r);
		}
	}
	e->n_sched = 0;
	/* Still "in step" so that a retire above parks the request. */
	deliver(e, cb, ctx);
	e->in_step = false;
	release_zombies(e);
}

double dbk_engine_step(struct dbk_engine *e, dbk_engine_event_fn cb, void *ctx)
{
	double d = dbk_engine_begin_step(e);

	if (d > 0)
		dbk_engine_end_step(e, cb, ctx);
	return d;
}
