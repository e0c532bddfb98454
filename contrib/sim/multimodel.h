/* Several base models and LoRA adapters on one fleet (issue 27): which
 * instance serves which model, and each request's model and adapter,
 * deterministically from a seed. Pure: no simulator state.
 *
 * --models W1,W2,... names M base models (model m, 0-based) with
 * traffic shares in proportion to the weights; the N instances are
 * given to the models in the same proportion (largest remainder, at
 * least one each) and interleaved, so each model's instances spread
 * over the fleet as the GPU list and the short/long groups do.
 * --adapters A names adapters 1..A (vLLM's lora_int_id), adapter a a
 * child of base model (a - 1) % M. A conversation (its session; a
 * request without one alone) keeps one model and one adapter: the
 * model drawn by the shares, then with --adapter-share X an adapter of
 * that model, drawn by Zipf popularity (exponent 1) over the model's
 * adapters in id order (the first the most popular).
 *
 * Routing by model (sim.c): while a request is routed, its candidates
 * are its model's instances, for every policy, as each peer narrows its
 * endpoints by the request's model before its policy runs:
 *   vLLM Router: vllm-project/router, src/core/worker_registry.rs at
 *     commit 13f90d71f813f554a30df575fc0bb7fe3698adcf (workers indexed
 *     by model_id, get_by_model_fast; a policy per model);
 *   vLLM production-stack: vllm-project/production-stack,
 *     src/vllm_router/services/request_service/request.py at commit
 *     b8a08a533e72781035e7a8d488b4773d257134ff (route_general_request
 *     keeps the endpoints whose model_names hold the requested model,
 *     then calls the router's route_request on them);
 *   the Gateway API Inference Extension / llm-d: a model maps to one
 *     InferencePool, whose pods are the candidates (policy_llmd.c);
 *   HAProxy: one backend per model (a map from the model to the
 *     backend), so lc is leastconn among the model's servers;
 *   the agent: the eligible bitset of agent/policy_ops.h, the servers
 *     whose /v1/models list the model (agent/models.h).
 * What is not modelled: the vLLM Router keeps a cache_aware tree per
 * model; here one tree holds every instance and a match on another
 * model's instance is passed over (a conversation keeps its model, so
 * its deepest matches are on its own model's instances). A request for
 * an adapter goes to any instance of its base model, which loads the
 * adapter on demand (vLLM with runtime LoRA loading); production-stack
 * would send it only to endpoints whose /v1/models already list it. */
#ifndef DBK_SIM_MULTIMODEL_H
#define DBK_SIM_MULTIMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define DBK_SIM_MODELS_SEED UINT64_C(0x6d6f64656c732127)
#define DBK_SIM_MAX_ADAPTERS 4096u
#define DBK_SIM_ZIPF_S 1.0

struct dbk_sim_models {
	unsigned nmodels;                 /* 0: one model, nothing filtered */
	double share[DBK_SIM_MAX_MODELS]; /* weights, any scale */
	unsigned nadapters;               /* 0: none */
	double adapter_share;             /* of conversations, 0..1 */
	uint64_t seed;
};

/* The model of each of n instances into model_of[0..n): 0, or -1 when
 * n is below the number of models. */
int dbk_sim_models_instances(const struct dbk_sim_models *m, unsigned n, uint8_t *model_of);
/* Sets reqs[k].model and .lora for k < n (nmodels 0: leaves them 0). */
void dbk_sim_models_assign(const struct dbk_sim_models *m, struct dbk_sim_req *reqs, size_t n);
/* Per model k < nmodels: inst[k] of the n instances serve it (model_of,
 * as dbk_sim_models_instances filled it) and offered[k] of reqs[0..nreq)
 * ask for it. */
void dbk_sim_models_count(unsigned nmodels, const uint8_t *model_of, unsigned n,
                          const struct dbk_sim_req *reqs, size_t nreq, unsigned *inst,
                          unsigned *offered);
/* The highest rate factor at which every model meets the objective,
 * from each model's capacity rate[0..nmodels) (its own requests judged
 * alone; 0: none): the least of them, as the models' pools share no
 * instance. */
double dbk_sim_models_every(const double *rate, unsigned nmodels);
/* The base model adapter lora (> 0) is a child of. */
unsigned dbk_sim_models_parent(const struct dbk_sim_models *m, uint32_t lora);

#endif
