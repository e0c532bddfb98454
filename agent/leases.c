/* Lease table: see leases.h. */
#include "leases.h"

#include <stdlib.h>
#include <string.h>

#define DBK_LEASE_MIN_SLOTS 16

/* SipHash-1-3: request ids may come from clients (X-Request-Id), and a
 * keyed hash keeps them from piling into one chain. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
	v[0] += v[1]; v[1] = ROTL(v[1], 13); v[1] ^= v[0]; v[0] = ROTL(v[0], 32);
	v[2] += v[3]; v[3] = ROTL(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = ROTL(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = ROTL(v[1], 17); v[1] ^= v[2]; v[2] = ROTL(v[2], 32);
}

static uint64_t sip_hash(uint64_t k0, uint64_t k1, const char *in, size_t len)
{
	uint64_t v[4] = {
		k0 ^ UINT64_C(0x736f6d6570736575), k1 ^ UINT64_C(0x646f72616e646f6d),
		k0 ^ UINT64_C(0x6c7967656e657261), k1 ^ UINT64_C(0x7465646279746573),
	};
	const unsigned char *p = (const unsigned char *)in;
	size_t i, full = len & ~(size_t)7;
	uint64_t m, b = (uint64_t)len << 56;

	for (i = 0; i < full; i += 8) {
		/* Host byte order: the value only has to be consistent here. */
		memcpy(&m, p + i, 8);
		v[3] ^= m;
		sip_round(v);
		v[0] ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v[3] ^= b;
	sip_round(v);
	v[0] ^= b;
	v[2] ^= 0xff;
	sip_round(v);
	sip_round(v);
	sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* splitmix64: spreads a possibly weak seed over both key words. */
static uint64_t mix64(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

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
	t->k0 = mix64(&seed);
	t->k1 = mix64(&seed);
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

static struct dbk_lease *find_hashed(const struct dbk_lease_table *t, uint64_t h,
                                     const char *id, size_t id_len)
{
	for (struct dbk_lease *e = t->slots[h & t->mask]; e; e = e->hnext)
		if (e->hash == h && e->id_len == id_len && memcmp(e->id, id, id_len) == 0)
			return e;
	return NULL;
}

struct dbk_lease *dbk_lease_find(const struct dbk_lease_table *t,
                                 const char *id, size_t id_len)
{
	return find_hashed(t, sip_hash(t->k0, t->k1, id, id_len), id, id_len);
}

enum dbk_lease_insert_result dbk_lease_insert(struct dbk_lease_table *t,
                                              const char *id, size_t id_len,
                                              const struct dbk_bal_lease *val,
                                              struct dbk_lease **out)
{
	uint64_t h = sip_hash(t->k0, t->k1, id, id_len);
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

void dbk_lease_free(struct dbk_lease *e)
{
	free(e);
}

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
