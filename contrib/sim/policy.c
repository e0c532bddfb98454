/* The policy table and the two length-blind baselines (round robin and
 * least connections); see policy.h. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

/* ---- Round robin. ---- */

struct rr {
	unsigned n, next;
};

static void *rr_create(const void *arg, const struct dbk_sim_config *c,
                       char *err, size_t errlen)
{
	struct rr *p = calloc(1, sizeof(*p));

	(void)arg;
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->n = c->ninstances;
	return p;
}

static int rr_choose(void *st, const struct dbk_sim *s,
                     const struct dbk_sim_req *r)
{
	struct rr *p = st;
	unsigned i = p->next;

	(void)s;
	(void)r;
	p->next = (p->next + 1) % p->n;
	return (int)i;
}

/* ---- Least connections. ---- */

struct lc {
	unsigned n, last;
};

static void *lc_create(const void *arg, const struct dbk_sim_config *c,
                       char *err, size_t errlen)
{
	struct lc *p = calloc(1, sizeof(*p));

	(void)arg;
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->n = c->ninstances;
	p->last = c->ninstances - 1;
	return p;
}

/* Fewest in flight; among equals the first after the previous choice,
 * because HAProxy's leastconn rotates among servers with equal counts
 * instead of always favouring the first one. */
static int lc_choose(void *st, const struct dbk_sim *s,
                     const struct dbk_sim_req *r)
{
	struct lc *p = st;
	unsigned k, best = 0, best_n = 0;

	(void)r;
	for (k = 1; k <= p->n; k++) {
		unsigned i = (p->last + k) % p->n;
		unsigned n = dbk_sim_inflight(s, i);

		if (k == 1 || n < best_n) {
			best = i;
			best_n = n;
		}
	}
	p->last = best;
	return (int)best;
}

void dbk_sim_policy_no_release(void *st, const struct dbk_sim *s,
                               const struct dbk_sim_req *r, unsigned inst)
{
	(void)st;
	(void)s;
	(void)r;
	(void)inst;
}

static const struct dbk_sim_policy_ops rr_ops = {
	.name = "rr",
	.summary = "round robin",
	.create = rr_create,
	.choose = rr_choose,
	.release = dbk_sim_policy_no_release,
	.destroy = free,
};

static const struct dbk_sim_policy_ops lc_ops = {
	.name = "lc",
	.summary = "least connections (fewest requests in flight)",
	.create = lc_create,
	.choose = lc_choose,
	.release = dbk_sim_policy_no_release,
	.destroy = free,
};

const struct dbk_sim_policy_ops *dbk_sim_policy_rr(void) { return &rr_ops; }
const struct dbk_sim_policy_ops *dbk_sim_policy_lc(void) { return &lc_ops; }

/* ---- The table. ---- */

typedef const struct dbk_sim_policy_ops *(*policy_fn)(void);

static const policy_fn table[] = {
	dbk_sim_policy_rr,
	dbk_sim_policy_lc,
	dbk_sim_policy_plain,
	dbk_sim_policy_dynamic,
	dbk_sim_policy_ttft,
	dbk_sim_policy_clairvoyant,
	dbk_sim_policy_cache_aware,
	dbk_sim_policy_power_of_two,
	dbk_sim_policy_consistent_hash,
	dbk_sim_policy_llm_d,
	dbk_sim_policy_prefixaware,
};

const struct dbk_sim_policy_ops *dbk_sim_policy_at(size_t i)
{
	return i < sizeof(table) / sizeof(table[0]) ? table[i]() : NULL;
}

const struct dbk_sim_policy_ops *dbk_sim_policy_find(const char *name)
{
	const struct dbk_sim_policy_ops *p;
	size_t i;

	for (i = 0; (p = dbk_sim_policy_at(i)) != NULL; i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

int dbk_sim_policy_pick(const char *list, const struct dbk_sim_policy_ops **out,
                        size_t max, size_t *n, char *err, size_t errlen)
{
	char buf[256], *tok, *save = NULL;
	const struct dbk_sim_policy_ops *p;

	*n = 0;
	if (strcmp(list, "all") == 0) {
		while (*n < max && (p = dbk_sim_policy_at(*n)) != NULL)
			out[(*n)++] = p;
		return 0;
	}
	if (strlen(list) >= sizeof(buf)) {
		dbk_errf(err, errlen, "policy list too long");
		return -1;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		p = dbk_sim_policy_find(tok);
		if (!p || *n == max) {
			dbk_errf(err, errlen, "unknown policy '%s' (see --help)", tok);
			return -1;
		}
		out[(*n)++] = p;
	}
	if (*n == 0) {
		dbk_errf(err, errlen, "no policy in '%s'", list);
		return -1;
	}
	return 0;
}
