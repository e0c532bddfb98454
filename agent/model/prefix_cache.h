/* The KV block pool of one vLLM instance with automatic prefix caching,
 * and the token identity the stub, the bench and the simulator share.
 *
 * Modelled on vLLM V1 (vllm-project/vllm, vllm/v1/core/block_pool.py at
 * c59cb79, kv_cache_manager.py at 003df29, kv_cache_utils.py): a fixed
 * set of blocks; each full block of a request is keyed by a hash chained
 * over the whole prefix (the parent block's hash and this block's
 * tokens), so equal keys mean equal prefixes; a block nobody references
 * goes to the tail of a free queue but keeps its key (still a cache hit)
 * until it is taken from the head for new data (least recently freed
 * first). Pure: no I/O, no clock, no globals.
 *
 * Token identity without a tokenizer: a text prompt is 4 bytes a token
 * (the length estimate everywhere), so a 16-token block is 64 bytes of
 * prompt text; a token-id prompt is 16 ids a block, each hashed as 4
 * little-endian bytes. dbk_prefix_cache_hasher turns a byte stream into the
 * chained keys of its full blocks. */
#ifndef DBK_PREFIX_CACHE_H
#define DBK_PREFIX_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/chunker.h"

/* Bytes of prompt text per 16-token KV block (4 bytes a token). */
#define DBK_BLOCK_TEXT_BYTES 64u

/* Roots of the hash chains: text and token-id prompts never share. */
#define DBK_BLOCK_ROOT_TEXT 0x7465787400000001ull
#define DBK_BLOCK_ROOT_IDS 0x6964730000000002ull

/* The key of a block: parent's key and the block's bytes. */
uint64_t dbk_prefix_cache_hash(uint64_t parent, const void *bytes, size_t n);

/* Feeds bytes; every DBK_BLOCK_TEXT_BYTES completed appends one chained
 * key to a growing array (the trailing partial block has none). It points
 * into itself: initialise it where it stays. */
struct dbk_prefix_cache_hasher {
	uint64_t parent;
	struct dbk_chunker chunks;
	uint8_t buf[DBK_BLOCK_TEXT_BYTES];
	uint64_t *keys;
	uint32_t n, cap;
	uint32_t max; /* stop keeping keys past this many */
	bool oom;
};

void dbk_prefix_cache_hasher_init(struct dbk_prefix_cache_hasher *h, uint64_t root,
                                  uint32_t max_keys);
void dbk_prefix_cache_hasher_feed(struct dbk_prefix_cache_hasher *h, const void *p, size_t n);
/* Hands the keys to the caller (free() them); the hasher is reset. */
uint64_t *dbk_prefix_cache_hasher_take(struct dbk_prefix_cache_hasher *h, uint32_t *n);
void dbk_prefix_cache_hasher_free(struct dbk_prefix_cache_hasher *h);

/* ---- The pool. ---- */

#define DBK_PC_NONE UINT32_MAX

struct dbk_prefix_cache;

/* nblocks >= 1. Without caching no key is ever stored: the pool is a
 * plain free-block counter with block ids. */
struct dbk_prefix_cache *dbk_prefix_cache_new(uint32_t nblocks, bool caching);
void dbk_prefix_cache_free(struct dbk_prefix_cache *pc);

/* Blocks no request holds, cached ones included (vLLM's
 * get_num_free_blocks: what kv_cache_usage_perc is computed from). */
uint32_t dbk_prefix_cache_num_free(const struct dbk_prefix_cache *pc);
/* Blocks holding a key now (referenced or not). */
uint32_t dbk_prefix_cache_num_cached(const struct dbk_prefix_cache *pc);
uint64_t dbk_prefix_cache_evictions(const struct dbk_prefix_cache *pc);

/* Length of the longest run keys[0..k) that is cached, k <= n; with
 * evictable, how many of those blocks nobody holds (taking them makes
 * them unavailable for new data). Read-only. */
uint32_t dbk_prefix_cache_match(const struct dbk_prefix_cache *pc, const uint64_t *keys, uint32_t n,
                                uint32_t *evictable);

/* Takes the blocks of a match just made (same keys, n <= that match):
 * their ids go to ids[0..n), each gains a reference and leaves the free
 * queue. */
void dbk_prefix_cache_take(struct dbk_prefix_cache *pc, const uint64_t *keys, uint32_t n,
                           uint32_t *ids);

/* n fresh blocks from the head of the free queue into ids (a cached one
 * loses its key: evicted). -1 when fewer than n are free (nothing
 * taken). */
int dbk_prefix_cache_alloc(struct dbk_prefix_cache *pc, uint32_t n, uint32_t *ids);

/* Block id, now full, gets its key (no-op without caching). A key can be
 * held by several blocks, as in vLLM; a match finds the one keyed last. */
void dbk_prefix_cache_insert(struct dbk_prefix_cache *pc, uint32_t id, uint64_t key);

/* Drops one reference from each of ids[0..n), last first, so that a
 * request's tail blocks are evicted before its head (vLLM frees in
 * reverse order). */
void dbk_prefix_cache_release(struct dbk_prefix_cache *pc, const uint32_t *ids, uint32_t n);

#endif
