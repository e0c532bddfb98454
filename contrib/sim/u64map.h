/* A map from 64-bit keys to 32-bit values: open addressing, linear
 * probing, backward-shift deletion, grown by doubling at 1/2 load. The
 * routers' tables (prefix trees, block indexers) are keyed by hashes the
 * simulator computes itself, so the keys are already mixed; the map
 * mixes them once more so that sequential keys spread too.
 *
 * Written here rather than taken from a library: the simulator links no
 * general container library, and this is the one shape it needs. */
#ifndef DBK_SIM_U64MAP_H
#define DBK_SIM_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbk_u64map {
	uint64_t *keys;
	uint32_t *vals;
	uint8_t *used;
	size_t cap, n; /* cap: a power of two, or 0 before the first put */
};

void dbk_u64map_init(struct dbk_u64map *m);
void dbk_u64map_free(struct dbk_u64map *m);
/* The value's slot, NULL when absent; valid until the next put or del. */
uint32_t *dbk_u64map_get(const struct dbk_u64map *m, uint64_t key);
/* Inserts or overwrites. 0, or -1 when memory ran short (map unchanged). */
int dbk_u64map_put(struct dbk_u64map *m, uint64_t key, uint32_t val);
/* True when the key was there. */
bool dbk_u64map_del(struct dbk_u64map *m, uint64_t key);

/* splitmix64's finalizer: a bijection that spreads every input bit. */
uint64_t dbk_u64map_mix64(uint64_t x);
/* Combines a chain value with the next item (order matters). */
uint64_t dbk_u64map_mix64_pair(uint64_t a, uint64_t b);

#endif
