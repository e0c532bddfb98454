/* The --policy ttft glue (config.h names the policies). This file keeps the ttft predictor in step with the rest of the agent: the
 * balancer's leases (ended, moved), HAProxy's server states and what the
 * scraper reads; and renders its view for /state and /metrics. */
#ifndef DBK_POLICY_TTFT_H
#define DBK_POLICY_TTFT_H

#include <stdbool.h>
#include <stdint.h>

#include "balancer.h"
#include "config.h"
#include "predict.h"
#include "scrape.h"
#include "lib/buf.h"

/* A ttft predictor for the balancer's servers, with the default engine
 * model sped up engine_speed times (its step costs divided by it: the
 * books drain at the servers' pace), observing bal (which must outlive it): every lease that ends or
 * moves is released or moved in the predictor, every usable change sets
 * its state. NULL when out of memory. */
struct dbk_pred *dbk_policy_ttft_new(struct dbk_balancer *bal, double engine_speed);
void dbk_policy_ttft_free(struct dbk_pred *p, struct dbk_balancer *bal);

/* A scrape of server finished (struct dbk_scrape_config.scraped, with
 * the predictor as arg). */
void dbk_policy_scraped(void *pred, unsigned server, const struct dbk_scrape_view *v, bool metrics);

/* The predictor's per-server view: a "policy" member for /state
 * (followed by a comma) and dbucket_ttft_* series for /metrics. */
void dbk_policy_report_state(const struct dbk_pred *p, const char *const *names, unsigned n,
                             uint64_t now_ms, struct dbk_buf *o);
void dbk_policy_report_metrics(const struct dbk_pred *p, const char *const *names, unsigned n,
                               uint64_t now_ms, struct dbk_buf *o);

#endif
