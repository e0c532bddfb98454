#include "books_share.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/log.h"
#include "lib/numparse.h"

/* This node's books of a server: what its rows say. */
struct mine {
	uint32_t inflight, started;
	uint64_t prompt, ctx, kv;
	/* As last written, and when; pending: in the command not yet
	 * confirmed. */
	uint32_t w_inflight, w_started;
	uint64_t w_prompt, w_ctx, w_kv;
	uint64_t written_ms;
	bool ever_written, pending;
};

/* Another node's row of a server and the requests it stands for in the
 * policy's books, oldest first. */
struct theirs {
	bool present, seen_now;
	uint32_t started;
	struct dbk_bal_lease *l;
	size_t n, cap;
};

struct node {
	char name[DBK_SHARE_MAX_NODE + 1];
	struct theirs *srv; /* by server */
};

struct dbk_share {
	struct dbk_policy inner;
	struct dbk_policy_ops ops;
	struct dbk_policy_report report;
	unsigned n;
	char node[DBK_SHARE_MAX_NODE + 1];
	size_t node_len;
	struct mine *mine;
	struct node nodes[DBK_SHARE_MAX_NODES];
	unsigned nnodes;
	bool no_kv; /* the table does not store bytes_in_cnt */
	struct dbk_share_stats st;
};

bool dbk_share_node_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > DBK_SHARE_MAX_NODE)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* ---- the policy, wrapped ---- */

static void *inner_st(void *st) { return ((struct dbk_share *)st)->inner.st; }
static const struct dbk_policy_ops *inner_ops(const void *st)
{
	return ((const struct dbk_share *)st)->inner.ops;
}

static void mine_add(struct dbk_share *s, unsigned server, const uint32_t *slot, int sign)
{
	struct mine *m;

	if (server >= s->n)
		return;
	m = &s->mine[server];
	if (sign > 0) {
		m->inflight++;
		m->prompt += slot[0];
		m->kv += slot[1];
		m->ctx += slot[2];
		return;
	}
	/* Never below zero: a lease that began before the wrap (none today)
	 * would otherwise wrap the sums round. */
	m->inflight -= m->inflight > 0;
	m->prompt -= m->prompt < slot[0] ? m->prompt : slot[0];
	m->kv -= m->kv < slot[1] ? m->kv : slot[1];
	m->ctx -= m->ctx < slot[2] ? m->ctx : slot[2];
}

static int wrap_choose(void *st, const struct dbk_policy_request *r, uint64_t now_ms,
                       struct dbk_policy_choice *c)
{
	return inner_ops(st)->choose(inner_st(st), r, now_ms, c);
}

static void wrap_commit(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                        uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_share *s = st;

	inner_ops(st)->commit(inner_st(st), c, now_ms, slot);
	if (c->server >= 0 && (unsigned)c->server < s->n) {
		mine_add(s, (unsigned)c->server, slot, 1);
		s->mine[c->server].started++;
	}
}

static void wrap_seen(void *st, const struct dbk_policy_request *r, unsigned server, bool prefix,
                      uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	inner_ops(st)->seen(inner_st(st), r, server, prefix, now_ms, slot);
}

static void wrap_hint(void *st, const struct dbk_policy_request *r, unsigned server,
                      uint32_t tokens)
{
	inner_ops(st)->hint(inner_st(st), r, server, tokens);
}

/* A request whose body is still on its way is not load yet, for the
 * others either: it is shared once complete charges it. */
static void wrap_hold(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                      uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	inner_ops(st)->hold(inner_st(st), c, now_ms, slot);
}

static bool wrap_complete(void *st, const struct dbk_bal_lease *l, uint64_t now_ms,
                          uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_share *s = st;

	if (!inner_ops(st)->complete(inner_st(st), l, now_ms, slot))
		return false;
	if (l->server < s->n) {
		mine_add(s, l->server, slot, 1);
		s->mine[l->server].started++;
	}
	return true;
}

/* Every lease the balancer ends is this node's: the others' are ended
 * here, straight to the policy (end_theirs). A lease still held was
 * never counted. */
static void wrap_release(void *st, const struct dbk_bal_lease *l, uint64_t now_ms)
{
	inner_ops(st)->release(inner_st(st), l, now_ms);
	if (!(l->slot[0] & DBK_POLICY_HELD))
		mine_add(st, l->server, l->slot, -1);
}

static void wrap_move(void *st, const struct dbk_bal_lease *before, unsigned server,
                      uint64_t now_ms)
{
	inner_ops(st)->move(inner_st(st), before, server, now_ms);
	if (before->slot[0] & DBK_POLICY_HELD)
		return;
	mine_add(st, before->server, before->slot, -1);
	mine_add(st, server, before->slot, 1);
}

