/* What the agent learns about a server from outside the balancer's own
 * books, and turns into a reason to leave it out (dbk_bal_set_out):
 * - its completion lines (outlier.h): a server that fails its requests
 *   is ejected for a back-off (DBK_BAL_OUT_EJECTED);
 * - its scrapes: a vLLM engine put to sleep (vllm:engine_sleep_state) is
 *   left out until it is awake again (DBK_BAL_OUT_ASLEEP).
 * Each change is logged once (server-ejected, server-returned,
 * server-asleep, server-awake). The event loop owns it, as the rest of
 * struct dbk_agent. */
#ifndef DBK_SERVER_WATCH_H
#define DBK_SERVER_WATCH_H

#include <ev.h>

#include "balancer.h"
#include "completion.h"
#include "lib/buf.h"
#include "outlier.h"
#include "scrape.h"

struct dbk_server_watch {
	struct dbk_outlier outlier;
	struct dbk_balancer *bal;
	const char *const *names;
	unsigned n;
	struct ev_loop *loop;
	ev_timer timer;  /* the next back-off's end */
	uint64_t sleeps; /* times a server was seen fall asleep */
};

/* Watches bal's n servers named names[i] (all must outlive w). Returns
 * -1 when out of memory. */
int dbk_server_watch_start(struct dbk_server_watch *w, struct ev_loop *loop,
                           struct dbk_balancer *bal, const char *const *names, unsigned n,
                           const struct dbk_outlier_config *c);
void dbk_server_watch_stop(struct dbk_server_watch *w);

/* One completion line (after the books took it). */
void dbk_server_watch_completion(struct dbk_server_watch *w, const struct dbk_completion *c);

/* A new server came into the slot (or the slot emptied): what the old
 * one did is forgotten, and it is no longer held out as ejected or
 * asleep. */
void dbk_server_watch_reset(struct dbk_server_watch *w, unsigned server);

/* One finished scrape of server (struct dbk_scrape_config.scraped's
 * arguments). A failed scrape changes nothing: an unreachable server is
 * HAProxy's health check's to judge. */
void dbk_server_watch_scraped(struct dbk_server_watch *w, unsigned server,
                              const struct dbk_scrape_view *v, bool metrics);

/* /state's "outlier" member (followed by a comma) and its /metrics
 * series. */
void dbk_server_watch_report_state(const struct dbk_server_watch *w, uint64_t now_ms,
                                   struct dbk_buf *o);
void dbk_server_watch_report_metrics(const struct dbk_server_watch *w, struct dbk_buf *o);

#endif
