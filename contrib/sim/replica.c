/* The first-token predictor; see replica.h. */
#include "replica.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

struct pitem {
	uint32_t computed, lack, remaining;
	uint64_t res; /* KV blocks reserved once running */
	bool running, done, is_new;
};

struct dbk_replica {
	struct dbk_engine_config cfg;
	struct pitem *items; /* requests with prefill left, queue order */
	size_t n, cap;
	uint64_t reserved;   /* blocks reserved by running requests */
	uint64_t queued_res; /* and by waiting ones */
	uint32_t running;    /* decoders + running prefills */
	/* Decoders, aggregated: decoder j's context before step k is
	 * base_j + k, so the batch's context sum is bsum + k * ndec. */
	uint32_t ndec;
	int64_t bsum;
	/* Per future step k: decoders whose last token comes at k, the sum
	 * of their bases and their reservations. */
	struct fin {
		uint32_t n;
		int64_t base;
		uint64_t blk;
	} * fin;
	uint32_t *touched; /* steps with fin set, to clear them */
	size_t nt, ct;
	/* One step's batch: dbk_engine_step_time's arrays (tokens new and done,
	 * prefill or not, per entry) and the items it completes. */
	struct batch {
		uint32_t *new, *done;
		bool *pf;
		size_t * compl ;
		size_t cap;
	} b;
};

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool dbk_replica_item_from_engine(const struct dbk_engine_req_info *info,
                                  struct dbk_replica_item *out)
{
	uint32_t tokens = info->prompt_tokens + info->n_output;

	out->computed = info->num_computed_tokens;
	out->lack = tokens > out->computed ? tokens - out->computed : 0;
	out->remaining = info->max_output_tokens > info->n_output
	                         ? info->max_output_tokens - info->n_output
	                         : 0;
	out->blocks = info->kv_blocks;
	out->running = info->state == DBK_REQ_RUNNING;
	if (out->lack == 0) {
		/* The step in flight computes its last known token: it
		 * samples one at the end, then decodes (or is done). */
		if (out->remaining <= 1)
			return false;
		out->remaining--;
		out->lack = 1;
	}
	return out->remaining > 0;
}

void dbk_replica_item_pending(uint32_t prompt, uint32_t cached, uint32_t output,
                              struct dbk_replica_item *out)
{
	if (cached >= prompt)
		cached = prompt ? prompt - 1 : 0;
	out->computed = cached;
	out->lack = prompt > cached ? prompt - cached : 1;
	out->remaining = output ? output : 1;
	out->blocks = 0;
	out->running = false;
}

/* realloc that leaves arr as it was, and clears *ok, when memory ran
 * short. */
static void *resize(void *arr, size_t n, size_t size, bool *ok)
{
	void *na = realloc(arr, n * size);

	*ok &= na != NULL;
	return na ? na : arr;
}

static int batch_grow(struct batch *b, size_t need)
{
	bool ok = true;

	if (need <= b->cap)
		return 0;
	b->new = resize(b->new, need, sizeof(*b->new), &ok);
	b->done = resize(b->done, need, sizeof(*b->done), &ok);
	b->pf = resize(b->pf, need, sizeof(*b->pf), &ok);
	b->compl = resize(b->compl, need, sizeof(*b->compl ), &ok);
	if (!ok)
		return -1;
	b->cap = need;
	return 0;
}

static void batch_free(struct batch *b)
{
	free(b->new);
	free(b->done);
	free(b->pf);
	free(b->compl );
}

struct dbk_replica *dbk_replica_new(void)
{
	struct dbk_replica *p = calloc(1, sizeof(*p));

	if (p && !(p->fin = calloc(DBK_PRED_HORIZON + 2, sizeof(*p->fin)))) {
		free(p);
		return NULL;
	}
	return p;
}

void dbk_replica_free(struct dbk_replica *p)
{
	if (!p)
		return;
	free(p->items);
	free(p->fin);
	free(p->touched);
	batch_free(&p->b);
	free(p);
}

