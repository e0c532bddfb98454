/* The agent's own policies (agent/policy_ops.h's table, every one that
 * chooses: ttft, p2ttft, ...) as simulator policies, fed what the agent
 * would be fed:
 *   - the request's length (Content-Length / 4), max_tokens, ignore_eos;
 *   - the first TTFT_SAMPLE_BYTES of the very body dbucket-bench sends
 *     (dbk_prompt_body), the sample HAProxy hands the agent, with the
 *     session as the "user" field in it;
 *   - each instance's max_model_len (/v1/models) and, every scrape_s of
 *     model time, its scraped gauges, first-token totals and KV capacity
 *     (snapshot.h: stale between scrapes as a real scraper's are), and
 *     with adapters each instance's vllm:lora_requests_info (the engine's
 *     counts, as llm_d_lora reads them);
 *   - the request's adapter, keyed as the agent keys an adapter's name.
 * With lb_nodes K > 1 it models K load balancers, each its own instance
 * of the policy (books, prefix index), each receiving a random 1/K of
 * the arrivals (fixed seed), or with lb_sticky each conversation's
 * requests to one of them, all reading the same scraped numbers: the
 * servers' /metrics are the only state they share; with lb_share each
 * is also charged with the others' requests lb_share_s after they were
 * sent, and released as long after they end (books shared with a delay,
 * as a table every HAProxy node replicates would share them: what that
 * would buy, BENCHMARKS.md; with lb_share_books the load only, each at
 * the KV and prefill its sender priced, net of its prefix, as
 * agent/books_share.h's rows carry it); with lb_share_sessions a node about to
 * route a session's request also learns where that session's last
 * request went and its prompt length, once lb_share_s has passed since
 * it was sent (HAProxy's session table replicated by its peers,
 * agent/session_hint.h), and tells its policy (the hint hook); without
 * lb_share_books that table is all they share. The
 * agent's balancer
 * is left out: with no lease limit it takes each lease where the policy
 * chose (the policy is told which servers are usable, as the agent tells
 * it), and the slot the policy fills is kept here. */
#include "policy.h"
#include "admit.h"
#include "sim_eject.h"
#include "u64map.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "model/prompt.h"
#include "policy_ops.h"
#include "vllm_metrics.h"

/* What HAProxy's wait-for-body leaves the agent of a body: one 16 KB
 * buffer less the request's headers. */
#define AG_SAMPLE_BYTES 15360u

struct ag {
	const struct dbk_policy_ops *ops;
	unsigned n, k;
	const struct dbk_sim_config *cfg; /* --lb-nodes, --lb-sticky: dbk_sim_lb_node */
	void **node;
	/* By request id: its lease, as the agent's balancer would keep it,
	 * and the node that routed it. */
	struct ag_req {
		struct dbk_bal_lease lease;
		uint8_t node;
		uint32_t prev; /* its session's request before it + 1; 0: none */
	} * reqs;
	size_t cap;
	struct dbk_buf body;
	double *kv_cap;
	bool learnt;
	bool *member;                /* by instance: usable as far as the fleet goes */
	struct dbk_outlier *ej;      /* by node: its outlier ejection */
	struct dbk_admit_state *adm; /* by node: its admission's memory */
	/* --lb-share-ms: the books shared with a delay. Each node's copy of
	 * every request another node sent (by id * k + node), and the news
	 * not yet delivered, in the order they are due. */
	bool share, share_prefix;
	uint64_t share_ms;
	struct ag_copy {
		struct dbk_bal_lease lease;
		bool on;
	} * copy;
	size_t copy_cap;
	struct ag_news {
		uint64_t due_ms;
		uint32_t id;
		uint8_t node; /* the node that sent it */
		bool end;     /* it ended (else: it was sent) */
	} * news;
	size_t news_cap, news_head, news_n;
	/* --lb-share-sessions: by session, its last request routed + 1. */
	bool share_sessions;
	struct dbk_u64map sessions;
	/* --log-level debug: by instance, requests ended there and the
	 * speed node 0 showed when last logged (ag_log_learning). */
	uint64_t *ended;
	double *shown;
};

/* A node's back-off ended: the instance takes its traffic again. */
struct ag_node {
	struct ag *p;
	unsigned j;
};

