/* Scrapes each vLLM server's own numbers, /metrics every interval and
 * /v1/models less often, on the agent's event loop, so no request ever
 * blocks the loop: http:// over plain HTTP/1.1 (lib/http_client, the
 * cheaper per scrape), https:// through libcurl driven by the same loop
 * (lib/curl_get), for servers behind TLS (vLLM run with --ssl-keyfile).
 * Each has a timeout, and a server whose previous scrape is still in
 * flight is skipped, so a hung server costs one connection, not a pile
 * of them. Connections are kept alive between scrapes.
 *
 * What the routing policy reads is dbk_scrape_view: the last good numbers
 * and how old they are. When scraping a server fails it is marked down
 * (and its numbers kept but stale: the policy falls back to its own
 * books); one log line per change of state, up or down, never one per
 * failure. */
#ifndef DBK_SCRAPE_H
#define DBK_SCRAPE_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/curl_get.h"
#include "vllm_metrics.h"

#define DBK_SCRAPE_DEFAULT_INTERVAL_MS 100
#define DBK_SCRAPE_DEFAULT_TIMEOUT_MS 1000
/* /v1/models changes only when a server restarts. */
#define DBK_SCRAPE_MODELS_EVERY_MS 10000
/* Largest body read; vLLM's /metrics is 20-100 KB whole, a few KB of
 * the families asked for. A larger one is hostile or broken: refused
 * (by its Content-Length, before a byte of it is read) and its server
 * backed off. */
#define DBK_SCRAPE_MAX_BODY (1u << 20)
/* A server whose body was too large or had too many series, or whose
 * TLS handshake failed, is next scraped after this long, doubling each time up to BACKOFF_MAX, so a
 * hostile server costs the loop one refused scrape every 30 s. */
#define DBK_SCRAPE_BACKOFF_MS 1000
#define DBK_SCRAPE_BACKOFF_MAX_MS 30000

struct dbk_scrape_view;

struct dbk_scrape_config {
	long interval_ms;
	long timeout_ms;
	long models_every_ms;
	/* Called after each finished scrape of server (may be NULL):
	 * metrics true for /metrics (v->up says whether it worked), false
	 * for /v1/models (v->max_model_len is the latest known, v->models
	 * the list just read when it worked). */
	void (*scraped)(void *arg, unsigned server, const struct dbk_scrape_view *v, bool metrics);
	/* Called as server's /metrics request goes out (may be NULL): what
	 * changes before scraped is not surely in its counts. */
	void (*sent)(void *arg, unsigned server);
	void *arg;
	/* The metric names read (copied; NULL: dbk_vm_names_default). */
	const struct dbk_vm_names *names;
	/* How https:// servers are checked (strings the caller's, living
	 * as long as the scraper). */
	struct dbk_curl_tls tls;
};

/* Why the last /metrics scrape failed, for /metrics and the log. */
enum dbk_scrape_cause {
	DBK_SCRAPE_OK,
	DBK_SCRAPE_TRANSPORT,       /* connect, reset, timeout, name lookup */
	DBK_SCRAPE_STATUS,          /* an HTTP status other than 200 */
	DBK_SCRAPE_BODY_TOO_LARGE,  /* over DBK_SCRAPE_MAX_BODY (backed off) */
	DBK_SCRAPE_TOO_MANY_SERIES, /* over DBK_VM_MAX_SERIES (backed off) */
	DBK_SCRAPE_MALFORMED,       /* not the exposition format */
	DBK_SCRAPE_IMPLAUSIBLE,     /* a number outside its documented range */
	DBK_SCRAPE_TLS,             /* https: handshake, certificate (backed off) */
	DBK_SCRAPE_NCAUSES
};
/* "transport", "status", "body-too-large", ... */
const char *dbk_scrape_cause_name(enum dbk_scrape_cause c);

/* One server, as the policy and the reports see it. */
struct dbk_scrape_view {
	bool scraped;              /* has a URL to scrape */
	bool up;                   /* the last /metrics scrape succeeded */
	uint64_t ok_ms;            /* monotonic ms of the last success; 0: never */
	uint64_t sent_ms;          /* monotonic ms the newest /metrics request went out */
	struct dbk_vllm_metrics m; /* the last good numbers */
	long max_model_len;        /* from /v1/models; 0: not known */
	bool models_known;         /* a /v1/models list was read since the slot was set */
	/* The list /v1/models just gave: set only during the scraped
	 * callback of a /v1/models scrape that worked (the scraper's
	 * buffer, reused by the next); else NULL. */
	const struct dbk_vm_models *models;
	uint64_t scrapes;            /* /metrics scrapes finished */
	uint64_t failures;           /* ... that failed (transport, status, body) */
	uint64_t models_failures;    /* /v1/models scrapes that failed */
	enum dbk_scrape_cause cause; /* of the last /metrics scrape */
	uint64_t backoff_ms;         /* 0, or how long hostile scrapes hold it off */
};

struct dbk_scrape;

/* Scrapes base_urls[i] + "/metrics" for names[i], i < n; a NULL or empty
 * URL leaves that server unscraped. A URL is http://HOST[:PORT][/PATH]
 * or https://...; a HOST that is not an address is looked up in the
 * background (and again while scraping it fails; libcurl's resolver for
 * https). Strings are copied. Returns NULL when
 * out of memory or a URL is not of that shape (logged). */
struct dbk_scrape *dbk_scrape_new(struct ev_loop *loop, const struct dbk_scrape_config *c,
                                  const char *const *names, const char *const *base_urls,
                                  unsigned n);
void dbk_scrape_free(struct dbk_scrape *s);
/* Server i is now name at base_url (NULL or "": not scraped): another
 * server in the slot, or the same at a new address. A scrape of the old
 * target in flight is dropped; its numbers are forgotten. Returns 0, or
 * -1 when the URL is not of a shape scraped (logged; i is then not
 * scraped). */
int dbk_scrape_set(struct dbk_scrape *s, unsigned i, const char *name, const char *base_url);

unsigned dbk_scrape_count(const struct dbk_scrape *s);
const struct dbk_scrape_view *dbk_scrape_view(const struct dbk_scrape *s, unsigned i);
const char *dbk_scrape_name(const struct dbk_scrape *s, unsigned i);
/* The base URL scraped ("" when none). */
const char *dbk_scrape_url(const struct dbk_scrape *s, unsigned i);
const struct dbk_scrape_config *dbk_scrape_config(const struct dbk_scrape *s);

/* Whether server i's numbers are worth routing on at now_ms: up, and
 * scraped within a few intervals (a scrape still in flight past that is
 * as good as failed). */
bool dbk_scrape_fresh(const struct dbk_scrape *s, unsigned i, uint64_t now_ms);

/* scrape_report.c: the scraper's series for the agent's /metrics, and
 * its "scrape" member for /state (followed by a comma). */
void dbk_scrape_report_metrics(const struct dbk_scrape *s, uint64_t now_ms, struct dbk_buf *o);
void dbk_scrape_report_state(const struct dbk_scrape *s, uint64_t now_ms, struct dbk_buf *o);

#endif
