/* The engine model's state, shared by its two files: the scheduler
 * (engine.c) and its read-only queries (engine_query.c). Private to
 * agent/model/engine*.c: everything else goes through engine.h. */
#ifndef DBK_ENGINE_STATE_H
#define DBK_ENGINE_STATE_H

#include "model/engine.h"
#include "model/handles.h"
#include "lib/list.h"
#include "model/prefix_cache.h"

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
	int32_t priority;
	uint32_t lora;    /* adapter id, 0 = base model */
	bool lora_ran;    /* counted running (scheduled once) for the metric */
	uint64_t arrival; /* submission order: vLLM's arrival_time */
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

/* LoRA state (engine_lora.c): two LRU sets of adapter ids, the GPU
 * slots and the CPU cache, each stamped with its last use; the
 * adapters of the step being scheduled; the live requests per adapter
 * for the metric. All small: linear scans. */
struct lora_lru {
	uint32_t *id;
	uint64_t *used;
	uint32_t n, cap;
};

struct dbk_engine_lora {
	struct lora_lru gpu, cpu;
	uint64_t tick;
	uint32_t *batch; /* distinct adapters of this step, cap max_loras */
	uint32_t n_batch;
	struct dbk_engine_lora_count *counts;
	size_t n_counts, cap_counts;
};

struct dbk_engine {
	struct dbk_engine_config cfg;
	uint64_t blocks_total;
	struct dbk_prefix_cache *pool;
	uint64_t next_salt;
	uint64_t next_arrival;

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

	struct dbk_engine_lora lora; /* unused when cfg.max_loras is 0 */

	struct dbk_engine_stats st;
	struct dbk_engine_step_info last;
};

static inline void q_init(struct queue *q)
{
	dbk_list_init(&q->head);
	q->n = 0;
}

/* At the back (admission order), or at the front (a preempted request
 * is the first to come back). */
static inline void q_add(struct queue *q, struct req *r, bool front)
{
	if (front)
		dbk_list_push(&q->head, &r->link);
	else
		dbk_list_append(&q->head, &r->link);
	q->n++;
}

static inline void q_remove(struct queue *q, struct req *r)
{
	dbk_list_del(&r->link);
	q->n--;
}

static inline struct req *q_first(const struct queue *q)
{
	return dbk_list_first(&q->head, struct req, link);
}

static inline struct req *q_last(const struct queue *q)
{
	return q->n ? dbk_list_elem(q->head.prev, struct req, link) : NULL;
}

/* The request after r in q, or NULL. */
static inline struct req *q_next(const struct queue *q, const struct req *r)
{
	return r->link.next == &q->head ? NULL : dbk_list_elem(r->link.next, struct req, link);
}

/* The live request a handle names (a gone one until it is released),
 * or NULL. */
static inline struct req *dbk_engine_lookup(const struct dbk_engine *e, uint64_t h)
{
	return dbk_handles_get(&e->handles, h);
}

/* engine_lora.c: the scheduler's hooks, no-ops without LoRA. */
int dbk_engine_lora_init(struct dbk_engine *e);
void dbk_engine_lora_free(struct dbk_engine *e);
/* A request entered the waiting queue (new): counted waiting. */
int dbk_engine_lora_submitted(struct dbk_engine *e, struct req *r);
/* A request left the engine (finished or aborted). */
void dbk_engine_lora_gone(struct dbk_engine *e, struct req *r);
/* The step's adapters start as those of the running requests it
 * scheduled (sched[0..n)). */
void dbk_engine_lora_batch_begin(struct dbk_engine *e);
/* Whether a waiting request may join this step: its adapter is in the
 * batch already or the batch has fewer than max_loras. */
bool dbk_engine_lora_admits(const struct dbk_engine *e, const struct req *r);
/* r was admitted into this step. */
void dbk_engine_lora_admitted(struct dbk_engine *e, struct req *r);
/* The batch's adapters into GPU slots (the worker's LRU); returns the
 * model seconds that costs. */
double dbk_engine_lora_apply(struct dbk_engine *e);

#endif
