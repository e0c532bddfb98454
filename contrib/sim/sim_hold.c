/* The requests admission would shed, held at the balancer instead
 * (admit_queue_s): holding them, and deciding them again as requests
 * end and on a timer; see sim_state.h and holdq.h. */
#include "sim_state.h"

#include <math.h>

int dbk_sim_hold_at(struct dbk_sim *s, double t)
{
	if (!dbk_sim_holdq_count(&s->held) || (s->hold_next_s >= s->now && s->hold_next_s <= t))
		return 0;
	s->hold_next_s = t;
	return dbk_evq_push(&s->q, t, EV_HOLD, 0);
}

int dbk_sim_hold(struct dbk_sim *s, uint32_t id)
{
	struct dbk_sim_rstate *r = &s->rs[id];
	unsigned cls = dbk_sim_req_class(&s->reqs[id]);

	if (s->cfg.admit_queue_s > 0 && !r->holding) {
		r->holding = true;
		r->hold_until_s = s->now + s->cfg.admit_queue_s;
		s->prio[cls].held++;
		if (dbk_sim_holdq_push(&s->held, cls, id, r->hold_until_s) != 0 ||
		    dbk_sim_hold_at(s, fmin(s->now + DBK_SIM_HOLD_TICK_S, r->hold_until_s)) != 0)
			return -1;
		return 1;
	}
	if (r->holding && s->now < r->hold_until_s) {
		r->kept = true;
		return 1;
	}
	r->holding = false; /* past its bound: shed, and held again if retried */
	return 0;
}

bool dbk_sim_holding(const struct dbk_sim *s, uint32_t id)
{
	return id < s->n && s->rs[id].holding;
}

/* A held request decided again: served, held on, or shed for good. */
static int hold_decide(void *ctx, uint32_t id)
{
	struct dbk_sim *s = ctx;
	struct dbk_sim_rstate *r = &s->rs[id];

	r->kept = false;
	if (dbk_sim_route(s, id) != 0)
		return DBK_SIM_HOLD_ERROR;
	if (r->kept)
		return DBK_SIM_HOLD_KEEP;
	r->holding = false;
	return DBK_SIM_HOLD_DROP;
}

int dbk_sim_hold_walk(struct dbk_sim *s)
{
	double next = s->now + DBK_SIM_HOLD_TICK_S, first;

	s->hold_next_s = -1;
	if (dbk_sim_holdq_walk(&s->held, hold_decide, s) != 0)
		return -1;
	first = dbk_sim_holdq_first_until(&s->held);
	return dbk_sim_hold_at(s, first < next ? first : next);
}
