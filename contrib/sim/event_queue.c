/* Binary min-heap of events; see events.h. */
#include "event_queue.h"

#include <math.h>
#include <stdlib.h>

void dbk_evq_init(struct dbk_evq *q)
{
	q->heap = NULL;
	q->n = q->cap = 0;
	q->next_seq = 0;
}

void dbk_evq_free(struct dbk_evq *q)
{
	free(q->heap);
	dbk_evq_init(q);
}

/* Strict order on (t, seq): seq is unique, so no two events compare
 * equal and the pop order is fully determined. */
static bool before(const struct dbk_event *a, const struct dbk_event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->seq < b->seq;
}

int dbk_evq_push(struct dbk_evq *q, double t, uint32_t kind, uint32_t arg)
{
	struct dbk_event ev;
	size_t i;

	if (isnan(t))
		return -1;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct dbk_event *h;

		if (cap > SIZE_MAX / sizeof(*h))
			return -1;
		h = realloc(q->heap, cap * sizeof(*h));
		if (!h)
			return -1;
		q->heap = h;
		q->cap = cap;
	}
	ev.t = t;
	ev.seq = q->next_seq++;
	ev.kind = kind;
	ev.arg = arg;
	/* Sift up: move parents down until ev's place is found. */
	i = q->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!before(&ev, &q->heap[p]))
			break;
		q->heap[i] = q->heap[p];
		i = p;
	}
	q->heap[i] = ev;
	return 0;
}

bool dbk_evq_peek(const struct dbk_evq *q, struct dbk_event *out)
{
	if (q->n == 0)
		return false;
	*out = q->heap[0];
	return true;
}

bool dbk_evq_pop(struct dbk_evq *q, struct dbk_event *out)
{
	struct dbk_event last;
	size_t i = 0;

	if (q->n == 0)
		return false;
	*out = q->heap[0];
	last = q->heap[--q->n];
	/* Sift down the former last element from the root. */
	for (;;) {
		size_t l = 2 * i + 1, c;

		if (l >= q->n)
			break;
		c = l;
		if (l + 1 < q->n && before(&q->heap[l + 1], &q->heap[l]))
			c = l + 1;
		if (!before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (q->n > 0)
		q->heap[i] = last;
	return true;
}

size_t dbk_evq_size(const struct dbk_evq *q) { return q->n; }
