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
 * Our rule (issue 28: nothing is shed while a server could still serve
 * the request in time; a lower class is refused when it would miss its
 * own objective or push a higher class past theirs). The policy
 * predicts the request's first token t on the server it chose, and of
 * it the request's own prefill; the rest, the wait, is what is ahead of
 * it there.
 * - Its own objective: refused when t is past the objective and its
 *   wait past its class's share of it. Late by its own length alone
 *   (a long prompt on an idle fleet) it is served late rather than
 *   refused, since no server can serve it sooner and a refusal would
 *   come back for ever; late by the queue, a retry once the queue has
 *   drained is predicted in time.
 * - A higher class's: a class is at risk for a while (a hold) after
 *   one of its own requests was predicted to wait more than
 *   DBK_ADMIT_RISK_SHARE of the objective before its prefill (it then
 *   has a quarter of it left for its own prompt). While a class above
 *   is at risk, a request is refused when t is past its class's share
 *   (its headroom: standard and sheddable half of it): a critical
 *   request sent next to the same server waits about as long, then
 *   prefills its own prompt, which may be long. The evidence is the
 *   higher class's own wait, never the lower request's length, so a
 *   burst that leaves every critical request a server in time refuses
 *   nothing; and the hold outlasts the queue that raised it, so that a
 *   sustained overload is not let in again each time the refusals have
 *   emptied the queue: 30 s after a sustained episode's evidence, 15 s
 *   after a burst's (below capacity a lone burst held the lower classes
 *   to their share for 30 s, long after its queue had drained).
 * - Sustained: while a class above is at risk on evidence renewed for
 *   DBK_ADMIT_SUSTAINED_MS, every piece within 5 s of the last, and
 *   the latest at most 10 s old (a burst's evidence comes at once, or
 *   for a few seconds), the share is an eighth of itself: past capacity, a
 *   backlog of a second on every server, which the share allows, makes
 *   the next critical request late and stretches the decoders' TPOT
 *   with prefill chunks. Agentic sessions on 4 instances at 2x
 *   capacity: critical within 87.2% -> 90.7% (BENCHMARKS.md, "Stop
 *   37"). Two pieces of a burst's evidence 10 s apart are not a
 *   sustained episode, nor is the fleet once the evidence has stopped:
 *   below capacity (0.8x) on the agentic sessions the eighth, held on
 *   for the 30 s after a burst's last evidence, refused requests that
 *   would start at once on an idle server; with the gap, the recency
 *   and the burst's hold, 119 -> 73 and 220 -> 142 refused at 0.8x,
 *   goodput higher there at every load (Mooncake 4 at 2.5x: 3% lower;
 *   BENCHMARKS.md, "Stop 38").
 * - The TPOT's own risk: past capacity on agentic sessions what goes
 *   late is the TPOT (attention reads every context there). A class
 *   is at TPOT risk, with the same holds, after one of its requests
 *   was predicted a TPOT past 3/4 of its objective (--admit-tpot,
 *   admission's own: routing keeps 100 ms); while a class
 *   above is, a lower request that would leave the decoders of its
 *   server past that is refused.
 * - The KV-fit wait (the policy's wait for KV room) counts only while
 *   some class is at risk: the books count the blocks running requests
 *   share once per request, so below capacity it priced servers with
 *   room as full and raised risks that were not there (agentic 72 at
 *   0.8x: 119 -> 28 refused); past capacity it grows with what is in
 *   flight and keeps a raised risk (BENCHMARKS.md, "Stop 41: a TPOT
 *   risk for admission").
 * - A prediction that cannot be right (the first token before its own
 *   prefill is done) is taken as late: the policy's books go wrong when
 *   the fleet is past what they model (KV full on long agentic
 *   sessions), and taken as in time it let everything in while the
 *   fleet collapsed (BENCHMARKS.md, "Stop 37").
 * Measured in the simulator (BENCHMARKS.md, "Shed on evidence of
 * risk", ttft, Mooncake, 4 instances): the share alone refused 416 of
 * 2728 requests at 0.8x its capacity, Mooncake's longest prompts on an
 * idle fleet among them, and 13% of their retries after Retry-After
 * were admitted; this rule 112 (82% of retries admitted), critical
 * within objective 97.9% (97.4% / 97.7% at 1.5x / 2x, against 99.5%
 * with the share alone). A hold of 10 s refused 83 at 0.8x but kept
 * critical at 94.5% at 2.5x (68% on agentic sessions at 2x, against
 * 80%); 2 s, 65% at 2.5x; a risk share of 0.5 refused 153 at 0.8x.
 * Earlier, with the
 * share alone: the whole objective for standard and 0.9 of it for
 * sheddable let critical fall to 28% at 2.5x on Mooncake and to 87.9% /
 * 79.9% at 1.5x / 2x on the live bench's mix (critical prompts long
 * too).
 *
 * Policies
 * that do not predict (the reference, plain least load) pass the fleet's
 * saturation and its recent mean first token instead: a sheddable
 * request is refused when the fleet is saturated or its first tokens
 * take more than half the objective on average (the slow tail is then
 * past it), a standard one when they take more than the whole objective
 * (a typical request misses). vLLM takes a prompt into its running
 * batch long before its prefill is done, so a queue of prefills hides
 * from a saturation read off the waiting count; the first tokens show
 * it. Measured in the simulator (BENCHMARKS.md): on Mooncake at 4
 * instances, plain at 1.5x and 2x its capacity kept 88.4% and 78.6% of
 * its critical requests within objective on the saturation alone, with
 * the first tokens 96.0% and 91.9%; on Azure's conversations 58.2%
 * and 40.4%, against 88.1% and 59.0% (a prediction does better:
 * 99.7% and 99.6% under ttft).
 *
 * Pure: no I/O, no clock of its own (the caller gives now_ms), no
 * logging. */
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
/* The TPOT objective admission's TPOT risk weighs (--admit-tpot): vLLM's
 * benchmark default, as the routing's own (predict.h's
 * DBK_PRED_TPOT_SLO_S), which it does not change. */
#define DBK_ADMIT_DEFAULT_TPOT_MS 100
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
/* A class is at risk after one of its requests was predicted to wait
 * more than DBK_ADMIT_RISK_SHARE of the objective before its own
 * prefill: for DBK_ADMIT_BURST_HOLD_MS after evidence of a burst, for
 * DBK_ADMIT_RISK_HOLD_MS after evidence of a sustained episode. */
#define DBK_ADMIT_RISK_SHARE 0.75
#define DBK_ADMIT_RISK_HOLD_MS 30000
#define DBK_ADMIT_BURST_HOLD_MS 15000
/* Evidence of a class's risk renewed for DBK_ADMIT_SUSTAINED_MS, each
 * piece within DBK_ADMIT_SUSTAINED_MS of the one before (a longer gap
 * starts a new episode), is the fleet past capacity, not a burst: while
 * its latest piece is at most DBK_ADMIT_SUSTAINED_RECENT_MS old, the
 * classes below it get DBK_ADMIT_SUSTAINED_FACTOR of their share. */
#define DBK_ADMIT_SUSTAINED_MS 5000
#define DBK_ADMIT_SUSTAINED_RECENT_MS 10000
#define DBK_ADMIT_SUSTAINED_FACTOR 0.125
/* A class is at TPOT risk, with the same holds, after one of its
 * requests was predicted a TPOT past DBK_ADMIT_TPOT_RISK_SHARE of the
 * TPOT objective; while a class above is, a lower request whose joining
 * would leave the decoders on its server past DBK_ADMIT_TPOT_REFUSE_SHARE
 * is refused. */
#define DBK_ADMIT_TPOT_RISK_SHARE 0.75
#define DBK_ADMIT_TPOT_REFUSE_SHARE 0.75

struct dbk_admit_config {
	bool enabled;
	long long ttft_ms; /* the first-token objective */
	long long tpot_ms; /* the TPOT objective of the TPOT risk */
	/* Share of ttft_ms each class's predicted first token may take,
	 * while a class above it is at risk, before it is refused (and, at
	 * any time, the share of its wait once it is late); critical's is
	 * ignored (never refused).
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
	bool no_server; /* no usable server at all: nothing to protect */
	/* Of ttft_ms, the request's own prefill there (the rest is the wait
	 * for what is ahead of it); 0: not known, all of it waits. */
	double own_ms;
	/* Its predicted TPOT on that server, the decode step every request
	 * there takes once it joins, in ms (weighed against the config's
	 * tpot_ms); 0: not known (no TPOT rule). */
	double tpot_ms;
	/* The TPOT the decoders on that server saw lately, measured from
	 * its scrapes, in ms; 0: not known. */
	double tpot_seen_ms;
	/* Of ttft_ms, the wait for KV room there: counted only while a
	 * class is at risk (admission.c, any_risk); 0: none known. */
	double kv_wait_ms;
	uint64_t now_ms; /* when it is decided: dbk_admit_state's clock */
};

/* What admission remembers between requests: until when each class is
 * at risk. Zeroed: none is. */
struct dbk_admit_state {
	uint64_t risk_until_ms[DBK_CLASS_N];
	/* The first and the latest evidence of each class's current
	 * risk (an episode ends when its hold lapses). */
	uint64_t risk_since_ms[DBK_CLASS_N], risk_last_ms[DBK_CLASS_N];
	/* The same for each class's TPOT risk. */
	uint64_t tpot_until_ms[DBK_CLASS_N];
	uint64_t tpot_since_ms[DBK_CLASS_N], tpot_last_ms[DBK_CLASS_N];
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
	int retry_after_s;        /* when shed: when the excess is predicted gone */
	enum dbk_shed_reason why; /* when shed */
};

/* "predicted-late", "saturated", "fleet-late": the word logs use. */
const char *dbk_shed_reason_name(enum dbk_shed_reason why);

/* st: the deciding balancer's memory, updated from every predicted
 * request, critical ones included; NULL: none, every class above is
 * taken to be at risk (the share alone decides). */
struct dbk_admit_result dbk_admit(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                                  const struct dbk_admit_input *in);

#endif
