/* Admission by class: see admission.h for the rule and its sources. */
#include "admission.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const class_names[DBK_CLASS_N] = {
	[DBK_CLASS_CRITICAL] = "critical",
	[DBK_CLASS_STANDARD] = "standard",
	[DBK_CLASS_SHEDDABLE] = "sheddable",
};

void dbk_admit_config_default(struct dbk_admit_config *c)
{
	*c = (struct dbk_admit_config){
		.enabled = false,
		.ttft_ms = DBK_ADMIT_DEFAULT_TTFT_MS,
		.tpot_ms = DBK_ADMIT_DEFAULT_TPOT_MS,
		.headroom = { [DBK_CLASS_CRITICAL] = INFINITY,
		              [DBK_CLASS_STANDARD] = DBK_ADMIT_DEFAULT_HEADROOM_STANDARD,
		              [DBK_CLASS_SHEDDABLE] = DBK_ADMIT_DEFAULT_HEADROOM_SHEDDABLE },
		.retry_min_s = DBK_ADMIT_DEFAULT_RETRY_MIN_S,
		.retry_max_s = DBK_ADMIT_DEFAULT_RETRY_MAX_S,
	};
}

bool dbk_class_parse(const char *s, size_t n, enum dbk_class *cls)
{
	*cls = DBK_CLASS_DEFAULT;
	if (n == 1 && s[0] >= '0' && s[0] < '0' + DBK_CLASS_N) {
		*cls = (enum dbk_class)(s[0] - '0');
		return true;
	}
	for (int i = 0; i < DBK_CLASS_N; i++) {
		const char *name = class_names[i];

		if (strlen(name) == n && strncasecmp(s, name, n) == 0) {
			*cls = (enum dbk_class)i;
			return true;
		}
	}
	return false;
}

const char *dbk_shed_reason_name(enum dbk_shed_reason why)
{
	static const char *const names[DBK_SHED_NREASONS] = {
		[DBK_SHED_PREDICTED_LATE] = "predicted-late",
		[DBK_SHED_SATURATED] = "saturated",
		[DBK_SHED_FLEET_LATE] = "fleet-late",
	};

	return (unsigned)why < DBK_SHED_NREASONS ? names[why] : "?";
}

const char *dbk_class_name(enum dbk_class cls)
{
	return (unsigned)cls < DBK_CLASS_N ? class_names[cls] : "standard";
}

/* The excess over the class's share drains at one millisecond of queue
 * per millisecond if nothing more arrives: a retry after it would be
 * predicted within the share again. Rounded up, and bounded so that a
 * wild prediction never tells a client to go away for an hour. */
static int retry_after(const struct dbk_admit_config *c, double excess_ms)
{
	double s = ceil(excess_ms / 1000.0);

	if (!(s >= c->retry_min_s))
		return c->retry_min_s;
	if (s > c->retry_max_s)
		return c->retry_max_s;
	return (int)s;
}

/* Until when a class above cls is at risk (now_ms or before: none is);
 * with no memory, always. */
static uint64_t above_risk(const struct dbk_admit_state *st, enum dbk_class cls, uint64_t now_ms)
{
	uint64_t until = now_ms;

	if (!st)
		return UINT64_MAX;
	for (int k = 0; k < (int)cls; k++)
		if (st->risk_until_ms[k] > until)
			until = st->risk_until_ms[k];
	return until;
}

/* Whether class k is at risk on evidence renewed for
 * DBK_ADMIT_SUSTAINED_MS or more, and still coming: the fleet past
 * capacity, not a burst, nor a fleet whose backlog has drained. */
static bool sustained_at(const struct dbk_admit_state *st, int k, uint64_t now_ms)
{
	return st->risk_until_ms[k] > now_ms &&
	       st->risk_last_ms[k] - st->risk_since_ms[k] >= DBK_ADMIT_SUSTAINED_MS &&
	       now_ms - st->risk_last_ms[k] <= DBK_ADMIT_SUSTAINED_RECENT_MS;
}

/* Milliseconds until no class above cls is at sustained risk, if no
 * more evidence comes (each sustained episode's latest piece past
 * DBK_ADMIT_SUSTAINED_RECENT_MS old): 0 when none is, and with no
 * memory, not known, taken as none. */
static double quiet_in_ms(const struct dbk_admit_state *st, enum dbk_class cls, uint64_t now_ms)
{
	double ms = 0;

	for (int k = 0; st && k < (int)cls; k++)
		if (sustained_at(st, k, now_ms))
			ms = fmax(ms, (double)(st->risk_last_ms[k] + DBK_ADMIT_SUSTAINED_RECENT_MS +
			                       1 - now_ms));
	return ms;
}

