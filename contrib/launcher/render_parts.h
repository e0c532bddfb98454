/* What the render*.c files share and nobody else needs: HAProxy's
 * spelling of an address, word wrapping for the generated comments, and
 * haproxy.cfg's backends (render_backends.c). */
#ifndef DBK_LAUNCH_RENDER_PARTS_H
#define DBK_LAUNCH_RENDER_PARTS_H

#include "render.h"

/* HOST:PORT as HAProxy reads it: IPv6 literals in brackets, "" (every
 * address) as ":PORT". */
void dbk_render_haproxy_addr(FILE *out, const char *host, long port);

/* Writes words separated by spaces, starting a new line (with the prefix
 * cont) before one that would pass column 76: long server lists stay
 * readable, and under HAProxy's line length in comments. */
struct dbk_render_wrap {
	FILE *out;
	size_t col;
	const char *cont;
	bool fresh; /* nothing written on this line after the prefix */
};
void dbk_render_word(struct dbk_render_wrap *w, const char *s);
/* A flag and its value, kept on one line. */
void dbk_render_pair(struct dbk_render_wrap *w, const char *flag, const char *value);

/* The body of the 503 for a model whose every server is down, as a
 * quoted HAProxy string: the frontend answers it when the agent says
 * model_unavailable, each per-model backend when it has no usable server
 * (the agent down, or no /v1/models read yet), so the client sees one
 * error whoever refuses. */
#define DBK_RENDER_MODEL_503                                                                   \
	"\"{\\\"error\\\":{\\\"message\\\":\\\"no server that serves this request's model is " \
	"available (every one is down or in maintenance)\\\",\\\"type\\\":\\\""                \
	"ServiceUnavailableError\\\",\\\"param\\\":null,\\\"code\\\":503}}\""

void dbk_render_cfg_backends(FILE *out, const struct dbk_launch_flags *f,
                             const struct dbk_render_addrs *a);

#endif
