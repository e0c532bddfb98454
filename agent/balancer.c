/* The length-aware balancer: see balancer.h and agent/ALGORITHM.md.
 *
 * Groups are contiguous ranges of the server list, so each group's
 * min-heap of usable servers lives in its own slice of one array. The
 * heap is ordered by (active_load, index), exactly the reference's
 * min() key, so its top is the reference's choice in O(1) and a load
 * change costs O(log n).
 */
#include "balancer.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leases.h"
#include "lib/hash.h"
#include "lib/log.h"

#define NOT_IN_HEAP UINT_MAX

struct dbk_balancer;
static void update_weighted(struct dbk_balancer *b);

struct dbk_balancer {
	struct dbk_bal_config cfg;
	unsigned first[DBK_BAL_MAX_BUCKETS + 1]; /* group g: [first[g], first[g+1]) */
	unsigned heap_len[DBK_BAL_MAX_BUCKETS];
	double bucket_load[DBK_BAL_MAX_BUCKETS];
	double *load;       /* per server */
	unsigned *inflight; /* per server */
	uint64_t *ended;    /* per server: leases that left it, ever */
	unsigned *group_of; /* per server */
	unsigned *pos;      /* per server: slot in its group's heap */
	unsigned *heap;     /* server indices; group g's heap at first[g] */
	unsigned *out;      /* per server: enum dbk_bal_out bits; usable when 0 */
	double *weight;     /* per server: HAProxy's effective weight (1 by default) */
	/* Weights differ between present servers: the heaps order by load
	 * per unit of weight. Off, the order is the reference's exactly. */
	bool weighted;
	struct dbk_lease_table leases;
	struct dbk_lease_table buried; /* ids that ended unrouted */
	struct dbk_bal_stats stats;
	struct dbk_bal_observer obs;
};

const char *dbk_bal_result_str(enum dbk_bal_result r)
{
	switch (r) {
	case DBK_BAL_OK: return "ok";
	case DBK_BAL_DUPLICATE: return "duplicate id";
	case DBK_BAL_FULL: return "lease table full";
	case DBK_BAL_NO_SERVER: return "no usable server";
	case DBK_BAL_UNKNOWN: return "unknown id";
	case DBK_BAL_BAD_ID: return "bad id";
	case DBK_BAL_ENDED: return "request already ended";
	}
	return "?";
}

/* ---- per-group indexed min-heaps ---- */

static bool heap_less(const struct dbk_balancer *b, unsigned x, unsigned y)
{
	if (b->weighted) {
		/* Cross-multiplied, so that no division rounds two loads
		 * together; a weight is > 0 here (0 leaves the heap). */
		double lx = b->load[x] * b->weight[y], ly = b->load[y] * b->weight[x];

		return lx < ly || (lx == ly && x < y);
	}
	return b->load[x] < b->load[y] || (b->load[x] == b->load[y] && x < y);
}

static void heap_set(struct dbk_balancer *b, unsigned *h, unsigned i, unsigned s)
{
	h[i] = s;
	b->pos[s] = i;
}

static void sift_up(struct dbk_balancer *b, unsigned g, unsigned i)
{
	unsigned *h = b->heap + b->first[g];
	unsigned s = h[i];

	while (i > 0) {
		unsigned parent = (i - 1) / 2;

		if (!heap_less(b, s, h[parent]))
			break;
		heap_set(b, h, i, h[parent]);
		i = parent;
	}
	heap_set(b, h, i, s);
}

static void sift_down(struct dbk_balancer *b, unsigned g, unsigned i)
{
	unsigned *h = b->heap + b->first[g];
	unsigned n = b->heap_len[g], s = h[i];

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && heap_less(b, h[c + 1], h[c]))
			c++;
		if (!heap_less(b, h[c], s))
			break;
		heap_set(b, h, i, h[c]);
		i = c;
	}
	heap_set(b, h, i, s);
}

