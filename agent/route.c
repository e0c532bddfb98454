#include "route.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "estimate.h"
#include "prefix_key.h"
#include "session_hint.h"

/* The score as the txn variable spells it: "%.10g", without printf's cost
 * for the usual case, a whole number of quarters (bytes / 4). */
static void format_score(double v, char *buf, size_t size)
{
	double q = v * 4.0;

	/* Below 1e8 a whole part and a quarter fit in %.10g's ten digits. */
	if (v >= 0 && v < 1e8 && q == (double)(uint64_t)q) {
		uint64_t quarters = (uint64_t)q, whole = quarters / 4;
		static const char *const frac[] = { "", ".25", ".5", ".75" };
		char digits[24];
		size_t n = 0;

		do {
			digits[n++] = (char)('0' + whole % 10);
			whole /= 10;
		} while (whole);
		size_t o = 0;
		while (n && o + 1 < size)
			buf[o++] = digits[--n];
		for (const char *f = frac[quarters % 4]; *f && o + 1 < size; f++)
			buf[o++] = *f;
		buf[o] = '\0';
		return;
	}
	snprintf(buf, size, "%.10g", v);
}

static void set_error(struct dbk_spop_writer *w, const char *why)
{
	struct dbk_spop_data v = dbk_spop_str(why);

	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_ERROR, &v);
}

static bool wants_details(const struct dbk_spop_data *d)
{
	int64_t v;

	if (!d)
		return false;
	if (d->type == DBK_SPOP_T_STR)
		return d->u.buf.len == 1 && d->u.buf.ptr[0] == '1';
	return dbk_spop_data_to_i64(d, &v) && v != 0;
}

static bool admitting(const struct dbk_route *r) { return r->admit && r->admit->enabled; }

static bool any_usable(const struct dbk_route *r, const uint64_t *eligible)
{
	for (unsigned i = 0; i < r->nnames; i++)
		if (dbk_bal_eligible(eligible, i) && dbk_bal_usable(r->bal, i))
			return true;
	return false;
}

/* The request's candidates by its model: NULL (every server), or
 * r->eligible; *action set when no server may take it; *model (*len
 * bytes) the model it names, NULL when none was read; *adapter that
 * model's key when it is a LoRA adapter (else 0). */
static const uint64_t *candidates(struct dbk_route *r, const uint8_t *sample, size_t sample_len,
                                  const char **action, const uint8_t **model, size_t *len,
                                  uint64_t *adapter)
{
	*action = NULL;
	*model = NULL;
	*len = 0;
	*adapter = 0;
	if (!r->models || !dbk_pkey_model(sample, sample_len, model, len))
		return NULL;
	if (dbk_models_adapter(r->models, *model, *len))
		*adapter = dbk_vm_adapter_key(*model, *len);
	switch (dbk_models_pick(r->models, *model, *len, r->eligible)) {
	case DBK_MODELS_ANY:
		/* Every server serves it (one backend per model, or a fleet
		 * of one model): none usable is still the model's 503, not
		 * HAProxy's own. Before any list is read the model is not
		 * known to be served at all: left to HAProxy. */
		if (!any_usable(r, NULL) && dbk_models_some_known(r->models)) {
			r->stats.model_unavailable++;
			*action = DBK_ACTION_MODEL_UNAVAILABLE;
		}
		return NULL;
	case DBK_MODELS_NONE:
		r->stats.unknown_model++;
		*action = DBK_ACTION_UNKNOWN_MODEL;
		return NULL;
	case DBK_MODELS_SOME: break;
	}
	if (!any_usable(r, r->eligible)) {
		r->stats.model_unavailable++;
		*action = DBK_ACTION_MODEL_UNAVAILABLE;
		return NULL;
	}
	r->stats.model_filtered++;
	return r->eligible;
}

/* Asks admission about in (its class and, from the policy, its
 * prediction); true when the request is to be shed (ar says for how
 * long). Without a prediction the fleet's saturation stands in for it,
 * read only when it can matter (admission on, a class it may shed). */
