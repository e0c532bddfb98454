/* Several pools' /metrics in one exposition: each pool renders its
 * families as if it were alone, and the merge gives every sample a
 * pool="NAME" label and keeps each family's samples together under one
 * header, as Prometheus's text format wants. Pure: text in, text out. */
#ifndef DBK_PROM_MERGE_H
#define DBK_PROM_MERGE_H

#include "lib/buf.h"

/* Appends to o the families of texts[0..n) (text k is pool names[k]'s),
 * in the order they first appear, each with the header it first had.
 * Lines other than "# HELP", "# TYPE" and samples are dropped. */
void dbk_prom_merge(const struct dbk_buf *texts, const char *const *names, unsigned n,
                    struct dbk_buf *o);

#endif
