/* The "ttft" policy: send each request where its first token is predicted
 * to come soonest.
 *
 * Pure: no I/O, no clock, no globals; the caller passes time in (a
 * monotonic clock in ms) and owns the object. One object per agent. It
 * keeps, per server:
 *   - the agent's own books, updated at once by every decision (so the
 *     requests of one arrival burst spread): requests in flight, their
 *     prompt and KV tokens, and a FIFO of predicted prefill ends, i.e.
 *     the prefill work queued ahead of a newcomer;
 *   - the last numbers scraped from the server's /metrics with their age
 *     (running, waiting, KV use and capacity, prefix-cache counters),
 *     which show what other load balancers sent there; books are fresher,
 *     so scraped counts act as a floor, plus what the agent sent since;
 *   - which prompt prefixes it was sent (agent/prefix_index.h), aged by
 *     the tokens sent to it since, against its KV capacity (LRU);
 *   - how much slower than the others it prefills and decodes
 *     (predict_learn.h): each request's whole duration, commit to
 *     release, against the first token and decode predicted for it, and
 *     the first tokens it served (the scraped TTFT histogram's sum and
 *     count) against those predicted, as ratios to the fleet's median
 *     (a fleet of mixed GPUs; the operator's weight as the prior, 1
 *     without).
 *
 * A request's predicted TTFT on a server is the queued prefill ahead of
 * it, plus its own prefill minus its expected prefix-cache hit there,
 * both priced with the engine's step-time shape (contrib/stub/
 * ENGINE-MODEL.md: fixed cost, linear layers, chunk attention, decode KV
 * reads of the requests decoding there, which slow every step), and a
 * wait when its KV does not fit beside what is committed there.
 *
 * Its predicted time per output token there is a decode step of the
 * batch it joins: every request in flight there (queued ones decode
 * after their prefill, beside it) and what the scrape shows beyond the
 * books, plus itself, each reading its context's KV every step (the
 * same step-time shape); joining makes each of those decoders' steps
 * that much longer while it decodes beside them. Other requests'
 * prefill chunks sharing the steps are left out (BENCHMARKS.md,
 * "Choosing for TTFT and TPOT": stretching the step by the share of
 * the server's time the prefills sent there lately take cost up to 27
 * points of capacity on mixed fleets of 64 and gained 3 on one of 4).
 * The decode step is priced at the server's learnt decode speed, apart
 * from its prefill's (an A100's prefill is 3x an H100's, its decode
 * step 1.7x).
 *
 * The choice keeps the most requests within both objectives (ttft_slo_s,
 * tpot_slo_s: vLLM's benchmark defaults, 2 s and 100 ms): servers where
 * its KV fits first (beside the whole prompts in flight there, its new
 * tokens; or, mostly cached there and its new tokens within one step,
 * where it waits for room without preempting), then those where it is
 * predicted within both, then
 * the least cost: its first token, plus what its prefill stalls of the
 * requests decoding there (a prefill longer than one step: stall_weight),
 * plus its own TPOT there and the TPOT it adds to those decoding there,
 * a TPOT second worth ttft_slo_s / tpot_slo_s first-token seconds (the
 * objectives' own scale: a first token 50 ms later weighs as a TPOT
 * 2.5 ms longer). Counting decoders' TPOT is what leastconn gets
 * right by counting requests, and what keeps the TPOT median near
 * leastconn's; pricing the first token is what wins the prefix hits and
 * the queues leastconn cannot see.
 *
 * Exact ties (an idle fleet) go by a hash of the request's session or
 * prompt and the server, so that agents sharing a fleet break the same
 * request's ties alike and different requests' apart.
 *
 * Other load balancers, seen as scraped load beyond the books (nothing
 * changes while there is none): when the others' requests per scrape
 * period reach the number of servers, the greedy choice, which would be
 * theirs too, gives way to a draw among the servers that a water-filling
 * of their expected prefill covers, each charged with its share of it
 * until the next scrape.
 *
 * A LoRA adapter's request (vllm:lora_requests_info scraped) is priced,
 * per server, nothing more where its adapter has requests (running or
 * waiting, as the scrape shows, or sent there by us since); the load
 * (lora_load_s) on its first token, and on every decoder's step there,
 * where fewer adapters than max_lora have requests; and beyond it a wait
 * for a slot where all are taken, until the requests of one adapter end
 * (each adapter waiting for a slot ahead of it one more such wait over
 * max_lora). A hot adapter thus spreads once its servers' queues cost
 * more than a load elsewhere. The adapters sent since the last scrape
 * are kept per server (a few, the newest), so a burst does not scatter.
 *
 * Hard rules come before any prediction: a server that is not usable
 * (DOWN, MAINT, DRAIN) is never chosen; a server whose max_model_len
 * cannot hold prompt + max_tokens is not chosen while a usable one can,
 * nor one shorter than the longest usable context for a request whose
 * length is not known (unsized).
 *
 * Use: dbk_pred_choose (decides, charges nothing), then dbk_pred_commit
 * on the server the request was actually sent to (it charges the books
 * and records the prefix, and fills a ticket the caller keeps with the
 * request), and exactly once dbk_pred_release(ticket) when it ends;
 * dbk_pred_move when HAProxy sent it elsewhere. dbk_pred_scraped after
 * each scrape (or failed scrape) of a server. */