static bool admit(struct dbk_route *r, struct dbk_admit_input *in, uint64_t now_ms,
                  struct dbk_admit_result *ar)
{
	/* A critical request's prediction is admission's evidence that
	 * critical is at risk; without one there is nothing to learn. */
	if (!admitting(r) || (in->cls == DBK_CLASS_CRITICAL && !in->predicted))
		return false;
	if (!in->predicted && r->sat) {
		in->saturated = dbk_sat_fleet(r->sat, r->bal, now_ms);
		in->fleet_ttft_ms = dbk_sat_fleet_ttft_ms(r->sat, now_ms);
	}
	in->now_ms = now_ms;
	*ar = dbk_admit(r->admit, &r->admit_state, in);
	return ar->verdict == DBK_ADMIT_SHED;
}

/* The arguments of a route message that matter here. */
struct route_args {
	const struct dbk_spop_data *id, *blen, *arrived, *clen, *body, *details, *session, *cls;
	const struct dbk_spop_data *hint[2]; /* session_hint.h: server, tokens */
};

/* One walk over the arguments (the first of a name wins, as with
 * dbk_spop_msg_arg): the names are constants here, so each test is a
 * length check and a short compare. */
static void read_args(const struct dbk_spop_message *m, struct route_args *a)
{
	memset(a, 0, sizeof(*a));
	for (unsigned i = 0; i < m->nargs; i++) {
		const struct dbk_spop_arg *arg = &m->args[i];
		const struct dbk_spop_data **slot = NULL;

		if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_ID))
			slot = &a->id;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_BLEN))
			slot = &a->blen;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_ARRIVED))
			slot = &a->arrived;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_CLEN))
			slot = &a->clen;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_BODY))
			slot = &a->body;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_DETAILS))
			slot = &a->details;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_SESSION))
			slot = &a->session;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_CLASS))
			slot = &a->cls;
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_SESSION_SERVER))
			slot = &a->hint[0];
		else if (dbk_spop_name_is(arg->name, arg->name_len, DBK_ARG_SESSION_TOKENS))
			slot = &a->hint[1];
		if (slot && !*slot)
			*slot = &arg->value;
	}
}

static bool chooses(const struct dbk_route *r) { return r->policy && r->policy->ops->choose; }

/* A route message's request as the decision reads it, gathered once
 * (read_args, then estimate) and passed whole. */
struct route_req {
	struct route_args a;
	const char *id; /* a.id's bytes */
	size_t id_len;
	int64_t body_size; /* HAProxy's req.body_size; -1 when not told */
	uint64_t missing;  /* body_missing() */
	bool unsized;      /* body_size is only a floor (DBK_ARG_CLEN) */
	const uint8_t *sample;
	size_t sample_len;
	const uint64_t *eligible; /* candidates(): NULL is every server */
	uint64_t adapter;
	uint64_t now_ms;
	struct dbk_bal_request est;
};

/* The bytes of the body still missing when HAProxy asked (body_size
 * less arrived; 0 when whole or not told): the request may be held back
 * (hold_back). */
static uint64_t body_missing(const struct route_args *a, int64_t body_size)
{
	int64_t got;

	if (!a->arrived || body_size < 0 || !dbk_spop_data_to_i64(a->arrived, &got) || got < 0 ||
	    got >= body_size)
		return 0;
	return (uint64_t)(body_size - got);
}

/* Whether HAProxy says the request came without a Content-Length
 * (DBK_ARG_CLEN is 0; absent, the length is trusted as before). */
static bool no_length(const struct route_args *a)
{
	int64_t n;

	return a->clen && dbk_spop_data_to_i64(a->clen, &n) && n == 0;
}

/* What the balancer needs of a request: its size (HAProxy's req.body_size,
 * else the sample's) and, unless dynamic mode ignores them, the JSON
 * fields of the body sample.
 *
 * Without a Content-Length, the size is only a floor unless the sample
 * is the whole JSON body (a whole document is the whole body, whatever
 * the framing): HAProxy cannot know a chunked body's length before its
 * end, and req.body_size is what it holds plus the rest of the chunk it
 * is reading (an 80 KB prompt gave 16,392 in 4 KB chunks). A policy that
 * chooses then keeps to the longest contexts (policy_ops.h); the length
 * buckets take it for the longest bucket's, since a long prompt in a
 * short group stalls every short request there, while a short one in
 * the long group only waits its turn. */
