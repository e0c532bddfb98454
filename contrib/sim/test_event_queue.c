/* Unit tests of the simulator's event queue (event_queue.c). */
#include "event_queue.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* Deterministic pseudo-random numbers (no global state). */
static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static void test_empty(void)
{
	struct dbk_evq q;
	struct dbk_event ev;

	dbk_evq_init(&q);
	CHECK(!dbk_evq_pop(&q, &ev));
	CHECK(!dbk_evq_peek(&q, &ev));
	CHECK_EQ_U(dbk_evq_size(&q), 0);
	CHECK(dbk_evq_push(&q, NAN, 0, 0) != 0);
	CHECK_EQ_U(dbk_evq_size(&q), 0);
	dbk_evq_free(&q);
}

/* Random times come out in non-decreasing order, every one of them. */
static void test_order(void)
{
	struct dbk_evq q;
	struct dbk_event ev, pk;
	uint32_t seed = 7, i, n = 5000;
	double last = -1;
	uint64_t sum_in = 0, sum_out = 0;
	int bad = 0;

	dbk_evq_init(&q);
	for (i = 0; i < n; i++) {
		CHECK_EQ_U(dbk_evq_push(&q, (double)(lcg(&seed) % 1000) / 10.0, 1, i), 0);
		sum_in += i;
	}
	CHECK_EQ_U(dbk_evq_size(&q), n);
	for (i = 0; i < n; i++) {
		CHECK(dbk_evq_peek(&q, &pk));
		CHECK(dbk_evq_pop(&q, &ev));
		CHECK(pk.seq == ev.seq);
		if (ev.t < last)
			bad++;
		last = ev.t;
		sum_out += ev.arg;
	}
	CHECK_EQ_U(bad, 0);
	CHECK_EQ_U(sum_out, sum_in);
	CHECK(!dbk_evq_pop(&q, &ev));
	dbk_evq_free(&q);
}

/* Equal times pop in push order, whatever the heap's layout: 1000
 * events at one time behind an earlier one. */
static void test_stability(void)
{
	struct dbk_evq q;
	struct dbk_event ev;
	uint32_t i;
	int bad = 0;

	dbk_evq_init(&q);
	for (i = 0; i < 1000; i++)
		CHECK_EQ_U(dbk_evq_push(&q, 3.0, 0, i), 0);
	CHECK_EQ_U(dbk_evq_push(&q, 2.0, 0, 5000), 0);
	CHECK(dbk_evq_pop(&q, &ev));
	CHECK_EQ_U(ev.arg, 5000);
	for (i = 0; i < 1000; i++) {
		CHECK(dbk_evq_pop(&q, &ev));
		if (ev.arg != i)
			bad++;
	}
	CHECK_EQ_U(bad, 0);
	dbk_evq_free(&q);
}

/* Per time, args come out in push order while pushes and pops
 * interleave, as in a simulation. */
static void test_stability_interleaved(void)
{
	struct dbk_evq q;
	struct dbk_event ev;
	uint32_t seed = 1234, i, cnt[8] = { 0 }, seen[8] = { 0 };
	int bad = 0;

	dbk_evq_init(&q);
	for (i = 0; i < 20000; i++) {
		uint32_t k = lcg(&seed) % 8;

		CHECK_EQ_U(dbk_evq_push(&q, (double)k * 0.25, k, cnt[k]++), 0);
		if (lcg(&seed) % 3 == 0 && dbk_evq_pop(&q, &ev)) {
			if (ev.arg != seen[ev.kind])
				bad++;
			seen[ev.kind] = ev.arg + 1;
		}
	}
	while (dbk_evq_pop(&q, &ev)) {
		if (ev.arg != seen[ev.kind])
			bad++;
		seen[ev.kind] = ev.arg + 1;
	}
	CHECK_EQ_U(bad, 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ_U(seen[i], cnt[i]);
	dbk_evq_free(&q);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_order);
	RUN(test_stability);
	RUN(test_stability_interleaved);
	return CHECK_DONE();
}
