/* The pool's model table (models.h): interned ids, each with the bitset
 * of the servers that list it. */
#include "models.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

/* Open addressing at most half full: a probe or two per lookup. */
#define SLOTS (2 * DBK_MODELS_MAX)
#define EMPTY UINT16_MAX

struct entry {
	uint64_t hash;
	unsigned refs;   /* servers listing it */
	uint16_t parent; /* an adapter's base model's entry, or EMPTY */
	uint16_t len;    /* 0: the entry is free */
	char id[DBK_VM_MODEL_ID_MAX + 1];
};

struct dbk_models {
	unsigned n, words;
	uint16_t slot[SLOTS];
	struct entry *e;  /* DBK_MODELS_MAX */
	uint64_t *bits;   /* DBK_MODELS_MAX x words: servers listing entry i */
	uint64_t *open;   /* words: unknown or absent, a candidate for any model */
	uint64_t *absent; /* words */
	uint16_t *list;   /* n x DBK_VM_MAX_MODELS: a known server's entries */
	uint8_t *count;   /* n */
	struct dbk_models_stats stats;
};

/* Unkeyed: only servers' /v1/models add ids; a client's model only
 * looks one up, in a table at most half full. */
static uint64_t hash_of(const uint8_t *p, size_t len)
{
	return dbk_hash_bytes(DBK_HASH_GOLDEN, 0, p, len);
}

static bool bit(const uint64_t *w, unsigned s) { return (w[s / 64] >> (s % 64)) & 1; }
static void set_bit(uint64_t *w, unsigned s) { w[s / 64] |= UINT64_C(1) << (s % 64); }
static void clear_bit(uint64_t *w, unsigned s) { w[s / 64] &= ~(UINT64_C(1) << (s % 64)); }

struct dbk_models *dbk_models_new(unsigned nservers)
{
	struct dbk_models *m = calloc(1, sizeof(*m));

	if (!m || !nservers)
		return free(m), NULL;
	m->n = nservers;
	m->words = (nservers + 63) / 64;
	m->e = calloc(DBK_MODELS_MAX, sizeof(*m->e));
	m->bits = calloc((size_t)DBK_MODELS_MAX * m->words, sizeof(uint64_t));
	m->open = calloc(m->words, sizeof(uint64_t));
	m->absent = calloc(m->words, sizeof(uint64_t));
	m->list = calloc((size_t)nservers * DBK_VM_MAX_MODELS, sizeof(uint16_t));
	m->count = calloc(nservers, 1);
	if (!m->e || !m->bits || !m->open || !m->absent || !m->list || !m->count) {
		dbk_models_free(m);
		return NULL;
	}
	memset(m->slot, 0xff, sizeof(m->slot));
	for (unsigned s = 0; s < nservers; s++)
		set_bit(m->open, s);
	return m;
}

void dbk_models_free(struct dbk_models *m)
{
	if (!m)
		return;
	free(m->e);
	free(m->bits);
	free(m->open);
	free(m->absent);
	free(m->list);
	free(m->count);
	free(m);
}

/* The entry of id, or EMPTY. */
static uint16_t find(const struct dbk_models *m, const uint8_t *id, size_t len, uint64_t h)
{
	for (unsigned i = (unsigned)(h % SLOTS), k = 0; k < SLOTS; i = (i + 1) % SLOTS, k++) {
		uint16_t x = m->slot[i];
		if (x == EMPTY)
			return EMPTY;
		const struct entry *e = &m->e[x];
		if (e->hash == h && e->len == len && memcmp(e->id, id, len) == 0)
			return x;
	}
	return EMPTY;
}

static void place(struct dbk_models *m, uint16_t x)
{
	unsigned i = (unsigned)(m->e[x].hash % SLOTS);

	while (m->slot[i] != EMPTY)
		i = (i + 1) % SLOTS;
	m->slot[i] = x;
}

/* id's entry, made if new; EMPTY when the table is full. */
static uint16_t intern(struct dbk_models *m, const char *id)
{
	size_t len = strlen(id);
	uint64_t h = hash_of((const uint8_t *)id, len);
	uint16_t x = find(m, (const uint8_t *)id, len, h);

	if (x != EMPTY)
		return x;
	for (x = 0; x < DBK_MODELS_MAX && m->e[x].len; x++)
		;
	if (x == DBK_MODELS_MAX)
		return EMPTY;
	struct entry *e = &m->e[x];
	*e = (struct entry){ .hash = h, .parent = EMPTY, .len = (uint16_t)len };
	memcpy(e->id, id, len + 1);
	place(m, x);
	m->stats.ids++;
	return x;
}

/* Entries no server lists leave the table; the table is rebuilt from
 * those left (rare: a server's list changed), so probes never cross a
 * hole. */
static void drop_unused(struct dbk_models *m)
{
	bool dropped = false;

	for (unsigned x = 0; x < DBK_MODELS_MAX; x++)
		if (!m->e[x].refs && m->e[x].len) {
			m->e[x].len = 0;
			m->stats.ids--;
			dropped = true;
		}
	if (!dropped)
		return;
	memset(m->slot, 0xff, sizeof(m->slot));
	for (unsigned x = 0; x < DBK_MODELS_MAX; x++) {
		struct entry *e = &m->e[x];
		if (!e->len)
			continue;
		place(m, (uint16_t)x);
		if (e->parent != EMPTY && !m->e[e->parent].len)
			e->parent = EMPTY;
	}
}

