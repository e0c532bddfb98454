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
 * The fleet's recent first tokens besides (admission.h's fleet_ttft_ms):
 * the mean of vLLM's time_to_first_token histogram over every server,
 * from its _sum and _count deltas over windows of about a second, as the
 * simulator measures it. A server's waiting count does not see the
 * prompts vLLM has already taken into its running batch and is still
 * prefilling; the first tokens' own times do.
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
	bool have_ttft; /* the first-token histogram's sum and count were read */
	double ttft_sum_s, ttft_count;
	/* ... and at the window's start, when they were read then. */
	bool base;
	double base_sum_s, base_count;
};

/* The first-token window's length: long enough to hold first tokens on a
 * busy fleet, short enough to follow a burst. */
#define DBK_SAT_TTFT_WINDOW_MS 1000

struct dbk_saturation {
	struct dbk_sat_config c;
	struct dbk_sat_server *s;
	unsigned n;
	/* The current first-token window's start; the last whole window's
	 * mean (0: none) and its end. */
	bool win_open;
	uint64_t win_ms;
	double fleet_ttft_ms;
	uint64_t fleet_ttft_at_ms;
};

/* s for n servers; 0, or -1 out of memory. */
int dbk_sat_init(struct dbk_saturation *s, const struct dbk_sat_config *c, unsigned n);
void dbk_sat_free(struct dbk_saturation *s);

/* A good scrape of server at at_ms; have false forgets what was known
 * (a failed scrape, a server that does not export both numbers). */
void dbk_sat_scraped(struct dbk_saturation *s, unsigned server, bool have, double waiting,
                     double kv, uint64_t at_ms);

/* Another server, or a new instance of it, is in the slot: all that was
 * known of it is forgotten, its first tokens counted again from the next
 * window on. */
void dbk_sat_forget(struct dbk_saturation *s, unsigned server);

/* A scrape of server's first-token histogram (have false: not read);
 * closes the window when it is a second old. Only servers read at both
 * ends of a window, their counters not gone back, count in it. */
void dbk_sat_first_tokens(struct dbk_saturation *s, unsigned server, bool have, double sum_s,
                          double count, uint64_t at_ms);

/* The fleet's mean first token over the last whole window, in ms; 0 when
 * unknown (no first token in it, or the window is stale). */
double dbk_sat_fleet_ttft_ms(const struct dbk_saturation *s, uint64_t now_ms);

/* True when some usable server has fresh numbers and every usable server
 * is past a threshold (none has room). */
bool dbk_sat_fleet(const struct dbk_saturation *s, const struct dbk_balancer *b, uint64_t now_ms);

#endif
