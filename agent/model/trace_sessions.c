/* The session key of each trace request, from its prefix ids: see
 * dbk_trace_sessions in trace.h.
 *
 * Why the widest fork: the ids form a tree of prefixes, and a
 * conversation's turns extend one another, so below its first turn a
 * conversation forks little (a turn whose last, partial block the next
 * turn rewrites: two ways). A system prompt is followed by as many ids
 * as there are conversations behind it, and the root by as many as there
 * are system prompts. Keying past the prefix every request shares (the
 * rule before) merges the conversations of each system prompt as soon as
 * a trace has two of them. */
#include "model/trace.h"

#include <stdlib.h>

#include "lib/hash.h"

/* One edge of the tree: the node (a hash of the ids before) and the id
 * that follows it. */
struct edge {
	uint64_t node, id;
};

/* A node and how many distinct ids follow it. */
struct fork {
	uint64_t node;
	uint32_t width;
};

#define ROOT UINT64_C(0x5e55104f00d)

static uint64_t child(uint64_t node, uint64_t id)
{
	return dbk_hash_fmix64(dbk_hash_fmix64(node + DBK_HASH_GOLDEN) ^ id);
}

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t width_of(const struct fork *f, size_t n, uint64_t node)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && f[lo].node == node ? f[lo].width : 0;
}

/* Every node's width, sorted by node, in *out (*nout of them). */
static int forks(const struct dbk_trace *t, struct fork **out, size_t *nout)
{
	size_t ne = 0, nf = 0, i;
	struct edge *e = malloc((t->n_hash ? t->n_hash : 1) * sizeof(*e));
	struct fork *f;

	if (!e)
		return -1;
	for (i = 0; i < t->n; i++) {
		const struct dbk_trace_req *r = &t->req[i];
		uint64_t node = ROOT;

		for (uint32_t k = 0; k < r->n_hash; k++) {
			e[ne].node = node;
			e[ne++].id = t->hash[r->hash_off + k];
			node = child(node, t->hash[r->hash_off + k]);
		}
	}
	qsort(e, ne, sizeof(*e), cmp_edge);
	f = malloc((ne ? ne : 1) * sizeof(*f));
	if (!f) {
		free(e);
		return -1;
	}
	for (i = 0; i < ne; i++) {
		bool same_node = i > 0 && e[i].node == e[i - 1].node;

		if (same_node && e[i].id == e[i - 1].id)
			continue;
		if (same_node) {
			f[nf - 1].width++;
		} else {
			f[nf].node = e[i].node;
			f[nf++].width = 1;
		}
	}
	free(e);
	*out = f;
	*nout = nf;
	return 0;
}

/* The rule for ids that never fork: the id past the prefix every request
 * with ids shares. */
static void past_common(struct dbk_trace *t)
{
	const uint64_t *first = NULL;
	uint32_t common = UINT32_MAX, k;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const struct dbk_trace_req *r = &t->req[i];
		const uint64_t *h;

		if (r->n_hash == 0)
			continue;
		h = t->hash + r->hash_off;
		if (!first) {
			first = h;
			common = r->n_hash;
			continue;
		}
		for (k = 0; k < common && k < r->n_hash && h[k] == first[k]; k++)
			;
		common = k;
	}
	for (i = 0; i < t->n; i++) {
		struct dbk_trace_req *r = &t->req[i];

		r->has_session = first && r->n_hash > common;
		r->session = r->has_session ? t->hash[r->hash_off + common] : 0;
	}
}

int dbk_trace_sessions(struct dbk_trace *t)
{
	struct fork *f;
	size_t nf, i;
	bool forked = false;

	if (forks(t, &f, &nf) != 0)
		return -1;
	for (i = 0; i < nf && !forked; i++)
		forked = f[i].width > 1;
	if (!forked) {
		free(f);
		past_common(t);
		return 0;
	}
	for (i = 0; i < t->n; i++) {
		struct dbk_trace_req *r = &t->req[i];
		const uint64_t *h = t->hash + r->hash_off;
		uint64_t node = ROOT;
		uint32_t best = 1, at = 0, k;

		/* The edges of r's path start at nodes 0..n_hash-1: a fork
		 * r passes through has one of r's ids after it. */
		for (k = 0; k < r->n_hash; k++) {
			uint32_t w = width_of(f, nf, node);

			if (w > 1 && w >= best) {
				best = w;
				at = k + 1;
			}
			node = child(node, h[k]);
		}
		/* A request that ends where its widest fork (the deepest of
		 * equals) would be holds only the prefix that conversations
		 * share: no conversation of its own. */
		if (at && width_of(f, nf, node) >= best)
			at = 0;
		r->has_session = at > 0;
		r->session = at > 0 ? h[at - 1] : 0;
	}
	free(f);
	return 0;
}