/* Restores the heap after server s's load changed either way. */
static void heap_fix(struct dbk_balancer *b, unsigned s)
{
	unsigned g = b->group_of[s], i = b->pos[s];

	if (i == NOT_IN_HEAP)
		return;
	sift_up(b, g, i);
	sift_down(b, g, b->pos[s]);
}

static void heap_insert(struct dbk_balancer *b, unsigned s)
{
	unsigned g = b->group_of[s];

	b->heap[b->first[g] + b->heap_len[g]] = s;
	b->pos[s] = b->heap_len[g]++;
	sift_up(b, g, b->pos[s]);
}

static void heap_remove(struct dbk_balancer *b, unsigned s)
{
	unsigned g = b->group_of[s], i = b->pos[s];
	unsigned *h = b->heap + b->first[g];
	unsigned last = h[--b->heap_len[g]];

	b->pos[s] = NOT_IN_HEAP;
	if (last == s)
		return;
	heap_set(b, h, i, last);
	sift_up(b, g, i);
	sift_down(b, g, b->pos[last]);
}

static bool absent(const struct dbk_balancer *b, unsigned s)
{
	return (b->out[s] & DBK_BAL_OUT_ABSENT) != 0;
}

/* Servers of group g when m servers are present: the configured sizes
 * while they add up to m, else the reference's split of m. */
static unsigned group_size(const struct dbk_balancer *b, unsigned g, unsigned m)
{
	struct dbk_bal_config c = b->cfg;
	unsigned sum = 0;

	for (unsigned k = 0; k < c.nbuckets; k++)
		sum += c.group_sizes[k];
	if (sum != m)
		memset(c.group_sizes, 0, sizeof(c.group_sizes));
	c.nservers = m;
	return dbk_bal_group_size(&c, g);
}

/* Lays the groups out from cfg over the present servers (agent/
 * ALGORITHM.md, "A changing server list": the reference's split of the
 * servers present, in index order; an absent server's index falls in
 * whichever group's range holds it and is never chosen), and rebuilds
 * every heap from the current loads and usable flags. */
static void build_groups(struct dbk_balancer *b)
{
	const struct dbk_bal_config *c = &b->cfg;
	unsigned m = 0, s = 0;

	for (unsigned i = 0; i < c->nservers; i++)
		m += !absent(b, i);
	for (unsigned g = 0; g < c->nbuckets; g++) {
		unsigned *h = b->heap + b->first[g];
		unsigned want = group_size(b, g, m);

		/* The last group takes every index left, absent ones too. */
		for (unsigned got = 0; s < c->nservers && (got < want || g + 1 == c->nbuckets); s++)
			got += !absent(b, s);
		b->first[g + 1] = s;
		b->heap_len[g] = 0;
		for (unsigned i = b->first[g]; i < b->first[g + 1]; i++) {
			b->group_of[i] = g;
			b->pos[i] = NOT_IN_HEAP;
			if (!b->out[i])
				heap_set(b, h, b->heap_len[g]++, i);
		}
		/* Floyd's heap construction: sift every inner node down. */
		for (unsigned i = b->heap_len[g] / 2; i-- > 0;)
			sift_down(b, g, i);
	}
}

/* ---- life cycle ---- */

struct dbk_balancer *dbk_bal_new(const struct dbk_bal_config *c)
{
	struct dbk_balancer *b;
	unsigned n = c->nservers;

	if (dbk_bal_config_check(c, NULL, 0) < 0)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cfg = *c;
	b->load = calloc(n, sizeof(*b->load));
	b->inflight = calloc(n, sizeof(*b->inflight));
	b->ended = calloc(n, sizeof(*b->ended));
	b->group_of = calloc(n, sizeof(*b->group_of));
	b->pos = calloc(n, sizeof(*b->pos));
	b->heap = calloc(n, sizeof(*b->heap));
	b->out = calloc(n, sizeof(*b->out));
	b->weight = malloc(n * sizeof(*b->weight));
	/* The table's hash key needs no strength, only to differ between
	 * runs; ASLR makes the balancer's address do. */
	if (!b->load || !b->inflight || !b->ended || !b->group_of || !b->pos || !b->heap ||
	    !b->out || !b->weight || dbk_lease_init(&b->leases, (uint64_t)(uintptr_t)b) < 0 ||
	    dbk_lease_init(&b->buried, (uint64_t)(uintptr_t)b ^ DBK_HASH_GOLDEN) < 0) {
		/* dbk_bal_free copes with what calloc left zeroed. */
		dbk_bal_free(b);
		return NULL;
	}
	for (unsigned i = 0; i < n; i++)
		b->weight[i] = 1.0;
	build_groups(b);
	return b;
}

