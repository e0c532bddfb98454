/* Who may ask the admin endpoint what: the pure decision, one request
 * at a time (no sockets, no clock, no files; the token and the facts of
 * the connection are passed in).
 *
 * A web page in a browser must not be able to use the endpoint, neither
 * cross-site (a form or fetch() aimed at 127.0.0.1) nor by DNS rebinding
 * (its own name resolved to 127.0.0.1 so that the page is "same-origin"):
 * so a request over TCP must name in Host only what the agent answers
 * to (localhost, a loopback address, the address it was reached at, or a
 * name given with --admin-host), and any Origin, Referer or
 * Sec-Fetch-Site a browser adds must say the request comes from the
 * endpoint's own pages. The port is not part of the check: an ssh -L
 * forward reaches the agent under another port, and rebinding is about
 * the name.
 *
 * A change (POST /config) needs the bearer token of --admin-token-file,
 * or the unix socket, whose file permissions decide who reaches it; a
 * read-only endpoint takes none. Reads are open for the classes
 * --admin-public names (/metrics; the status page and what it reads),
 * and need the token otherwise. */
#ifndef DBK_ADMIN_GUARD_H
#define DBK_ADMIN_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/http1.h"

/* What --admin-public opens: bits. */
#define DBK_ADMIN_PUBLIC_METRICS 1u /* GET /metrics */
#define DBK_ADMIN_PUBLIC_STATUS 2u  /* GET / and what it reads: /state, /config */
#define DBK_ADMIN_PUBLIC_DEFAULT (DBK_ADMIN_PUBLIC_METRICS | DBK_ADMIN_PUBLIC_STATUS)

struct dbk_admin_policy {
	const char *token; /* NULL: no token configured */
	size_t token_len;
	bool read_only;
	unsigned public_mask;
	const char *const *hosts; /* names Host may give besides the built-in ones */
	unsigned nhosts;
};

/* The connection a request came on. */
struct dbk_admin_via {
	bool unix_socket;
	const char *local_addr; /* the IP it reached, without brackets; "" if unknown */
};

/* Parses --admin-public's value: "none" or a comma-separated list of
 * "metrics" and "status". Returns 0, or -1 with a reason in err. */
int dbk_admin_public_parse(const char *v, unsigned *mask, char *err, size_t errlen);

/* 0 when req may be answered, else the status to refuse it with (401:
 * a token would do, answer with WWW-Authenticate; 403: no) and *why. */
int dbk_admin_guard(const struct dbk_admin_policy *p, const struct dbk_admin_via *via,
                    const struct dbk_http_request *req, const char **why);

#endif
