/* The routing policies: what a policy is to the agent (route.c asks it,
 * agent.c feeds it, report.c renders it) and to the simulator
 * (contrib/sim/policy_agent.c runs the same table), and the table that
 * names them.
 *
 * A decision: route.c asks choose for a server (a policy without choose
 * leaves it to the balancer's own algorithm, the reference); the
 * balancer takes the lease there; commit then charges the policy's books
 * and writes the policy's per-lease data into the lease's slot, which
 * the balancer carries untouched and hands back to release (the lease
 * ended: completion, expiry, reclaim) or move (HAProxy sent it
 * elsewhere). Nothing may come between a choose and its commit: a
 * policy may keep what commit needs of the request from choose.
 *
 * Adding a policy: one file agent/policy_NAME.c defining a struct
 * dbk_policy_ops, and its line in policy_ops.c's table. --policy, --help,
 * /state, /metrics and dbucket-sim --policy all read the table. */
#ifndef DBK_POLICY_OPS_H
#define DBK_POLICY_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "balancer_types.h"
#include "predict.h"
#include "lib/buf.h"

/* The seed the agent gives its policy: fixed, so that a replayed run
 * draws alike. */
#define DBK_POLICY_SEED UINT64_C(0x706f6c6963790001)

/* What a policy's create is given. */
struct dbk_policy_env {
	unsigned nservers;
	/* The servers run this many times as fast as the engine model (1). */
	double engine_speed;
	/* The predictor's stall weight; negative: its default. */
	double stall_weight;
	/* Seconds loading a LoRA adapter takes; 0: the predictor's default. */
	double lora_load_s;
	/* The servers' step token budget (--max-num-batched-tokens); 0: the
	 * engine model's. */
	double budget_tokens;
	/* The queue priced a step a prompt at least, not packed, and no
	 * first token weighed more for being late: a pool with admission,
	 * whose sheds were measured on that routing (predict.h's
	 * pack_tokens and late_weight). */
	bool serial_queue;
	uint64_t seed; /* for a policy that draws: the same seed, the same draws */
};

/* A request as the policy sees it. */
struct dbk_policy_request {
	const struct dbk_bal_request *est; /* the estimate (estimate.h) */
	const uint8_t *sample;             /* the body's first bytes; may be NULL */
	size_t sample_len;
	bool cut; /* the body goes on past the sample */
	/* Its length is only a floor (route.h: DBK_ARG_CLEN): the prompt
	 * may be far longer than est says, so only the servers with the
	 * longest context may take it. */
	bool unsized;
	bool has_session; /* session is the client's own (else the sample's) */
	uint64_t session; /* dbk_pkey_session of it */
	/* The servers that serve its model (dbk_bal_eligible): choose picks
	 * among them only. NULL: every server (no model filter applies). */
	const uint64_t *eligible;
	/* Its model is a LoRA adapter (its /v1/models entry has a parent):
	 * the adapter's key (dbk_vm_adapter_key of its name); 0: none. */
	uint64_t adapter;
};

/* A held lease's slot (the hold hook): its first word's top bit, which a
 * policy's first word (a prompt's tokens, capped far below) never
 * reaches. Cleared by complete. */
#define DBK_POLICY_HELD (UINT32_C(1) << 31)

struct dbk_policy_choice {
	int server;     /* index, or -1: none usable */
	bool too_long;  /* no usable server holds it: the largest was taken */
	bool predicted; /* ttft_s and hit_tokens are set (the ACK's details) */
	double ttft_s;
	double own_s; /* of ttft_s, its own prefill (admission.h); 0: not known */
	/* Its predicted TPOT there (admission.h weighs it against its own
	 * objective); 0: not known. */
	double tpot_s;
	/* The TPOT the decoders there saw lately, measured (predict.h);
	 * 0: not known. */
	double tpot_seen_s;
	double kv_wait_s; /* of ttft_s, the wait for KV room (predict.h); 0: none known */
	double hit_tokens;
};

/* A per-server number a policy shows: in /state under the policy's
 * member, and as a gauge NAME{server="..."} in /metrics. One table walked
 * for both renderings; a NULL name leaves the number out of that
 * rendering on purpose. */
enum dbk_policy_fmt {
	DBK_POLICY_INT,   /* a whole number */
	DBK_POLICY_SHORT, /* %.6g */
	DBK_POLICY_FULL,  /* %.17g */
	DBK_POLICY_BOOL,  /* true or false; 1 or 0 in /metrics */
};

struct dbk_policy_row {
	const char *json;   /* /state key; NULL: /metrics only */
	const char *metric; /* /metrics gauge; NULL: /state only */
	const char *help;
	enum dbk_policy_fmt fmt;
};

struct dbk_policy_report {
	const char *member; /* /state's member for it */
	const struct dbk_policy_row *rows;
	unsigned nrows;
	/* Fills v[0..nrows) for server at now_ms, in the rows' order. */
	void (*view)(const void *st, unsigned server, uint64_t now_ms, double *v);
};

