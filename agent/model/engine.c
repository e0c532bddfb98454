/* vLLM V1 scheduler model; see engine.h and ENGINE-MODEL.md.
 *
 * Faithful to vllm/v1/core/sched/scheduler.py (schedule()):
 *  - running requests first, in admission order, each taking
 *    min(tokens it still lacks, budget left);
 *  - a running request that cannot get its KV blocks preempts the newest
 *    running request (running.pop()), possibly itself, which ends the
 *    running pass;
 *  - waiting requests are admitted FCFS only when nothing was preempted
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
 * preempted request finds its own blocks again if nobody evicted them. */
#include "model/engine.h"
#include "model/handles.h"
#include "lib/list.h"
#include "model/prefix_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Engine state. ---- */

enum where { Q_NONE, Q_WAITING, Q_RUNNING };

struct req {
	struct dbk_list link; /* in its queue */
	void *cookie;
	uint32_t slot;
	uint32_t prompt;
	uint32_t max_out;
	uint32_t out;      /* output tokens generated (and reported) */
	uint32_t computed; /* num_computed_tokens */
	uint32_t blocks;   /* block table: ids in table[0..blocks) */
	uint32_t *table;
	/* Chained keys of full blocks: keys[0..n_keys) known (the caller's
	 * prompt keys, then derived from salt); blocks [0..n_keyed) of the
	 * table carry theirs in the pool. Only with caching. */
	uint64_t *keys;
	uint32_t n_keys, n_keyed;
	uint64_t salt;
	uint32_t cached_tokens; /* hit at the last admission */
	/* num_tokens when last admitted from waiting: below it a chunk is
	 * (re)prefill, at or above it the request decodes. */
	uint32_t prefill_target;
	uint32_t preemptions;
	enum where where;
	bool gone;     /* finished or aborted; slot kept until safe */
	bool silenced; /* aborted: report nothing more */
	bool sampled_once;
};

struct queue {
	struct dbk_list head;
	uint32_t n;
};

struct sched {
	struct req *r;
	uint32_t n_new;
	uint32_t done; /* computed before this step */
	bool prefill;
};

struct dbk_engine {
	struct dbk_engine_config cfg;
	uint64_t blocks_total;
	struct dbk_prefix_cache *pool;
	uint64_t next_salt;

	struct queue running, waiting;

	struct dbk_handles handles;

	struct sched *sched; /* capacity cfg.max_num_seqs */
	uint32_t n_sched;
	uint32_t *tmp_new, *tmp_done;
	bool *tmp_prefill;
	bool in_step, delivering;

	/* Sized for the worst step (every running request preempted, or
	 * each scheduled one yielding TOKEN + FINISHED), so reporting never
	 * needs memory it might not get. */
	struct dbk_engine_event *events;
	size_t n_events, cap_events;

	/* Requests gone while a step or a delivery may still point at them;
	 * linked through their (now unused) queue links. */
	struct queue zombies;

	struct dbk_engine_stats st;
	struct dbk_engine_step_info last;
};

static void q_init(struct queue *q)
{
	dbk_list_init(&q->head);
	q->n = 0;
}

/* At the back (admission order), or at the front (a preempted request
 * is the first to come back). */
static void q_add(struct queue *q, struct req *r, bool front)
{
	if (front)
		dbk_list_push(&q->head, &r->link);
	else
		dbk_list_append(&q->head, &r->link);
	q->n++;
}

static void q_remove(struct queue *q, struct req *r)
{
	dbk_list_del(&r->link);
	q->n--;
}

static struct req *q_first(const struct queue *q)
{
	return dbk_list_first(&q->head, struct req, link);
}

static struct req *q_last(const struct queue *q)
{
	return q->n ? dbk_list_elem(q->head.prev, struct req, link) : NULL;
}

/* The request after r in q, or NULL. */
static struct req *q_next(const struct queue *q, const struct req *r)
{
	return r->link.next == &q->head ? NULL : dbk_list_elem(r->link.next, struct req, link);
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
	if (!e->pool || !e->sched || !e->tmp_new || !e->events) {
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
	dbk_prefix_cache_free(e->pool);
	free(e);
}

/* ---- Handles (handles.h). ---- */

static struct req *lookup(const struct dbk_engine *e, uint64_t h)
{
	return dbk_handles_get(&e->handles, h);
}

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
	struct req *r;
	uint64_t h;

	if (prompt_tokens == 0 || max_output_tokens == 0)
		return DBK_ENGINE_E_INVAL;
	if ((uint64_t)prompt_tokens + max_output_tokens > e->cfg.max_model_len)
		return DBK_ENGINE_E_TOO_LONG;
	r = calloc(1, sizeof(*r));
	if (!r)
		return DBK_ENGINE_E_NOMEM;
	if (req_init(e, r, prompt_tokens, max_output_tokens, keys, n_keys) ||
	    dbk_handles_add(&e->handles, r, &r->slot, &h) != 0) {
		req_free(r);
		return DBK_ENGINE_E_NOMEM;
	}
	r->cookie = cookie;
	r->where = Q_WAITING;
	q_add(&e->waiting, r, false);
	if (handle)
		*handle = h;
	return DBK_ENGINE_OK;
}

