/* Keeps the agent's running policy (policy_ops.h) in step with the rest of
 * the agent: the balancer's leases (ended, moved) and usable flags, and
 * what the scraper reads. The clock is read here (dbk_mono_ms), so that
 * the policies themselves stay pure. */
#ifndef DBK_POLICY_FEED_H
#define DBK_POLICY_FEED_H

#include <stdbool.h>

#include "balancer.h"
#include "policy_ops.h"
#include "scrape.h"

/* Tells p of every lease of bal that ends or moves, every usable
 * change, and of the servers not usable now. p and bal must outlive the
 * attachment; dbk_policy_detach(bal) ends it. */
void dbk_policy_attach(struct dbk_policy *p, struct dbk_balancer *bal);
void dbk_policy_detach(struct dbk_balancer *bal);

/* A scrape of server finished (struct dbk_scrape_config.scraped, with
 * the struct dbk_policy as arg). */
void dbk_policy_scrape_done(void *policy, unsigned server, const struct dbk_scrape_view *v,
                            bool metrics);

/* vllm:lora_requests_info's state as the predictor reads it: max_lora,
 * the adapters' keys, running ones first (the simulator fills the same
 * fields from its engines). */
void dbk_policy_feed_lora(const struct dbk_vm_lora *l, struct dbk_pred_scrape *s);

#endif
