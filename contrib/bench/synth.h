/* Synthetic request mixes for dbucket-bench: classes of uniform prompt
 * and output lengths, mixed by weight, arriving as a Poisson process. */
#ifndef DBK_BENCH_SYNTH_H
#define DBK_BENCH_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace.h"

#define DBK_SYNTH_MAX_CLASSES 16

struct dbk_synth_class {
	char name[32];
	double weight;
	uint32_t in_lo, in_hi, out_lo, out_hi;
};

struct dbk_synth {
	struct dbk_synth_class c[DBK_SYNTH_MAX_CLASSES];
	size_t n;
};

/* Output length when a class gives none: vLLM's random dataset default. */
#define DBK_SYNTH_DEFAULT_OUTPUT 128u

/* "NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]],..." e.g.
 * "short=0.9:300-2000,long=0.1:33000-90000:200-400". */
int dbk_synth_parse(const char *spec, struct dbk_synth *out, char *err, size_t errn);

/* Poisson arrivals at rate per second (infinite: all at t = 0), first at
 * t = 0, classes drawn by weight, lengths uniform in their ranges. Stops
 * after max_n requests and/or before max_t seconds (0 = no bound; at
 * least one bound must be given). */
int dbk_synth_generate(const struct dbk_synth *s, double rate, size_t max_n, double max_t,
                       uint64_t seed, struct dbk_trace *out, char *err, size_t errn);

#endif
