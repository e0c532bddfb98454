/* Priority classes in the simulator's workload (issue 28): which
 * requests are critical, standard or sheddable (agent/admission.h's
 * classes), and what each class got.
 *
 * The assignment stands for a fleet shared by a chat product and batch
 * jobs: the batch jobs are the sheddable share and send the longest
 * prompts, the chat traffic splits into critical and standard at random.
 * Exactly, for n requests and shares c:s:b (summing to 100%):
 *   - sheddable: the round(n x b) requests with the most input tokens
 *     (ties: the later request first);
 *   - of the others, ordered by a seeded hash of their index, the first
 *     round(n x c) are critical and the rest standard.
 * So the counts are exact, the draw is the same for every run of the
 * same trace and slice, and it does not depend on the rate factor.
 * With by_length false, sheddable is drawn like the others (the first
 * round(n x c) of the hashed order critical, the last round(n x b)
 * sheddable): the live bench's workload (dbucket-bench --priority-mix
 * draws each request's class whatever its length), where batch jobs do
 * not bring the long prompts.
 *
 * Pure: no I/O, no globals. */
#ifndef DBK_SIM_CLASSES_H
#define DBK_SIM_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission.h"

#define DBK_SIM_CLASS_SEED UINT64_C(0x636c617373657321)

/* Classes of the n requests whose input lengths are input[0..n), with
 * shares weight[DBK_CLASS_N] (any positive scale: 30,50,20) into
 * out[0..n). 0, or -1 when memory ran short (out untouched). */
int dbk_sim_classes_assign(const uint32_t *input, size_t n, const double *weight, bool by_length,
                           uint64_t seed, uint8_t *out);

#endif
