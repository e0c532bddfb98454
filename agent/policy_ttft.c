/* --policy ttft and what the predictor's policies share (policy_ttft.h). */
#include "policy_ttft.h"

#include <stdlib.h>
#include <string.h>

void *dbk_policy_ttft_create(const struct dbk_policy_env *env)
{
	struct dbk_policy_ttft *t = calloc(1, sizeof(*t));
	struct dbk_pred_config c;

	if (!t)
		return NULL;
	/* The default engine model sped up engine_speed times: its step
	 * costs divided by it, so the books drain at the servers' pace. */
	dbk_pred_config_default(&c, env->nservers);
	c.t_cpu_s /= env->engine_speed;
	c.t_weights_s /= env->engine_speed;
	c.lin_tokens_per_s *= env->engine_speed;
	c.attn_flops *= env->engine_speed;
	c.kv_read_bw *= env->engine_speed;
	if (env->stall_weight >= 0)
		c.stall_weight = env->stall_weight;
	c.lora_load_s = dbk_policy_ttft_lora_load_s(env->lora_load_s, env->engine_speed);
	/* Not scaled by engine_speed: a budget is tokens, not time. Only a
	 * told budget packs the queue (dbk_pred_config_default). */
	if (env->budget_tokens > 0)
		c.budget_tokens = c.pack_tokens = env->budget_tokens;
	if (env->serial_queue)
		c.pack_tokens = 0, c.learn_pack = false, c.late_weight = 0, c.pace_chunks = true;
	t->absolute = env->serial_queue;
	t->draws = env->seed;
	if (!(t->pred = dbk_pred_new(&c))) {
		free(t);
		return NULL;
	}
	return t;
}

double dbk_policy_ttft_lora_load_s(double given_s, double engine_speed)
{
	struct dbk_pred_config c;

	if (given_s > 0)
		return given_s; /* the servers' own: no speed to convert */
	dbk_pred_config_default(&c, 1);
	return c.lora_load_s / engine_speed;
}

void dbk_policy_ttft_destroy(void *st)
{
	struct dbk_policy_ttft *t = st;

	if (t)
		dbk_pred_free(t->pred);
	free(t);
}

void dbk_policy_ttft_request(struct dbk_policy_ttft *t, const struct dbk_policy_request *r)
{
	struct dbk_pkey pk;

	dbk_pkey_derive(r->sample, r->sample_len, t->keys, DBK_PKEY_MAX_KEYS, &pk);
	t->req = (struct dbk_pred_request){
		.prompt_tokens = r->est->body_bytes / DBK_BAL_BYTES_PER_TOKEN,
		.max_tokens = r->est->max_tokens,
		.ignore_eos = r->est->ignore_eos,
		.keys = t->keys,
		.nkeys = pk.nkeys,
		.keys_cut = pk.cut || r->cut,
		.unsized = r->unsized,
		.session = r->has_session ? r->session : pk.session,
		.eligible = r->eligible,
		.adapter = r->adapter,
	};
}

int dbk_policy_ttft_chose(struct dbk_policy_ttft *t, const struct dbk_pred_choice *pc,
                          struct dbk_policy_choice *c)
{
	/* Admission weighs a first token against the objective's seconds;
	 * the predictor's are the engine model's, which --engine-speed
	 * scales but nothing else: priced as H100s, 16 H100/A100 servers
	 * on Azure's conversations kept 77% of critical requests within the
	 * objectives at 1.5x capacity, 99.6% at the fleet's learnt speed
	 * (BENCHMARKS.md, "Stop 56: admission at the fleet's own speed").
	 * Of the wait, what the books priced at that speed already
	 * (paced_s: a long prefill's chunks, predict.c's pred_paced) is
	 * seconds, not multiplied again. */
	double k = t->absolute ? dbk_pred_fleet_slowness(t->pred) : 1;

	t->ch = *pc;
	*c = (struct dbk_policy_choice){
		.server = pc->server,
		.too_long = pc->reason == DBK_PRED_TOO_LONG,
		.predicted = true,
		.ttft_s = (pc->ttft_s - pc->paced_s) * k + pc->paced_s,
		.own_s = pc->own_s * k,
		.tpot_s = pc->tpot_s,
		.tpot_seen_s = pc->tpot_seen_s,
		.kv_wait_s = pc->kv_wait_s,
		.hit_tokens = pc->hit_tokens,
	};
	return c->server;
}

/* The server that keeps the request within the TTFT and TPOT
 * objectives at the least cost: its first token, the decodes a long
 * prefill stalls, its TPOT there and the TPOT it adds to the batch
 * (predict.h). */
static int ttft_choose(void *st, const struct dbk_policy_request *r, uint64_t now_ms,
                       struct dbk_policy_choice *c)
{
	struct dbk_policy_ttft *t = st;
	struct dbk_pred_choice pc;

	dbk_policy_ttft_request(t, r);
	dbk_pred_choose(t->pred, &t->req, now_ms, &pc);
	return dbk_policy_ttft_chose(t, &pc, c);
}