static void ag_fini(void *st)
{
	struct ag *p = st;

	for (unsigned i = 0; p->node && i < p->k; i++)
		if (p->node[i])
			p->ops->destroy(p->node[i]);
	for (unsigned i = 0; p->ej && i < p->k; i++)
		dbk_outlier_free(&p->ej[i]);
	free(p->ej);
	free(p->adm);
	free(p->ended);
	free(p->shown);
	free(p->member);
	free(p->node);
	free(p->reqs);
	free(p->kv_cap);
	free(p->copy);
	free(p->news);
	dbk_u64map_free(&p->sessions);
	dbk_buf_free(&p->body);
}

static int ag_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct ag *p = st;

	p->ops = env->arg;
	p->n = env->cfg->ninstances;
	p->k = env->cfg->lb_nodes ? env->cfg->lb_nodes : 1;
	p->cfg = env->cfg;
	/* The session table without the books table shares no books. */
	bool table_alone = env->cfg->lb_share_sessions && !env->cfg->lb_share_books;
	p->share = env->cfg->lb_share && p->k > 1 && p->ops->seen && !table_alone;
	p->share_ms = (uint64_t)(env->cfg->lb_share_s * 1000.0 + 0.5);
	p->share_prefix = !env->cfg->lb_share_books;
	p->share_sessions = env->cfg->lb_share && p->k > 1 && env->cfg->lb_share_sessions &&
	                    p->ops->seen && p->ops->hint;
	dbk_u64map_init(&p->sessions);
	if (p->k > 255) {
		dbk_errf(env->err, env->errlen, "at most 255 load-balancer nodes");
		return -1;
	}
	if (!(p->node = calloc(p->k, sizeof(*p->node))) ||
	    !(p->kv_cap = calloc(p->n, sizeof(*p->kv_cap))) ||
	    !(p->member = calloc(p->n, sizeof(*p->member))) ||
	    !(p->ej = calloc(p->k, sizeof(*p->ej))) || !(p->adm = calloc(p->k, sizeof(*p->adm))) ||
	    !(p->ended = calloc(p->n, sizeof(*p->ended))) ||
	    !(p->shown = calloc(2 * (size_t)p->n, sizeof(*p->shown))))
		return -1;
	for (unsigned i = 0; i < p->n; i++)
		p->member[i] = true;
	for (unsigned j = 0; j < p->k; j++) {
		if (dbk_sim_eject_init(&p->ej[j], p->n) < 0)
			return -1;
		const struct dbk_policy_env pe = {
			.nservers = p->n,
			.engine_speed = env->cfg->engine_speed > 0 ? env->cfg->engine_speed : 1.0,
			.stall_weight = env->cfg->stall_weight,
			.lora_load_s = env->cfg->lora_load_s,
			.budget_tokens = env->cfg->ttft_budget_tokens,
			.serial_queue = env->cfg->admit.enabled,
			.seed = DBK_POLICY_SEED + j,
		};
		if (!(p->node[j] = p->ops->create(&pe)))
			return -1;
	}
	return 0;
}

/* What /v1/models and cache_config_info tell an agent at start. */
/* What the agent learns of instance i from outside its books: its
 * context length (/v1/models) and its operator weight (HAProxy's, which
 * the agent reads with the runtime API; 1 for all without --weights). */
static void ag_tell(struct ag *p, const struct dbk_sim *s, unsigned i)
{
	const struct dbk_engine_config *e = dbk_sim_engine_config(s, i);

	p->kv_cap[i] = (double)e->kv_capacity_tokens;
	for (unsigned j = 0; j < p->k; j++) {
		if (p->ops->max_model_len)
			p->ops->max_model_len(p->node[j], i, e->max_model_len);
		if (p->ops->weight)
			p->ops->weight(p->node[j], i, dbk_sim_weight(s, i));
	}
}

static void ag_learn(struct ag *p, const struct dbk_sim *s)
{
	if (p->learnt)
		return;
	for (unsigned i = 0; i < p->n; i++)
		ag_tell(p, s, i);
	p->learnt = true;
}

