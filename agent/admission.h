/* Admission: whether a request is served now or refused with a
 * Retry-After, from its priority class and what the routing policy
 * predicts of it. Past the fleet's capacity every balancing policy keeps
 * handing the engines work until nearly every request misses its
 * objective; admission keeps the important classes within theirs by
 * refusing the others early, while a refusal can still be retried.
 *
 * What it follows:
 * - The Gateway API Inference Extension (kubernetes-sigs/
 *   gateway-api-inference-extension, its saturation detector and
 *   criticality): critical and standard requests are never refused by
 *   the saturation rule, sheddable ones are when every pod's queue or KV
 *   cache is past a threshold.
 * - HAProxy's own answer for a refusal, 429 with Retry-After, and its
 *   queue ordered by class (set-priority-class) for what waits.
 *
 * Our rule, for a policy that predicts the first token: a standard or
 * sheddable request is refused when its predicted first token on the
 * server the policy chose (the best it found: it prefers a server
 * within the objectives) is past the objective, so that it would miss
 * its own; and, while a class above it is at risk, past its class's
 * share of the objective (its headroom: half, for both), so that what
 * is admitted leaves room for the classes above: a critical request
 * sent next to the same server waits about as long as the last admitted
 * one's predicted first token, then prefills its own prompt, which may
 * be long (a chat with a long document).
 *
 * A class is at risk when one of its own requests was predicted past
 * DBK_ADMIT_RISK_SHARE of the objective within the last
 * DBK_ADMIT_RISK_WINDOW_MS: the evidence is the higher class's own
 * demand meeting a queue. Below capacity a burst queues a long prompt
 * past the share while every critical request still finds a server in
 * time; refusing it then protects nobody (the share applied always shed
 * 416 of 2728 requests at 0.8x ttft's capacity, Mooncake on 4
 * instances; this rule 269). A quarter, not half: critical requests
 * that hit the prefix cache are predicted short until the queue ahead
 * of them is, and with half the evidence came when standard requests
 * admitted up to the objective already held that queue (agentic
 * sessions at 1.5x capacity: 88.6% of critical within, 97.6% now).
 * Once critical traffic meets a queue the share applies at once, and
 * for as long as it keeps meeting one. A request predicted past the
 * objective is refused even then: Mooncake's longest prompts take
 * seconds of prefill, and admitted in a quiet moment they take what
 * critical needs a moment later (critical within objective at 2.5x
 * capacity fell from 98% to 85-92% when they were let in).
 *
 * Measured in the simulator (BENCHMARKS.md, "Overload: priorities and
 * admission"), ttft at 1.5x, 2x and 2.5x its capacity: with the whole
 * objective for standard and 0.9 of it for sheddable, critical fell to
 * 28% within objective on Mooncake (4 instances) at 2.5x, and to 87.9%
 * / 79.9% at 1.5x / 2x on the live bench's mix, where critical prompts
 * are long too; half for both held 99.6% / 99.5% / 99.8% and 99.1% /
 * 97.6% / 97.9%.
 *
 * Policies that do not predict (the reference, plain least load) pass
 * the fleet's saturation and its recent mean first token instead: a
 * sheddable request is refused when the fleet is saturated or its first
 * tokens take more than half the objective on average (the slow tail is
 * then past it), a standard one when they take more than the whole
 * objective (a typical request misses). vLLM takes a prompt into its
 * running batch long before its prefill is done, so a queue of
 * prefills hides from a saturation read off the waiting count; the
 * first tokens show it. Measured in the simulator (BENCHMARKS.md): on
 * Mooncake at 4 instances, plain at 1.5x and 2x its capacity kept 88.4%
 * and 78.6% of its critical requests within objective on the saturation
 * alone, with the first tokens 96.0% and 91.9%; on Azure's
 * conversations 58.2% and 40.4%, against 88.1% and 59.0% (a prediction
 * does better: 99.7% and 99.6% under ttft).
 *
 * Pure: no I/O, no clock, no logging. */
