/* power_of_two: power-of-two choices as the vLLM Router does it,
 *   vllm-project/router, src/policies/power_of_two.rs at commit
 *     fa999f98dc881e20b6b0257be0049cd4c68c8ea0: two distinct workers drawn
 *     at random, the lower of cached load + worker.load(), the first drawn
 *     among equals.
 * Against vLLM both terms are zero: the router's load monitor polls each
 * worker's /get_load (every 30 s by default), which vLLM does not serve,
 * so no cached load is ever set; and the router counts no in-flight
 * requests for this policy, so worker.load() stays 0. Every comparison
 * is a tie, won by the first draw: power_of_two is a uniform random
 * choice, which is what it models.
 *
 * power_of_two_informed: the comparison as it would be if both loads
 * were known: the load last polled from the instance every 30 s (modelled
 * as the scraped vllm:num_requests_running + vllm:num_requests_waiting,
 * snapshot.h) plus the router's own count of requests it sent there and
 * that have not finished. (SGLang's sgl-router,
 * sgl-router/src/policies/power_of_two.rs at commit
 * 00b01f93f96aff7fd0eb43f177a09068854bcd5b, compares the router's own
 * in-flight counts only.)
 *
 * The random draws come from a fixed seed, so runs are reproducible. */
#include "policy.h"

#include "lib/bounds.h"
#include "u64map.h"

#define P2_LOAD_CHECK_INTERVAL_S 30.0
#define P2_SEED 0x9f2ULL

/* The state: how many draws were made; draw k is mix64(seed + k). */
static unsigned draw(uint64_t *draws, unsigned n)
{
	return (unsigned)(dbk_u64map_mix64(P2_SEED + (*draws)++) % n);
}

static uint64_t load(const struct dbk_sim *s, unsigned i)
{
	const struct dbk_sim_scrape *x = dbk_sim_scraped(s, i);

	return (uint64_t)x->running + x->waiting + dbk_sim_inflight(s, i);
}

/* The draws are over the workers the router lists now: its service
 * discovery removes the worker of a pod deleted or no longer healthy
 * (vllm-project/router, src/service_discovery.rs at commit
 * 3abdc67744cb291c72e2179631ab2b7e33b68355: handle_pod_deletion ->
 * remove_worker). Both variants draw twice, as the peer does. Returns
 * how many workers there are (a and b distinct only from two on; a
 * alone when there is one). */
static unsigned draw_two(uint64_t *draws, const struct dbk_sim *s, unsigned *a, unsigned *b)
{
	unsigned n = 0, up[DBK_MAX_SERVERS];

	for (unsigned i = 0; i < dbk_sim_ninstances(s); i++)
		if (dbk_sim_usable(s, i))
			up[n++] = i;
	if (n < 2) {
		*a = *b = n ? up[0] : 0;
		return n;
	}
	*a = up[draw(draws, n)];
	do
		*b = up[draw(draws, n)];
	while (*b == *a);
	return n;
}

static int p2_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned a, b;

	(void)r;
	return draw_two(st, s, &a, &b) ? (int)a : DBK_SIM_REFUSE;
}

static int p2i_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned a, b, n = draw_two(st, s, &a, &b);

	(void)r;
	if (n == 0)
		return DBK_SIM_REFUSE;
	return (int)(load(s, a) <= load(s, b) ? a : b);
}

const struct dbk_sim_policy_ops dbk_sim_policy_power_of_two = {
	.name = "power_of_two",
	.size = sizeof(uint64_t),
	.choose = p2_choose,
};

const struct dbk_sim_policy_ops dbk_sim_policy_power_of_two_informed = {
	.name = "power_of_two_informed",
	.size = sizeof(uint64_t),
	.choose = p2i_choose,
	.scrape = true,
	.tick_s = P2_LOAD_CHECK_INTERVAL_S,
};
