/* The fleet's saturation, for admission under a policy that predicts
 * nothing (admission.h): whether no usable server has room for one more
 * request, judged from the servers' scraped queue and KV-cache use.
 *
 * What it follows: the Gateway API Inference Extension's saturation
 * detector (kubernetes-sigs/gateway-api-inference-extension,
 * pkg/epp/saturationdetector/saturationdetector.go at commit 32ddd96c3f03,
 * defaults in pkg/epp/saturationdetector/config.go at 9ca8b5137bd8): a
 * server has room when its numbers are fresh, its waiting queue is at
 * most 5 and its KV-cache use at most 0.8; the fleet is saturated when
 * none has room. GIE's metrics are 50 ms old at most and go stale after
 * 200 ms, four refreshes; ours go stale after four scrape intervals.
 *
 * One difference, on purpose: GIE calls a fleet without fresh numbers
 * saturated (it queues in its flow controller); here a usable server
 * whose numbers are missing or stale might have room, so the fleet is
 * not saturated. Without scrapes nothing is ever shed for saturation.
 *
 * Pure: numbers in, a judgement out; time is passed in. */
#ifndef DBK_SATURATION_H
#define DBK_SATURATION_H

#include <stdbool.h>
#include <stdint.h>

#include "balancer.h"

#define DBK_SAT_DEFAULT_QUEUE 5
#define DBK_SAT_DEFAULT_KV 0.8
/* Numbers older than this many scrape intervals are stale. */
#define DBK_SAT_STALE_INTERVALS 4

struct dbk_sat_config {
	double queue; /* a server has room with at most this many waiting */
	double kv;    /* ... and at most this KV-cache use, 0..1 */
	uint64_t stale_ms;
};

struct dbk_sat_server {
	bool have; /* waiting and kv_usage were both read */
	double waiting, kv;
	uint64_t at_ms; /* when they were read */
};

struct dbk_saturation {
	struct dbk_sat_config c;
	struct dbk_sat_server *s;
	unsigned n;
};

/* s for n servers; 0, or -1 out of memory. */
int dbk_sat_init(struct dbk_saturation *s, const struct dbk_sat_config *c, unsigned n);
void dbk_sat_free(struct dbk_saturation *s);

/* A good scrape of server at at_ms; have false forgets what was known
 * (a failed scrape, a server that does not export both numbers, a new
 * server in the slot). */
void dbk_sat_scraped(struct dbk_saturation *s, unsigned server, bool have, double waiting,
                     double kv, uint64_t at_ms);

/* True when some usable server has fresh numbers and every usable server
 * is past a threshold (none has room). */
bool dbk_sat_fleet(const struct dbk_saturation *s, const struct dbk_balancer *b, uint64_t now_ms);

#endif
