/* One URL fetched over and over through libcurl (lib/curl_ev), with the
 * caps of lib/http_client: a largest body (refused by its Content-Length
 * before a byte of it is read, else as soon as it passes the cap), a
 * timeout, no redirect, no other protocol than the URL's. The answer is
 * the same struct dbk_hc_result as lib/http_client's, so a caller takes
 * either the same way. It is the agent's https scraper; plain http stays
 * on lib/http_client (see curl_ev.h), and is taken here by the unit test
 * (test_curl_get in tests/unit/test_scrape.c) only, which needs no TLS
 * peer. */
#ifndef DBK_CURL_GET_H
#define DBK_CURL_GET_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/buf.h"
#include "lib/curl_ev.h"
#include "lib/http_client.h"

/* How TLS peers are checked; strings are the caller's and outlive the
 * fetcher. NULL: libcurl's default (the system's CA store; no client
 * certificate). */
struct dbk_curl_tls {
	const char *ca_file;   /* trust these CAs instead */
	const char *cert_file; /* client certificate (PEM) */
	const char *key_file;  /* its key (PEM; NULL: in cert_file) */
	bool insecure;         /* no check of the peer's certificate or name */
};

struct dbk_curl_get {
	struct dbk_curl_ev *m;
	struct dbk_curl_job job;
	size_t max_body;
	dbk_hc_done_fn done;
	void *arg;
	struct dbk_buf body; /* kept between requests */
	bool too_large;
	bool tls_failed; /* the last request's error was TLS's */
	char curl_err[CURL_ERROR_SIZE];
	char err[CURL_ERROR_SIZE + 32];
};

/* Points g at url through m: TLS per tls, connections closed after each
 * answer when once (a request sent less often than servers keep an idle
 * connection). Returns 0, or -1 with err (out of memory, a URL or option
 * libcurl refuses). */
int dbk_curl_get_init(struct dbk_curl_get *g, struct dbk_curl_ev *m, const char *url,
                      const struct dbk_curl_tls *tls, bool once, size_t max_body,
                      dbk_hc_done_fn done, void *arg, char *err, size_t errlen);
/* Whether a request is in flight. */
bool dbk_curl_get_busy(const struct dbk_curl_get *g);
/* Fetches the URL, within timeout_ms. Returns 0, and done follows from
 * the loop; or -1 with g->err, and done is not called. */
int dbk_curl_get_start(struct dbk_curl_get *g, long timeout_ms);
/* Ends a request in flight without done, frees what g holds; g may be
 * all zero (never initialised). */
void dbk_curl_get_free(struct dbk_curl_get *g);

#endif