/* Lays the groups out again. A group's load is its servers' load:
 * recount it, and let each lease remember its server's new group for
 * its release. */
static void regroup_all(struct dbk_balancer *b)
{
	build_groups(b);
	for (unsigned g = 0; g < b->cfg.nbuckets; g++) {
		b->bucket_load[g] = 0;
		for (unsigned s = b->first[g]; s < b->first[g + 1]; s++)
			b->bucket_load[g] += b->load[s];
	}
	for (struct dbk_lease *e = dbk_lease_oldest(&b->leases); e; e = dbk_lease_newer(e))
		e->val.group = b->group_of[e->val.server];
}

int dbk_bal_reconfigure(struct dbk_balancer *b, const struct dbk_bal_config *c, char *err,
                        size_t errlen)
{
	if (dbk_bal_config_check(c, err, errlen) < 0)
		return -1;
	if (c->nservers != b->cfg.nservers || c->dynamic != b->cfg.dynamic ||
	    c->nbuckets != b->cfg.nbuckets) {
		dbk_errf(err, errlen,
		         "the server count, the mode and the number of buckets "
		         "need a restart");
		return -1;
	}
	bool regroup = memcmp(c->group_sizes, b->cfg.group_sizes, sizeof(c->group_sizes)) != 0;
	b->cfg = *c;
	if (regroup)
		regroup_all(b);
	return 0;
}

void dbk_bal_free(struct dbk_balancer *b)
{
	if (!b)
		return;
	dbk_lease_fini(&b->leases);
	dbk_lease_fini(&b->buried);
	free(b->load);
	free(b->inflight);
	free(b->ended);
	free(b->group_of);
	free(b->pos);
	free(b->heap);
	free(b->out);
	free(b->weight);
	free(b);
}

/* ---- the decision ---- */

static double clamp01(double x) { return x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x; }

static unsigned standard_bucket(const struct dbk_bal_config *c, double tokens)
{
	/* Below the first bound (or NaN, which the clamps rule out) the
	 * shortest bucket is the least surprising home. */
	if (!(tokens >= c->bounds[0]))
		return 0;
	for (unsigned i = 0; i < c->nbuckets; i++)
		if (tokens < c->bounds[i + 1])
			return i;
	return c->nbuckets - 1;
}

/* The reference's neighbour redirect. The order of operations is the
 * reference's, so that the result matches it bit for bit. Returns the
 * bucket to use and sets *p to the best neighbour's probability. */
static unsigned redirect(const struct dbk_balancer *b, unsigned std, double tokens, double *p_out)
{
	const struct dbk_bal_config *c = &b->cfg;
	double lb = b->bucket_load[std], best_p = 0.0;
	unsigned best = NOT_IN_HEAP;
	unsigned cand[2] = { std - 1, std + 1 }; /* std - 1 wraps when std == 0 */

	for (unsigned j = 0; j < 2; j++) {
		unsigned k = cand[j];
		double lk, load_p, lo, hi, center, half, affinity, p;

		if (k >= c->nbuckets)
			continue;
		lk = b->bucket_load[k];
		if (!(lk < lb))
			continue;
		load_p = lb <= 0.0 ? 0.0 : clamp01(1.0 - pow(lk / lb, c->sensitivity));
		lo = c->bounds[k];
		hi = c->bounds[k + 1];
		center = (lo + hi) / 2.0;
		half = (hi - lo) / 2.0;
		if (half <= 0.0) {
			affinity = 1.0;
		} else {
			double nd = (fabs(tokens - center) - half) / half;

			affinity = clamp01(exp(-c->affinity_strength * nd));
		}
		p = load_p * affinity;
		if (best == NOT_IN_HEAP || p > best_p) {
			best = k;
			best_p = p;
		}
	}
	*p_out = best_p;
	if (best != NOT_IN_HEAP && best_p > c->redirect_threshold)
		return best;
	return std;
}