static void estimate(struct dbk_route *r, struct route_req *q)
{
	const struct route_args *a = &q->a;
	const struct dbk_bal_config *c = dbk_bal_config(r->bal);
	bool no_len = no_length(a);

	q->body_size = -1;
	if (a->blen && !dbk_spop_data_to_i64(a->blen, &q->body_size))
		q->body_size = -1;
	q->missing = body_missing(a, q->body_size);
	q->unsized = false;
	q->sample = NULL;
	q->sample_len = 0;
	if (a->body && (a->body->type == DBK_SPOP_T_BIN || a->body->type == DBK_SPOP_T_STR)) {
		q->sample = a->body->u.buf.ptr;
		q->sample_len = a->body->u.buf.len;
	}
	if (c->dynamic && !chooses(r) && !no_len) {
		/* Dynamic mode scores by length alone: the JSON fields would
		 * change nothing, and parsing them is most of a decision's
		 * cost (measured: 40% at 100 B, 93% at 6 KB). Without a
		 * length, the parse says whether the sample is all of it. */
		q->est.body_bytes = q->body_size >= 0 ? (double)q->body_size
		                                      : (double)q->sample_len;
		q->est.max_tokens = DBK_DEFAULT_MAX_TOKENS;
		q->est.ignore_eos = false;
		return;
	}
	enum dbk_estimate_source src = dbk_estimate(q->body_size, q->sample, q->sample_len,
	                                            &q->est);
	switch (src) {
	case DBK_EST_TRUNCATED: r->stats.truncated_bodies++; break;
	case DBK_EST_MALFORMED: r->stats.malformed_bodies++; break;
	default: break;
	}
	q->unsized = no_len && src != DBK_EST_JSON &&
	             !(src == DBK_EST_NO_BODY && q->body_size <= 0);
	if (!q->unsized)
		return;
	r->stats.unsized_bodies++;
	if (!chooses(r))
		q->est.body_bytes = fmax(q->est.body_bytes,
		                         DBK_BAL_BYTES_PER_TOKEN * c->bounds[c->nbuckets - 1]);
}

/* A request whose body was not whole when HAProxy asked, missing bytes
 * of it: where its server's scrapes can show when it has the request,
 * watched (estimate_hold.h), with the score of an empty body (vLLM does
 * nothing with a body until it is whole) as its charge without prefill.
 * Strict, it is charged that at once and the prefill follows on the
 * evidence (dbk_route_whole); else it keeps its full charge unless the
 * evidence says it has not arrived. The decision itself is the one the
 * whole length gives. True when watched. */
static bool hold_back(struct dbk_route *r, const struct route_req *q,
                      const struct dbk_bal_decision *d)
{
	if (!r->hold || !dbk_hold_watching(r->hold, d->server))
		return false;
	struct dbk_bal_request part = q->est;
	struct dbk_bal_decision pd;

	part.body_bytes = 0;
	dbk_bal_decide(r->bal, &part, &pd);
	return dbk_hold_add(r->hold, r->bal, q->id, q->id_len, d->score, pd.score, q->missing,
	                    q->now_ms);
}

/* A policy that chooses: the balancer takes the lease where it chose
 * (so releases, TTL, reclaim and moves work as for the reference), and
 * the policy's data about it rides in the lease's slot until the lease
 * ends (the policy's release reads it back). */
static enum dbk_bal_result decide_policy(struct dbk_route *r, const struct route_req *q,
                                         struct dbk_bal_decision *d, struct dbk_policy_choice *c,
                                         struct dbk_admit_input *in, struct dbk_admit_result *ar)
{
	const struct dbk_policy *p = r->policy;
	const struct dbk_spop_data *session = q->a.session;
	struct dbk_policy_request pr = {
		.est = &q->est,
		.sample = q->sample,
		.sample_len = q->sample_len,
		.cut = q->unsized || (q->body_size >= 0 && (uint64_t)q->body_size > q->sample_len),
		.unsized = q->unsized,
		.eligible = q->eligible,
		.adapter = q->adapter,
	};
	uint32_t slot[DBK_BAL_SLOT_WORDS];