int dbk_replica_reset(struct dbk_replica *p, const struct dbk_engine_config *cfg)
{
	size_t i;

	for (i = 0; i < p->nt; i++)
		memset(&p->fin[p->touched[i]], 0, sizeof(*p->fin));
	p->nt = 0;
	p->cfg = *cfg;
	p->n = 0;
	p->reserved = p->queued_res = 0;
	p->running = p->ndec = 0;
	p->bsum = 0;
	/* A step schedules at most one chunk per running request, plus
	 * the aggregated decodes. */
	return batch_grow(&p->b, (size_t)cfg->max_num_seqs + 2);
}

static int add_fin(struct dbk_replica *p, uint64_t k, int64_t base, uint64_t res)
{
	uint32_t *t;

	if (k > DBK_PRED_HORIZON)
		return 0; /* ends after the horizon: never within it */
	t = dbk_array_room(p->touched, &p->ct, p->nt, sizeof(*t), 256);
	if (!t)
		return -1;
	p->touched = t;
	p->touched[p->nt++] = (uint32_t)k;
	p->fin[k].n++;
	p->fin[k].base += base;
	p->fin[k].blk += res;
	return 0;
}

/* A decoder whose context before step k0 is ctx, with `remaining`
 * tokens to go, one per step from k0 on. */
static int add_decoder(struct dbk_replica *p, uint64_t k0, uint32_t ctx, uint32_t remaining,
                       uint64_t res)
{
	int64_t base = (int64_t)ctx - (int64_t)k0;

	p->ndec++;
	p->bsum += base;
	return add_fin(p, k0 + remaining - 1, base, res);
}

/* The blocks a request holds by the time it finishes (the clairvoyant
 * knows its output length), or what it holds now if more. */
static uint64_t reservation(uint32_t computed, uint32_t lack, uint32_t remaining, uint32_t blocks)
{
	uint64_t final = cdiv((uint64_t)computed + lack + remaining - 1, DBK_KV_BLOCK_TOKENS);

	return final > blocks ? final : blocks;
}

static int push_item(struct dbk_replica *p, const struct pitem *it)
{
	struct pitem *ni = dbk_array_room(p->items, &p->cap, p->n, sizeof(*ni), 64);

	if (!ni)
		return -1;
	p->items = ni;
	p->items[p->n++] = *it;
	return 0;
}

int dbk_replica_add(struct dbk_replica *p, const struct dbk_replica_item *it)
{
	struct pitem pi;

	uint64_t res;

	if (it->remaining == 0 || it->lack == 0)
		return 0;
	res = reservation(it->computed, it->lack, it->remaining, it->blocks);
	if (it->running) {
		p->running++;
		p->reserved += res;
	} else {
		p->queued_res += res;
	}
	if (it->running && it->lack == 1)
		return add_decoder(p, 1, it->computed, it->remaining, res);
	memset(&pi, 0, sizeof(pi));
	pi.computed = it->computed;
	pi.lack = it->lack;
	pi.remaining = it->remaining;
	pi.res = res;
	pi.running = it->running;
	return push_item(p, &pi);
}

bool dbk_replica_fits(const struct dbk_replica *p, uint32_t prompt, uint32_t output)
{
	uint64_t total = p->cfg.kv_capacity_tokens / DBK_KV_BLOCK_TOKENS;

	return p->reserved + p->queued_res +
	               reservation(0, prompt ? prompt : 1, output ? output : 1, 0) <=
	       total;
}

/* Step k's batch into p->b: the aggregated decodes, then
 * prefill chunks in queue order from head, admitting FCFS. Returns the
 * batch's size; the requests whose prefill it completes go to b.compl
 * (*ncompl of them). */