#ifndef DBK_PREDICT_H
#define DBK_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The default stall weight, a bare literal so that help texts can
 * quote it (dbucket-sim --stall-weight). */
#define DBK_PRED_STALL_WEIGHT 0.2
/* What a predicted first-token second past half the TTFT objective
 * weighs beyond the first (predict_int.h: pred_score). */
#define DBK_PRED_LATE_WEIGHT 4.0
/* The objectives the choice keeps requests within, vLLM's benchmark
 * defaults (benchmark_serving's --goodput examples, dbucket-sim's
 * --slo-ttft-ms and --slo-tpot-ms). */
#define DBK_PRED_TTFT_SLO_S 2.0
#define DBK_PRED_TPOT_SLO_S 0.1

/* The engine's step-time shape and what the policy assumes when the
 * server does not say. Defaults (dbk_pred_config_default): vLLM V1 on an
 * H100-80GB with an 8B model, as ENGINE-MODEL.md; only ratios between
 * servers matter for the choice, so a different GPU shifts every
 * prediction alike. */
struct dbk_pred_config {
	unsigned nservers;
	double budget_tokens; /* max-num-batched-tokens (8192) */
	/* The budget the queue is packed into: the told one; 0 (untold):
	 * each server's as its scrapes show it, else budget_tokens
	 * (learn_pack), or, without learn_pack, not packed, every prompt
	 * queued at least a step of its own. With admission the queue is
	 * not packed even when told: packed, its
	 * sheds let a mixed fleet's critical class fall from 98% to 70%
	 * within the objectives at 1.5x capacity, since past capacity
	 * vLLM's queue waits for seats (max-num-seqs) and KV the books do
	 * not model (BENCHMARKS.md, "Stop 45: short prompts packed into one
	 * step"). */
	double pack_tokens;
	/* Untold (pack_tokens 0), whether each server's queue is packed
	 * into the budget learnt from its scrapes, or budget_tokens until
	 * then (predict_budget.c); false where the queue is never packed
	 * (admission). */
	bool learn_pack;
	/* Whether the books drain a prefill's whole steps beyond its first
	 * at the fleet's learnt pace (dbk_pred_fleet_slowness) rather than
	 * the model's: with admission, which reads its predictions as
	 * seconds (predict.c: pred_book). */
	bool pace_chunks;
	double t_cpu_s;            /* fixed cost of a step (0.0015) */
	double t_weights_s;        /* weight-read floor of a step (0.006) */
	double lin_tokens_per_s;   /* linear layers' throughput (46000) */
	double attn_flop_per_pair; /* attention FLOPs per (token, context token) (524288) */
	double attn_flops;         /* sustained attention FLOP/s (400e12) */
	double kv_bytes_per_token; /* KV read per decode per context token (131072) */
	double kv_read_bw;         /* bytes/s (2.7e12) */
	double kv_tokens;          /* KV capacity when not scraped (430000) */
	double output_tokens;      /* expected output without ignore_eos (256) */
	/* First-token seconds worth one second of one decoding request
	 * stalled by a long prefill (DBK_PRED_STALL_WEIGHT; BENCHMARKS.md,
	 * "Decoders stalled") */
	double stall_weight;
	/* What a first-token second predicted past half the TTFT objective
	 * weighs beyond the first (DBK_PRED_LATE_WEIGHT; pred_score); 0
	 * with admission, which judges those first tokens itself and whose
	 * sheds were measured on a routing without it: with it, code
	 * prompts on 16 H100/A100 servers at 1.5x capacity kept 92.1% of
	 * critical requests within the objectives instead of 94.8%, and
	 * 9% fewer of all (BENCHMARKS.md, "Stop 55: admission routes as
	 * it was measured"). */
	double late_weight;
	/* The objectives (DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S); their
	 * ratio prices a TPOT second in first-token seconds. */
	double ttft_slo_s, tpot_slo_s;
	uint64_t scrape_stale_ms; /* older scrapes are ignored: books only (1000) */
	/* Seconds a server takes to load a LoRA adapter it has no request
	 * of (the engine model's DBK_ENGINE_LORA_LOAD_S, 0.05): the
	 * request's first token and the step every decoder there waits. */
	double lora_load_s;
	size_t index_entries; /* prefix index size (DBK_PIDX_DEFAULT_ENTRIES) */
};

