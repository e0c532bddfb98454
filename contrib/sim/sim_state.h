/* The cluster simulator's state, shared by its two files: the event
 * loop (sim.c) and the fleet's changes (sim_fleet.c). Private: policies
 * see the cluster through sim.h's queries only. */
#ifndef DBK_SIM_STATE_H
#define DBK_SIM_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "event_queue.h"
#include "holdq.h"
#include "lib/buf.h"
#include "lib/list.h"
#include "sim.h"
#include "snapshot.h"

enum ev_kind {
	EV_ARRIVAL,  /* arg: request id */
	EV_SUBMIT,   /* arg: request id (only with an overhead) */
	EV_STEP_END, /* arg: instance */
	EV_TICK,     /* the policy's periodic work (scrapes, eviction) */
	EV_ANSWER,   /* a tick's scrapes come back (scrape_flight_s) */
	EV_SCALE,    /* arg: the step of cfg.scale that starts */
	EV_MARK_UP,  /* arg: instance; its mark-down (error_limit) ends */
	EV_RETRY,    /* arg: request id; its client sends it again */
	EV_HOLD,     /* the held requests are decided again (admit_queue_s) */
};

/* While requests are held, they are decided again at least this often
 * (an objective's risk lapses with time, not only when a request ends). */
#define DBK_SIM_HOLD_TICK_S 0.1

struct dbk_sim_rstate {
	struct dbk_sim_outcome o;
	uint64_t *keys; /* prompt block keys, arrival to end */
	uint32_t n_keys;
	uint64_t handle;
	uint64_t preempt_seq;
	double submitted_s;   /* reached its engine: where vLLM's TTFT starts */
	struct dbk_list live; /* in its instance's live list */
	bool has_handle;
	uint8_t retries; /* times shed and sent again */
	double sent_s;   /* its last send (with retries; else its arrival) */
	bool holding;    /* in the hold queue (admit_queue_s) */
	bool kept;       /* decided again and held on */
	double hold_until_s;
};

struct dbk_sim_inst {
	struct dbk_engine *e;
	struct dbk_engine_config cfg;
	struct dbk_list live; /* requests routed here, not ended, in order */
	unsigned inflight;
	double step_end;
	bool stepping;
	/* vllm:time_to_first_token_seconds' sum and count */
	double ttft_sum_s;
	uint64_t ttft_count;
	/* vllm:inter_token_latency_seconds' sum and count */
	double itl_sum_s;
	uint64_t itl_count;
	/* The changing fleet: present (scaled in or not), marked down
	 * (error_limit), what the policy was last told, whether the engine
	 * has served, when it joined (warm-up), 5xx in a row. */
	bool present, down, told, used;
	double joined_s;
	unsigned consec_err;
	/* Where the policy's requests went (the event "instance" at
	 * --log-level debug): requests and prompt tokens sent to the slot;
	 * and the counters of the engines that left it, which the run's
	 * totals count too (dbk_sim_slot_stats). */
	uint64_t sent;
	double sent_tokens;
	struct dbk_engine_stats past;
};

struct dbk_sim {
	struct dbk_sim_config cfg;
	const struct dbk_sim_policy_ops *ops;
	void *pst;
	struct dbk_sim_req *reqs;
	size_t n;
	struct dbk_sim_rstate *rs;
	struct dbk_sim_inst *inst;
	struct dbk_evq q;
	struct dbk_metrics m;
	struct dbk_buf text;            /* scratch: a prompt's bytes, to key them */
	struct dbk_sim_snapshot snap;   /* the policy's scrapes (ops->scrape) */
	struct dbk_sim_snapshot flying; /* ... taken, not yet answered */
	double now, last_end, t0;
	uint64_t preempt_counter, events, refused, too_long;
	uint64_t server_errors, misrouted, marked_down, new_engines;
	size_t ended, arrived;
	bool ran, summarized, error;
	bool any_caching; /* some instance has prefix caching */
	struct dbk_sim_result res;
	struct dbk_sim_prio prio[DBK_CLASS_N]; /* by the requests' class */
	struct dbk_sim_ttft_window ttftw;      /* admission's, without prediction */
	/* Held instead of shed (admit_queue_s), the time of the next
	 * decision pushed (< 0: none), and a request's end since. */
	struct dbk_sim_holdq held;
	double hold_next_s;
	bool hold_wake;
	/* Several models: each model's servers as the agent's bitset (words
	 * per model: elig_words), the model of the request being routed
	 * plus one (0: none, nothing filtered), and the counts per model. */
	uint64_t *elig;
	size_t elig_words;
	unsigned routing_model;
	uint64_t wrong_model;
	uint64_t model_offered[DBK_SIM_MAX_MODELS], model_good[DBK_SIM_MAX_MODELS];
};