/* The nearest group with a usable server, lower first on ties. */
static unsigned usable_group(const struct dbk_balancer *b, unsigned g)
{
	unsigned n = b->cfg.nbuckets;

	if (b->heap_len[g])
		return g;
	for (unsigned d = 1; d < n; d++) {
		if (g >= d && b->heap_len[g - d])
			return g - d;
		if (g + d < n && b->heap_len[g + d])
			return g + d;
	}
	return NOT_IN_HEAP;
}

/* The least loaded eligible usable server of group g (the heap's order,
 * by a walk: only requests whose model not every server serves come
 * here), or NOT_IN_HEAP. */
static unsigned eligible_in(const struct dbk_balancer *b, unsigned g, const uint64_t *eligible)
{
	unsigned best = NOT_IN_HEAP;

	for (unsigned i = 0; i < b->heap_len[g]; i++) {
		unsigned s = b->heap[b->first[g] + i];
		if (dbk_bal_eligible(eligible, s) && (best == NOT_IN_HEAP || heap_less(b, s, best)))
			best = s;
	}
	return best;
}

/* usable_group's order, among eligible servers; *server its choice. */
static unsigned eligible_group(const struct dbk_balancer *b, unsigned g, const uint64_t *eligible,
                               unsigned *server)
{
	unsigned n = b->cfg.nbuckets;

	if ((*server = eligible_in(b, g, eligible)) != NOT_IN_HEAP)
		return g;
	for (unsigned d = 1; d < n; d++) {
		if (g >= d && (*server = eligible_in(b, g - d, eligible)) != NOT_IN_HEAP)
			return g - d;
		if (g + d < n && (*server = eligible_in(b, g + d, eligible)) != NOT_IN_HEAP)
			return g + d;
	}
	return NOT_IN_HEAP;
}

static enum dbk_bal_result decide(const struct dbk_balancer *b, const struct dbk_bal_request *r,
                                  const uint64_t *eligible, struct dbk_bal_decision *d);

enum dbk_bal_result dbk_bal_decide(const struct dbk_balancer *b, const struct dbk_bal_request *r,
                                   struct dbk_bal_decision *d)
{
	return decide(b, r, NULL, d);
}

static enum dbk_bal_result decide(const struct dbk_balancer *b, const struct dbk_bal_request *r,
                                  const uint64_t *eligible, struct dbk_bal_decision *d)
{
	const struct dbk_bal_config *c = &b->cfg;
	double body = r->body_bytes, mt = r->max_tokens;
	unsigned bucket, g;

	if (!(body >= 0.0))
		body = 0.0;
	else if (body > DBK_BAL_MAX_BODY_BYTES)
		body = DBK_BAL_MAX_BODY_BYTES;
	if (!isfinite(mt))
		mt = 16.0;
	else if (mt < 0.0)
		mt = 0.0;
	else if (mt > DBK_BAL_MAX_MAX_TOKENS)
		mt = DBK_BAL_MAX_MAX_TOKENS;

	memset(d, 0, sizeof(*d));
	d->request_tokens = body / DBK_BAL_BYTES_PER_TOKEN;
	if (c->dynamic)
		d->score = d->request_tokens;
	else if (r->ignore_eos)
		d->score = body + mt;
	else
		d->score = body + 0.5 * mt;
	d->std_bucket = standard_bucket(c, d->request_tokens);

	bucket = d->std_bucket;
	if (c->nbuckets > 1)
		bucket = redirect(b, d->std_bucket, d->request_tokens, &d->p);
	unsigned server = NOT_IN_HEAP;
	g = eligible ? eligible_group(b, bucket, eligible, &server) : usable_group(b, bucket);
	if (g == NOT_IN_HEAP) {
		d->group = d->server = UINT_MAX;
		return DBK_BAL_NO_SERVER;
	}
	d->group = g;
	d->server = eligible ? server : b->heap[b->first[g]];
	d->redirected = g != d->std_bucket;
	return DBK_BAL_OK;
}

