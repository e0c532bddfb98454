/* The admin endpoint: a small HTTP/1.1 server (one request per
 * connection) for operators and tests. It parses requests, lets through
 * only those admin_guard.h allows (no web page, a token for changes) and
 * writes responses; what a path returns is the handler's business.
 * Listens on loopback unless told otherwise. */
#ifndef DBK_ADMIN_H
#define DBK_ADMIN_H

#include <ev.h>
#include <stdbool.h>

#include "admin_guard.h"
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

struct dbk_admin_config {
	unsigned max_conns;     /* at once, a quarter of them from one peer */
	const char *token_file; /* NULL: no token */
	bool read_only;
	unsigned public_mask; /* DBK_ADMIN_PUBLIC_* */
	const char *const *hosts;
	unsigned nhosts;
};

/* Reads the token file. Returns NULL with a reason in err. */
struct dbk_admin *dbk_admin_new(struct ev_loop *loop, const struct dbk_admin_config *cfg,
                                dbk_admin_handler h, void *arg, char *err, size_t errlen);
int dbk_admin_add_listener(struct dbk_admin *a, int fd);
/* Reads the token file again (SIGHUP); the old token stays if it fails:
 * -1 with a reason in err. */
int dbk_admin_reload(struct dbk_admin *a, char *err, size_t errlen);
void dbk_admin_free(struct dbk_admin *a);

#endif