#ifndef DBK_ADMISSION_H
#define DBK_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ordered from the most important: HAProxy's set-priority-class takes
 * the index (a lower class leaves HAProxy's queue first). */
enum dbk_class { DBK_CLASS_CRITICAL, DBK_CLASS_STANDARD, DBK_CLASS_SHEDDABLE, DBK_CLASS_N };

/* A request that names no class, or one we do not know, is standard:
 * never promoted past critical, never refused before the objective is
 * at risk. */
#define DBK_CLASS_DEFAULT DBK_CLASS_STANDARD

#define DBK_ADMIT_DEFAULT_TTFT_MS 2000
#define DBK_ADMIT_DEFAULT_HEADROOM_STANDARD 0.5
#define DBK_ADMIT_DEFAULT_HEADROOM_SHEDDABLE 0.5
/* The shares of the objective the fleet's mean first token may reach
 * before sheddable, and standard, requests are refused without a
 * prediction. A mean hides the tail: past half the objective the slow
 * requests are already late, past the whole a typical one is. */
#define DBK_ADMIT_FLEET_SHARE_SHEDDABLE 0.5
#define DBK_ADMIT_FLEET_SHARE_STANDARD 1.0
#define DBK_ADMIT_DEFAULT_RETRY_MIN_S 1
#define DBK_ADMIT_DEFAULT_RETRY_MAX_S 60
/* A class is at risk for DBK_ADMIT_RISK_WINDOW_MS after one of its
 * requests was predicted past DBK_ADMIT_RISK_SHARE of the objective. */
#define DBK_ADMIT_RISK_SHARE 0.25
#define DBK_ADMIT_RISK_WINDOW_MS 2000
/* Requests of a class refused one after the other are told to retry at
 * least this far apart (admission.c, retry_in_ms). */
#define DBK_ADMIT_RETRY_SPACING_MS 200

struct dbk_admit_config {
	bool enabled;
	long long ttft_ms; /* the first-token objective */
	/* Share of ttft_ms each class's predicted first token may take,
	 * while a class above it is at risk, before it is refused;
	 * critical's is ignored (never refused).
	 * Policies that do not predict use DBK_ADMIT_FLEET_SHARE_*. */
	double headroom[DBK_CLASS_N];
	int retry_min_s, retry_max_s; /* bounds on Retry-After */
};

void dbk_admit_config_default(struct dbk_admit_config *c);

/* "critical", "standard", "sheddable" (case-insensitive), or the
 * Gateway API's "Critical"/"Standard"/"Sheddable", or the digits 0, 1,
 * 2: *cls set and true. Anything else (empty included): *cls is
 * DBK_CLASS_DEFAULT and false, so the caller can count it. */
bool dbk_class_parse(const char *s, size_t n, enum dbk_class *cls);
const char *dbk_class_name(enum dbk_class cls);

/* What is known of the request when the policy has chosen. */
struct dbk_admit_input {
	enum dbk_class cls;
	bool predicted; /* the policy predicted its first token: ttft_ms */
	double ttft_ms; /* ... on the server it chose */
	bool saturated; /* the fleet is saturated (for policies that do not predict) */
	/* For policies that do not predict: the fleet's recent mean first
	 * token (vllm:time_to_first_token_seconds' _sum and _count over the
	 * servers, over the last second or so); 0: not known. */
	double fleet_ttft_ms;
	bool no_server;  /* no usable server at all: nothing to protect */
	uint64_t now_ms; /* when it is decided (the risk's clock) */
};

/* What admission remembers between requests: until when each class is
 * at risk (its requests predicted past DBK_ADMIT_RISK_SHARE), and the
 * retries it has told each class. Zeroed: none. */
struct dbk_admit_state {
	uint64_t risk_until_ms[DBK_CLASS_N];
	/* The earliest Retry-After the next request refused may be told,
	 * on the same clock (retries queued in the order refused). */
	double next_retry_ms[DBK_CLASS_N];
};

enum dbk_admit_verdict {
	DBK_ADMIT_ROUTE, /* serve it where the policy chose */
	DBK_ADMIT_SHED,  /* refuse it: 429 with Retry-After */
};

/* Why a request was shed: the policy's prediction, the fleet's queues
 * and KV (saturation), or the fleet's recent first tokens. */
enum dbk_shed_reason {
	DBK_SHED_PREDICTED_LATE,
	DBK_SHED_SATURATED,
	DBK_SHED_FLEET_LATE,
	DBK_SHED_NREASONS
};

struct dbk_admit_result {
	enum dbk_admit_verdict verdict;
	int retry_after_s;        /* when shed: when a retry is predicted admitted */
	enum dbk_shed_reason why; /* when shed */
};

/* "predicted-late", "saturated", "fleet-late": the word logs use. */
const char *dbk_shed_reason_name(enum dbk_shed_reason why);

/* Decides on in, first noting in st what its prediction shows of its
 * class's risk (critical requests included: they are the evidence). st
 * NULL: nothing remembered, every higher class taken as at risk (the
 * share alone decides). */
struct dbk_admit_result dbk_admit(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                                  const struct dbk_admit_input *in);

#endif
