/* Cuts a byte stream that arrives in pieces into fixed-size blocks and
 * hands each full block to a callback: what chained block keys are made
 * of, both the agent's (prefix_key.c, 256-byte blocks of a body sample)
 * and the KV cache's (prefix_cache.c, 64-byte blocks of a prompt). The
 * hashes differ; the cutting is this one.
 *
 * Pure, never fails, allocates nothing: the block buffer is the caller's.
 * A whole block that lies in the piece fed is handed over in place,
 * without a copy; a trailing partial block waits in the buffer for the
 * next piece and is never handed over on its own. Header-only, so that
 * the callback is inlined into the agent's hot path. */
#ifndef DBK_MODEL_CHUNKER_H
#define DBK_MODEL_CHUNKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Takes one full block; returns false when it wants no more (the rest of
 * the stream is then dropped unread). */
typedef bool (*dbk_chunk_fn)(void *ctx, const uint8_t *block);

struct dbk_chunker {
	uint8_t *buf; /* size bytes, the caller's */
	size_t size, fill;
	bool done; /* the callback wanted no more */
	dbk_chunk_fn fn;
	void *ctx;
};

static inline void dbk_chunker_init(struct dbk_chunker *c, uint8_t *buf, size_t size,
                                    dbk_chunk_fn fn, void *ctx)
{
	*c = (struct dbk_chunker){ .buf = buf, .size = size, .fn = fn, .ctx = ctx };
}

/* Forgets a partial block and starts wanting blocks again. */
static inline void dbk_chunker_reset(struct dbk_chunker *c)
{
	c->fill = 0;
	c->done = false;
}

static inline void dbk_chunker_feed(struct dbk_chunker *c, const void *p, size_t n)
{
	const uint8_t *s = p;

	while (n > 0 && !c->done) {
		if (c->fill == 0 && n >= c->size) {
			c->done = !c->fn(c->ctx, s);
			s += c->size;
			n -= c->size;
			continue;
		}
		size_t take = c->size - c->fill;
		if (take > n)
			take = n;
		memcpy(c->buf + c->fill, s, take);
		c->fill += take;
		s += take;
		n -= take;
		if (c->fill == c->size) {
			c->fill = 0;
			c->done = !c->fn(c->ctx, c->buf);
		}
	}
}

#endif