static inline bool dbk_sim_inst_usable(const struct dbk_sim_inst *in)
{
	return in->present && !in->down;
}

/* The class whose counters and queue request q goes to: a class out
 * of range counts as the default, as the agent reads a bad one. */
static inline unsigned dbk_sim_req_class(const struct dbk_sim_req *q)
{
	return q->cls < DBK_CLASS_N ? q->cls : DBK_CLASS_DEFAULT;
}

/* Whether instance i serves the model of the request being routed (any
 * instance when none is, or with one model). */
static inline bool dbk_sim_serves(const struct dbk_sim *s, unsigned i)
{
	return !s->routing_model || s->cfg.inst_model[i] + 1u == s->routing_model;
}

/* Routes request id (sim.c): admitted, shed, held or refused, as the
 * policy and admission decide. 0, or -1 (memory, the policy failed). */
int dbk_sim_route(struct dbk_sim *s, uint32_t id);

/* ---- Requests held instead of shed (admit_queue_s; sim_hold.c). ---- */

/* The queue's part of a shed of request id: 1 when it is held (first
 * refused, or decided again within its bound), 0 when it is to be shed
 * as without the queue, -1 (memory). */
int dbk_sim_hold(struct dbk_sim *s, uint32_t id);
/* The held requests' next decision at t, unless one comes no later
 * (none with none held). 0, or -1 (memory). */
int dbk_sim_hold_at(struct dbk_sim *s, double t);
/* Decides every held request again, then pushes the next decision. 0,
 * or -1. */
int dbk_sim_hold_walk(struct dbk_sim *s);

/* ---- A shed request's client (sim_retry.c). ---- */

/* Request id shed with a Retry-After of retry_s: 1 when its client
 * sends it again (the retry pushed), 0 when it gives up, -1 (memory).
 * Counts the class's first sheds and retries. */
int dbk_sim_retry(struct dbk_sim *s, uint32_t id, int retry_s);
/* Counts request id's end for its client's retries: admitted at a
 * retry, within every objective from its last send (ok: completed). */
void dbk_sim_retry_end(struct dbk_sim *s, uint32_t id, bool ok);

/* ---- The fleet's changes (sim_fleet.c). ---- */

/* Checks the config's models and builds each one's bitset. 0, or -1
 * with the reason in err. */
int dbk_sim_models_setup(struct dbk_sim *s, char *err, size_t errlen);

/* The policy hears when instance i turns usable or not, and when a new
 * engine takes its slot (fresh), at the moment it happens: every policy
 * sees the same fleet at the same time. */
void dbk_sim_tell(struct dbk_sim *s, unsigned i, bool fresh);
/* Adds st's counters (preemptions, steps, busy time, prefix cache
 * queries and hits, LoRA loads) to sum. */
void dbk_sim_stats_add(struct dbk_engine_stats *sum, const struct dbk_engine_stats *st);
/* Slot i's counters: its engine's and those of the engines it had
 * before (a fleet that changes gives a slot a new engine). */
void dbk_sim_slot_stats(const struct dbk_sim *s, unsigned i, struct dbk_engine_stats *out);
/* count instances from now on: slots 0..count-1 filled, the others
 * emptied (they drain what they hold). 0, or -1 (memory). */
int dbk_sim_scale_to(struct dbk_sim *s, unsigned count);
/* Whether the failing instance i answers request id with a 500 now. */
bool dbk_sim_fails(const struct dbk_sim *s, unsigned i, uint32_t id);
/* How many times as long instance i's step starting now takes: its
 * warm-up's factor, times the slow phase's while it lasts. */
double dbk_sim_step_factor(const struct dbk_sim *s, unsigned i);
/* Instance i answered a 500: counted, and with error_limit HAProxy's
 * mark-down. 0, or -1 (memory). */
int dbk_sim_server_error(struct dbk_sim *s, unsigned i);

#endif
