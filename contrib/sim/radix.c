/* Approximate radix tree over prompt segments; see radix.h. */
#include "radix.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "prompt.h"

int dbk_radix_init(struct dbk_radix *t, unsigned ntenants)
{
	memset(t, 0, sizeof(*t));
	dbk_u64map_init(&t->index);
	t->ntenants = ntenants;
	t->tenant_chars = calloc(ntenants ? ntenants : 1, sizeof(*t->tenant_chars));
	return t->tenant_chars ? 0 : -1;
}

void dbk_radix_free(struct dbk_radix *t)
{
	size_t i;

	for (i = 0; i < t->nnodes; i++)
		free(t->nodes[i].tenants);
	free(t->nodes);
	free(t->tenant_chars);
	dbk_u64map_free(&t->index);
	memset(t, 0, sizeof(*t));
}

static struct dbk_radix_tenant_ref *find_ref(const struct dbk_radix_node *nd, unsigned tenant)
{
	uint32_t k;

	for (k = 0; k < nd->ntenants; k++)
		if (nd->tenants[k].tenant == tenant)
			return &nd->tenants[k];
	return NULL;
}

void dbk_radix_match(const struct dbk_radix *t, const struct dbk_sim_req *r,
                     struct dbk_radix_match *out)
{
	uint32_t i, n = dbk_sim_prompt_nseg(r);
	uint64_t key = 0;
	const struct dbk_radix_node *deepest = NULL;

	out->matched_chars = 0;
	out->input_chars = (uint64_t)r->input_tokens * DBK_BYTES_PER_TOKEN;
	out->tenant = -1;
	for (i = 0; i < n; i++) {
		uint32_t *v, want;
		const struct dbk_radix_node *nd;

		key = dbk_sim_prompt_chain(r, i, key);
		v = dbk_u64map_get(&t->index, key);
		if (!v || t->nodes[*v].ntenants == 0)
			break;
		nd = &t->nodes[*v];
		deepest = nd;
		want = dbk_sim_prompt_seg_tokens(r, i) * DBK_BYTES_PER_TOKEN;
		out->matched_chars += want < nd->chars ? want : nd->chars;
		if (want > nd->chars)
			break; /* the tree has this segment shorter */
	}
	if (deepest) {
		uint32_t k, best = 0;

		for (k = 1; k < deepest->ntenants; k++)
			if (deepest->tenants[k].last_s > deepest->tenants[best].last_s)
				best = k;
		out->tenant = (int)deepest->tenants[best].tenant;
	}
}

static long node_for(struct dbk_radix *t, uint64_t key, uint32_t depth)
{
	uint32_t *v = dbk_u64map_get(&t->index, key);
	struct dbk_radix_node *nd;

	if (v)
		return *v;
	nd = dbk_array_room(t->nodes, &t->capnodes, t->nnodes, sizeof(*nd), 1024);
	if (!nd)
		return -1;
	t->nodes = nd;
	if (dbk_u64map_put(&t->index, key, (uint32_t)t->nnodes) != 0)
		return -1;
	nd = &t->nodes[t->nnodes];
	memset(nd, 0, sizeof(*nd));
	nd->depth = depth;
	return (long)t->nnodes++;
}

static int touch(struct dbk_radix *t, struct dbk_radix_node *nd, unsigned tenant, double now_s)
{
	struct dbk_radix_tenant_ref *ref = find_ref(nd, tenant);

	if (!ref) {
		if (nd->ntenants == nd->captenants) {
			uint32_t cap = nd->captenants ? nd->captenants * 2 : 2;
			struct dbk_radix_tenant_ref *nr = realloc(nd->tenants, cap * sizeof(*nr));

			if (!nr)
				return -1;
			nd->tenants = nr;
			nd->captenants = cap;
		}
		ref = &nd->tenants[nd->ntenants++];
		ref->tenant = tenant;
		t->tenant_chars[tenant] += nd->chars;
	}
	ref->last_s = now_s;
	return 0;
}

int dbk_radix_insert(struct dbk_radix *t, const struct dbk_sim_req *r, unsigned tenant,
                     double now_s)
{
	uint32_t i, k, n = dbk_sim_prompt_nseg(r);
	uint64_t key = 0;

	for (i = 0; i < n; i++) {
		struct dbk_radix_node *nd;
		uint32_t chars = dbk_sim_prompt_seg_tokens(r, i) * DBK_BYTES_PER_TOKEN;
		long at;

		key = dbk_sim_prompt_chain(r, i, key);
		at = node_for(t, key, i + 1);
		if (at < 0)
			return -1;
		nd = &t->nodes[at];
		if (chars > nd->chars) {
			/* The segment grew: every holder now holds more. */
			for (k = 0; k < nd->ntenants; k++)
				t->tenant_chars[nd->tenants[k].tenant] += chars - nd->chars;
			nd->chars = chars;
		}
		if (touch(t, nd, tenant, now_s) != 0)
			return -1;
	}
	return 0;
}

unsigned dbk_radix_smallest_tenant(const struct dbk_radix *t)
{
	unsigned i, best = 0;

	for (i = 1; i < t->ntenants; i++)
		if (t->tenant_chars[i] < t->tenant_chars[best])
			best = i;
	return best;
}

struct victim {
	double last_s;
	uint32_t depth, node;
};

/* Oldest first; among equal times the deepest first. An insert touches a
 * whole path at one time and later inserts only raise times, so a node
 * is never older than its descendants: this order meets leaves first. */
static int victim_cmp(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	if (x->last_s != y->last_s)
		return x->last_s < y->last_s ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static void drop_ref(struct dbk_radix *t, struct dbk_radix_node *nd, unsigned tenant)
{
	struct dbk_radix_tenant_ref *ref = find_ref(nd, tenant);

	if (!ref)
		return;
	t->tenant_chars[tenant] -= nd->chars;
	*ref = nd->tenants[--nd->ntenants];
}

void dbk_radix_remove_tenant(struct dbk_radix *t, unsigned tenant)
{
	for (size_t i = 0; i < t->nnodes; i++)
		drop_ref(t, &t->nodes[i], tenant);
}

long dbk_radix_evict(struct dbk_radix *t, uint64_t max_chars)
{
	struct victim *v;
	unsigned tn;
	long dropped = 0;

	for (tn = 0; tn < t->ntenants; tn++) {
		size_t i, nv = 0;

		if (t->tenant_chars[tn] <= max_chars)
			continue;
		v = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*v));
		if (!v)
			return -1;
		for (i = 0; i < t->nnodes; i++) {
			const struct dbk_radix_tenant_ref *ref = find_ref(&t->nodes[i], tn);

			if (ref) {
				v[nv].last_s = ref->last_s;
				v[nv].depth = t->nodes[i].depth;
				v[nv].node = (uint32_t)i;
				nv++;
			}
		}
		qsort(v, nv, sizeof(*v), victim_cmp);
		for (i = 0; i < nv && t->tenant_chars[tn] > max_chars; i++) {
			drop_ref(t, &t->nodes[v[i].node], tn);
			dropped++;
		}
		free(v);
	}
	return dropped;
}