static void wrap_usable(void *st, unsigned server, bool usable)
{
	inner_ops(st)->usable(inner_st(st), server, usable);
}

static void wrap_reset(void *st, unsigned server) { inner_ops(st)->reset(inner_st(st), server); }

static void wrap_weight(void *st, unsigned server, double weight)
{
	inner_ops(st)->weight(inner_st(st), server, weight);
}

static void wrap_scraped(void *st, unsigned server, const struct dbk_pred_scrape *sc,
                         uint64_t now_ms)
{
	inner_ops(st)->scraped(inner_st(st), server, sc, now_ms);
}

static void wrap_max_model_len(void *st, unsigned server, uint32_t len)
{
	inner_ops(st)->max_model_len(inner_st(st), server, len);
}

static void wrap_view(const void *st, unsigned server, uint64_t now_ms, double *v)
{
	inner_ops(st)->report->view(((const struct dbk_share *)st)->inner.st, server, now_ms, v);
}

static void wrap_destroy(void *st)
{
	struct dbk_share *s = st;

	if (!s)
		return;
	dbk_policy_stop(&s->inner);
	for (unsigned k = 0; k < s->nnodes; k++) {
		for (unsigned i = 0; i < s->n; i++)
			free(s->nodes[k].srv[i].l);
		free(s->nodes[k].srv);
	}
	free(s->mine);
	free(s);
}

/* The wrapper's ops: the inner policy's, each hook it has forwarded. */
static void wrap_ops(struct dbk_share *s)
{
	const struct dbk_policy_ops *in = s->inner.ops;

	s->ops = *in;
	s->ops.create = NULL;
	s->ops.destroy = wrap_destroy;
	s->ops.choose = in->choose ? wrap_choose : NULL;
	s->ops.commit = in->commit ? wrap_commit : NULL;
	s->ops.hold = in->hold && in->complete ? wrap_hold : NULL;
	s->ops.complete = in->hold && in->complete ? wrap_complete : NULL;
	s->ops.seen = in->seen ? wrap_seen : NULL;
	s->ops.hint = in->hint ? wrap_hint : NULL;
	s->ops.release = in->release ? wrap_release : NULL;
	s->ops.move = in->move ? wrap_move : NULL;
	s->ops.usable = in->usable ? wrap_usable : NULL;
	s->ops.reset = in->reset ? wrap_reset : NULL;
	s->ops.weight = in->weight ? wrap_weight : NULL;
	s->ops.scraped = in->scraped ? wrap_scraped : NULL;
	s->ops.max_model_len = in->max_model_len ? wrap_max_model_len : NULL;
	if (in->report) {
		s->report = *in->report;
		s->report.view = wrap_view;
		s->ops.report = &s->report;
	}
}

struct dbk_share *dbk_share_wrap(struct dbk_policy *p, unsigned nservers, const char *node,
                                 char *err, size_t errlen)
{
	struct dbk_share *s;

	if (!p->ops || !(p->ops->seen || p->ops->complete) || !p->ops->commit || !p->ops->release) {
		dbk_errf(err, errlen, "policy %s cannot share its books (no seen or complete hook)",
		         p->ops ? p->ops->name : "?");
		return NULL;
	}
	if (!dbk_share_node_ok(node)) {
		dbk_errf(err, errlen, "node name \"%s\" is not 1 to %d of [A-Za-z0-9_.-]",
		         node ? node : "", DBK_SHARE_MAX_NODE);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->mine = calloc(nservers ? nservers : 1, sizeof(*s->mine)))) {
		free(s);
		dbk_errf(err, errlen, "out of memory");
		return NULL;
	}
	s->n = nservers;
	snprintf(s->node, sizeof(s->node), "%s", node);
	s->node_len = strlen(s->node);
	s->inner = *p;
	wrap_ops(s);
	p->ops = &s->ops;
	p->st = s;
	return s;
}

const struct dbk_share_stats *dbk_share_stats(const struct dbk_share *s) { return &s->st; }

/* ---- writing this node's rows ---- */

static bool mine_changed(const struct mine *m)
{
	return !m->ever_written || m->inflight != m->w_inflight || m->started != m->w_started ||
	       m->prompt != m->w_prompt || m->ctx != m->w_ctx || m->kv != m->w_kv;
}