void dbk_pred_config_default(struct dbk_pred_config *c, unsigned nservers);
/* 0, or -1 with a one-line reason. */
int dbk_pred_config_check(const struct dbk_pred_config *c, char *err, size_t errlen);

/* HAProxy's view of a server (the runtime API's state). */
enum dbk_pred_state {
	DBK_PRED_UP = 0, /* usable (the default) */
	DBK_PRED_DRAIN,  /* no new requests */
	DBK_PRED_DOWN,   /* DOWN or MAINT */
};

/* Adapters a scrape tells of, at most (vllm_metrics.h keeps as many). */
#define DBK_PRED_LORA_MAX 32

/* One scrape of a server's /metrics (and /v1/models for max_model_len,
 * given apart with dbk_pred_set_max_model_len). Negative: not exposed. */
struct dbk_pred_scrape {
	bool ok; /* false: the scrape failed (timeout, garbage) */
	/* When its request went out (0: not known, as in the simulator,
	 * whose scrapes take no time): the numbers are the engine's at some
	 * moment since, so a request the books ended in between may still
	 * be counted. */
	uint64_t sent_ms;
	double running;            /* vllm:num_requests_running */
	double waiting;            /* vllm:num_requests_waiting */
	double kv_usage;           /* vllm:kv_cache_usage_perc, 0..1 */
	double kv_capacity_tokens; /* num_gpu_blocks x block_size (cache_config_info) */
	double prefix_queries;     /* vllm:prefix_cache_queries_total (tokens) */
	double prefix_hits;        /* vllm:prefix_cache_hits_total (tokens) */
	double ttft_sum_s;         /* vllm:time_to_first_token_seconds_sum */
	double ttft_count;         /* vllm:time_to_first_token_seconds_count */
	/* vllm:inter_token_latency_seconds' _sum and _count (0 or -1: none
	 * reported): the TPOT its decoders see (predict_gaps.c). */
	double itl_sum_s, itl_count;
	/* The work the engine's steps did, counters (-1: not reported): the
	 * tokens they computed (prompt and generated tokens, net of the
	 * prompt tokens found cached: vllm:prompt_tokens_total +
	 * generation_tokens_total - prefix_cache_hits_total) and the steps
	 * (vllm:iteration_tokens_total_count). Read while prompts wait,
	 * they tell the step budget (predict_budget.c). */
	double step_tokens, steps;
	/* vllm:lora_requests_info's latest state: max_lora (0: not
	 * reported, nothing is priced for adapters there) and the adapters
	 * with requests there (keys: dbk_pred_request.adapter), the first
	 * nlora_running with running ones, the rest with waiting ones only. */
	double max_lora;
	unsigned nlora, nlora_running;
	uint64_t lora[DBK_PRED_LORA_MAX];
};

/* A request as the agent knows it. */
struct dbk_pred_request {
	double prompt_tokens; /* Content-Length / 4 (agent/estimate.h) */
	double max_tokens;    /* as the estimate gives it (16 when absent) */
	bool ignore_eos;      /* then max_tokens is the output length */
	const uint64_t *keys; /* prefix keys (agent/prefix_key.h); may be NULL */
	size_t nkeys;
	bool keys_cut; /* the prompt goes on past the last key */
	/* prompt_tokens is only a floor (the body's length is not known):
	 * only the usable servers with the longest context may take it
	 * (an unknown max_model_len counts as the longest). */
	bool unsized;
	uint64_t session; /* 0: none (dbk_pkey_session) */
	/* The servers it may go to (dbk_bal_eligible); NULL: all. */
	const uint64_t *eligible;
	/* Its LoRA adapter's key (vllm_metrics.h: dbk_vm_adapter_key); 0:
	 * none, a base model's request. */
	uint64_t adapter;
};

