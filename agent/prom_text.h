/* The few lines of Prometheus's text exposition format (0.0.4) that every
 * /metrics renderer of the agent writes: a family's header and a
 * histogram. Values and labels are the caller's. */
#ifndef DBK_PROM_TEXT_H
#define DBK_PROM_TEXT_H

#include "histo.h"
#include "lib/buf.h"

/* "# HELP name help" and "# TYPE name type" (counter, gauge, histogram). */
void dbk_prom_head(struct dbk_buf *o, const char *name, const char *type, const char *help);

/* A whole histogram family: cumulative buckets, +Inf, sum and count, the
 * bounds and the sum multiplied by scale (0.001: milliseconds kept,
 * seconds shown). */
void dbk_prom_histogram(struct dbk_buf *o, const char *name, const char *help,
                        const struct dbk_histo *h, double scale);

#endif
