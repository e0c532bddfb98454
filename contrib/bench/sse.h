/* Server-sent events framing (the WHATWG "text/event-stream" rules the
 * OpenAI streaming API uses): "data:" lines are joined, a blank line
 * dispatches the event, other fields and comments are skipped. Pure,
 * incremental, with a bound on the size of one event. */
#ifndef DBK_BENCH_SSE_H
#define DBK_BENCH_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"

/* A vLLM chunk is a few hundred bytes; one with logprobs a few KiB. */
#define DBK_SSE_MAX_EVENT (1024 * 1024)

enum {
	DBK_SSE_OK = 0,
	DBK_SSE_TOO_BIG = -1, /* a line or an event above the bound */
	DBK_SSE_NOMEM = -2,
};

/* One event's data (NUL-terminated, lines joined by '\n'); a non-zero
 * return stops the feed and is passed back by dbk_sse_feed. */
typedef int (*dbk_sse_event_fn)(void *ctx, const char *data, size_t n);

struct dbk_sse {
	struct dbk_buf line; /* an incomplete line */
	struct dbk_buf data; /* data of the event being read */
	bool have_data;
	size_t max;
};

void dbk_sse_init(struct dbk_sse *s, size_t max_event);
void dbk_sse_free(struct dbk_sse *s);
int dbk_sse_feed(struct dbk_sse *s, const char *p, size_t n, dbk_sse_event_fn fn, void *ctx);

#endif
