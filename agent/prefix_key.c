/* Prefix keys from a body sample: a tolerant scanner over the top-level
 * JSON object (prefix_key.h). Every read is bounds-checked against the
 * sample's end; the sample ending anywhere simply ends the scan. */
#include "prefix_key.h"

#include <stddef.h>
#include <string.h>

#include "lib/hash.h"
#include "model/chunker.h"

struct pk_scan {
	const uint8_t *p, *end;
};

/* The block hasher: text is appended in pieces (the chunker cuts it);
 * every full block gives a key chained on the previous one. */
struct pk_hasher {
	struct dbk_chunker chunks;
	uint8_t block[DBK_PKEY_BLOCK_BYTES];
	uint64_t prev;
	uint64_t *keys;
	size_t nkeys, max_keys;
	size_t text_bytes;
};

static uint64_t pk_hash_bytes(uint64_t seed, const uint8_t *b, size_t n)
{
	uint64_t h = seed ^ (n * DBK_HASH_GOLDEN);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = dbk_hash_read64(b + i);
		h = (h ^ dbk_hash_fmix64(w + DBK_HASH_GOLDEN)) * 0x100000001b3ULL;
	}
	if (i < n) {
		uint64_t w = 0;
		memcpy(&w, b + i, n - i);
		h = (h ^ dbk_hash_fmix64(w + (uint64_t)(n - i))) * 0x100000001b3ULL;
	}
	return dbk_hash_fmix64(h);
}

static uint64_t pk_rotl(uint64_t v, unsigned r) { return (v << r) | (v >> (64 - r)); }

/* Constants xored into the words multiplied: every byte is 0xf8 or more,
 * which UTF-8 never uses, so a factor is never 0 for text. */
#define PK_K0 UINT64_C(0xf9fbfdfffaf8fcfe)
#define PK_K1 UINT64_C(0xfefcf8fafffdfbf9)
#define PK_K2 UINT64_C(0xfbf9fffdf8fafefc)

static uint64_t pk_step(uint64_t lane, const uint8_t *w)
{
	return pk_rotl(lane, 29) +
	       dbk_hash_mum(dbk_hash_read64(w) ^ PK_K0, dbk_hash_read64(w + 8) ^ PK_K1);
}

/* One block's key, chained on prev. The hottest loop of a ttft decision
 * (a 15 KB sample is ~60 blocks), so four independent lanes of 16 bytes
 * a step, each step one 128-bit product of the two words (wyhash's
 * step), added to the lane turned by 29 bits: a lane stays a bijection of
 * its previous value, and turning makes the order of steps count.
 * Measured on a 6 KB prompt (23 blocks): keys in 0.4 µs, where
 * pk_hash_bytes' word-at-a-time chain took 1.1 µs. */
static uint64_t pk_hash_block(uint64_t prev, const uint8_t *b)
{
	uint64_t l0 = prev, l1 = prev ^ PK_K0, l2 = prev ^ PK_K1, l3 = prev ^ PK_K2;

	for (size_t i = 0; i < DBK_PKEY_BLOCK_BYTES; i += 64) {
		l0 = pk_step(l0, b + i);
		l1 = pk_step(l1, b + i + 16);
		l2 = pk_step(l2, b + i + 32);
		l3 = pk_step(l3, b + i + 48);
	}
	return dbk_hash_fmix64(dbk_hash_mum(l0 ^ PK_K2, l1 ^ PK_K0) +
	                       dbk_hash_mum(l2 ^ PK_K1, l3 ^ PK_K2));
}

static bool pk_key(void *ctx, const uint8_t *block)
{
	struct pk_hasher *h = ctx;

	if (h->nkeys >= h->max_keys)
		return false;
	uint64_t k = pk_hash_block(h->prev, block);

	if (k == 0)
		k = 1;
	h->keys[h->nkeys++] = k;
	h->prev = k;
	return h->nkeys < h->max_keys;
}

static void pk_append(struct pk_hasher *h, const uint8_t *b, size_t n)
{
	h->text_bytes += n;
	dbk_chunker_feed(&h->chunks, b, n);
}