static uint32_t u32_sat(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

size_t dbk_share_write_cmd(struct dbk_share *s, const char *table, const char *const *names,
                           uint64_t now_ms, uint64_t refresh_ms, char *out, size_t cap)
{
	size_t len = 0;

	if (cap)
		out[0] = '\0';
	for (unsigned i = 0; i < s->n; i++)
		s->mine[i].pending = false;
	/* Changed rows first, then those due for refresh, oldest first: a
	 * batch that does not fit leaves the rest to the next turn. */
	for (int pass = 0; pass < 2; pass++) {
		for (;;) {
			int best = -1;
			for (unsigned i = 0; i < s->n; i++) {
				struct mine *m = &s->mine[i];
				bool due = pass == 0 ? mine_changed(m)
				                     : now_ms - m->written_ms >= refresh_ms;
				if (m->pending || !names[i] || !names[i][0] || !due)
					continue;
				if (best < 0 || m->written_ms < s->mine[best].written_ms)
					best = (int)i;
			}
			if (best < 0)
				break;
			struct mine *m = &s->mine[best];
			int k = snprintf(out + len, cap - len,
			                 "%sset table %s key %s/%s data.gpt0 %u data.gpc0 %u "
			                 "data.gpc1 %u data.http_req_cnt %u",
			                 len ? ";" : "", table, s->node, names[best], m->inflight,
			                 u32_sat(m->prompt), u32_sat(m->ctx), m->started);
			/* Last: a table without it takes the four before it. */
			if (k >= 0 && (size_t)k < cap - len && !s->no_kv)
				k += snprintf(out + len + k, cap - len - (size_t)k,
				              " data.bytes_in_cnt %u", u32_sat(m->kv));
			m->pending = true;
			if (k < 0 || (size_t)k >= cap - len) {
				out[len] = '\0';
				m->pending = false;
				return len;
			}
			len += (size_t)k;
		}
	}
	return len;
}

void dbk_share_written(struct dbk_share *s, uint64_t now_ms)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct mine *m = &s->mine[i];
		if (!m->pending)
			continue;
		m->pending = false;
		m->ever_written = true;
		m->written_ms = now_ms;
		m->w_inflight = m->inflight;
		m->w_started = m->started;
		m->w_prompt = m->prompt;
		m->w_ctx = m->ctx;
		m->w_kv = m->kv;
	}
	s->st.writes++;
}

void dbk_share_no_kv(struct dbk_share *s) { s->no_kv = true; }

/* ---- the `show table` answer ---- */

static const char *find(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);

	for (; p + n <= end; p++)
		if (memcmp(p, what, n) == 0)
			return p;
	return NULL;
}

/* name=value fields of one row, after its key. */
static void row_fields(const char *p, const char *end, struct dbk_share_row *r)
{
	static const char *const names[] = { "gpt0", "gpc0", "gpc1", "http_req_cnt",
		                             "bytes_in_cnt" };
	unsigned have = 0;

	while (p < end) {
		while (p < end && *p == ' ')
			p++;
		const char *tok = p;
		while (p < end && *p != ' ')
			p++;
		const char *eq = memchr(tok, '=', (size_t)(p - tok));
		if (!eq)
			continue;
		for (unsigned k = 0; k < 5; k++) {
			size_t nl = strlen(names[k]);
			unsigned long long v;
			char num[24];
			size_t vl = (size_t)(p - eq - 1);
			if ((size_t)(eq - tok) != nl || memcmp(tok, names[k], nl) != 0)
				continue;
			if (vl >= sizeof(num))
				break;
			memcpy(num, eq + 1, vl);
			num[vl] = '\0';
			if (!dbk_parse_uint(num, 0, UINT32_MAX, &v))
				break;
			uint32_t *f[] = { &r->inflight, &r->prompt, &r->ctx, &r->started, &r->kv };
			*f[k] = (uint32_t)v;
			have |= 1u << k;
		}
	}
	r->has_all = (have & 15) == 15;
	r->has_kv = have & 16;
}

int dbk_share_parse(const char *buf, size_t len, dbk_share_row_cb cb, void *arg, char *err,
                    size_t errlen)
{
	const char *p = buf, *end = buf + len;
	int rows = 0;
	bool header = false;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		if (le - p >= 9 && memcmp(p, "# table: ", 9) == 0) {
			header = true;
		} else if (header && le - p > 2 && p[0] == '0' && p[1] == 'x') {
			const char *k = find(p, le, " key=");
			if (k) {
				struct dbk_share_row r = { .key = k + 5 };
				const char *ke = memchr(r.key, ' ', (size_t)(le - r.key));
				ke = ke ? ke : le;
				r.key_len = (size_t)(ke - r.key);
				row_fields(ke, le, &r);
				cb(arg, &r);
				rows++;
			}
		} else if (!header && le > p) {
			dbk_errf(err, errlen, "not a show table answer: \"%.*s\"",
			         (int)(le - p > 80 ? 80 : le - p), p);
			return -1;
		}
		p = eol ? eol + 1 : end;
	}
	if (!header) {
		dbk_errf(err, errlen, "empty answer to show table");
		return -1;
	}
	return rows;
}