enum dbk_pred_reason {
	DBK_PRED_FASTEST = 0, /* the least predicted cost (first token, TPOT) */
	DBK_PRED_TOO_LONG,    /* no usable server holds it: the largest */
	DBK_PRED_NO_SERVER,   /* nothing usable; server is -1 */
};

struct dbk_pred_choice {
	int server; /* index, or -1 */
	enum dbk_pred_reason reason;
	double ttft_s; /* predicted on that server */
	double own_s;  /* of ttft_s, its own prefill there (the rest waits) */
	/* Of ttft_s, the wait the books priced at the fleet's pace
	 * (pace_chunks), the rest being at the model's. */
	double paced_s;
	/* The time per output token the decoders there saw lately, from its
	 * scrapes (predict_gaps.c); 0: not known. */
	double tpot_seen_s;
	double kv_wait_s;  /* of ttft_s, the wait for KV room there */
	double hit_tokens; /* expected prefix-cache hit there */
	bool kv_fits;      /* fits beside what is committed there */
	double tpot_s;     /* its predicted time per output token there (0: one token) */
	bool within;       /* predicted within both objectives there */
	double cost_s;     /* what the choice minimised, in first-token seconds */
};

/* Whether a is the better of two predictions for the same request (as
 * dbk_pred_choose ranks servers: fitting, within the objectives, least
 * cost). */
bool dbk_pred_better(const struct dbk_pred_choice *a, const struct dbk_pred_choice *b);

/* Kept by the caller with the request, from commit to release. */
struct dbk_pred_ticket {
	uint32_t server;
	uint32_t prompt_tokens;
	uint32_t kv_tokens;  /* new KV: prompt - expected hit + output (its hit, for complete) */
	uint32_t ctx_tokens; /* prompt + half the output: decode context */
	uint64_t sent_ms;
	/* What the books predicted of it at the fleet's speed on server:
	 * its first token and its decode, in seconds, for what its
	 * duration teaches (predict_learn.h); 0 when not known. */
	float x1, x2;
	/* Its hit is a prefix other requests share, pinned once per server
	 * (predict_int.h's pred_ticket_kv); else its whole prompt is its own. */
	bool shared_hit;
};

/* What the policy believes of a server now, for /metrics and logs. */
struct dbk_pred_view {
	enum dbk_pred_state state;
	uint32_t max_model_len;   /* 0: unknown */
	unsigned inflight;        /* books: requests sent, not ended */
	double prompt_tokens;     /* books: their prompt tokens */
	double kv_committed;      /* books + others': KV tokens committed */
	double kv_capacity;       /* scraped, else the config's */
	double queue_s;           /* predicted prefill queued ahead */
	unsigned prefilling;      /* books: requests predicted still prefilling */
	double others;            /* requests scraped beyond the books (other agents) */
	bool scraped;             /* a fresh, successful scrape is in use */
	uint64_t scrape_age_ms;   /* age of the last good scrape (UINT64_MAX: none) */
	uint64_t scrape_failures; /* failed scrapes, in all */
	double hit_ratio;         /* scraped prefix hits / queries (-1 unknown) */
	double slowness;          /* its prefill times are priced x this (1: as the fleet) */
	double decode_slowness;   /* its decode steps are priced x this */
	unsigned adapters;        /* LoRA adapters with requests: scraped, and ours since */
	double max_lora;          /* scraped; 0: not reported */
	double step_budget;       /* tokens its queue is packed into (0: not packed) */
	double seats;             /* learnt from its scrapes (0: not learnt) */
	double model_slowness;    /* slowness x dbk_pred_fleet_slowness: against the model */
};

struct dbk_pred;

/* NULL if the config does not pass dbk_pred_config_check, or out of
 * memory. Every server starts UP with unknown max_model_len, no scrape. */
struct dbk_pred *dbk_pred_new(const struct dbk_pred_config *c);
void dbk_pred_free(struct dbk_pred *p);

void dbk_pred_set_state(struct dbk_pred *p, unsigned server, enum dbk_pred_state st);
/* From /v1/models; 0: unknown (assumed to hold anything). */
void dbk_pred_set_max_model_len(struct dbk_pred *p, unsigned server, uint32_t len);
/* A scrape answered (or failed) at now_ms. A failed one keeps the last
 * good numbers, which age out after scrape_stale_ms. */
void dbk_pred_scraped(struct dbk_pred *p, unsigned server, const struct dbk_pred_scrape *s,
                      uint64_t now_ms);