/* The server's list, if known, let go of (entries not yet dropped). */
static void unlist(struct dbk_models *m, unsigned s)
{
	const uint16_t *l = &m->list[(size_t)s * DBK_VM_MAX_MODELS];

	for (unsigned i = 0; i < m->count[s]; i++) {
		clear_bit(&m->bits[(size_t)l[i] * m->words], s);
		m->e[l[i]].refs--;
	}
	m->count[s] = 0;
}

static void make_open(struct dbk_models *m, unsigned s, bool absent)
{
	unlist(m, s);
	drop_unused(m);
	set_bit(m->open, s);
	if (absent)
		set_bit(m->absent, s);
	else
		clear_bit(m->absent, s);
}

void dbk_models_forget(struct dbk_models *m, unsigned s)
{
	if (s < m->n)
		make_open(m, s, false);
}

void dbk_models_absent(struct dbk_models *m, unsigned s)
{
	if (s < m->n)
		make_open(m, s, true);
}

/* An adapter's parent is kept when it is interned too (vLLM lists an
 * adapter's base model beside it). */
static uint16_t find_str(const struct dbk_models *m, const char *id)
{
	size_t len = strlen(id);

	return find(m, (const uint8_t *)id, len, hash_of((const uint8_t *)id, len));
}

int dbk_models_set(struct dbk_models *m, unsigned s, const struct dbk_vm_models *l)
{
	uint16_t fresh[DBK_VM_MAX_MODELS];
	unsigned n = 0;
	bool full = false;

	if (s >= m->n)
		return -1;
	for (unsigned i = 0; i < l->n && i < DBK_VM_MAX_MODELS; i++) {
		uint16_t x = intern(m, l->m[i].id);
		bool dup = false;

		if (x == EMPTY) {
			full = true;
			break;
		}
		for (unsigned k = 0; k < n; k++)
			dup = dup || fresh[k] == x;
		if (!dup) {
			fresh[n++] = x;
			m->e[x].refs++;
		}
	}
	/* The old list goes only now, so that the ids both lists share keep
	 * their entries. */
	unlist(m, s);
	if (full) {
		for (unsigned k = 0; k < n; k++)
			m->e[fresh[k]].refs--;
		make_open(m, s, false);
		m->stats.full++;
		return -1;
	}
	memcpy(&m->list[(size_t)s * DBK_VM_MAX_MODELS], fresh, n * sizeof(*fresh));
	m->count[s] = (uint8_t)n;
	for (unsigned k = 0; k < n; k++)
		set_bit(&m->bits[(size_t)fresh[k] * m->words], s);
	drop_unused(m);
	for (unsigned i = 0; i < l->n; i++)
		if (l->m[i].parent[0])
			m->e[find_str(m, l->m[i].id)].parent = find_str(m, l->m[i].parent);
	clear_bit(m->open, s);
	clear_bit(m->absent, s);
	m->stats.lists++;
	return 0;
}

enum dbk_models_state dbk_models_state(const struct dbk_models *m, unsigned s)
{
	if (s >= m->n || bit(m->absent, s))
		return DBK_MODELS_ABSENT;
	return bit(m->open, s) ? DBK_MODELS_UNKNOWN : DBK_MODELS_KNOWN;
}

bool dbk_models_some_known(const struct dbk_models *m)
{
	for (unsigned w = 0; w < m->words; w++) {
		uint64_t pad = w + 1 == m->words && m->n % 64 ? ~UINT64_C(0) << (m->n % 64) : 0;

		if (~(m->open[w] | pad))
			return true;
	}
	return false;
}

const char *dbk_models_id(const struct dbk_models *m, unsigned s, unsigned i, const char **parent)
{
	if (s >= m->n || i >= m->count[s])
		return NULL;
	const struct entry *e = &m->e[m->list[(size_t)s * DBK_VM_MAX_MODELS + i]];
	if (parent)
		*parent = e->parent == EMPTY ? "" : m->e[e->parent].id;
	return e->id;
}

unsigned dbk_models_words(const struct dbk_models *m) { return m->words; }

enum dbk_models_pick dbk_models_pick(const struct dbk_models *m, const uint8_t *id, size_t len,
                                     uint64_t *set)
{
	uint16_t x = len && len <= DBK_VM_MODEL_ID_MAX ? find(m, id, len, hash_of(id, len)) : EMPTY;
	const uint64_t *b = x == EMPTY ? NULL : &m->bits[(size_t)x * m->words];
	uint64_t all = ~UINT64_C(0), listed = 0, unknown = 0;

	for (unsigned w = 0; w < m->words; w++) {
		uint64_t v = (b ? b[w] : 0) | m->open[w];
		/* Bits past the last server count as candidates. */
		uint64_t pad = w + 1 == m->words && m->n % 64 ? ~UINT64_C(0) << (m->n % 64) : 0;
		all &= v | pad;
		listed |= b ? b[w] : 0;
		unknown |= m->open[w] & ~m->absent[w];
	}
	if (all == ~UINT64_C(0))
		return DBK_MODELS_ANY;
	if (!listed && !unknown)
		return DBK_MODELS_NONE;
	for (unsigned w = 0; w < m->words; w++)
		set[w] = (b ? b[w] : 0) | m->open[w];
	return DBK_MODELS_SOME;
}

bool dbk_models_adapter(const struct dbk_models *m, const uint8_t *id, size_t len)
{
	uint16_t x = len && len <= DBK_VM_MODEL_ID_MAX ? find(m, id, len, hash_of(id, len)) : EMPTY;

	return x != EMPTY && m->e[x].parent != EMPTY;
}

const struct dbk_models_stats *dbk_models_stats(const struct dbk_models *m) { return &m->stats; }