/* ---- charging the others' rows ---- */

static struct node *node_of(struct dbk_share *s, const char *name, size_t len)
{
	for (unsigned k = 0; k < s->nnodes; k++)
		if (strlen(s->nodes[k].name) == len && memcmp(s->nodes[k].name, name, len) == 0)
			return &s->nodes[k];
	if (s->nnodes == DBK_SHARE_MAX_NODES || len > DBK_SHARE_MAX_NODE)
		return NULL;
	struct node *n = &s->nodes[s->nnodes];
	if (!(n->srv = calloc(s->n ? s->n : 1, sizeof(*n->srv))))
		return NULL;
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	s->nnodes++;
	return n;
}

static void end_theirs(struct dbk_share *s, struct theirs *t, size_t k, uint64_t now_ms)
{
	const struct dbk_policy_ops *o = s->inner.ops;

	k = k < t->n ? k : t->n;
	if (k == 0)
		return; /* t->l may be NULL: no pointer arithmetic on it */
	for (size_t i = 0; i < k; i++)
		o->release(s->inner.st, &t->l[i], now_ms);
	memmove(t->l, t->l + k, (t->n - k) * sizeof(*t->l));
	t->n -= k;
	s->st.released += k;
}

static uint64_t prompt_sum(const struct theirs *t)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->n; i++)
		sum += t->l[i].slot[0];
	return sum;
}

/* k requests ended whose prompts add up to about gone tokens (the row's
 * fall): those whose sizes fit it best, one by one, rather than the
 * oldest, so that a long prompt still prefilling is not taken for the
 * short one that ended beside it. */
static void end_matching(struct dbk_share *s, struct theirs *t, size_t k, uint64_t gone,
                         uint64_t now_ms)
{
	for (size_t done = 0; done < k && t->n; done++) {
		double want = (double)gone / (double)(k - done);
		size_t best = 0;
		for (size_t i = 1; i < t->n; i++)
			if (fabs(t->l[i].slot[0] - want) < fabs(t->l[best].slot[0] - want))
				best = i;
		struct dbk_bal_lease l = t->l[best];
		memmove(t->l + best, t->l + best + 1, (t->n - best - 1) * sizeof(*t->l));
		t->n--;
		s->inner.ops->release(s->inner.st, &l, now_ms);
		s->st.released++;
		gone -= gone < l.slot[0] ? gone : l.slot[0];
	}
}

/* One of the others' new requests, as its row's sums share it out. */
struct fresh {
	double prompt, kv, ctx, out;
};

/* l (server and start set) booked: by complete, the ticket its sender
 * priced (its hit there, which this node's index, holding none of the
 * sender's prefixes, would not find), so that a cached turn weighs its
 * new tokens only; without complete, by seen, the load priced here. */
static void charge(struct dbk_share *s, const struct fresh *f, struct dbk_bal_lease *l,
                   uint64_t now_ms)
{
	const struct dbk_policy_ops *o = s->inner.ops;

	if (o->complete) {
		uint32_t slot[DBK_BAL_SLOT_WORDS];
		double cap = (double)(DBK_POLICY_HELD - 1);
		l->slot[0] = (uint32_t)fmin(f->prompt, cap) | DBK_POLICY_HELD;
		l->slot[1] = (uint32_t)fmin(f->kv, UINT32_MAX);
		l->slot[2] = (uint32_t)fmin(f->ctx, UINT32_MAX);
		if (o->complete(s->inner.st, l, now_ms, slot))
			memcpy(l->slot, slot, sizeof(slot));
		return;
	}
	struct dbk_bal_request est = {
		.body_bytes = 4 * f->prompt,
		.max_tokens = f->out,
		.ignore_eos = true,
	};
	struct dbk_policy_request pr = { .est = &est };
	o->seen(s->inner.st, &pr, l->server, false, now_ms, l->slot);
}

/* A row read: the requests it holds beyond those charged are new (their
 * tokens shared equally); of those charged, as many as it fell short
 * ended: those its token count says, when no new one came with them,
 * else the oldest. */