/* The server restarted or lost its cache: forget its prefixes. */
void dbk_pred_forget_cache(struct dbk_pred *p, unsigned server);
/* The server's operator weight (HAProxy's effective weight; 0: not
 * known): the prior of its speed until its own is learnt (a server of
 * weight 10 is priced 10/3 as fast as one of 3). */
void dbk_pred_set_weight(struct dbk_pred *p, unsigned server, double weight);
/* Another server (or a new incarnation of it: a new pod) is in this
 * slot: forget what was learnt of the old one (its prefixes, scraped
 * numbers, max_model_len, speed, weight). The books of requests in
 * flight stay: their releases balance them. */
void dbk_pred_reset(struct dbk_pred *p, unsigned server);

/* Decides; changes none of the books, only the scratch it weighs the
 * servers in. Returns c->server. */
int dbk_pred_choose(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms,
                    struct dbk_pred_choice *c);
/* The prediction for r on server alone, its expected hit there
 * included: c as choose fills it had it chosen server (so that
 * dbk_pred_commit_chosen takes it). -1 when server is not usable or
 * cannot hold r (c is not set), else server. */
int dbk_pred_evaluate(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                      uint64_t now_ms, struct dbk_pred_choice *c);
/* The request was sent to server at now_ms: charge the books, record its
 * prefix there, fill t. */
void dbk_pred_commit(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                     uint64_t now_ms, struct dbk_pred_ticket *t);
/* The same for the server c chose, with the hit choose found there, not
 * looked up again in the prefix index (a decision's second most costly
 * step at long prompts): nothing that changes a hit (a commit, a scrape,
 * forget_cache) may come between. The ticket is dbk_pred_commit's. */
void dbk_pred_commit_chosen(struct dbk_pred *p, const struct dbk_pred_request *r,
                            const struct dbk_pred_choice *c, uint64_t now_ms,
                            struct dbk_pred_ticket *t);
/* A request whose body was still on its way when c chose (the server
 * cannot start it before it is whole): its prefix recorded on c's
 * server as dbk_pred_commit_chosen records it, so that the next of its
 * session goes there too, and t filled as commit fills it, but no load
 * booked. dbk_pred_complete books it once the server has the request;
 * a held ticket released (or moved) before that had nothing booked:
 * its release is the caller's to skip. */
void dbk_pred_hold(struct dbk_pred *p, const struct dbk_pred_request *r,
                   const struct dbk_pred_choice *c, uint64_t now_ms, struct dbk_pred_ticket *t);
/* The held request of t reached its server (t->server, now) at now_ms:
 * its prefill queued behind the server's as of now and its tokens
 * charged, as commit would have then; dbk_pred_release undoes it. */
void dbk_pred_complete(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms);
/* Another balancer sent r's session to server with a prompt of tokens
 * tokens (HAProxy's session table, agent/session_hint.h): r's prefix up
 * to that length recorded there as if this balancer had sent it, so that
 * its hit is priced; nothing charged (the books are shared apart). */
void dbk_pred_hint(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                   uint32_t tokens);
/* The request of t ended (exactly once): its duration, now_ms less its
 * commit's, teaches the server's speed (predict_learn.h). */
void dbk_pred_release(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms);
/* The request of t ended without the server's answer (an error status,
 * its client gone, its lease expired): its charge undone as by
 * dbk_pred_release, nothing learnt of its duration, and what the books
 * still held of its prefill ahead of now taken off the server's queue,
 * which it never held. */
void dbk_pred_release_unserved(struct dbk_pred *p, const struct dbk_pred_ticket *t,
                               uint64_t now_ms);
/* HAProxy sent the request of t to server instead: moves its charge; t
 * is updated. */
void dbk_pred_move(struct dbk_pred *p, struct dbk_pred_ticket *t, unsigned server, uint64_t now_ms);

void dbk_pred_view(const struct dbk_pred *p, unsigned server, uint64_t now_ms,
                   struct dbk_pred_view *out);
const struct dbk_pred_config *dbk_pred_config(const struct dbk_pred *p);
/* How much later than the engine model the fleet's median server serves
 * its first tokens (the fleet's fit of its scraped first tokens, which
 * every server's slowness is priced against): 1 where that is within
 * the speed band of the model's, or faster, or not known (no server
 * exports vLLM's first-token histogram). The routing needs only the
 * servers' ratios; admission needs the time. */
double dbk_pred_fleet_slowness(const struct dbk_pred *p);

#endif