	if (session && (session->type == DBK_SPOP_T_STR || session->type == DBK_SPOP_T_BIN) &&
	    session->u.buf.len) {
		pr.has_session = true;
		pr.session = dbk_pkey_session((const char *)session->u.buf.ptr, session->u.buf.len);
	}
	dbk_shint_apply(p, r->names, r->nnames, q->a.hint[0], q->a.hint[1], &pr);
	p->ops->choose(p->st, &pr, q->now_ms, c);
	/* Admission comes between the choice and the lease: a request
	 * refused takes none (the policy's commit is skipped as when the
	 * balancer refuses). */
	in->predicted = c->predicted;
	in->ttft_ms = c->ttft_s * 1e3;
	in->own_ms = c->own_s * 1e3;
	in->tpot_ms = c->tpot_s * 1e3;
	in->tpot_seen_ms = c->tpot_seen_s * 1e3;
	in->kv_wait_ms = c->kv_wait_s * 1e3;
	in->no_server = c->server < 0;
	if (admit(r, in, q->now_ms, ar))
		return DBK_BAL_OK;
	enum dbk_bal_result res = dbk_bal_dispatch_to(r->bal, q->id, q->id_len, &q->est,
	                                              c->server < 0 ? UINT_MAX
	                                                            : (unsigned)c->server,
	                                              q->now_ms, d);
	if (res != DBK_BAL_OK)
		return res;
	bool strict = r->hold && r->hold->strict;

	/* Held back (strict), the policy records where it went and charges
	 * it when its server has it (dbk_route_whole). Taken back later, its
	 * books follow (dbk_route_taken). */
	if (q->missing && strict && p->ops->hold && hold_back(r, q, d)) {
		p->ops->hold(p->st, c, q->now_ms, slot);
	} else {
		p->ops->commit(p->st, c, q->now_ms, slot);
		if (q->missing && !strict)
			hold_back(r, q, d);
	}
	dbk_bal_set_slot(r->bal, q->id, q->id_len, slot);
	if (c->too_long)
		r->stats.too_long++;
	return res;
}

/* The ACK of a routed request: the server, and the decision's details
 * when the message asks for them (with the policy's prediction, if pc
 * has one). */
static void answer(const struct dbk_route *r, const struct dbk_bal_decision *d,
                   const struct dbk_policy_choice *pc, bool explain, struct dbk_spop_writer *w)
{
	struct dbk_spop_data v = dbk_spop_str(r->names[d->server]);
	char score[32];

	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_SERVER, &v);
	if (!explain)
		return;
	format_score(d->score, score, sizeof(score));
	v = dbk_spop_int(d->std_bucket);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_BUCKET, &v);
	v = dbk_spop_int(d->group);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_GROUP, &v);
	v = dbk_spop_bool(d->redirected);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_REDIRECTED, &v);
	v = dbk_spop_str(score);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_SCORE, &v);
	if (!pc || !pc->predicted)
		return;
	v = dbk_spop_int(llround(fmin(fmax(pc->ttft_s * 1e3, 0), 1e12)));
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_TTFT_MS, &v);
	v = dbk_spop_int(llround(fmin(fmax(pc->hit_tokens, 0), 1e12)));
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_HIT_TOKENS, &v);
}

/* The class argument: absent or empty is the default without a word; a
 * value not known (or not a string) is the default too, and counted. */
static enum dbk_class read_class(struct dbk_route *r, const struct dbk_spop_data *v)
{
	enum dbk_class cls = DBK_CLASS_DEFAULT;

	if (!v || v->type == DBK_SPOP_T_NULL)
		return cls;
	if ((v->type != DBK_SPOP_T_STR && v->type != DBK_SPOP_T_BIN) ||
	    (v->u.buf.len && !dbk_class_parse((const char *)v->u.buf.ptr, v->u.buf.len, &cls)))
		r->stats.bad_class++;
	return cls;
}

/* The ACK of a refused request: no server, HAProxy answers 429. */
static void answer_shed(struct dbk_route *r, const struct dbk_admit_input *in,
                        const struct dbk_admit_result *ar, struct dbk_spop_writer *w)
{
	struct dbk_spop_data v = dbk_spop_str(DBK_ACTION_SHED);

	r->stats.shed[in->cls][ar->why]++;
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_ACTION, &v);
	v = dbk_spop_int(ar->retry_after_s);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_RETRY_AFTER, &v);
}