static void take_row(struct dbk_share *s, unsigned server, struct theirs *t,
                     const struct dbk_share_row *r, uint64_t now_ms)
{
	uint32_t want = r->inflight < DBK_SHARE_MAX_ROW_INFLIGHT ? r->inflight
	                                                         : DBK_SHARE_MAX_ROW_INFLIGHT;
	uint32_t began = r->started - t->started; /* wraps with the counter */
	size_t ended;

	if (!t->present || began > DBK_SHARE_MAX_ROW_INFLIGHT)
		ended = t->n; /* a new row, or the node's agent restarted */
	else
		ended = t->n + began > want ? t->n + began - want : 0;
	if (ended > t->n)
		ended = t->n;
	if (t->n - ended > want)
		ended = t->n - want;
	uint64_t held = prompt_sum(t);
	if (ended && t->present && began == 0 && held >= r->prompt)
		end_matching(s, t, ended, held - r->prompt, now_ms);
	else
		end_theirs(s, t, ended, now_ms);
	t->present = true;
	t->seen_now = true;
	t->started = r->started;
	if (t->n >= want)
		return;
	uint64_t prompt = 0, ctx = 0, kv = 0;
	for (size_t i = 0; i < t->n; i++) {
		prompt += t->l[i].slot[0];
		kv += t->l[i].slot[1];
		ctx += t->l[i].slot[2];
	}
	size_t fresh = want - t->n;
	struct fresh f = {
		.prompt = r->prompt > prompt ? (double)(r->prompt - prompt) / (double)fresh : 0,
		.ctx = r->ctx > ctx ? (double)(r->ctx - ctx) / (double)fresh : 0,
	};
	/* The ticket's context is prompt + half the output: the output it
	 * was priced with, taken as is. */
	f.out = f.ctx > f.prompt ? 2 * (f.ctx - f.prompt) : 0;
	/* Without the sender's KV, as if nothing of it were cached. */
	f.kv = f.prompt + f.out;
	if (r->has_kv)
		f.kv = fmin(f.kv, r->kv > kv ? (double)(r->kv - kv) / (double)fresh : 0);
	for (size_t i = 0; i < fresh; i++) {
		struct dbk_bal_lease *l = dbk_array_room(t->l, &t->cap, t->n, sizeof(*l), 8);
		if (!l)
			return; /* out of memory: charged fewer */
		t->l = l;
		l = &t->l[t->n++];
		*l = (struct dbk_bal_lease){ .server = server, .start_ms = now_ms };
		charge(s, &f, l, now_ms);
		s->st.seen++;
	}
}

struct read_ctx {
	struct dbk_share *s;
	const char *const *names;
	unsigned nnames;
	uint64_t now_ms;
};

static void on_row(void *arg, const struct dbk_share_row *r)
{
	struct read_ctx *c = arg;
	struct dbk_share *s = c->s;
	const char *slash = memchr(r->key, '/', r->key_len);

	if (!slash || !r->has_all)
		return;
	size_t nl = (size_t)(slash - r->key), sl = r->key_len - nl - 1;
	if (nl == s->node_len && memcmp(r->key, s->node, nl) == 0)
		return; /* ours */
	for (unsigned i = 0; i < c->nnames && i < s->n; i++) {
		if (!c->names[i] || strlen(c->names[i]) != sl || memcmp(c->names[i], slash + 1, sl))
			continue;
		struct node *n = node_of(s, r->key, nl);
		if (n)
			take_row(s, i, &n->srv[i], r, c->now_ms);
		return;
	}
	s->st.unknown_rows++;
}

int dbk_share_read(struct dbk_share *s, const char *buf, size_t len, const char *const *names,
                   unsigned nnames, uint64_t now_ms, char *err, size_t errlen)
{
	struct read_ctx c = { s, names, nnames, now_ms };

	for (unsigned k = 0; k < s->nnodes; k++)
		for (unsigned i = 0; i < s->n; i++)
			s->nodes[k].srv[i].seen_now = false;
	s->st.unknown_rows = 0;
	if (dbk_share_parse(buf, len, on_row, &c, err, errlen) < 0)
		return -1;
	/* A row gone is a row expired: its node's agent stopped writing. */
	s->st.nodes = 0;
	s->st.others_inflight = 0;
	for (unsigned k = 0; k < s->nnodes; k++) {
		bool any = false;
		for (unsigned i = 0; i < s->n; i++) {
			struct theirs *t = &s->nodes[k].srv[i];
			if (t->present && !t->seen_now) {
				end_theirs(s, t, t->n, now_ms);
				t->present = false;
			}
			any |= t->present;
			s->st.others_inflight += (unsigned)t->n;
		}
		if (any && s->st.nodes < DBK_SHARE_MAX_NODES)
			s->st.nodes++;
	}
	s->st.reads++;
	return 0;
}
