/* A growable byte string for building responses. An allocation failure
 * sets .failed and drops further output, so callers check once. */
#ifndef DBK_STRBUF_H
#define DBK_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct dbk_buf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
};

void dbk_buf_init(struct dbk_buf *sb);
void dbk_buf_free(struct dbk_buf *sb);
void dbk_buf_add(struct dbk_buf *sb, const char *s, size_t n);
void dbk_buf_printf(struct dbk_buf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The one-line error every parser reports: printf into err (errlen
 * bytes, truncated); nothing when err is NULL or errlen 0. */
void dbk_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