static void route_one(struct dbk_route *r, const struct dbk_spop_message *m, uint64_t now_ms,
                      struct dbk_spop_writer *w)
{
	struct route_req q = { .now_ms = now_ms };
	const struct route_args *a = &q.a;
	struct dbk_bal_decision d;
	struct dbk_policy_choice pc = { .server = -1 };

	read_args(m, &q.a);
	if (!a->id || (a->id->type != DBK_SPOP_T_STR && a->id->type != DBK_SPOP_T_BIN) ||
	    a->id->u.buf.len == 0) {
		r->stats.no_id++;
		set_error(w, "no-id");
		return;
	}
	q.id = (const char *)a->id->u.buf.ptr;
	q.id_len = a->id->u.buf.len;
	estimate(r, &q);
	struct dbk_admit_input in = { .cls = read_class(r, a->cls) };
	struct dbk_admit_result ar = { DBK_ADMIT_ROUTE, 0, DBK_SHED_PREDICTED_LATE };
	enum dbk_bal_result res = DBK_BAL_OK;
	bool shed;
	const char *action;
	const uint8_t *model;
	size_t model_len;

	q.eligible = candidates(r, q.sample, q.sample_len, &action, &model, &model_len, &q.adapter);
	if (action) {
		/* Before admission and any lease: HAProxy answers alone. */
		struct dbk_spop_data v = dbk_spop_str(action);
		dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_ACTION, &v);
		return;
	}
	if (chooses(r)) {
		res = decide_policy(r, &q, &d, &pc, &in, &ar);
		shed = ar.verdict == DBK_ADMIT_SHED;
	} else {
		/* The reference predicts nothing: only saturation may shed. */
		in.no_server = admitting(r) && !any_usable(r, q.eligible);
		shed = admit(r, &in, now_ms, &ar);
		if (!shed)
			res = dbk_bal_dispatch_among(r->bal, q.id, q.id_len, &q.est, q.eligible,
			                             now_ms, &d);
		if (!shed && res == DBK_BAL_OK && q.missing)
			hold_back(r, &q, &d);
	}
	if (r->on_decision) {
		struct dbk_route_event e = {
			.id = a->id->u.buf.ptr,
			.id_len = q.id_len,
			.res = res,
			.req = &q.est,
			.d = res == DBK_BAL_OK && !shed ? &d : NULL,
			.now_ms = now_ms,
			.cls = in.cls,
			.shed = shed,
			.admit = &ar,
			.route = r,
			.model = model,
			.model_len = model_len,
		};
		r->on_decision(r->decision_arg, &e);
	}
	if (shed) {
		answer_shed(r, &in, &ar, w);
		return;
	}
	if (res != DBK_BAL_OK) {
		/* A client that left before we decided is normal, not refused. */
		if (res != DBK_BAL_ENDED)
			r->stats.refused++;
		set_error(w, dbk_bal_result_str(res));
		return;
	}
	r->stats.routed++;
	r->stats.admitted[in.cls]++;
	r->stats.by_bucket_group[d.std_bucket][d.group]++;
	if (r->by_server)
		r->by_server[d.server]++;
	answer(r, &d, &pc, wants_details(a->details), w);
}

/* HAProxy served a routed request elsewhere than the agent chose (a
 * retry with redispatch, or use-server skipped a server that just went
 * down): the lease follows, so the load sits where the request runs. */
static void move_one(struct dbk_route *r, const struct dbk_spop_message *m,
                     struct dbk_spop_writer *w)
{
	const struct dbk_spop_data *id = dbk_spop_msg_arg(m, DBK_ARG_ID);
	const struct dbk_spop_data *srv = dbk_spop_msg_arg(m, DBK_ARG_SERVER);
	struct dbk_spop_data v;
	unsigned to = r->nnames;

	if (id && srv && (id->type == DBK_SPOP_T_STR || id->type == DBK_SPOP_T_BIN) &&
	    srv->type == DBK_SPOP_T_STR) {
		for (to = 0; to < r->nnames; to++)
			if (r->names[to][0] && srv->u.buf.len == strlen(r->names[to]) &&
			    memcmp(srv->u.buf.ptr, r->names[to], srv->u.buf.len) == 0)
				break;
	}
	bool ok = to < r->nnames && dbk_bal_move(r->bal, (const char *)id->u.buf.ptr, id->u.buf.len,
	                                         to, NULL) == DBK_BAL_OK;
	if (ok)
		r->stats.moved++;
	v = dbk_spop_bool(ok);
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_MOVED, &v);
}

