/* Renders the running agent (agent.h) for people (/state, JSON) and for
 * Prometheus (/metrics, text format 0.0.4): report.c. Read-only; the
 * caller owns out. */
#ifndef DBK_REPORT_H
#define DBK_REPORT_H

#include "lib/buf.h"

struct dbk_agent;

void dbk_report_state(const struct dbk_agent *a, struct dbk_buf *out);
void dbk_report_metrics(const struct dbk_agent *a, struct dbk_buf *out);

#endif
