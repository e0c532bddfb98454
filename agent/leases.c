/* Lease table: see leases.h. */
#include "leases.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

#define DBK_LEASE_MIN_SLOTS 16

static void slot_push(struct dbk_lease **slots, size_t mask, struct dbk_lease *e)
{
	struct dbk_lease **head = &slots[e->hash & mask];

	e->hnext = *head;
	if (e->hnext)
		e->hnext->hpprev = &e->hnext;
	*head = e;
	e->hpprev = head;
}

int dbk_lease_init(struct dbk_lease_table *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	/* The ids' hash is keyed (dbk_hash_bytes): they may come from clients
	 * (X-Request-Id), and a secret key keeps them from piling into one
	 * chain. Spreads a possibly weak seed over both key words. */
	t->k0 = dbk_hash_next(&seed);
	t->k1 = dbk_hash_next(&seed);
	t->slots = calloc(DBK_LEASE_MIN_SLOTS, sizeof(*t->slots));
	if (!t->slots)
		return -1;
	t->mask = DBK_LEASE_MIN_SLOTS - 1;
	return 0;
}

void dbk_lease_fini(struct dbk_lease_table *t)
{
	struct dbk_lease *e = t->oldest;

	while (e) {
		struct dbk_lease *next = e->newer;

		free(e);
		e = next;
	}
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* Doubles the slot array. On failure the table keeps working with longer
 * chains, which is better than refusing the lease. */
static void grow(struct dbk_lease_table *t)
{
	size_t n = (t->mask + 1) * 2;
	struct dbk_lease **slots;

	if (n > SIZE_MAX / sizeof(*slots))
		return;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return;
	for (struct dbk_lease *e = t->oldest; e; e = e->newer)
		slot_push(slots, n - 1, e);
	free(t->slots);
	t->slots = slots;
	t->mask = n - 1;
}

static struct dbk_lease *find_hashed(const struct dbk_lease_table *t, uint64_t h, const char *id,
                                     size_t id_len)
{
	for (struct dbk_lease *e = t->slots[h & t->mask]; e; e = e->hnext)
		if (e->hash == h && e->id_len == id_len && memcmp(e->id, id, id_len) == 0)
			return e;
	return NULL;
}

struct dbk_lease *dbk_lease_find(const struct dbk_lease_table *t, const char *id, size_t id_len)
{
	return find_hashed(t, dbk_hash_bytes(t->k0, t->k1, id, id_len), id, id_len);
}

enum dbk_lease_insert_result dbk_lease_insert(struct dbk_lease_table *t, const char *id,
                                              size_t id_len, const struct dbk_bal_lease *val,
                                              struct dbk_lease **out)
{
	uint64_t h = dbk_hash_bytes(t->k0, t->k1, id, id_len);
	struct dbk_lease *e = find_hashed(t, h, id, id_len);

	if (e) {
		if (out)
			*out = e;
		return DBK_LEASE_EXISTS;
	}
	if (id_len > SIZE_MAX - sizeof(*e) - 1)
		return DBK_LEASE_NOMEM;
	e = malloc(sizeof(*e) + id_len + 1);
	if (!e)
		return DBK_LEASE_NOMEM;
	e->hash = h;
	e->val = *val;
	e->id_len = id_len;
	if (id_len)
		memcpy(e->id, id, id_len);
	e->id[id_len] = '\0';

	if (t->count >= t->mask + 1)
		grow(t);
	slot_push(t->slots, t->mask, e);
	e->newer = NULL;
	e->older = t->newest;
	if (t->newest)
		t->newest->newer = e;
	else
		t->oldest = e;
	t->newest = e;
	t->count++;
	if (out)
		*out = e;
	return DBK_LEASE_INSERTED;
}

void dbk_lease_unlink(struct dbk_lease_table *t, struct dbk_lease *e)
{
	*e->hpprev = e->hnext;
	if (e->hnext)
		e->hnext->hpprev = e->hpprev;
	if (e->older)
		e->older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		t->newest = e->older;
	e->hnext = e->older = e->newer = NULL;
	e->hpprev = NULL;
	t->count--;
}

void dbk_lease_free(struct dbk_lease *e) { free(e); }

void dbk_lease_delete(struct dbk_lease_table *t, struct dbk_lease *e)
{
	dbk_lease_unlink(t, e);
	free(e);
}

bool dbk_lease_remove(struct dbk_lease_table *t, const char *id, size_t id_len,
                      struct dbk_bal_lease *out)
{
	struct dbk_lease *e = dbk_lease_find(t, id, id_len);

	if (!e)
		return false;
	if (out)
		*out = e->val;
	dbk_lease_delete(t, e);
	return true;
}

size_t dbk_lease_longest_chain(const struct dbk_lease_table *t)
{
	size_t longest = 0;

	for (size_t i = 0; i <= t->mask; i++) {
		size_t n = 0;

		for (const struct dbk_lease *e = t->slots[i]; e; e = e->hnext)
			n++;
		if (n > longest)
			longest = n;
	}
	return longest;
}