static bool id_ok(const char *id, size_t id_len)
{
	return id && id_len > 0 && id_len <= DBK_BAL_MAX_ID_LEN;
}

static enum dbk_bal_result take_lease(struct dbk_balancer *b, const char *id, size_t id_len,
                                      enum dbk_bal_result res, uint64_t now_ms,
                                      struct dbk_bal_decision *d);

enum dbk_bal_result dbk_bal_dispatch(struct dbk_balancer *b, const char *id, size_t id_len,
                                     const struct dbk_bal_request *r, uint64_t now_ms,
                                     struct dbk_bal_decision *d)
{
	return dbk_bal_dispatch_among(b, id, id_len, r, NULL, now_ms, d);
}

enum dbk_bal_result dbk_bal_dispatch_among(struct dbk_balancer *b, const char *id, size_t id_len,
                                           const struct dbk_bal_request *r,
                                           const uint64_t *eligible, uint64_t now_ms,
                                           struct dbk_bal_decision *d)
{
	struct dbk_bal_decision local;
	enum dbk_bal_result res;

	if (!d)
		d = &local;
	if (!id_ok(id, id_len)) {
		decide(b, r, eligible, d);
		d->group = d->server = UINT_MAX;
		b->stats.bad_ids++;
		return DBK_BAL_BAD_ID;
	}
	res = decide(b, r, eligible, d);
	return take_lease(b, id, id_len, res, now_ms, d);
}

enum dbk_bal_result dbk_bal_dispatch_to(struct dbk_balancer *b, const char *id, size_t id_len,
                                        const struct dbk_bal_request *r, unsigned server,
                                        uint64_t now_ms, struct dbk_bal_decision *d)
{
	struct dbk_bal_decision local;
	enum dbk_bal_result res;

	if (!d)
		d = &local;
	/* The reference's decision gives the request's tokens, score and
	 * standard bucket; its server is then replaced. */
	dbk_bal_decide(b, r, d);
	if (!id_ok(id, id_len)) {
		d->group = d->server = UINT_MAX;
		b->stats.bad_ids++;
		return DBK_BAL_BAD_ID;
	}
	res = DBK_BAL_OK;
	if (server >= b->cfg.nservers || b->out[server]) {
		res = DBK_BAL_NO_SERVER;
	} else {
		d->server = server;
		d->group = b->group_of[server];
		d->redirected = d->group != d->std_bucket;
		d->p = 0.0;
	}
	return take_lease(b, id, id_len, res, now_ms, d);
}

/* The checks every dispatch makes after deciding, then the lease. */
static enum dbk_bal_result take_lease(struct dbk_balancer *b, const char *id, size_t id_len,
                                      enum dbk_bal_result res, uint64_t now_ms,
                                      struct dbk_bal_decision *d)
{
	struct dbk_bal_lease l;

	if (dbk_lease_count(&b->buried) && dbk_lease_find(&b->buried, id, id_len)) {
		b->stats.ended++;
		res = DBK_BAL_ENDED;
	} else if (dbk_lease_find(&b->leases, id, id_len)) {
		b->stats.duplicates++;
		res = DBK_BAL_DUPLICATE;
	} else if (b->cfg.max_leases && dbk_lease_count(&b->leases) >= b->cfg.max_leases) {
		b->stats.refused++;
		res = DBK_BAL_FULL;
	} else if (res == DBK_BAL_NO_SERVER) {
		b->stats.refused++;
	}
	if (res != DBK_BAL_OK) {
		d->group = d->server = UINT_MAX;
		return res;
	}

