/* The prefix indexer of the Gateway API Inference Extension's
 * prefix-cache scorer (used by llm-d's endpoint picker): which servers
 * were sent which prompt block hashes, each server remembering at most a
 * fixed number of blocks, least recently added first out.
 *   kubernetes-sigs/gateway-api-inference-extension,
 *   pkg/epp/scheduling/framework/plugins/multi/prefix/indexer.go and
 *   plugin.go at commit 00913f9205cd1d16fe03c0c25a83808dfebc2c89.
 *
 * Pure; servers are 0..n-1. */
#ifndef DBK_SIM_BLOCKINDEX_H
#define DBK_SIM_BLOCKINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "u64map.h"

struct dbk_blockindex {
	unsigned nservers, words; /* words: uint64 per server set */
	uint32_t capacity;        /* blocks per server */
	/* Per server: an LRU ring of entries, most recent at head. */
	struct dbk_bi_entry *ent; /* nservers x capacity */
	uint32_t *head, *count;
	struct dbk_u64map where; /* (hash, server) -> entry slot */
	struct dbk_u64map sets;  /* hash -> set index */
	uint64_t *setbits;       /* sets x words */
	size_t nsets, capsets;
};

int dbk_blockindex_init(struct dbk_blockindex *bi, unsigned nservers, uint32_t capacity);
void dbk_blockindex_free(struct dbk_blockindex *bi);
/* Servers holding hash, as a bit set of words uint64s; NULL: none ever. */
const uint64_t *dbk_blockindex_get(const struct dbk_blockindex *bi, uint64_t hash);
/* Records hashes for server (each becomes its most recent). 0 or -1. */
int dbk_blockindex_add(struct dbk_blockindex *bi, const uint64_t *hashes, size_t n,
                       unsigned server);
/* Forgets every block of server: a new pod's name has no entries. */
void dbk_blockindex_clear(struct dbk_blockindex *bi, unsigned server);
/* The peer's matchLongestPrefix: for i = 0.., every server holding
 * hashes[i] scores one more, until a hash no server holds. match[] has
 * nservers counters, zeroed here. */
void dbk_blockindex_match(const struct dbk_blockindex *bi, const uint64_t *hashes, size_t n,
                          uint32_t *match);

#endif