/* A request of cls predicted to wait past DBK_ADMIT_RISK_SHARE of the
 * objective at now_ms (or its TPOT past DBK_ADMIT_TPOT_RISK_SHARE: the
 * TPOT's arrays): a new episode of risk, or the same renewed. A
 * gap longer than DBK_ADMIT_SUSTAINED_MS starts a new one: two bursts
 * apart are not one sustained overload. The hold is from now: long once
 * the episode is sustained, short while it is a burst. */
static void evidence_of(uint64_t *until, uint64_t *since, uint64_t *last, enum dbk_class cls,
                        uint64_t now_ms)
{
	if (until[cls] <= now_ms || now_ms - last[cls] > DBK_ADMIT_SUSTAINED_MS)
		since[cls] = now_ms;
	last[cls] = now_ms;
	until[cls] = now_ms + (now_ms - since[cls] >= DBK_ADMIT_SUSTAINED_MS
	                               ? DBK_ADMIT_RISK_HOLD_MS
	                               : DBK_ADMIT_BURST_HOLD_MS);
}

static void evidence(struct dbk_admit_state *st, enum dbk_class cls, uint64_t now_ms)
{
	evidence_of(st->risk_until_ms, st->risk_since_ms, st->risk_last_ms, cls, now_ms);
}

/* The TPOT's own risk (issue 28): past capacity on agentic sessions
 * what goes late is the TPOT, attention reading every request's
 * context, not the first token. Evidence is a request's own predicted
 * TPOT past DBK_ADMIT_TPOT_RISK_SHARE of its objective, or a TPOT the
 * decoders on its server were measured past the objective; while a class
 * above is at that risk, a lower request is refused when, with it, the
 * decoders on its server would step past that share: it is refused
 * for the TPOT it adds to them, not for its own. True: refused, with
 * *retry_ms until the risk lapses if nothing renews it. */
static bool tpot_refused(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                         const struct dbk_admit_input *in, enum dbk_class cls, double *retry_ms)
{
	uint64_t until = in->now_ms;
	/* A TPOT measured needs no margin for a prediction's error: it is
	 * held to the objective itself, the share's own rule applied to it
	 * scaled up to the objective. Held to the share, it shed 1,576
	 * requests below capacity over twelve workloads instead of 1,356
	 * (BENCHMARKS.md, "Stop 58: the TPOT measured"). */
	double share = fmax(in->tpot_ms, in->tpot_seen_ms * DBK_ADMIT_TPOT_RISK_SHARE) /
	               (double)c->tpot_ms;

	if (!st || !(share > 0))
		return false;
	if (share > DBK_ADMIT_TPOT_RISK_SHARE)
		evidence_of(st->tpot_until_ms, st->tpot_since_ms, st->tpot_last_ms, cls,
		            in->now_ms);
	for (int k = 0; k < (int)cls; k++)
		if (st->tpot_until_ms[k] > until)
			until = st->tpot_until_ms[k];
	if (until <= in->now_ms || !(share > DBK_ADMIT_TPOT_REFUSE_SHARE))
		return false;
	*retry_ms = (double)(until - in->now_ms);
	return true;
}

/* Whether any class is at risk, of its first token or its TPOT (with
 * no memory, taken to be). Only then is a KV-fit wait counted: on long
 * agentic sessions the books count the blocks that running requests
 * share once per request, and price a server whose engine has room as
 * full, so the wait is a phantom below capacity (agentic 71 at 0.8x:
 * 1066 predictions waiting over 1 s, none of the critical ones late);
 * past capacity it grows with what is in flight and, once another
 * signal has raised a risk, keeps it (BENCHMARKS.md, "Stop 41: a TPOT
 * risk for admission"). */
static bool any_risk(const struct dbk_admit_state *st, uint64_t now_ms)
{
	if (!st)
		return true;
	for (int k = 0; k < DBK_CLASS_N; k++)
		if (st->risk_until_ms[k] > now_ms || st->tpot_until_ms[k] > now_ms)
			return true;
	return false;
}

/* The rule for a predicted first token t, of which own is the request's
 * own prefill and the rest, wait, what is ahead of it (admission.h). */