	memset(&l, 0, sizeof(l));
	l.server = d->server;
	l.group = d->group;
	l.score = d->score;
	l.start_ms = now_ms;
	if (dbk_lease_insert(&b->leases, id, id_len, &l, NULL) != DBK_LEASE_INSERTED) {
		b->stats.refused++;
		d->group = d->server = UINT_MAX;
		return DBK_BAL_FULL;
	}
	b->load[l.server] += l.score;
	b->bucket_load[l.group] += l.score;
	b->inflight[l.server]++;
	heap_fix(b, l.server);

	b->stats.decisions++;
	if (d->redirected)
		b->stats.redirects++;
	b->stats.leases = dbk_lease_count(&b->leases);
	return DBK_BAL_OK;
}

/* Exactly the amounts dispatch added, in the reference's -= form. */
static void uncharge(struct dbk_balancer *b, const struct dbk_bal_lease *l)
{
	b->load[l->server] -= l->score;
	b->bucket_load[l->group] -= l->score;
	b->inflight[l->server]--;
	b->ended[l->server]++;
	heap_fix(b, l->server);
	b->stats.leases = dbk_lease_count(&b->leases);
	if (b->obs.ended)
		b->obs.ended(b->obs.arg, l);
}

/* Ends a lease the balancer takes back on its own (expiry, reclaim),
 * counting it under *counter and telling cb while its id is still
 * readable. */
static void give_back(struct dbk_balancer *b, struct dbk_lease *e, uint64_t *counter,
                      dbk_bal_lease_cb *cb, void *arg)
{
	dbk_lease_unlink(&b->leases, e);
	e->val.unserved = true;
	uncharge(b, &e->val);
	(*counter)++;
	if (cb)
		cb(arg, e->id, e->id_len, &e->val);
	dbk_lease_free(e);
}

bool dbk_bal_set_slot(struct dbk_balancer *b, const char *id, size_t id_len,
                      const uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct dbk_lease *e = id_ok(id, id_len) ? dbk_lease_find(&b->leases, id, id_len) : NULL;

	if (!e)
		return false;
	memcpy(e->val.slot, slot, sizeof(e->val.slot));
	return true;
}

void dbk_bal_observe(struct dbk_balancer *b, const struct dbk_bal_observer *o)
{
	if (o)
		b->obs = *o;
	else
		memset(&b->obs, 0, sizeof(b->obs));
}

enum dbk_bal_result dbk_bal_release(struct dbk_balancer *b, const char *id, size_t id_len,
                                    struct dbk_bal_lease *out)
{
	return dbk_bal_end(b, id, id_len, true, out);
}

enum dbk_bal_result dbk_bal_end(struct dbk_balancer *b, const char *id, size_t id_len, bool served,
                                struct dbk_bal_lease *out)
{
	struct dbk_bal_lease l;

	if (!id_ok(id, id_len)) {
		b->stats.bad_ids++;
		return DBK_BAL_BAD_ID;
	}
	if (!dbk_lease_remove(&b->leases, id, id_len, &l)) {
		b->stats.unknown_releases++;
		return DBK_BAL_UNKNOWN;
	}
	l.unserved = !served;
	uncharge(b, &l);
	b->stats.releases++;
	if (out)
		*out = l;
	return DBK_BAL_OK;
}

void dbk_bal_bury(struct dbk_balancer *b, const char *id, size_t id_len, uint64_t now_ms)
{
	struct dbk_bal_lease l = { .start_ms = now_ms };

	if (!id_ok(id, id_len) || dbk_lease_find(&b->buried, id, id_len))
		return;
	if (dbk_lease_count(&b->buried) >= DBK_BAL_MAX_BURIED)
		dbk_lease_delete(&b->buried, dbk_lease_oldest(&b->buried));
	dbk_lease_insert(&b->buried, id, id_len, &l, NULL);
}

void dbk_bal_expire_buried(struct dbk_balancer *b, uint64_t now_ms, uint64_t ttl_ms)
{
	struct dbk_lease *e;

	while ((e = dbk_lease_oldest(&b->buried)) && e->val.start_ms + ttl_ms <= now_ms)
		dbk_lease_delete(&b->buried, e);
}

