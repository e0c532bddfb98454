/* Which server was recently sent which prompt prefix: the router's guess
 * at each server's prefix cache, as SGLang's approximate radix tree or
 * llm-d's block index are, in bounded memory.
 *
 * Pure, no clock. A fixed table of entries keyed by prefix keys
 * (agent/prefix_key.h: chained, so a key names its whole prefix), set
 * associative: DBK_PIDX_ASSOC entries a set, the least recently touched
 * of a set is overwritten when a new key needs room. Each entry remembers
 * the DBK_PIDX_WAYS servers that were most recently sent its prefix, with
 * a stamp the caller chooses (the predictor uses the server's count of
 * tokens sent, so that a prefix's age is measured in cache turnover) and
 * the prompt length of that request. Approximate by design: an entry may
 * be forgotten early (its set was full), a server past the ways is not
 * recorded, and the index cannot know what the server evicted; the
 * caller ages stamps for that. Never allocates after creation. */
#ifndef DBK_PREFIX_INDEX_H
#define DBK_PREFIX_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define DBK_PIDX_WAYS 4u
#define DBK_PIDX_ASSOC 4u
/* Entries by default: ~8 MB, the first 15 KB of ~4,000 distinct prompts. */
#define DBK_PIDX_DEFAULT_ENTRIES 131072u

/* One server's match of a request's keys. */
struct dbk_pidx_hit {
	uint32_t server;
	uint32_t blocks;        /* leading keys this server was sent (>= 1) */
	uint32_t stamp;         /* the caller's stamp when last sent */
	uint32_t prompt_tokens; /* that request's prompt length */
};

struct dbk_pidx;

/* entries is rounded up to a power of two >= DBK_PIDX_ASSOC (0: the
 * default). NULL when out of memory or nservers is 0. */
struct dbk_pidx *dbk_pidx_new(unsigned nservers, size_t entries);
void dbk_pidx_free(struct dbk_pidx *x);

/* The servers whose recorded prefixes match keys[0..nkeys) longest, best
 * first: at most max_hits (DBK_PIDX_WAYS * 2 is plenty), each with the
 * number of leading keys matched. A server appears once. Costs
 * O(log nkeys) lookups per server reported, not O(nkeys): it searches for
 * the deepest key recorded, relying on chained keys (a server sent key i
 * was sent keys 0..i-1 at the same time). Returns the count. */
size_t dbk_pidx_match(const struct dbk_pidx *x, const uint64_t *keys, size_t nkeys,
                      struct dbk_pidx_hit *hits, size_t max_hits);

/* Records that server was sent keys[0..nkeys), now at stamp, for a
 * prompt of prompt_tokens. O(nkeys). */
void dbk_pidx_insert(struct dbk_pidx *x, unsigned server, const uint64_t *keys, size_t nkeys,
                     uint32_t stamp, uint32_t prompt_tokens);

/* Entries in use, and the table's size. */
size_t dbk_pidx_used(const struct dbk_pidx *x);
size_t dbk_pidx_capacity(const struct dbk_pidx *x);

#endif
