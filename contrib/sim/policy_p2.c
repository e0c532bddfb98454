/* power_of_two: power-of-two choices as the vLLM Router does it,
 *   vllm-project/router, src/policies/power_of_two.rs at commit
 *     fa999f98dc881e20b6b0257be0049cd4c68c8ea0;
 *   default load_check_interval_secs 5 (src/main.rs).
 * (SGLang's sgl-router, sgl-router/src/policies/power_of_two.rs at commit
 * 00b01f93f96aff7fd0eb43f177a09068854bcd5b, compares the router's own
 * in-flight counts only.)
 *
 * Two distinct instances drawn at random; the request goes to the one
 * with the lower load, the first drawn among equals. Load = the load the
 * router's monitor last polled from the instance (every 5 s; modelled as
 * the scraped vllm:num_requests_running + vllm:num_requests_waiting,
 * snapshot.h) + the router's own count of requests it sent there and that
 * have not finished. The random draws come from a fixed seed, so runs are
 * reproducible. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>

#include "snapshot.h"
#include "u64map.h"

#define P2_LOAD_CHECK_INTERVAL_S 5.0
#define P2_SEED 0x9f2ULL

struct p2 {
	unsigned n;
	uint64_t rng;
	struct dbk_sim_snapshot snap;
};

static void p2_destroy(void *st)
{
	struct p2 *p = st;

	if (!p)
		return;
	dbk_sim_snapshot_free(&p->snap);
	free(p);
}

static void *p2_create(const void *arg, const struct dbk_sim_config *c,
                       char *err, size_t errlen)
{
	struct p2 *p = calloc(1, sizeof(*p));

	(void)arg;
	if (!p || dbk_sim_snapshot_init(&p->snap, c->ninstances) != 0) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->n = c->ninstances;
	p->rng = P2_SEED;
	return p;
}

static unsigned draw(struct p2 *p, unsigned n)
{
	return (unsigned)(dbk_mix64(p->rng++) % n);
}

static uint64_t load(const struct p2 *p, const struct dbk_sim *s, unsigned i)
{
	const struct dbk_sim_scrape *x = dbk_sim_snapshot_get(&p->snap, i);

	return (uint64_t)x->running + x->waiting + dbk_sim_inflight(s, i);
}

static int p2_choose(void *st, const struct dbk_sim *s,
                     const struct dbk_sim_req *r)
{
	struct p2 *p = st;
	unsigned a, b;

	(void)r;
	if (p->n == 1)
		return 0;
	a = draw(p, p->n);
	do
		b = draw(p, p->n);
	while (b == a);
	return (int)(load(p, s, a) <= load(p, s, b) ? a : b);
}

static void p2_tick(void *st, const struct dbk_sim *s)
{
	struct p2 *p = st;

	dbk_sim_snapshot_scrape(&p->snap, s);
}

static const struct dbk_sim_policy_ops p2_ops = {
	.name = "power_of_two",
	.summary = "vLLM Router power_of_two (2 random, lower polled + "
	           "in-flight load; poll 5 s)",
	.create = p2_create,
	.choose = p2_choose,
	.release = dbk_sim_policy_no_release,
	.tick = p2_tick,
	.tick_s = P2_LOAD_CHECK_INTERVAL_S,
	.destroy = p2_destroy,
};

const struct dbk_sim_policy_ops *dbk_sim_policy_power_of_two(void)
{
	return &p2_ops;
}
