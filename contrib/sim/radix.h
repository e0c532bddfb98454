/* The approximate radix tree of SGLang's model gateway and the vLLM
 * Router (policy_cache_aware.c): one tree of request texts shared by all
 * instances ("tenants"), each node remembering which tenants were sent
 * that prefix and when, each tenant's size in characters, and an LRU
 * eviction of a tenant's leaves when it holds more than a maximum.
 *
 * The peers' tree splits on characters; here the unit is a prompt
 * segment (prompt.h), whose text two requests either share whole or not
 * at all, so a node is a segment chain key and its size that segment's
 * characters. A shorter last segment of a prefix another request sent
 * longer matches its own length, as the character tree would.
 *
 * Pure: model time is passed in. */
#ifndef DBK_SIM_RADIX_H
#define DBK_SIM_RADIX_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"
#include "u64map.h"

struct dbk_radix_tenant_ref {
	uint32_t tenant;
	double last_s; /* last access of this prefix for the tenant */
};

struct dbk_radix_node {
	uint32_t chars; /* longest text seen for this segment */
	uint32_t depth; /* segments from the root, 1-based */
	uint32_t ntenants, captenants;
	struct dbk_radix_tenant_ref *tenants;
};

struct dbk_radix {
	unsigned ntenants;
	uint64_t *tenant_chars; /* the peers' tenant_char_count */
	struct dbk_radix_node *nodes;
	size_t nnodes, capnodes;
	struct dbk_u64map index; /* chain key -> node */
};

struct dbk_radix_match {
	uint64_t matched_chars;
	uint64_t input_chars;
	int tenant; /* holder of the deepest match; -1: none */
};

int dbk_radix_init(struct dbk_radix *t, unsigned ntenants);
void dbk_radix_free(struct dbk_radix *t);
/* Longest prefix of r's prompt in the tree, and the tenant that touched
 * the deepest matched node most recently. */
void dbk_radix_match(const struct dbk_radix *t, const struct dbk_sim_req *r,
                     struct dbk_radix_match *out);
/* Records r's prompt for tenant at time now_s. 0, or -1 (memory). */
int dbk_radix_insert(struct dbk_radix *t, const struct dbk_sim_req *r, unsigned tenant,
                     double now_s);
/* The tenant holding the fewest characters (the lowest index among
 * equals). */
unsigned dbk_radix_smallest_tenant(const struct dbk_radix *t);
/* Forgets every prefix of tenant (its size drops to 0): the peers'
 * remove_tenant, when a worker leaves. */
void dbk_radix_remove_tenant(struct dbk_radix *t, unsigned tenant);
/* For every tenant above max_chars, drops its least recently used leaves
 * until it is not. Returns the nodes dropped, or -1 (memory). */
long dbk_radix_evict(struct dbk_radix *t, uint64_t max_chars);

#endif
