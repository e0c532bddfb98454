/* Growable byte buffer with a sticky out-of-memory flag, so a sequence of
 * appends is checked once at the end. */
#ifndef DBK_BUF_H
#define DBK_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct dbk_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* An empty buffer (all zero, as a static or calloc'd one already is). */
void dbk_buf_init(struct dbk_buf *b);
/* Ensures room for `extra` more bytes (plus a NUL); false on failure. */
bool dbk_buf_reserve(struct dbk_buf *b, size_t extra);
/* The same, without a call when the room is there already (a hot path's
 * per-frame check). */
static inline bool dbk_buf_room(struct dbk_buf *b, size_t extra)
{
	return (!b->oom && extra < b->cap - b->len) || dbk_buf_reserve(b, extra);
}
void dbk_buf_add(struct dbk_buf *b, const void *data, size_t n);
void dbk_buf_adds(struct dbk_buf *b, const char *s);
void dbk_buf_printf(struct dbk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes. */
void dbk_buf_consume(struct dbk_buf *b, size_t n);
void dbk_buf_reset(struct dbk_buf *b);
void dbk_buf_free(struct dbk_buf *b);

#endif
