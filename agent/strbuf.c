#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dbk_sb_init(struct dbk_strbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void dbk_sb_free(struct dbk_strbuf *sb)
{
	free(sb->data);
	dbk_sb_init(sb);
}

static bool reserve(struct dbk_strbuf *sb, size_t n)
{
	if (sb->failed)
		return false;
	if (sb->len + n + 1 <= sb->cap)
		return true;
	size_t cap = sb->cap ? sb->cap : 1024;
	while (cap < sb->len + n + 1)
		cap *= 2;
	char *d = realloc(sb->data, cap);
	if (!d) {
		sb->failed = true;
		return false;
	}
	sb->data = d;
	sb->cap = cap;
	return true;
}

void dbk_sb_append(struct dbk_strbuf *sb, const char *s, size_t n)
{
	if (!reserve(sb, n))
		return;
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
}

void dbk_sb_printf(struct dbk_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void dbk_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