bool dbk_bal_ended(const struct dbk_balancer *b, const char *id, size_t id_len)
{
	return id_ok(id, id_len) && dbk_lease_count(&b->buried) &&
	       dbk_lease_find(&b->buried, id, id_len) != NULL;
}

bool dbk_bal_lease_get(const struct dbk_balancer *b, const char *id, size_t id_len,
                       struct dbk_bal_lease *out)
{
	const struct dbk_lease *e = id_ok(id, id_len) ? dbk_lease_find(&b->leases, id, id_len)
	                                              : NULL;

	if (e && out)
		*out = e->val;
	return e != NULL;
}

bool dbk_bal_holds(const struct dbk_balancer *b, const char *id, size_t id_len)
{
	return dbk_bal_lease_get(b, id, id_len, NULL);
}

size_t dbk_bal_expire(struct dbk_balancer *b, uint64_t now_ms, uint64_t ttl_ms,
                      dbk_bal_lease_cb *cb, void *arg)
{
	uint64_t cutoff;
	size_t n = 0, budget = dbk_lease_count(&b->leases);
	struct dbk_lease *e;

	if (now_ms < ttl_ms)
		return 0;
	cutoff = now_ms - ttl_ms;
	/* The budget keeps a callback that dispatches old-dated leases from
	 * making this loop endless. */
	while (n < budget && (e = dbk_lease_oldest(&b->leases)) && e->val.start_ms <= cutoff) {
		give_back(b, e, &b->stats.expired, cb, arg);
		n++;
	}
	return n;
}

enum dbk_bal_result dbk_bal_move(struct dbk_balancer *b, const char *id, size_t id_len,
                                 unsigned server, struct dbk_bal_lease *out)
{
	struct dbk_lease *e;

	if (!id_ok(id, id_len))
		return DBK_BAL_BAD_ID;
	if (server >= b->cfg.nservers || absent(b, server))
		return DBK_BAL_NO_SERVER;
	e = dbk_lease_find(&b->leases, id, id_len);
	if (!e)
		return DBK_BAL_UNKNOWN;
	if (e->val.server != server) {
		struct dbk_bal_lease *l = &e->val, before = *l;

		/* The same amounts out of the old server and group and into the
		 * new ones, so that the release still gives back exactly what
		 * is charged. */
		b->load[l->server] -= l->score;
		b->inflight[l->server]--;
		b->ended[l->server]++;
		heap_fix(b, l->server);
		b->bucket_load[l->group] -= l->score;
		l->server = server;
		l->group = b->group_of[server];
		b->load[server] += l->score;
		b->inflight[server]++;
		heap_fix(b, server);
		b->bucket_load[l->group] += l->score;
		b->stats.moved++;
		if (b->obs.moved)
			b->obs.moved(b->obs.arg, &before, server);
	}
	if (out)
		*out = e->val;
	return DBK_BAL_OK;
}

bool dbk_bal_recharge(struct dbk_balancer *b, const char *id, size_t id_len, double score,
                      struct dbk_bal_lease *out)
{
	struct dbk_lease *e = id_ok(id, id_len) ? dbk_lease_find(&b->leases, id, id_len) : NULL;

	if (!e)
		return false;
	struct dbk_bal_lease *l = &e->val;
	/* Out as the release would take it, in at the new score: the
	 * release then gives back exactly what is charged. */
	b->load[l->server] -= l->score;
	b->bucket_load[l->group] -= l->score;
	l->score = score;
	b->load[l->server] += l->score;
	b->bucket_load[l->group] += l->score;
	heap_fix(b, l->server);
	if (out)
		*out = *l;
	return true;
}

/* Gives back the n oldest leases on server started at or before
 * started_by_ms, counted under *counter. */