int dbk_engine_abort(struct dbk_engine *e, uint64_t handle)
{
	struct req *r = lookup(e, handle);

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
	victim->where = Q_WAITING;
	q_add(&e->waiting, victim, true);
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

/* Running requests, admission order, each taking what it lacks out of
 * *budget; one that cannot get its blocks preempts the newest (maybe
 * itself, which ends the pass). Returns whether anything was preempted. */
static bool schedule_running(struct dbk_engine *e, uint32_t *budget)
{
	struct req *r = q_first(&e->running);
	bool preempted = false;

	while (r && *budget > 0) {
		uint32_t n = num_tokens(r) - r->computed;

		if (n > *budget)
			n = *budget;
		while (!try_alloc(e, r, n)) {
			struct req *victim = q_last(&e->running);

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

/* Waiting requests, FCFS, while budget, seats and blocks last. */
static void schedule_waiting(struct dbk_engine *e, uint32_t budget)
{
	while (e->waiting.n > 0 && budget > 0 && e->running.n < e->cfg.max_num_seqs) {
		struct req *r = q_first(&e->waiting);
		uint32_t n;

		if (!admit_alloc(e, r, budget, &n))
			break;
		q_remove(&e->waiting, r);
		r->where = Q_RUNNING;
		r->prefill_target = num_tokens(r);
		q_add(&e->running, r, false);
		add_sched(e, r, n);
		e->last.num_new_admitted++;
		budget -= n;
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
	if (!schedule_running(e, &budget))
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
		struct req *r = lookup(e, ev->handle);

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

bool dbk_engine_has_work(const struct dbk_engine *e)
{
	return e->running.n > 0 || e->waiting.n > 0;
}

bool dbk_engine_in_step(const struct dbk_engine *e) { return e->in_step; }

uint32_t dbk_engine_num_running(const struct dbk_engine *e) { return e->running.n; }

uint32_t dbk_engine_num_waiting(const struct dbk_engine *e) { return e->waiting.n; }

double dbk_engine_kv_usage(const struct dbk_engine *e)
{
	if (e->blocks_total == 0)
		return 0;
	return (double)(e->blocks_total - dbk_prefix_cache_num_free(e->pool)) /
	       (double)e->blocks_total;
}

void dbk_engine_get_stats(const struct dbk_engine *e, struct dbk_engine_stats *st)
{
	*st = e->st;
	st->running = e->running.n;
	st->waiting = e->waiting.n;
	st->kv_blocks_total = e->blocks_total;
	st->kv_blocks_used = e->blocks_total - dbk_prefix_cache_num_free(e->pool);
	st->kv_blocks_cached = dbk_prefix_cache_num_cached(e->pool);
	st->kv_evictions = dbk_prefix_cache_evictions(e->pool);
}

void dbk_engine_last_step(const struct dbk_engine *e, struct dbk_engine_step_info *info)
{
	*info = e->last;
}

enum dbk_engine_req_state dbk_engine_req_get(const struct dbk_engine *e, uint64_t handle,
                                             struct dbk_engine_req_info *info)
{
	const struct req *r = lookup(e, handle);
	enum dbk_engine_req_state s = DBK_REQ_UNKNOWN;

	if (r && !r->gone)
		s = r->where == Q_RUNNING ? DBK_REQ_RUNNING : DBK_REQ_WAITING;
	if (info) {
		memset(info, 0, sizeof(*info));
		info->state = s;
		if (r && !r->gone) {
			info->prompt_tokens = r->prompt;
			info->max_output_tokens = r->max_out;
			info->n_output = r->out;
			info->num_computed_tokens = r->computed;
			info->kv_blocks = r->blocks;
			info->num_preemptions = r->preemptions;
			info->num_cached_tokens = r->cached_tokens;
		}
	}
	return s;
}

bool dbk_engine_prefix_caching(const struct dbk_engine *e) { return e->cfg.enable_prefix_caching; }

uint32_t dbk_engine_cached_blocks(const struct dbk_engine *e, const uint64_t *keys, uint32_t n)
{
	return dbk_prefix_cache_match(e->pool, keys, n, NULL);
}

uint32_t dbk_engine_hit_tokens(const struct dbk_engine *e, uint32_t prompt_tokens,
                               const uint64_t *keys, uint32_t n)
{
	uint32_t max_blocks = prompt_tokens ? (prompt_tokens - 1) / DBK_KV_BLOCK_TOKENS : 0;

	if (n > max_blocks)
		n = max_blocks;
	return dbk_engine_cached_blocks(e, keys, n) * DBK_KV_BLOCK_TOKENS;
}