static void pk_ws(struct pk_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool pk_peek(struct pk_scan *s, uint8_t c)
{
	pk_ws(s);
	return s->p < s->end && *s->p == c;
}

/* At an opening quote: scans to the closing one. With h, the contents go
 * to the hasher; with str/len, where they are. Returns false when the
 * sample ends first (*cut set when given). */
static bool pk_string(struct pk_scan *s, struct pk_hasher *h, const uint8_t **str, size_t *len,
                      bool *cut)
{
	const uint8_t *start = ++s->p, *q = start;

	/* The closing quote is the first one after an even run of
	 * backslashes; memchr finds candidates fast over long prompts. */
	for (;;) {
		q = memchr(q, '"', (size_t)(s->end - q));
		if (!q) {
			q = s->end;
			break;
		}
		size_t bs = 0;
		while (q - bs > start && q[-1 - (ptrdiff_t)bs] == '\\')
			bs++;
		if (bs % 2 == 0)
			break;
		q++;
	}
	if (h)
		pk_append(h, start, (size_t)(q - start));
	if (str) {
		*str = start;
		*len = (size_t)(q - start);
	}
	if (q >= s->end) {
		s->p = s->end;
		if (cut)
			*cut = true;
		return false;
	}
	s->p = q + 1;
	return true;
}

/* Skips one value of any kind, leaving s at the delimiter after it.
 * False when the sample ends inside it. No recursion: a depth count. */
static bool pk_skip(struct pk_scan *s)
{
	size_t depth = 0;

	pk_ws(s);
	while (s->p < s->end) {
		uint8_t c = *s->p;
		if (c == '"') {
			if (!pk_string(s, NULL, NULL, NULL, NULL))
				return false;
			if (depth == 0)
				return true;
			continue;
		}
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return true; /* the enclosing container's end */
			if (--depth == 0) {
				s->p++;
				return true;
			}
		} else if (c == ',' && depth == 0) {
			return true;
		}
		s->p++;
	}
	return false;
}

static bool pk_key_is(const uint8_t *k, size_t n, const char *want)
{
	size_t w = strlen(want);
	return n == w && memcmp(k, want, w) == 0;
}

/* Iterates an object's members: at '{', calls member(s, key, len, arg)
 * with s at the value; the callback consumes the value and returns false
 * to stop. Returns false when the sample ended. */
typedef bool (*pk_member_fn)(struct pk_scan *s, const uint8_t *key, size_t len, void *arg);

static bool pk_object(struct pk_scan *s, pk_member_fn member, void *arg)
{
	if (!pk_peek(s, '{'))
		return false;
	s->p++;
	for (;;) {
		const uint8_t *key;
		size_t klen;

		if (!pk_peek(s, '"'))
			return pk_peek(s, '}');
		if (!pk_string(s, NULL, &key, &klen, NULL))
			return false;
		if (!pk_peek(s, ':'))
			return false;
		s->p++;
		pk_ws(s);
		if (!member(s, key, klen, arg))
			return false;
		if (pk_peek(s, ','))
			s->p++;
		else
			return pk_peek(s, '}');
	}
}

struct pk_ctx {
	struct pk_hasher *h;
	struct dbk_pkey *out;
};

/* A content part {"type":"text","text":"..."}: hashes its text. */
static bool pk_part_member(struct pk_scan *s, const uint8_t *key, size_t len, void *arg)
{
	struct pk_ctx *c = arg;

	if (pk_key_is(key, len, "text") && pk_peek(s, '"'))
		return pk_string(s, c->h, NULL, NULL, &c->out->cut);
	return pk_skip(s);
}

static bool pk_message_member(struct pk_scan *s, const uint8_t *key, size_t len, void *arg)
{
	struct pk_ctx *c = arg;

	if (!pk_key_is(key, len, "content"))
		return pk_skip(s);
	if (pk_peek(s, '"'))
		return pk_string(s, c->h, NULL, NULL, &c->out->cut);
	if (!pk_peek(s, '['))
		return pk_skip(s);
	s->p++;
	for (;;) {
		if (pk_peek(s, '{')) {
			if (!pk_object(s, pk_part_member, c))
				return false;
			s->p++;
		} else if (!pk_peek(s, ']') && !pk_skip(s)) {
			return false;
		}
		if (pk_peek(s, ','))
			s->p++;
		else if (pk_peek(s, ']')) {
			s->p++;
			return true;
		} else
			return false;
	}
}

