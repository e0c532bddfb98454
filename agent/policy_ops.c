/* The table of routing policies and what they share (policy_ops.h). */
#include "policy_ops.h"

#include <inttypes.h>
#include <string.h>

#include "prom_text.h"
#include "lib/log.h"

/* The reference: the balancer's own algorithm (agent/ALGORITHM.md), in
 * the mode its flags choose, decision for decision as the parity
 * vectors record; nothing to keep beside the balancer. */
const struct dbk_policy_ops dbk_policy_reference = {
	.name = "reference",
	.help = "the algorithm above,\ndecision for decision (the default)",
};

/* The table, one line a policy (dbk_policy_NAME, defined in
 * policy_NAME.c; the reference's above), in --help's order; the first
 * is the default. */
#define POLICIES(X)  \
	X(reference) \
	X(ttft)      \
	X(p2ttft)

#define DECLARE(name) extern const struct dbk_policy_ops dbk_policy_##name;
#define ENTRY(name) &dbk_policy_##name,
POLICIES(DECLARE)
static const struct dbk_policy_ops *const table[] = { POLICIES(ENTRY) };

const struct dbk_policy_ops *dbk_policy_at(size_t i)
{
	return i < sizeof(table) / sizeof(table[0]) ? table[i] : NULL;
}

const struct dbk_policy_ops *dbk_policy_find(const char *name)
{
	const struct dbk_policy_ops *p;

	for (size_t i = 0; (p = dbk_policy_at(i)) != NULL; i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

int dbk_policy_start(struct dbk_policy *p, const struct dbk_policy_ops *ops,
                     const struct dbk_policy_env *env, char *err, size_t errlen)
{
	p->ops = ops;
	p->st = NULL;
	if (ops->create && !(p->st = ops->create(env))) {
		dbk_errf(err, errlen, "cannot create the %s policy (out of memory)", ops->name);
		return -1;
	}
	return 0;
}

void dbk_policy_stop(struct dbk_policy *p)
{
	if (p->ops && p->ops->destroy)
		p->ops->destroy(p->st);
	p->st = NULL;
}

static void put_state(struct dbk_buf *o, enum dbk_policy_fmt fmt, double v)
{
	switch (fmt) {
	case DBK_POLICY_INT: dbk_buf_printf(o, "%" PRIu64, (uint64_t)v); break;
	case DBK_POLICY_SHORT: dbk_buf_printf(o, "%.6g", v); break;
	case DBK_POLICY_FULL: dbk_buf_printf(o, "%.17g", v); break;
	case DBK_POLICY_BOOL: dbk_buf_printf(o, "%s", v != 0 ? "true" : "false"); break;
	}
}

void dbk_policy_report_state(const struct dbk_policy *p, const char *const *names, unsigned n,
                             uint64_t now_ms, struct dbk_buf *o)
{
	const struct dbk_policy_report *r = p->ops ? p->ops->report : NULL;
	double v[DBK_POLICY_MAX_ROWS];

	if (!r)
		return;
	dbk_buf_printf(o, "  \"%s\": [\n", r->member);
	const char *sep = "";
	for (unsigned i = 0; i < n; i++) {
		if (!names[i][0])
			continue; /* a free slot (agent.h) */
		r->view(p->st, i, now_ms, v);
		dbk_buf_printf(o, "%s    {\"name\": \"%s\"", sep, names[i]);
		sep = ",\n";
		for (unsigned k = 0; k < r->nrows; k++) {
			if (!r->rows[k].json)
				continue;
			dbk_buf_printf(o, ", \"%s\": ", r->rows[k].json);
			put_state(o, r->rows[k].fmt, v[k]);
		}
		dbk_buf_printf(o, "}");
	}
	dbk_buf_printf(o, "%s  ],\n", *sep ? "\n" : "");
}

void dbk_policy_report_metrics(const struct dbk_policy *p, const char *const *names, unsigned n,
                               uint64_t now_ms, struct dbk_buf *o)
{
	const struct dbk_policy_report *r = p->ops ? p->ops->report : NULL;
	double v[DBK_POLICY_MAX_ROWS];

	if (!r)
		return;
	for (unsigned k = 0; k < r->nrows; k++) {
		if (!r->rows[k].metric)
			continue;
		dbk_prom_head(o, r->rows[k].metric, "gauge", r->rows[k].help);
		for (unsigned i = 0; i < n; i++) {
			if (!names[i][0])
				continue;
			r->view(p->st, i, now_ms, v);
			dbk_buf_printf(o, "%s{server=\"%s\"} %.17g\n", r->rows[k].metric, names[i],
			               r->rows[k].fmt == DBK_POLICY_BOOL ? (v[k] != 0 ? 1.0 : 0.0)
			                                                 : v[k]);
		}
	}
}