static struct dbk_admit_result predicted(const struct dbk_admit_config *c,
                                         struct dbk_admit_state *st,
                                         const struct dbk_admit_input *in, enum dbk_class cls)
{
	struct dbk_admit_result r = { DBK_ADMIT_ROUTE, 0, DBK_SHED_PREDICTED_LATE };
	double obj = (double)c->ttft_ms, t = in->ttft_ms;

	if (!any_risk(st, in->now_ms) && in->kv_wait_ms > 0)
		t = fmax(t - in->kv_wait_ms, in->own_ms);
	double own = in->own_ms > 0 ? fmin(in->own_ms, t) : 0, wait = t - own;

	/* A first token before its own prefill is done (a negative wait, or
	 * a negative time) is no prediction: the policy's books have gone
	 * wrong, and they do when the fleet is past what they model (KV
	 * full, requests preempted). Taken as in time, it let every request
	 * in while the fleet collapsed; it is taken as late, for every
	 * class, critical's risk included. */
	if (t < in->own_ms || t < 0) {
		own = fmax(in->own_ms, 0);
		t = wait = INFINITY;
	}

	if (st && wait > obj * DBK_ADMIT_RISK_SHARE)
		evidence(st, cls, in->now_ms);
	double tpot_retry_ms;

	if (tpot_refused(c, st, in, cls, &tpot_retry_ms) && cls != DBK_CLASS_CRITICAL) {
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = retry_after(c, tpot_retry_ms);
		return r;
	}
	if (cls == DBK_CLASS_CRITICAL)
		return r;
	double share = obj * c->headroom[cls];
	/* Past capacity for a while, a lower class gets only the room that
	 * is idle and brief: a request that starts at once and prefills
	 * quickly. What its share would let build (a second of backlog on
	 * every server) is paid by the next critical request's first token
	 * and by the decoders' TPOT, which prefill chunks stretch while
	 * the backlog lasts. */
	double full = share, quiet_ms = quiet_in_ms(st, cls, in->now_ms);

	if (quiet_ms > 0)
		share *= DBK_ADMIT_SUSTAINED_FACTOR;
	uint64_t until = above_risk(st, cls, in->now_ms);
	/* Late for its own objective because of what waits ahead of it:
	 * once that has drained (if nothing more came, the queue ahead
	 * loses a millisecond a millisecond) it is predicted in time. */
	double drained = fmin(t - obj, wait - share);

	if (until <= in->now_ms) {
		if (!(drained > 0))
			return r;
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = retry_after(c, drained);
		return r;
	}
	if (!(t > share))
		return r;
	r.verdict = DBK_ADMIT_SHED;
	/* Admitted again when the queue ahead leaves its prefill within the
	 * share, or when the risk above has lapsed (if nothing renews it)
	 * and it is no longer late for its own objective. */
	double lapsed = until == UINT64_MAX ? INFINITY : (double)(until - in->now_ms);
	double within = own < share ? t - share : INFINITY;
	/* Its own prefill past the eighth but within the share: admitted
	 * again once the sustained episode goes quiet (if nothing renews
	 * it) and the queue leaves it within the share. Told the end of the
	 * risk's hold instead, such requests came back 30 s later, long
	 * after a burst of code prompts had drained (BENCHMARKS.md, "Stop
	 * 55: admission routes as it was measured"). */
	if (quiet_ms > 0 && own >= share && own < full)
		within = fmax(quiet_ms, t - full);
	r.retry_after_s = retry_after(c, fmin(within, fmax(lapsed, drained)));
	return r;
}

struct dbk_admit_result dbk_admit(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                                  const struct dbk_admit_input *in)
{
	struct dbk_admit_result r = { DBK_ADMIT_ROUTE, 0, DBK_SHED_PREDICTED_LATE };
	enum dbk_class cls = (unsigned)in->cls < DBK_CLASS_N ? in->cls : DBK_CLASS_DEFAULT;

	if (!c->enabled)
		return r;
	/* With no usable server HAProxy answers 503 on its own: a 429
	 * would send the client back to a fleet that is not there. */
	if (in->no_server)
		return r;
	if (in->predicted)
		return predicted(c, st, in, cls);
	if (cls == DBK_CLASS_CRITICAL)
		return r;
	if (in->saturated && cls == DBK_CLASS_SHEDDABLE) {
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = c->retry_min_s;
		r.why = DBK_SHED_SATURATED;
		return r;
	}
	double share = (double)c->ttft_ms * (cls == DBK_CLASS_SHEDDABLE
	                                             ? DBK_ADMIT_FLEET_SHARE_SHEDDABLE
	                                             : DBK_ADMIT_FLEET_SHARE_STANDARD);
	if (in->fleet_ttft_ms > share) {
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = retry_after(c, in->fleet_ttft_ms - share);
		r.why = DBK_SHED_FLEET_LATE;
	}
	return r;
}
