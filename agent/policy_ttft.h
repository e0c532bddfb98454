/* The predictor's policies (policy_ops.h): ttft, and those that choose
 * differently over the same books (policy_p2ttft.c). This module keeps
 * a predictor (predict.h) in step with the agent or the simulator:
 * requests committed, leases ended or moved, servers' states and
 * scraped numbers; and shows its per-server view. Pure, like the
 * predictor: time is passed in. */
#ifndef DBK_POLICY_TTFT_H
#define DBK_POLICY_TTFT_H

#include "policy_ops.h"
#include "predict.h"
#include "prefix_key.h"

struct dbk_policy_ttft {
	struct dbk_pred *pred;
	/* The request being decided, from choose to its commit. */
	uint64_t keys[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request req;
	struct dbk_pred_choice ch;
	/* For a policy that draws (policy_p2ttft.c): env's seed, advanced
	 * by each draw. */
	uint64_t draws;
	/* Admission's pools: first tokens at the fleet's own speed, not the
	 * engine model's (dbk_policy_ttft_chose). */
	bool absolute;
};

/* The hooks every predictor policy shares, for their ops tables. */
void *dbk_policy_ttft_create(const struct dbk_policy_env *env);
/* The seconds a LoRA adapter's load is priced at: given_s (--lora-load,
 * the servers' own) when above 0, else the engine model's sped up
 * engine_speed times as every step. */
double dbk_policy_ttft_lora_load_s(double given_s, double engine_speed);
void dbk_policy_ttft_destroy(void *st);
/* Sets t->req from r (its prefix keys derived from the sample). */
void dbk_policy_ttft_request(struct dbk_policy_ttft *t, const struct dbk_policy_request *r);
/* Sets t->ch and c from the predictor's choice pc; returns its server. */
int dbk_policy_ttft_chose(struct dbk_policy_ttft *t, const struct dbk_pred_choice *pc,
                          struct dbk_policy_choice *c);
void dbk_policy_ttft_commit(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                            uint32_t slot[DBK_BAL_SLOT_WORDS]);
/* A request whose body is on its way: dbk_pred_hold, the slot marked
 * held; complete books it (dbk_pred_complete) and clears the mark;
 * release and move skip a lease still held. */
void dbk_policy_ttft_hold(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                          uint32_t slot[DBK_BAL_SLOT_WORDS]);
bool dbk_policy_ttft_complete(void *st, const struct dbk_bal_lease *l, uint64_t now_ms,
                              uint32_t slot[DBK_BAL_SLOT_WORDS]);
void dbk_policy_ttft_seen(void *st, const struct dbk_policy_request *r, unsigned server,
                          bool prefix, uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS]);
void dbk_policy_ttft_hint(void *st, const struct dbk_policy_request *r, unsigned server,
                          uint32_t tokens);
void dbk_policy_ttft_release(void *st, const struct dbk_bal_lease *l, uint64_t now_ms);
void dbk_policy_ttft_move(void *st, const struct dbk_bal_lease *before, unsigned server,
                          uint64_t now_ms);
void dbk_policy_ttft_usable(void *st, unsigned server, bool usable);
void dbk_policy_ttft_reset(void *st, unsigned server);
void dbk_policy_ttft_weight(void *st, unsigned server, double weight);
void dbk_policy_ttft_scraped(void *st, unsigned server, const struct dbk_pred_scrape *s,
                             uint64_t now_ms);
void dbk_policy_ttft_max_model_len(void *st, unsigned server, uint32_t len);
extern const struct dbk_policy_report dbk_policy_ttft_report;

/* An ops table of the predictor's policies: these hooks and choose. */
#define DBK_POLICY_TTFT_OPS(nm, hlp, choose_fn)                                                   \
	{                                                                                         \
		.name = nm, .help = hlp, .create = dbk_policy_ttft_create,                        \
		.destroy = dbk_policy_ttft_destroy, .choose = choose_fn,                          \
		.commit = dbk_policy_ttft_commit, .seen = dbk_policy_ttft_seen,                   \
		.hint = dbk_policy_ttft_hint, .hold = dbk_policy_ttft_hold,                       \
		.complete = dbk_policy_ttft_complete, .release = dbk_policy_ttft_release,         \
		.move = dbk_policy_ttft_move, .usable = dbk_policy_ttft_usable,                   \
		.reset = dbk_policy_ttft_reset, .weight = dbk_policy_ttft_weight,                 \
		.scraped = dbk_policy_ttft_scraped,                                               \
		.max_model_len = dbk_policy_ttft_max_model_len, .report = &dbk_policy_ttft_report \
	}

#endif