static int ag_grow(struct ag *p, uint32_t id)
{
	struct ag_req *q = dbk_array_room(p->reqs, &p->cap, id, sizeof(*q), 1024);

	if (!q)
		return -1;
	p->reqs = q;
	return 0;
}

/* An adapter's key, as the agent makes it of the adapter's name
 * (vllm_metrics.h); the simulator's adapters are numbers. 0: none. */
static uint64_t ag_adapter_key(uint32_t lora)
{
	return lora ? dbk_vm_adapter_key(&lora, sizeof(lora)) : 0;
}

/* Instance i's vllm:lora_requests_info as the agent reads it
 * (policy_feed.c: max_lora, running adapters first), from the engine's
 * counts as the stub exports them (what llm_d_lora reads too). */
static void ag_scrape_lora(const struct dbk_sim *s, unsigned i, struct dbk_pred_scrape *sc)
{
	const struct dbk_engine *e = dbk_sim_engine(s, i);
	struct dbk_engine_lora_count c[DBK_PRED_LORA_MAX];
	uint32_t max = dbk_engine_max_loras(e);

	if (!max)
		return;
	size_t n = dbk_engine_lora_counts(e, c, DBK_PRED_LORA_MAX);
	if (n > DBK_PRED_LORA_MAX)
		n = DBK_PRED_LORA_MAX;
	sc->max_lora = max;
	for (unsigned pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < n; k++)
			if (pass == 0 ? c[k].running > 0 : c[k].running == 0 && c[k].waiting > 0)
				sc->lora[sc->nlora++] = ag_adapter_key(c[k].id);
		if (pass == 0)
			sc->nlora_running = sc->nlora;
	}
}

/* The agent's view of r: the estimate and the body's sample. */
static void ag_request(struct ag *p, const struct dbk_sim *s, const struct dbk_sim_req *r,
                       struct dbk_bal_request *est, struct dbk_policy_request *out)
{
	struct dbk_req_spec spec = {
		.ep = DBK_EP_COMPLETIONS,
		.model_json = "\"m\"",
		.input = r->input_tokens,
		.output = r->output_tokens,
		.hash = r->hash_ids,
		.n_hash = r->n_hash_ids,
		.index = r->id,
		.session = r->session,
		.has_session = r->has_session,
	};

	/* The prompt is written whole; only its head is sampled. Cap the
	 * text at what the sample can hold (the JSON head is < 200 bytes). */
	if (spec.input > AG_SAMPLE_BYTES / DBK_BYTES_PER_TOKEN)
		spec.input = AG_SAMPLE_BYTES / DBK_BYTES_PER_TOKEN;
	dbk_prompt_body(&p->body, &spec);
	dbk_sim_bal_request(dbk_sim_config(s), r, est);
	*out = (struct dbk_policy_request){
		.est = est,
		.sample = (const uint8_t *)p->body.p,
		.sample_len = p->body.len < AG_SAMPLE_BYTES ? p->body.len : AG_SAMPLE_BYTES,
		/* The sample held the whole prompt unless it was cut. */
		.cut = r->input_tokens > spec.input,
		/* Its model's servers, as the agent learns them from each
		 * server's /v1/models (NULL with one model). */
		.eligible = dbk_sim_eligible(s, r),
		.adapter = ag_adapter_key(r->lora),
	};
}

/* Model seconds as the agent's millisecond clock reads them. */
static uint64_t ag_ms_of(double t_s) { return (uint64_t)(t_s * 1000.0 + 0.5); }

static uint64_t ag_ms(const struct dbk_sim *s) { return ag_ms_of(dbk_sim_now(s)); }

/* News of a request node `from` sent or ended, due share_ms later. */
static int ag_tell_others(struct ag *p, uint32_t id, unsigned from, bool end, uint64_t now)
{
	if (p->news_head > 0 && p->news_head >= p->news_n / 2) {
		memmove(p->news, p->news + p->news_head,
		        (p->news_n - p->news_head) * sizeof(*p->news));
		p->news_n -= p->news_head;
		p->news_head = 0;
	}
	struct ag_news *q = dbk_array_room(p->news, &p->news_cap, p->news_n, sizeof(*q), 256);
	if (!q)
		return -1;
	p->news = q;
	q[p->news_n++] = (struct ag_news){ now + p->share_ms, id, (uint8_t)from, end };
	if (end)
		return 0;
	struct ag_copy *c = dbk_array_room(p->copy, &p->copy_cap, ((size_t)id + 1) * p->k,
	                                   sizeof(*c), 1024);
	if (!c)
		return -1;
	p->copy = c;
	memset(&c[(size_t)id * p->k], 0, p->k * sizeof(*c));
	return 0;
}

