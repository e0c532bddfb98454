#include "sse.h"

#include <string.h>

void dbk_sse_init(struct dbk_sse *s, size_t max_event)
{
	memset(s, 0, sizeof(*s));
	s->max = max_event;
}

void dbk_sse_free(struct dbk_sse *s)
{
	dbk_buf_free(&s->line);
	dbk_buf_free(&s->data);
}

static int add(struct dbk_sse *s, struct dbk_buf *b, const char *p, size_t n)
{
	if (n > s->max || b->len > s->max - n)
		return DBK_SSE_TOO_BIG;
	dbk_buf_add(b, p, n);
	return b->oom ? DBK_SSE_NOMEM : DBK_SSE_OK;
}

static int on_line(struct dbk_sse *s, const char *p, size_t n, dbk_sse_event_fn fn, void *ctx)
{
	const char *colon;
	int rc;

	if (n == 0) {
		if (!s->have_data)
			return DBK_SSE_OK;
		s->have_data = false;
		rc = fn(ctx, s->data.p, s->data.len);
		dbk_buf_reset(&s->data);
		return rc;
	}
	colon = memchr(p, ':', n);
	/* Only "data" matters here; "event", "id", "retry" and comments
	 * (lines starting with ':') are skipped. A field without a colon
	 * has an empty value. */
	if ((colon ? (size_t)(colon - p) : n) != 4 || memcmp(p, "data", 4))
		return DBK_SSE_OK;
	if (colon) {
		p += 5;
		n -= 5;
		if (n && *p == ' ') {
			p++;
			n--;
		}
	} else {
		n = 0;
	}
	if (s->have_data && (rc = add(s, &s->data, "\n", 1)) != DBK_SSE_OK)
		return rc;
	s->have_data = true;
	/* Even with n == 0 this allocates, so data.p is never NULL when
	 * the event is dispatched. */
	return add(s, &s->data, p, n);
}

int dbk_sse_feed(struct dbk_sse *s, const char *p, size_t n, dbk_sse_event_fn fn, void *ctx)
{
	while (n) {
		const char *nl = memchr(p, '\n', n), *line;
		size_t k, len;
		int rc;

		if (!nl)
			return add(s, &s->line, p, n);
		k = (size_t)(nl - p);
		if (s->line.len) {
			if ((rc = add(s, &s->line, p, k)) != DBK_SSE_OK)
				return rc;
			line = s->line.p;
			len = s->line.len;
		} else {
			line = p;
			len = k;
		}
		/* CRLF and LF endings; a lone CR is not a line end here
		 * (no OpenAI-compatible server sends one). */
		if (len && line[len - 1] == '\r')
			len--;
		rc = on_line(s, line, len, fn, ctx);
		dbk_buf_reset(&s->line);
		if (rc != DBK_SSE_OK)
			return rc;
		p = nl + 1;
		n -= k + 1;
	}
	return DBK_SSE_OK;
}
