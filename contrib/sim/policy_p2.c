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

#include "lib/bounds.h"
#include "u64map.h"

#define P2_LOAD_CHECK_INTERVAL_S 5.0
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
 * remove_worker). */
static int p2_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned n = 0, a, b, up[DBK_MAX_SERVERS];

	(void)r;
	for (unsigned i = 0; i < dbk_sim_ninstances(s); i++)
		if (dbk_sim_usable(s, i))
			up[n++] = i;
	if (n == 1)
		return (int)up[0];
	a = up[draw(st, n)];
	do
		b = up[draw(st, n)];
	while (b == a);
	return (int)(load(s, a) <= load(s, b) ? a : b);
}

const struct dbk_sim_policy_ops dbk_sim_policy_power_of_two = {
	.name = "power_of_two",
	.size = sizeof(uint64_t),
	.choose = p2_choose,
	.scrape = true,
	.tick_s = P2_LOAD_CHECK_INTERVAL_S,
};