static size_t fill_batch(struct dbk_replica *p, uint64_t k, size_t head, size_t *ncompl)
{
	uint64_t total = p->cfg.kv_capacity_tokens / DBK_KV_BLOCK_TOKENS;
	uint32_t budget = p->cfg.max_num_batched_tokens;
	size_t nent = 0, j;

	*ncompl = 0;
	if (p->ndec > 0) {
		int64_t ctx = p->bsum + (int64_t)k * p->ndec;

		p->b.new[nent] = p->ndec;
		p->b.done[nent] = ctx < 0 ? 0 : ctx > UINT32_MAX ? UINT32_MAX : (uint32_t)ctx;
		p->b.pf[nent] = false;
		nent++;
		budget = p->ndec >= budget ? 0 : budget - p->ndec;
	}
	for (j = head; j < p->n && budget > 0 && nent < p->b.cap; j++) {
		struct pitem *it = &p->items[j];
		uint32_t chunk;

		if (it->done)
			continue;
		if (!it->running) {
			/* Admission, FCFS. Unlike vLLM, which admits when
			 * the first chunk's blocks are free and preempts
			 * later, the replica admits only what fits with
			 * every running request's final KV: an instance
			 * about to thrash then looks as slow as it will
			 * turn out, instead of fast. */
			if (p->running >= p->cfg.max_num_seqs || p->reserved + it->res > total)
				break;
			it->running = true;
			p->running++;
			p->reserved += it->res;
		}
		chunk = it->lack < budget ? it->lack : budget;
		p->b.new[nent] = chunk;
		p->b.done[nent] = it->computed;
		p->b.pf[nent] = true;
		nent++;
		it->computed += chunk;
		it->lack -= chunk;
		budget -= chunk;
		if (it->lack == 0)
			p->b.compl [(*ncompl)++] = j;
	}
	return nent;
}

/* After step k: the decoders whose last token came with it leave, the
 * prefills it completed got their first token and decode on. 0, or -1
 * (memory). */
static int retire(struct dbk_replica *p, uint64_t k, size_t ncompl)
{
	size_t c;

	p->ndec -= p->fin[k].n;
	p->bsum -= p->fin[k].base;
	p->running -= p->fin[k].n;
	p->reserved -= p->fin[k].blk;
	for (c = 0; c < ncompl; c++) {
		struct pitem *it = &p->items[p->b.compl [c]];

		it->done = true;
		it->remaining--;
		if (it->remaining == 0) {
			p->reserved -= it->res;
			p->running--;
		} else if (add_decoder(p, k + 1, it->computed, it->remaining, it->res) != 0) {
			return -1;
		}
	}
	return 0;
}

double dbk_replica_first_token(struct dbk_replica *p, uint32_t prompt, uint32_t cached,
                               uint32_t output)
{
	struct pitem nw;
	size_t head = 0, j, nent, ncompl, c;
	double t = 0, lack_left = 0;
	uint64_t k;

	memset(&nw, 0, sizeof(nw));
	if (cached >= prompt)
		cached = prompt ? prompt - 1 : 0; /* vLLM recomputes the last */
	nw.computed = cached;
	nw.lack = prompt > cached ? prompt - cached : 1;
	nw.remaining = output ? output : 1;
	nw.res = reservation(cached, nw.lack, nw.remaining, 0);
	nw.is_new = true;
	if (push_item(p, &nw) != 0)
		return HUGE_VAL;

	for (k = 1; k <= DBK_PRED_HORIZON; k++) {
		nent = fill_batch(p, k, head, &ncompl);
		if (nent == 0)
			return HUGE_VAL; /* stuck: no decode, no chunk fits */
		t += dbk_engine_step_time(p->cfg.gpu, nent, p->b.new, p->b.done, p->b.pf);
		for (c = 0; c < ncompl; c++)
			if (p->items[p->b.compl [c]].is_new)
				return t;
		if (retire(p, k, ncompl) != 0)
			return HUGE_VAL;
		while (head < p->n && p->items[head].done)
			head++;
	}
	/* Past the horizon: the prompt tokens still ahead, at the average
	 * pace so far. */
	for (j = head; j < p->n; j++)
		if (!p->items[j].done)
			lack_left += p->items[j].lack;
	return t +
	       lack_left / (double)p->cfg.max_num_batched_tokens * (t / (double)DBK_PRED_HORIZON);
}