/* The slot holds the ticket but for what the lease keeps itself (its
 * server and start): prompt, KV and context tokens, the first token and
 * decode predicted (floats' bits), and the server they were predicted
 * for, which a move leaves behind (the balancer carries the slot as it
 * was committed). */
/* In the slot's server word: the ticket's shared_hit. */
#define TTFT_SLOT_SHARED (UINT32_C(1) << 31)

static void slot_of(const struct dbk_pred_ticket *k, uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	_Static_assert(DBK_BAL_SLOT_WORDS >= 6, "the ticket takes six words");
	slot[0] = k->prompt_tokens;
	slot[1] = k->kv_tokens;
	slot[2] = k->ctx_tokens;
	memcpy(&slot[3], &k->x1, sizeof(k->x1));
	memcpy(&slot[4], &k->x2, sizeof(k->x2));
	slot[5] = k->server | (k->shared_hit ? TTFT_SLOT_SHARED : 0);
}

/* A prompt longer than every server's context goes to the longest for
 * vLLM's 400 (DBK_PRED_TOO_LONG), which comes at once: nothing to
 * book, no prefix to record, nothing its end teaches. Booked, each
 * left its prefill queued on that server's books until the server
 * was idle, and its few milliseconds taught that the server prefills
 * many times faster than the fleet: Mooncake on 16 servers of a
 * 32,768-token context, where 7.6% of the prompts are longer, priced
 * server 0 with a 230 s queue and 8x fast (BENCHMARKS.md, "Stop 51:
 * prompts no server takes"). Marked held, its release gives nothing
 * back. */
void dbk_policy_ttft_commit(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                            uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_policy_ttft *t = st;
	struct dbk_pred_ticket k;

	if (c->too_long) {
		k = (struct dbk_pred_ticket){ .server = (uint32_t)c->server, .sent_ms = now_ms };
		slot_of(&k, slot);
		slot[0] |= DBK_POLICY_HELD;
		return;
	}
	dbk_pred_commit_chosen(t->pred, &t->req, &t->ch, now_ms, &k);
	slot_of(&k, slot);
}

/* Another balancer's request, charged as our own: the books it keeps
 * are the fleet's, not this balancer's alone. Without prefix, a request
 * with no identity: its load is charged, no prefix recorded. */
void dbk_policy_ttft_seen(void *st, const struct dbk_policy_request *r, unsigned server,
                          bool prefix, uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_policy_ttft *t = st;
	struct dbk_pred_ticket k;

	dbk_policy_ttft_request(t, r);
	if (!prefix) {
		t->req.keys = NULL;
		t->req.nkeys = 0;
		t->req.session = 0;
	}
	dbk_pred_commit(t->pred, &t->req, server, now_ms, &k);
	slot_of(&k, slot);
}

void dbk_policy_ttft_hint(void *st, const struct dbk_policy_request *r, unsigned server,
                          uint32_t tokens)
{
	struct dbk_policy_ttft *t = st;

	dbk_policy_ttft_request(t, r);
	dbk_pred_hint(t->pred, &t->req, server, tokens);
}

/* Filled as commit fills the slot, but nothing charged but where its
 * prefix went (dbk_pred_hold). */
void dbk_policy_ttft_hold(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                          uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_policy_ttft *t = st;
	struct dbk_pred_ticket k;

	(void)c;
	dbk_pred_hold(t->pred, &t->req, &t->ch, now_ms, &k);
	slot_of(&k, slot);
	slot[0] |= DBK_POLICY_HELD;
}

static struct dbk_pred_ticket ticket_of(const struct dbk_bal_lease *l)
{
	struct dbk_pred_ticket k = {
		.server = l->server,
		.prompt_tokens = l->slot[0] & ~DBK_POLICY_HELD,
		.kv_tokens = l->slot[1],
		.ctx_tokens = l->slot[2],
		.sent_ms = l->start_ms,
		.shared_hit = l->slot[5] & TTFT_SLOT_SHARED,
	};

	if ((l->slot[5] & ~TTFT_SLOT_SHARED) == l->server) {
		memcpy(&k.x1, &l->slot[3], sizeof(k.x1));
		memcpy(&k.x2, &l->slot[4], sizeof(k.x2));
	}
	return k;
}

bool dbk_policy_ttft_complete(void *st, const struct dbk_bal_lease *l, uint64_t now_ms,
                              uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_pred_ticket k = ticket_of(l);

	if (!(l->slot[0] & DBK_POLICY_HELD))
		return false;
	dbk_pred_complete(((struct dbk_policy_ttft *)st)->pred, &k, now_ms);
	memcpy(slot, l->slot, sizeof(l->slot));
	slot[0] &= ~DBK_POLICY_HELD;
	return true;
}

/* A lease still held had nothing charged: nothing to give back or move. */
void dbk_policy_ttft_release(void *st, const struct dbk_bal_lease *l, uint64_t now_ms)
{
	struct dbk_pred_ticket k = ticket_of(l);
	struct dbk_pred *p = ((struct dbk_policy_ttft *)st)->pred;

	if (l->slot[0] & DBK_POLICY_HELD)
		return;
	if (l->unserved)
		dbk_pred_release_unserved(p, &k, now_ms);
	else
		dbk_pred_release(p, &k, now_ms);
}