/* Node j books what another node sent (sent: its lease there) into
 * copy. The load only (--lb-share-books) is what agent/books_share.h's
 * row carries: the ticket its sender booked, slot words 0-2 (prompt, KV
 * net of the hit it expected there, context), booked as priced by the
 * policy's complete, no prefix recorded; every prefix shared, the
 * request as seen, its prefix recorded. */
static void ag_book(struct ag *p, unsigned j, const struct dbk_policy_request *q,
                    const struct dbk_bal_lease *sent, uint64_t now, struct dbk_bal_lease *copy)
{
	uint32_t slot[DBK_BAL_SLOT_WORDS];

	*copy = (struct dbk_bal_lease){ .server = sent->server, .start_ms = now };
	if (p->share_prefix || !p->ops->complete) {
		p->ops->seen(p->node[j], q, sent->server, p->share_prefix, now, copy->slot);
		return;
	}
	memcpy(copy->slot, sent->slot, 3 * sizeof(copy->slot[0]));
	copy->slot[0] |= DBK_POLICY_HELD;
	if (p->ops->complete(p->node[j], copy, now, slot))
		memcpy(copy->slot, slot, sizeof(slot));
}

/* As HAProxy's completion line tells the agent (accounting.c): the
 * request ended without an answer of its server's (a failing server's
 * 500, vLLM's 400, none at all). */
static bool ag_unserved(const struct dbk_sim *s, uint32_t id)
{
	return dbk_sim_outcome(s, id)->fail != DBK_SIM_FAIL_NONE;
}

/* Every node but the sender learns of what is due by now: a request
 * charged where it was sent, or its end, at the time it was due (no
 * node has decided since: every decision and scrape delivers first). */
static void ag_deliver(struct ag *p, const struct dbk_sim *s, uint64_t now)
{
	while (p->news_head < p->news_n && p->news[p->news_head].due_ms <= now) {
		const struct ag_news *e = &p->news[p->news_head++];
		struct ag_copy *c = &p->copy[(size_t)e->id * p->k];
		struct dbk_bal_request est;
		struct dbk_policy_request q;

		if (!e->end && (p->share_prefix || !p->ops->complete))
			ag_request(p, s, dbk_sim_req(s, e->id), &est, &q);
		for (unsigned j = 0; j < p->k; j++) {
			if (j == e->node)
				continue;
			if (e->end && c[j].on && p->ops->release) {
				c[j].lease.unserved = ag_unserved(s, e->id);
				p->ops->release(p->node[j], &c[j].lease, e->due_ms);
				c[j].on = false;
			} else if (!e->end) {
				ag_book(p, j, &q, &p->reqs[e->id].lease, e->due_ms, &c[j].lease);
				c[j].on = true;
			}
		}
	}
}

/* A table replicated with a delay holds, on node j, the newest value
 * written there or delivered: the session's last request if j routed it
 * or share_ms has passed, else the one before, and so on (bounded: a
 * value older than that has long been delivered). */
#define AG_SESSION_LOOKBACK 8

/* What node j's session table says of r's session, told its policy: a
 * value another node wrote (its own index knows its own). */
static void ag_session_hint(struct ag *p, const struct dbk_sim *s, const struct dbk_sim_req *r,
                            const struct dbk_policy_request *q, unsigned j, uint64_t now)
{
	const uint32_t *v = r->has_session ? dbk_u64map_get(&p->sessions, r->session) : NULL;
	uint32_t id1 = v ? *v : 0;

	for (unsigned n = 0; id1 && n < AG_SESSION_LOOKBACK; n++) {
		const struct ag_req *a = &p->reqs[id1 - 1];

		if (a->node == j)
			return;
		if (a->lease.start_ms + p->share_ms <= now) {
			p->ops->hint(p->node[j], q, a->lease.server,
			             dbk_sim_req(s, id1 - 1)->input_tokens);
			return;
		}
		id1 = a->prev;
	}
}

