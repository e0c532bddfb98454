/* The admin endpoint: a small HTTP/1.1 server (one request per
 * connection) for operators and tests. It parses requests and writes
 * responses; what a path returns is the handler's business. Listens on
 * loopback unless told otherwise. */
#ifndef DBK_ADMIN_H
#define DBK_ADMIN_H

#include <ev.h>

#include "lib/buf.h"

struct dbk_admin_response {
	int status; /* 200, 404, ... */
	const char *content_type;
	struct dbk_buf body;
};

/* Fills r for method and path (query string included). */
typedef void (*dbk_admin_handler)(void *arg, const char *method, const char *path,
                                  struct dbk_admin_response *r);

struct dbk_admin;

/* At most max_conns clients at once, a quarter of them from one peer. */
struct dbk_admin *dbk_admin_new(struct ev_loop *loop, unsigned max_conns, dbk_admin_handler h,
                                void *arg);
int dbk_admin_add_listener(struct dbk_admin *a, int fd);
void dbk_admin_free(struct dbk_admin *a);

#endif