void dbk_policy_ttft_move(void *st, const struct dbk_bal_lease *before, unsigned server,
                          uint64_t now_ms)
{
	struct dbk_pred_ticket k = ticket_of(before);

	if (before->slot[0] & DBK_POLICY_HELD)
		return;
	dbk_pred_move(((struct dbk_policy_ttft *)st)->pred, &k, server, now_ms);
}

void dbk_policy_ttft_usable(void *st, unsigned server, bool usable)
{
	dbk_pred_set_state(((struct dbk_policy_ttft *)st)->pred, server,
	                   usable ? DBK_PRED_UP : DBK_PRED_DOWN);
}

void dbk_policy_ttft_reset(void *st, unsigned server)
{
	dbk_pred_reset(((struct dbk_policy_ttft *)st)->pred, server);
}

void dbk_policy_ttft_weight(void *st, unsigned server, double weight)
{
	dbk_pred_set_weight(((struct dbk_policy_ttft *)st)->pred, server, weight);
}

void dbk_policy_ttft_scraped(void *st, unsigned server, const struct dbk_pred_scrape *s,
                             uint64_t now_ms)
{
	dbk_pred_scraped(((struct dbk_policy_ttft *)st)->pred, server, s, now_ms);
}

void dbk_policy_ttft_max_model_len(void *st, unsigned server, uint32_t len)
{
	dbk_pred_set_max_model_len(((struct dbk_policy_ttft *)st)->pred, server, len);
}

static const struct dbk_policy_row rows[] = {
	{ "inflight", NULL, NULL, DBK_POLICY_INT },
	{ "prefilling", NULL, NULL, DBK_POLICY_INT },
	{ "queue_s", "dbucket_ttft_queue_seconds", "Predicted prefill queued ahead of a newcomer.",
	  DBK_POLICY_SHORT },
	{ "kv_committed", "dbucket_ttft_kv_committed_tokens",
	  "KV tokens committed (books and scraped).", DBK_POLICY_FULL },
	{ "kv_capacity", NULL, NULL, DBK_POLICY_FULL },
	{ "others", NULL, NULL, DBK_POLICY_FULL },
	{ "scraped", "dbucket_ttft_scraped",
	  "Whether fresh scraped numbers are in use (0: books only).", DBK_POLICY_BOOL },
	{ "max_model_len", NULL, NULL, DBK_POLICY_INT },
	{ "hit_ratio", NULL, NULL, DBK_POLICY_SHORT },
	{ "slowness", "dbucket_ttft_slowness",
	  "How much slower than the fleet the server prefills (1: as the fleet).",
	  DBK_POLICY_SHORT },
	{ "decode_slowness", "dbucket_ttft_decode_slowness",
	  "How much slower than the fleet the server decodes (1: as the fleet).",
	  DBK_POLICY_SHORT },
	{ "lora_adapters", NULL, NULL, DBK_POLICY_INT },
	{ "max_lora", NULL, NULL, DBK_POLICY_INT },
	{ "step_budget", "dbucket_ttft_step_budget_tokens",
	  "Tokens a step of the server's is priced to pack its queue into (0: a step a prompt).",
	  DBK_POLICY_INT },
	{ "seats", "dbucket_ttft_seats",
	  "Requests the server was seen to run at most while prompts waited for a seat (0: not "
	  "learnt).",
	  DBK_POLICY_INT },
	{ "model_slowness", "dbucket_ttft_model_slowness",
	  "How much slower than the engine model (sped up --engine-speed times) the server "
	  "serves first tokens: its slowness times the fleet's, the fleet's 1 within the speed "
	  "band; admission prices first tokens at it.",
	  DBK_POLICY_SHORT },
};

static void view(const void *st, unsigned server, uint64_t now_ms, double *v)
{
	struct dbk_pred_view w;

	dbk_pred_view(((const struct dbk_policy_ttft *)st)->pred, server, now_ms, &w);
	const double x[] = { w.inflight,    w.prefilling,  w.queue_s,         w.kv_committed,
		             w.kv_capacity, w.others,      w.scraped,         w.max_model_len,
		             w.hit_ratio,   w.slowness,    w.decode_slowness, w.adapters,
		             w.max_lora,    w.step_budget, w.seats,           w.model_slowness };
	_Static_assert(sizeof(x) / sizeof(x[0]) == sizeof(rows) / sizeof(rows[0]),
	               "one value per row");
	memcpy(v, x, sizeof(x));
}

const struct dbk_policy_report dbk_policy_ttft_report = {
	.member = "ttft",
	.rows = rows,
	.nrows = sizeof(rows) / sizeof(rows[0]),
	.view = view,
};

const struct dbk_policy_ops dbk_policy_ttft = DBK_POLICY_TTFT_OPS(
        "ttft",
        "the server that keeps the request\nwithin the TTFT and TPOT objectives\n"
        "(2 s, 100 ms) at the least cost: its\npredicted first token (length, prefix,\n"
        "queue, KV use, context limit, LoRA\nadapter loads), the decodes a long\n"
        "prefill stalls there, its TPOT there\nand the TPOT it adds to the batch",
        ttft_choose);