/* An array of values, each handled by one: messages or prompts. */
static bool pk_array(struct pk_scan *s, struct pk_ctx *c, bool messages)
{
	bool first = true;

	s->p++;
	for (;;) {
		if (pk_peek(s, ']')) {
			s->p++;
			return true;
		}
		if (messages && pk_peek(s, '{')) {
			if (!pk_object(s, pk_message_member, c))
				return false;
			s->p++;
		} else if (!messages && first && pk_peek(s, '"')) {
			if (!pk_string(s, c->h, NULL, NULL, &c->out->cut))
				return false;
		} else if (!pk_skip(s)) {
			return false;
		}
		first = false;
		if (pk_peek(s, ','))
			s->p++;
		else if (!pk_peek(s, ']'))
			return false;
	}
}

static bool pk_top_member(struct pk_scan *s, const uint8_t *key, size_t len, void *arg)
{
	struct pk_ctx *c = arg;
	bool is_prompt = pk_key_is(key, len, "prompt");
	bool is_msgs = pk_key_is(key, len, "messages");

	if ((is_prompt || is_msgs) && c->out->source == DBK_PKEY_NONE) {
		c->out->source = is_prompt ? DBK_PKEY_PROMPT : DBK_PKEY_MESSAGES;
		if (is_prompt && pk_peek(s, '"'))
			return pk_string(s, c->h, NULL, NULL, &c->out->cut);
		if (pk_peek(s, '['))
			return pk_array(s, c, is_msgs);
		return pk_skip(s);
	}
	if (pk_key_is(key, len, "user") && pk_peek(s, '"')) {
		const uint8_t *v;
		size_t vlen;
		if (!pk_string(s, NULL, &v, &vlen, NULL))
			return false;
		c->out->session = dbk_pkey_session((const char *)v, vlen);
		return true;
	}
	return pk_skip(s);
}

size_t dbk_pkey_derive(const uint8_t *sample, size_t len, uint64_t *keys, size_t max_keys,
                       struct dbk_pkey *out)
{
	struct pk_hasher h = { .prev = 0x6462756b70726566ULL,
		               .keys = keys,
		               .max_keys = keys ? max_keys : 0 };
	struct pk_scan s = { .p = sample, .end = sample ? sample + len : NULL };
	struct pk_ctx c = { .h = &h, .out = out };

	dbk_chunker_init(&h.chunks, h.block, sizeof(h.block), pk_key, &h);
	memset(out, 0, sizeof(*out));
	if (sample && len > 0)
		(void)pk_object(&s, pk_top_member, &c);
	if (h.nkeys == h.max_keys && h.text_bytes > h.nkeys * DBK_PKEY_BLOCK_BYTES)
		out->cut = true;
	out->nkeys = h.nkeys;
	out->text_bytes = h.text_bytes;
	return out->nkeys;
}

struct pk_model {
	const uint8_t *id;
	size_t len;
	bool found;
};

/* The first top-level "model" ends the walk, found or not. */
static bool pk_model_member(struct pk_scan *s, const uint8_t *key, size_t len, void *arg)
{
	struct pk_model *m = arg;

	if (!pk_key_is(key, len, "model"))
		return pk_skip(s);
	m->found = pk_peek(s, '"') && pk_string(s, NULL, &m->id, &m->len, NULL) && m->len > 0 &&
	           !memchr(m->id, '\\', m->len);
	return false;
}

bool dbk_pkey_model(const uint8_t *sample, size_t len, const uint8_t **id, size_t *id_len)
{
	struct pk_scan s = { .p = sample, .end = sample ? sample + len : NULL };
	struct pk_model m = { 0 };

	if (!sample || len == 0)
		return false;
	(void)pk_object(&s, pk_model_member, &m);
	*id = m.id;
	*id_len = m.len;
	return m.found;
}

uint64_t dbk_pkey_session(const char *s, size_t len)
{
	if (len == 0)
		return 0;
	uint64_t k = pk_hash_bytes(0x73657373696f6eULL, (const uint8_t *)s, len);
	return k ? k : 1;
}