static void act_one(struct dbk_route *r, const struct dbk_spop_message *m, uint64_t now_ms,
                    struct dbk_spop_writer *w)
{
	const char *backend = NULL;

	if (r->pick && !(r = r->pick(r->pick_arg, m, &backend))) {
		set_error(w, "unknown-backend");
		return;
	}
	if (dbk_spop_name_is(m->name, m->name_len, DBK_MSG_ROUTE)) {
		route_one(r, m, now_ms, w);
		if (backend) {
			struct dbk_spop_data v = dbk_spop_str(backend);
			dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, DBK_VAR_BACKEND, &v);
		}
	} else if (dbk_spop_name_is(m->name, m->name_len, DBK_MSG_MOVED))
		move_one(r, m, w);
	else
		r->stats.unknown_messages++;
}

enum dbk_spop_status dbk_route_notify(struct dbk_route *r, const struct dbk_spop_frame *f,
                                      uint64_t now_ms, struct dbk_spop_writer *w)
{
	struct dbk_spop_msg_iter it;
	struct dbk_spop_message m;
	enum dbk_spop_status st;
	bool done;

	r->stats.notifies++;
	/* Validate the whole payload before acting on any message, so that a
	 * malformed frame, or one whose answer could not fit in a frame,
	 * never leaves a lease behind. HAProxy sends one message per NOTIFY
	 * here (one per group): that one is decoded once and acted on; only
	 * frames of several messages are walked twice. */
	size_t nmsg = 0;
	dbk_spop_msg_iter_init(&it, f);
	st = dbk_spop_msg_next(&it, &m, &done);
	if (st != DBK_SPOP_OK)
		return st;
	if (!done) {
		struct dbk_spop_message more;

		nmsg = 1;
		for (;;) {
			st = dbk_spop_msg_next(&it, &more, &done);
			if (st != DBK_SPOP_OK)
				return st;
			if (done)
				break;
			nmsg++;
		}
	}
	if (DBK_ROUTE_ACK_MAX(nmsg) + (r->pick ? DBK_ROUTE_ACK_POOL(nmsg) : 0) > w->cap)
		return DBK_SPOP_ERR_RES;

	size_t empty = w->len;

	if (nmsg == 1) {
		act_one(r, &m, now_ms, w);
	} else if (nmsg > 1) {
		dbk_spop_msg_iter_init(&it, f);
		while (dbk_spop_msg_next(&it, &m, &done) == DBK_SPOP_OK && !done)
			act_one(r, &m, now_ms, w);
	}
	/* An empty ACK stalled some HAProxy 3.1 releases: always say why. */
	if (w->len == empty)
		set_error(w, "unknown-message");
	return w->overflow ? DBK_SPOP_ERR_RES : DBK_SPOP_OK;
}

void dbk_route_whole(struct dbk_route *r, const char *id, size_t id_len, uint64_t now_ms)
{
	const struct dbk_policy *p = r->policy;
	struct dbk_bal_lease l;
	uint32_t slot[DBK_BAL_SLOT_WORDS];

	if (chooses(r) && p->ops->complete && dbk_bal_lease_get(r->bal, id, id_len, &l) &&
	    p->ops->complete(p->st, &l, now_ms, slot))
		dbk_bal_set_slot(r->bal, id, id_len, slot);
}

void dbk_route_taken(struct dbk_route *r, const char *id, size_t id_len)
{
	const struct dbk_policy *p = r->policy;
	struct dbk_bal_lease l;
	uint32_t slot[DBK_BAL_SLOT_WORDS];

	if (!chooses(r) || !p->ops->hold || !p->ops->complete || !p->ops->release ||
	    !dbk_bal_lease_get(r->bal, id, id_len, &l) || (l.slot[0] & DBK_POLICY_HELD))
		return;
	/* Its server has not got it: nothing served, its prefill off the
	 * queue (booked again, it would wait behind itself). */
	l.unserved = true;
	p->ops->release(p->st, &l, l.start_ms);
	memcpy(slot, l.slot, sizeof(slot));
	slot[0] |= DBK_POLICY_HELD;
	dbk_bal_set_slot(r->bal, id, id_len, slot);
}