/* The largest nrows of any policy's report. */
#define DBK_POLICY_MAX_ROWS 16

struct dbk_policy_ops {
	const char *name;
	/* Its entry in --help, lines of at most 44 characters. */
	const char *help;
	/* Allocates the policy's state; NULL out of memory. */
	void *(*create)(const struct dbk_policy_env *env);
	void (*destroy)(void *st);
	/* NULL: the balancer decides (the reference). Else fills c and
	 * returns c->server. */
	int (*choose)(void *st, const struct dbk_policy_request *r, uint64_t now_ms,
	              struct dbk_policy_choice *c);
	/* The request choose chose for was sent to c->server at now_ms:
	 * charge it and fill the lease's slot. */
	void (*commit)(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
	               uint32_t slot[DBK_BAL_SLOT_WORDS]);
	/* As commit, for a request whose body was still on its way (the
	 * server can do nothing with it before it is whole): where it went
	 * is recorded (a prefix's affinity), its load not charged until
	 * complete, and the slot's first word marked DBK_POLICY_HELD until
	 * then (so that a wrapper of the policy can tell, as release and
	 * move must). May be NULL, as may complete: commit charges at once. */
	void (*hold)(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
	             uint32_t slot[DBK_BAL_SLOT_WORDS]);
	/* The request of l, held, reached l's server at now_ms: charge it
	 * and rewrite the slot release will get. False when l was not held
	 * (slot untouched). */
	bool (*complete)(void *st, const struct dbk_bal_lease *l, uint64_t now_ms,
	                 uint32_t slot[DBK_BAL_SLOT_WORDS]);
	/* Another balancer sent r to server at now_ms and told us (books
	 * shared between balancers; the simulator's --lb-share-ms): charge it
	 * as commit would, recording where its prefix went when prefix, and
	 * fill the slot release will get. May be NULL. */
	void (*seen)(void *st, const struct dbk_policy_request *r, unsigned server, bool prefix,
	             uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS]);
	/* Another balancer sent r's session to server, its prompt then tokens
	 * long (HAProxy's session table): record r's prefix up to that length
	 * there, charge nothing. May be NULL. */
	void (*hint)(void *st, const struct dbk_policy_request *r, unsigned server,
	             uint32_t tokens);
	/* A lease (server, start_ms, slot as commit wrote it) ended; exactly
	 * once per commit. May be NULL, as may every hook below. */
	void (*release)(void *st, const struct dbk_bal_lease *l, uint64_t now_ms);
	/* The lease moved from before->server to server. */
	void (*move)(void *st, const struct dbk_bal_lease *before, unsigned server,
	             uint64_t now_ms);
	/* HAProxy's view of a server: usable or not (DOWN, MAINT, DRAIN). */
	void (*usable)(void *st, unsigned server, bool usable);
	/* Another server, or a new incarnation of it (a new address: a new
	 * pod), is in this slot, or the slot was emptied: forget what was
	 * learnt of it. Its leases have ended (release) or stay (move and
	 * release still come); a policy keeps books of those apart. */
	void (*reset)(void *st, unsigned server);
	/* HAProxy's effective weight of a server (ramps during slowstart;
	 * 0 is a drain, which usable tells too). */
	void (*weight)(void *st, unsigned server, double weight);
	/* The servers' own numbers: non-NULL means the policy reads them, so
	 * the agent scrapes every server it can (with --haproxy-socket, also
	 * those not named by --scrape). */
	void (*scraped)(void *st, unsigned server, const struct dbk_pred_scrape *s,
	                uint64_t now_ms);
	/* From /v1/models; 0: unknown. */
	void (*max_model_len)(void *st, unsigned server, uint32_t len);
	const struct dbk_policy_report *report; /* NULL: nothing to show */
};

/* One running policy. */
struct dbk_policy {
	const struct dbk_policy_ops *ops;
	void *st;
};

/* The table: "reference" first (the default), NULL past the end. */
const struct dbk_policy_ops *dbk_policy_at(size_t i);
/* By name; NULL when unknown. */
const struct dbk_policy_ops *dbk_policy_find(const char *name);

/* Creates ops' state into p. 0, or -1 with err. */
int dbk_policy_start(struct dbk_policy *p, const struct dbk_policy_ops *ops,
                     const struct dbk_policy_env *env, char *err, size_t errlen);
void dbk_policy_stop(struct dbk_policy *p);

/* The policy's per-server rows: a member for /state (followed by a
 * comma) and a gauge per row for /metrics. Nothing without a report; a
 * server named "" (a free slot) is left out. */
void dbk_policy_report_state(const struct dbk_policy *p, const char *const *names, unsigned n,
                             uint64_t now_ms, struct dbk_buf *o);
void dbk_policy_report_metrics(const struct dbk_policy *p, const char *const *names, unsigned n,
                               uint64_t now_ms, struct dbk_buf *o);

#endif
