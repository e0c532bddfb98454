/* The balancer's lease table: live leases keyed by request id.
 *
 * A chained hash table (power-of-two bucket array, grown by rehashing)
 * whose entries are also threaded on a doubly-linked list in insertion
 * order, so the oldest lease is found in O(1) for expiry. Each entry is
 * one allocation holding its own copy of the id; lookups and deletes
 * allocate nothing. Not thread-safe, like the balancer that owns it.
 *
 * Memory per lease (LP64): its entry, sizeof(struct dbk_lease) = 104
 * bytes (48 of links, hash and id length, 56 of the lease's value with
 * the policy's six-word slot) plus the id and its NUL, in one malloc;
 * and one or two bucket pointers (8 bytes each: the bucket array
 * doubles when the count reaches it). A 36-byte id (a UUID) takes a
 * 160-byte chunk of glibc's malloc, about 176 bytes a lease in all.
 */
#ifndef DBK_LEASES_H
#define DBK_LEASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "balancer_types.h"

struct dbk_lease {
	struct dbk_lease *hnext;         /* hash chain */
	struct dbk_lease **hpprev;       /* the pointer that points at us */
	struct dbk_lease *older, *newer; /* insertion order */
	uint64_t hash;
	struct dbk_bal_lease val;
	size_t id_len;
	char id[]; /* id_len bytes, then a NUL */
};

struct dbk_lease_table {
	struct dbk_lease **slots;
	size_t mask; /* slot count - 1 */
	size_t count;
	struct dbk_lease *oldest, *newest;
	uint64_t k0, k1; /* hash key */
};

/* seed keys the hash so that ids chosen by a client cannot be made to
 * collide on purpose without knowing it. Returns 0, or -1 out of memory. */
int dbk_lease_init(struct dbk_lease_table *t, uint64_t seed);
/* Frees every entry and the slots. */
void dbk_lease_fini(struct dbk_lease_table *t);

struct dbk_lease *dbk_lease_find(const struct dbk_lease_table *t, const char *id, size_t id_len);

enum dbk_lease_insert_result {
	DBK_LEASE_INSERTED = 0,
	DBK_LEASE_EXISTS, /* *out is the existing entry */
	DBK_LEASE_NOMEM,
};

/* Adds id (copied) as the newest entry. out may be NULL. */
enum dbk_lease_insert_result dbk_lease_insert(struct dbk_lease_table *t, const char *id,
                                              size_t id_len, const struct dbk_bal_lease *val,
                                              struct dbk_lease **out);

/* Unlinks e from the table without freeing it, so that the caller can
 * still read e->id; dbk_lease_free it afterwards. */
void dbk_lease_unlink(struct dbk_lease_table *t, struct dbk_lease *e);
void dbk_lease_free(struct dbk_lease *e);

/* Unlinks and frees e. */
void dbk_lease_delete(struct dbk_lease_table *t, struct dbk_lease *e);

/* Finds, copies the value to out (may be NULL) and deletes. Returns false
 * if there is no such id. */
bool dbk_lease_remove(struct dbk_lease_table *t, const char *id, size_t id_len,
                      struct dbk_bal_lease *out);

static inline struct dbk_lease *dbk_lease_oldest(const struct dbk_lease_table *t)
{
	return t->oldest;
}

static inline struct dbk_lease *dbk_lease_newer(const struct dbk_lease *e) { return e->newer; }

static inline size_t dbk_lease_count(const struct dbk_lease_table *t) { return t->count; }

/* Slot count, for tests of growth. */
static inline size_t dbk_lease_capacity(const struct dbk_lease_table *t) { return t->mask + 1; }

/* The longest hash chain, for tests of the hash's spread. O(count). */
size_t dbk_lease_longest_chain(const struct dbk_lease_table *t);

#endif
