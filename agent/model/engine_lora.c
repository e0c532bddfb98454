/* LoRA adapters in the engine model (engine.h, ENGINE-MODEL.md "LoRA
 * adapters"), after vllm-project/vllm:
 *
 *  - the scheduler's cap (vllm/v1/core/sched/scheduler.py at b4622cf):
 *    the adapters of the running requests it scheduled start the step's
 *    set; a waiting request whose adapter is not in the set when the set
 *    already holds max_loras is skipped (it keeps its place in the
 *    queue) and the pass goes on with the next one;
 *  - the worker's two LRU caches (vllm/lora/worker_manager.py at
 *    0030b9f, LRUCacheWorkerLoRAManager, over LRUCacheLoRAModelManager
 *    in vllm/lora/models.py): for each adapter of the batch, in
 *    ascending id (a set of small ints, as Python iterates it), one not
 *    in the CPU cache first evicts the cache's oldest if it is full
 *    (which also frees its GPU slot) and is read in; then one not in a
 *    GPU slot evicts the oldest slot if all are taken and is copied in;
 *    either way both caches are touched;
 *  - the metric's counts (vllm/v1/metrics/stats.py, LoRARequestStates):
 *    a request is waiting from its arrival until it is first scheduled,
 *    then running until it ends (a preempted one stays running).
 *
 * Everything here returns at once when cfg.max_loras is 0, so an engine
 * without LoRA schedules, and times, exactly as before. Pure. */
#include "model/engine_state.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

static bool on(const struct dbk_engine *e) { return e->cfg.max_loras > 0; }

static int lru_init(struct lora_lru *l, uint32_t cap)
{
	l->id = calloc(cap, sizeof(*l->id));
	l->used = calloc(cap, sizeof(*l->used));
	l->cap = cap;
	return l->id && l->used ? 0 : -1;
}

static void lru_free(struct lora_lru *l)
{
	free(l->id);
	free(l->used);
}

static int lru_find(const struct lora_lru *l, uint32_t id)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->id[i] == id)
			return (int)i;
	return -1;
}

static void lru_remove_at(struct lora_lru *l, uint32_t i)
{
	l->id[i] = l->id[l->n - 1];
	l->used[i] = l->used[l->n - 1];
	l->n--;
}

static uint32_t lru_oldest(const struct lora_lru *l)
{
	uint32_t o = 0;

	for (uint32_t i = 1; i < l->n; i++)
		if (l->used[i] < l->used[o])
			o = i;
	return o;
}

int dbk_engine_lora_init(struct dbk_engine *e)
{
	struct dbk_engine_lora *L = &e->lora;
	uint32_t cpu = e->cfg.max_cpu_loras ? e->cfg.max_cpu_loras : e->cfg.max_loras;

	if (!on(e))
		return 0;
	L->batch = calloc(e->cfg.max_loras, sizeof(*L->batch));
	if (!L->batch || lru_init(&L->gpu, e->cfg.max_loras) || lru_init(&L->cpu, cpu))
		return -1;
	return 0;
}

void dbk_engine_lora_free(struct dbk_engine *e)
{
	lru_free(&e->lora.gpu);
	lru_free(&e->lora.cpu);
	free(e->lora.batch);
	free(e->lora.counts);
}

/* The adapter into the CPU cache (reading it if absent) and a GPU slot
 * (copying it if absent), both touched; the model seconds it took. */
static double bring(struct dbk_engine *e, uint32_t id)
{
	struct dbk_engine_lora *L = &e->lora;
	int c = lru_find(&L->cpu, id), g;
	bool read = c < 0;
	double cost = 0;

	L->tick++;
	if (c < 0) {
		if (L->cpu.n == L->cpu.cap) {
			uint32_t o = lru_oldest(&L->cpu);
			int gs = lru_find(&L->gpu, L->cpu.id[o]);

			if (gs >= 0) /* the model manager deactivates what it drops */
				lru_remove_at(&L->gpu, (uint32_t)gs);
			lru_remove_at(&L->cpu, o);
			e->st.lora_cpu_evictions++;
		}
		c = (int)L->cpu.n++;
		L->cpu.id[c] = id;
		e->st.lora_loads++;
		cost += e->cfg.lora_load_s;
	}
	L->cpu.used[c] = L->tick;
	g = lru_find(&L->gpu, id);
	if (g < 0) {
		if (L->gpu.n == L->gpu.cap) {
			lru_remove_at(&L->gpu, lru_oldest(&L->gpu));
			e->st.lora_slot_evictions++;
		}
		g = (int)L->gpu.n++;
		L->gpu.id[g] = id;
		e->st.lora_activations++;
		/* A freshly read adapter's copy is in lora_load_s. */
		if (!read)
			cost = e->cfg.lora_activate_s;
	}
	L->gpu.used[g] = L->tick;
	return cost;
}