/* r, of a session, was routed: its session's value is now r. */
static int ag_session_write(struct ag *p, const struct dbk_sim_req *r)
{
	uint32_t *v = dbk_u64map_get(&p->sessions, r->session);

	p->reqs[r->id].prev = v ? *v : 0;
	if (v) {
		*v = r->id + 1;
		return 0;
	}
	return dbk_u64map_put(&p->sessions, r->session, r->id + 1);
}

static void ag_returned(void *arg, unsigned server)
{
	const struct ag_node *an = arg;
	struct ag *p = an->p;

	if (p->member[server] && p->ops->usable)
		p->ops->usable(p->node[an->j], server, true);
}

static int ag_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct ag *p = st;
	struct dbk_bal_request est;
	struct dbk_policy_request q;
	struct dbk_policy_choice ch;

	if (ag_grow(p, r->id) != 0)
		return DBK_SIM_POLICY_ERROR;
	ag_learn(p, s);
	if (p->share)
		ag_deliver(p, s, ag_ms(s));
	unsigned j = dbk_sim_lb_node(p->cfg, r);
	ag_request(p, s, r, &est, &q);
	uint64_t now = ag_ms(s);
	struct ag_node an = { p, j };

	dbk_outlier_tick(&p->ej[j], now, ag_returned, &an);
	if (p->share_sessions)
		ag_session_hint(p, s, r, &q, j, now);
	if (p->ops->choose(p->node[j], &q, now, &ch) < 0)
		return DBK_SIM_REFUSE;
	/* Admission where route.c applies it: after choose, before the
	 * lease and its commit, with the first token predicted there. */
	int v = dbk_sim_admit(s, &p->adm[j], r, &ch, NULL);
	if (v != ch.server)
		return v;
	struct ag_req *a = &p->reqs[r->id];
	memset(a, 0, sizeof(*a));
	a->lease.server = (unsigned)ch.server;
	a->lease.start_ms = now;
	a->node = (uint8_t)j;
	p->ops->commit(p->node[j], &ch, now, a->lease.slot);
	if (p->share && ag_tell_others(p, r->id, j, false, now) != 0)
		return DBK_SIM_POLICY_ERROR;
	if (p->share_sessions && r->has_session && ag_session_write(p, r) != 0)
		return DBK_SIM_POLICY_ERROR;
	return ch.server;
}

/* The index of the report row named json, or -1. */
static int ag_row(const struct dbk_policy_report *rep, const char *json)
{
	for (unsigned i = 0; i < rep->nrows; i++)
		if (rep->rows[i].json && strcmp(rep->rows[i].json, json) == 0)
			return (int)i;
	return -1;
}

/* With --log-level debug, each move of 5% or more in what node 0 has
 * learnt of inst's speed (its report's slowness and decode_slowness),
 * with the requests ended there so far: how many it takes to learn a
 * server (BENCHMARKS.md, "Learning a server's speed"). */
static void ag_log_learning(struct ag *p, const struct dbk_sim *s, unsigned inst)
{
	const struct dbk_policy_report *rep = p->ops->report;
	double v[DBK_POLICY_MAX_ROWS];

	p->ended[inst]++;
	if (dbk_log_get_level() > DBK_LOG_DEBUG || !rep)
		return;
	int a = ag_row(rep, "slowness"), b = ag_row(rep, "decode_slowness");
	if (a < 0)
		return;
	rep->view(p->node[0], inst, ag_ms(s), v);
	double pa = v[a], pb = b >= 0 ? v[b] : 1;
	double *last = &p->shown[2 * (size_t)inst];
	if (last[0] > 0 && fabs(pa / last[0] - 1) < 0.05 && fabs(pb / last[1] - 1) < 0.05)
		return;
	last[0] = pa;
	last[1] = pb;
	dbk_log(DBK_LOG_DEBUG, "learn",
	        "policy=%s instance=%u ended=%llu t=%.1f slowness=%.3f "
	        "decode_slowness=%.3f",
	        p->ops->name, inst, (unsigned long long)p->ended[inst], dbk_sim_now(s), pa, pb);
}

