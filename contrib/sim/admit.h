/* Admission in the simulator (issue 28): the agent's own rule
 * (agent/admission.c, linked, not copied) applied where the simulated
 * balancer decides, and the fleet's saturation it reads when the policy
 * predicts nothing.
 *
 * Saturation is the Gateway API Inference Extension's: its utilization
 * detector (kubernetes-sigs/gateway-api-inference-extension,
 * pkg/epp/saturationdetector/framework/plugins/utilizationdetector/
 * detector.go at commit 275ac7609b1c32ce3768ad8b61b712d554b5ed3a) scores
 * each candidate pod max(waiting / 5, KV use / 0.8), a pod whose metrics
 * are older than 200 ms 1, and calls the pool saturated when the mean
 * over the pods is >= 1 (pkg/epp/requestcontrol/admission.go at commit
 * 014fd184a61db5b8c3e3644d6ff5fac950036cd7, rejectIfSheddableAndSaturated;
 * the defaults 5, 0.8 and 200 ms in pkg/epp/saturationdetector/config.go).
 * The same signal serves our rule for the policies that predict nothing
 * (rr, lc, plain, dynamic, the peers), read at the moment of the
 * decision from the engines' gauges: what a scrape just then would
 * show, fresher than any real scrape; beside it the fleet's recent
 * first tokens (dbk_sim_ttft_window), which agent/admission.c weighs. */
#ifndef DBK_SIM_ADMIT_H
#define DBK_SIM_ADMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "policy_ops.h"
#include "sim.h"
#include "snapshot.h"

#define DBK_SIM_SAT_QUEUE 5.0
#define DBK_SIM_SAT_KV 0.8
#define DBK_SIM_SAT_STALE_S 0.200

/* The mean over the usable instances of max(waiting / 5, KV use / 0.8)
 * (1 for an instance scraped more than 200 ms ago or never); 1 with
 * none usable. From sn's scrapes, or with sn NULL the engines' gauges
 * now. */
double dbk_sim_saturation(const struct dbk_sim *s, const struct dbk_sim_snapshot *sn);

/* The fleet's recent first tokens, as a scraper of every instance's
 * vllm:time_to_first_token_seconds _sum and _count sees them: their mean
 * over the last whole window of DBK_SIM_TTFT_WINDOW_S. */
#define DBK_SIM_TTFT_WINDOW_S 1.0
struct dbk_sim_ttft_window {
	double start_s, sum0; /* the window's start and the sums then */
	uint64_t count0;
	double mean_s; /* the last whole window's; 0: none yet */
};

/* Moves w on to now when its window is over. */
void dbk_sim_ttft_window_update(struct dbk_sim_ttft_window *w, const struct dbk_sim *s);

/* The agent's admission of r (agent/admission.h) with s's configuration
 * and the deciding balancer's memory st (NULL: none): ch's server when
 * admitted, else DBK_SIM_SHED(its Retry-After). ch is the policy's
 * choice (NULL: none, instance 0 stands for "route"); with its
 * prediction, the first token, own prefill, TPOT and the TPOT measured
 * there decide; without, the fleet's saturation now and its recent
 * first tokens (w; NULL: not known). A request held instead of shed
 * (admit_queue_s) and decided again leaves st as it was, and with
 * admit_queue_in_time is not let in once its wait and its predicted
 * first token pass the objective. */
int dbk_sim_admit(const struct dbk_sim *s, struct dbk_admit_state *st, const struct dbk_sim_req *r,
                  const struct dbk_policy_choice *ch, const struct dbk_sim_ttft_window *w);

#endif