int dbk_engine_lora_add(struct dbk_engine *e, uint32_t id)
{
	if (!on(e) || id == 0)
		return -1;
	(void)bring(e, id);
	return 0;
}

bool dbk_engine_lora_in_slot(const struct dbk_engine *e, uint32_t id)
{
	return on(e) && lru_find(&e->lora.gpu, id) >= 0;
}

bool dbk_engine_lora_in_cpu(const struct dbk_engine *e, uint32_t id)
{
	return on(e) && lru_find(&e->lora.cpu, id) >= 0;
}

uint32_t dbk_engine_max_loras(const struct dbk_engine *e) { return e->cfg.max_loras; }

/* ---- The metric's counts. ---- */

static struct dbk_engine_lora_count *count_of(struct dbk_engine_lora *L, uint32_t id)
{
	for (size_t i = 0; i < L->n_counts; i++)
		if (L->counts[i].id == id)
			return &L->counts[i];
	return NULL;
}

int dbk_engine_lora_submitted(struct dbk_engine *e, struct req *r)
{
	struct dbk_engine_lora *L = &e->lora;
	struct dbk_engine_lora_count *c;

	if (r->lora == 0)
		return 0;
	c = count_of(L, r->lora);
	if (!c) {
		c = dbk_array_room(L->counts, &L->cap_counts, L->n_counts, sizeof(*c), 8);
		if (!c)
			return -1;
		L->counts = c;
		c = &L->counts[L->n_counts++];
		memset(c, 0, sizeof(*c));
		c->id = r->lora;
	}
	c->waiting++;
	return 0;
}

void dbk_engine_lora_gone(struct dbk_engine *e, struct req *r)
{
	struct dbk_engine_lora *L = &e->lora;
	struct dbk_engine_lora_count *c;

	if (r->lora == 0 || !(c = count_of(L, r->lora)))
		return;
	if (r->lora_ran)
		c->running--;
	else
		c->waiting--;
	/* An adapter with nothing live leaves the list, the others keep
	 * their order. */
	if (c->running == 0 && c->waiting == 0) {
		size_t i = (size_t)(c - L->counts);

		memmove(c, c + 1, (L->n_counts - i - 1) * sizeof(*c));
		L->n_counts--;
	}
}

size_t dbk_engine_lora_counts(const struct dbk_engine *e, struct dbk_engine_lora_count *out,
                              size_t cap)
{
	const struct dbk_engine_lora *L = &e->lora;

	/* Without adapters counts is NULL, and memcpy from NULL is undefined
	 * even for no bytes. */
	if (out && cap && L->n_counts)
		memcpy(out, L->counts, (cap < L->n_counts ? cap : L->n_counts) * sizeof(*out));
	return L->n_counts;
}

/* ---- The scheduler's cap and the step's loads. ---- */

static bool in_batch(const struct dbk_engine_lora *L, uint32_t id)
{
	for (uint32_t i = 0; i < L->n_batch; i++)
		if (L->batch[i] == id)
			return true;
	return false;
}

static void batch_add(struct dbk_engine *e, uint32_t id)
{
	struct dbk_engine_lora *L = &e->lora;

	/* Full cannot happen: admission keeps the set to max_loras, and
	 * the running requests were admitted under the same cap. */
	if (id && !in_batch(L, id) && L->n_batch < e->cfg.max_loras)
		L->batch[L->n_batch++] = id;
}

void dbk_engine_lora_batch_begin(struct dbk_engine *e)
{
	e->lora.n_batch = 0;
	if (!on(e))
		return;
	for (uint32_t i = 0; i < e->n_sched; i++)
		batch_add(e, e->sched[i].r->lora);
}

bool dbk_engine_lora_admits(const struct dbk_engine *e, const struct req *r)
{
	const struct dbk_engine_lora *L = &e->lora;

	return r->lora == 0 || L->n_batch < e->cfg.max_loras || in_batch(L, r->lora);
}

void dbk_engine_lora_admitted(struct dbk_engine *e, struct req *r)
{
	struct dbk_engine_lora_count *c;

	if (r->lora == 0)
		return;
	batch_add(e, r->lora);
	if (!r->lora_ran && (c = count_of(&e->lora, r->lora)) != NULL) {
		c->waiting--;
		c->running++;
	}
	r->lora_ran = true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

double dbk_engine_lora_apply(struct dbk_engine *e)
{
	struct dbk_engine_lora *L = &e->lora;
	double cost = 0;

	if (!on(e) || L->n_batch == 0)
		return 0;
	qsort(L->batch, L->n_batch, sizeof(*L->batch), cmp_u32);
	for (uint32_t i = 0; i < L->n_batch; i++)
		cost += bring(e, L->batch[i]);
	e->st.lora_load_time_s += cost;
	e->last.num_loras = L->n_batch;
	e->last.lora_load_s = cost;
	return cost;
}