static void ag_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                       unsigned inst)
{
	struct ag *p = st;

	if (r->id >= p->cap)
		return;
	unsigned j = p->reqs[r->id].node;

	p->reqs[r->id].lease.unserved = ag_unserved(s, r->id);
	if (p->ops->release)
		p->ops->release(p->node[j], &p->reqs[r->id].lease, ag_ms(s));
	/* Out of memory: the others keep it in their books (no way to fail
	 * a release). */
	if (p->share)
		(void)ag_tell_others(p, r->id, j, true, ag_ms(s));
	if (inst < p->n)
		ag_log_learning(p, s, inst);
	if (dbk_sim_eject_observe(&p->ej[j], s, r, inst) && p->ops->usable)
		p->ops->usable(p->node[j], inst, false);
}

/* Every node reads every instance's scrape: the shared state. */
static void ag_tick(void *st, const struct dbk_sim *s)
{
	struct ag *p = st;
	uint64_t now = ag_ms(s);

	ag_learn(p, s);
	if (p->share)
		ag_deliver(p, s, now);
	if (!p->ops->scraped)
		return;
	for (unsigned i = 0; i < p->n; i++) {
		const struct dbk_sim_scrape *x = dbk_sim_scraped(s, i);
		struct dbk_pred_scrape sc = {
			.ok = true,
			/* Taken then, read now (--scrape-flight-ms). */
			.sent_ms = x->at_s >= 0 ? ag_ms_of(x->at_s) : 0,
			.running = x->running,
			.waiting = x->waiting,
			.kv_usage = x->kv_usage,
			.kv_capacity_tokens = p->kv_cap[i],
			.prefix_queries = -1,
			.prefix_hits = -1,
			.ttft_sum_s = x->ttft_sum_s,
			.ttft_count = (double)x->ttft_count,
			.itl_sum_s = x->itl_sum_s,
			.itl_count = (double)x->itl_count,
			.step_tokens = x->step_tokens,
			.steps = x->steps,
		};
		ag_scrape_lora(s, i, &sc);
		for (unsigned j = 0; j < p->k; j++)
			p->ops->scraped(p->node[j], i, &sc, now);
	}
}

/* HAProxy's state of the server, passed to every node as the agent's
 * runtime sync passes it (the usable hook). A fresh instance's learnt
 * state (speed, prefix index) is not reset: the agent's policies have
 * no hook for it yet. */
static void ag_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	struct ag *p = st;

	/* A new instance in the slot: the agent forgets the old one's (its
	 * runtime sync sees a new address) and learns the new one afresh. */
	for (unsigned j = 0; fresh && j < p->k; j++) {
		dbk_outlier_reset(&p->ej[j], i);
		if (p->ops->reset)
			p->ops->reset(p->node[j], i);
	}
	if (fresh && p->learnt)
		ag_tell(p, s, i);
	p->member[i] = usable;
	for (unsigned j = 0; j < p->k && p->ops->usable; j++)
		p->ops->usable(p->node[j], i, usable && !dbk_outlier_ejected(&p->ej[j], i));
}

/* One simulator policy per agent policy that chooses, made on first use
 * from the agent's table, in its order. */
static struct dbk_sim_policy_ops ops_of[16];
static size_t nops = SIZE_MAX;

const struct dbk_sim_policy_ops *dbk_sim_policy_agent(size_t i)
{
	const struct dbk_policy_ops *a;

	if (nops == SIZE_MAX) {
		nops = 0;
		for (size_t k = 0; (a = dbk_policy_at(k)) != NULL; k++) {
			if (!a->choose || nops == sizeof(ops_of) / sizeof(ops_of[0]))
				continue;
			ops_of[nops++] = (struct dbk_sim_policy_ops){
				.name = a->name,
				.arg = a,
				.size = sizeof(struct ag),
				.init = ag_init,
				.fini = ag_fini,
				.choose = ag_choose,
				.release = ag_release,
				.scrape = a->scraped != NULL,
				.tick = ag_tick,
				.tick_s = 0.100,
				.member = ag_member,
				.admits = true,
			};
		}
	}
	return i < nops ? &ops_of[i] : NULL;
}
