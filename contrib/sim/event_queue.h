/* The simulator's event queue: a binary min-heap keyed by model time.
 *
 * Pure: no I/O, no clock, no globals. Events with the same time come out
 * in the order they were pushed (a push counter breaks ties), so a run
 * never depends on how the heap happens to be laid out: the simulator's
 * determinism rests on this. */
#ifndef DBK_SIM_EVENT_QUEUE_H
#define DBK_SIM_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbk_event {
	double t;      /* model time, seconds */
	uint64_t seq;  /* push order, set by dbk_evq_push */
	uint32_t kind; /* caller's meaning */
	uint32_t arg;  /* caller's meaning (request id, instance, ...) */
};

struct dbk_evq {
	struct dbk_event *heap;
	size_t n, cap;
	uint64_t next_seq;
};

void dbk_evq_init(struct dbk_evq *q);
void dbk_evq_free(struct dbk_evq *q);

/* Returns 0, or -1 when memory is short or t is NaN (a NaN key would
 * break the heap order silently). */
int dbk_evq_push(struct dbk_evq *q, double t, uint32_t kind, uint32_t arg);

/* Earliest event (ties: first pushed); false when empty. */
bool dbk_evq_pop(struct dbk_evq *q, struct dbk_event *out);
bool dbk_evq_peek(const struct dbk_evq *q, struct dbk_event *out);
size_t dbk_evq_size(const struct dbk_evq *q);

#endif