static size_t give_back_oldest(struct dbk_balancer *b, unsigned server, size_t n,
                               uint64_t started_by_ms, uint64_t *counter, dbk_bal_lease_cb *cb,
                               void *arg)
{
	struct dbk_lease *e, *next;
	size_t done = 0;

	if (server >= b->cfg.nservers)
		return 0;
	/* Oldest first, so the walk ends at the first lease too young. */
	for (e = dbk_lease_oldest(&b->leases);
	     e && done < n && b->inflight[server] && e->val.start_ms <= started_by_ms; e = next) {
		next = dbk_lease_newer(e);
		if (e->val.server != server)
			continue;
		give_back(b, e, counter, cb, arg);
		done++;
	}
	return done;
}

size_t dbk_bal_reclaim(struct dbk_balancer *b, unsigned server, size_t n, uint64_t started_by_ms,
                       dbk_bal_lease_cb *cb, void *arg)
{
	return give_back_oldest(b, server, n, started_by_ms, &b->stats.reclaimed, cb, arg);
}

void dbk_bal_set_out(struct dbk_balancer *b, unsigned server, unsigned reason, bool out)
{
	if (server >= b->cfg.nservers)
		return;
	unsigned was = b->out[server];
	unsigned now = out ? was | reason : was & ~reason;

	b->out[server] = now;
	if (!was == !now && !((was ^ now) & DBK_BAL_OUT_ABSENT))
		return;
	if ((was ^ now) & DBK_BAL_OUT_ABSENT) {
		/* The present servers changed: so may the groups and whether
		 * the weights differ. */
		update_weighted(b);
		regroup_all(b);
	} else if (!now) {
		heap_insert(b, server);
	} else {
		heap_remove(b, server);
	}
	if (!was == !now)
		return;
	if (b->obs.usable)
		b->obs.usable(b->obs.arg, server, !now);
}

/* Whether the present servers' weights differ. */
static void update_weighted(struct dbk_balancer *b)
{
	double first = -1.0;

	b->weighted = false;
	for (unsigned i = 0; i < b->cfg.nservers && !b->weighted; i++) {
		if (absent(b, i))
			continue;
		if (first < 0)
			first = b->weight[i];
		b->weighted = b->weight[i] != first;
	}
}

void dbk_bal_set_weight(struct dbk_balancer *b, unsigned server, double weight)
{
	if (server >= b->cfg.nservers || !(weight > 0) || !isfinite(weight) ||
	    weight == b->weight[server])
		return;
	bool was = b->weighted;

	b->weight[server] = weight;
	update_weighted(b);
	if (was || b->weighted)
		build_groups(b); /* the heaps' order changed */
}

double dbk_bal_weight(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->weight[server] : 0.0;
}

size_t dbk_bal_release_server(struct dbk_balancer *b, unsigned server, dbk_bal_lease_cb *cb,
                              void *arg)
{
	return give_back_oldest(b, server, SIZE_MAX, UINT64_MAX, &b->stats.dropped, cb, arg);
}

unsigned dbk_bal_out_reasons(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->out[server] : 0;
}

void dbk_bal_set_usable(struct dbk_balancer *b, unsigned server, bool usable)
{
	dbk_bal_set_out(b, server, DBK_BAL_OUT_STATE, !usable);
}

bool dbk_bal_usable(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers && !b->out[server];
}

const struct dbk_bal_config *dbk_bal_config(const struct dbk_balancer *b) { return &b->cfg; }

double dbk_bal_server_load(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->load[server] : 0.0;
}

unsigned dbk_bal_server_inflight(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->inflight[server] : 0;
}

uint64_t dbk_bal_server_ended(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->ended[server] : 0;
}

double dbk_bal_bucket_load(const struct dbk_balancer *b, unsigned bucket)
{
	return bucket < b->cfg.nbuckets ? b->bucket_load[bucket] : 0.0;
}

unsigned dbk_bal_group_of(const struct dbk_balancer *b, unsigned server)
{
	return server < b->cfg.nservers ? b->group_of[server] : UINT_MAX;
}

const struct dbk_bal_stats *dbk_bal_stats(const struct dbk_balancer *b) { return &b->stats; }
