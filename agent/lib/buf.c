#include "lib/buf.h"
#include "lib/array.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dbk_buf_init(struct dbk_buf *b) { memset(b, 0, sizeof(*b)); }

bool dbk_buf_reserve(struct dbk_buf *b, size_t extra)
{
	char *np;

	if (b->oom)
		return false;
	if (extra > SIZE_MAX / 2 - b->len) {
		b->oom = true;
		return false;
	}
	/* Room for byte len + extra: the bytes and the NUL after them. */
	np = dbk_array_room(b->p, &b->cap, b->len + extra, 1, 256);
	if (!np) {
		b->oom = true;
		return false;
	}
	b->p = np;
	return true;
}

void dbk_buf_add(struct dbk_buf *b, const void *data, size_t n)
{
	if (!dbk_buf_reserve(b, n))
		return;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;
}

void dbk_buf_adds(struct dbk_buf *b, const char *s) { dbk_buf_add(b, s, strlen(s)); }

void dbk_buf_printf(struct dbk_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!dbk_buf_reserve(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (!dbk_buf_reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void dbk_buf_consume(struct dbk_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->p, b->p + n, b->len - n);
		b->len -= n;
	}
	if (b->p)
		b->p[b->len] = 0;
}

void dbk_buf_reset(struct dbk_buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->p)
		b->p[0] = 0;
}

void dbk_buf_free(struct dbk_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}
