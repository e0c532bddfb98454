/* Admission's tickets: see admit_ticket.h. */
#include "admit_ticket.h"

#include <math.h>

static struct dbk_ticket *slot_of(struct dbk_admit_tickets *t, uint64_t key)
{
	/* The identity is a hash already; its low bits pick the slot. */
	return &t->slot[key & (DBK_TICKETS_N - 1)];
}

void dbk_tickets_admitted(struct dbk_admit_tickets *t, enum dbk_class cls, uint64_t now_ms)
{
	if ((unsigned)cls >= DBK_CLASS_N)
		return;
	if (t->last_ms[cls] && now_ms >= t->last_ms[cls]) {
		double gap = (double)(now_ms - t->last_ms[cls]);

		t->gap_ms[cls] = t->gap_ms[cls] > 0 ? t->gap_ms[cls] + DBK_TICKET_GAP_ALPHA *
		                                                         (gap - t->gap_ms[cls])
		                                    : gap;
	}
	t->last_ms[cls] = now_ms;
}

int dbk_tickets_issue(struct dbk_admit_tickets *t, uint64_t key, enum dbk_class cls,
                      uint64_t now_ms, int retry_after_s, int max_s)
{
	uint64_t told = now_ms + (uint64_t)(retry_after_s > 0 ? retry_after_s : 0) * 1000;
	struct dbk_ticket *s;
	double s_from_now;

	if (!key || (unsigned)cls >= DBK_CLASS_N)
		return retry_after_s;
	if (t->next_ms[cls] > told)
		told = t->next_ms[cls];
	/* Told in whole seconds (Retry-After's unit), so the moment is
	 * rounded up to one. */
	s_from_now = ceil((double)(told - now_ms) / 1000.0);
	if (s_from_now > max_s)
		return max_s;
	told = now_ms + (uint64_t)s_from_now * 1000;
	t->next_ms[cls] = told + (uint64_t)t->gap_ms[cls];
	s = slot_of(t, key);
	s->key = key;
	s->told_ms = told;
	t->issued++;
	return (int)s_from_now;
}

bool dbk_tickets_redeem(struct dbk_admit_tickets *t, uint64_t key, uint64_t now_ms)
{
	struct dbk_ticket *s = slot_of(t, key);

	if (!key || s->key != key)
		return false;
	if (now_ms + DBK_TICKET_EARLY_MS < s->told_ms) {
		t->early++;
		return false;
	}
	s->key = 0;
	return now_ms <= s->told_ms + DBK_TICKET_GRACE_MS;
}

/* Whether a class above cls has shown evidence of risk lately. */
static bool above_at_risk(const struct dbk_admit_state *st, enum dbk_class cls, uint64_t now_ms)
{
	if (!st)
		return true;
	for (int k = 0; k < (int)cls; k++)
		if (st->risk_until_ms[k] > now_ms &&
		    now_ms - st->risk_last_ms[k] <= DBK_TICKET_RISK_RECENT_MS)
			return true;
	return false;
}

struct dbk_admit_result dbk_admit_ticketed(const struct dbk_admit_config *c,
                                           struct dbk_admit_state *st, struct dbk_admit_tickets *t,
                                           uint64_t key, const struct dbk_admit_input *in)
{
	struct dbk_admit_result r = dbk_admit(c, st, in);
	enum dbk_class cls = (unsigned)in->cls < DBK_CLASS_N ? in->cls : DBK_CLASS_DEFAULT;

	if (!t || !key || !c->enabled || cls == DBK_CLASS_CRITICAL)
		return r;
	/* Past capacity for a while no moment is honest (BENCHMARKS.md,
	 * "Stop 39: Retry-After, measured"): no ticket. */
	if (r.verdict == DBK_ADMIT_SHED && dbk_admit_sustained(st, cls, in->now_ms)) {
		dbk_tickets_redeem(t, key, in->now_ms);
		return r;
	}
	if (r.verdict == DBK_ADMIT_ROUTE) {
		dbk_tickets_redeem(t, key, in->now_ms); /* used up, if it had one */
		dbk_tickets_admitted(t, cls, in->now_ms);
		return r;
	}
	/* Its ticket honoured: the rule would shed it, but it was told to
	 * come now, and it is in time for its own objective with nothing
	 * above it at risk. */
	if (dbk_tickets_redeem(t, key, in->now_ms) && in->predicted &&
	    in->ttft_ms <= (double)c->ttft_ms && !above_at_risk(st, cls, in->now_ms)) {
		t->honoured++;
		dbk_tickets_admitted(t, cls, in->now_ms);
		r.verdict = DBK_ADMIT_ROUTE;
		r.retry_after_s = 0;
		return r;
	}
	r.retry_after_s = dbk_tickets_issue(t, key, cls, in->now_ms, r.retry_after_s, c->retry_max_s);
	return r;
}
