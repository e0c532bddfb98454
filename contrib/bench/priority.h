/* Priority classes for an overload run (issue 28): each request carries
 * an X-Request-Class header drawn by weight from a seeded mix, and the
 * report sums up each class: sent, served, refused with 429, within the
 * SLOs, and its first-token times. Pure. */
#ifndef DBK_BENCH_PRIORITY_H
#define DBK_BENCH_PRIORITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

#define DBK_PRIO_MAX 8
/* A request's class when no mix is given: no header. */
#define DBK_PRIO_NONE 0xff

struct dbk_prio_mix {
	char name[DBK_PRIO_MAX][24];
	double w[DBK_PRIO_MAX];
	size_t n;
};

/* "CLASS=WEIGHT,..." (e.g. critical=0.3,standard=0.5,sheddable=0.2);
 * the class is sent as written (letters, digits, - _). 0, or -1 with
 * err. */
int dbk_prio_parse(const char *spec, struct dbk_prio_mix *m, char *err, size_t errn);

/* The class of request i: a draw by weight from seed and i alone, so a
 * run with and one without admission send the same classes. */
uint8_t dbk_prio_of(const struct dbk_prio_mix *m, uint64_t seed, size_t i);

/* One line per class of m over the results (their prio): requests,
 * served, 429s, other failures, within the SLOs and that per second of
 * duration, TTFT median and p99 of those served. */
void dbk_prio_report(FILE *f, const struct dbk_prio_mix *m, const struct dbk_result *r, size_t n,
                     const struct dbk_slo *slo, double duration);

#endif
