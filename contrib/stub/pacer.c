/* The engine's clock. A step is scheduled (dbk_engine_begin_step) when
 * there is work, its model duration divided by --time-scale elapses on an
 * ev_timer, then its tokens are reported (dbk_engine_end_step) and
 * written to the clients. Consecutive steps are chained on their
 * deadlines rather than on "now", so timer latency does not accumulate
 * into a slower model clock. */
#include <math.h>

#include "server.h"

/* Falling further behind than this (real seconds) restarts the chain of
 * step deadlines at "now" instead of bursting to catch up. */
#define MAX_STEP_LAG_S 0.1

void dbk_stub_maybe_step(struct dbk_stub_server *s)
{
	double d, now, start;

	if (s->stepping)
		return;
	d = dbk_engine_begin_step(s->eng);
	if (d <= 0) {
		s->busy = false;
		return;
	}
	now = ev_now(s->loop);
	start = now;
	if (s->busy) {
		double lag = now - s->deadline;

		if (lag > s->max_lag_s)
			s->max_lag_s = lag;
		if (lag <= MAX_STEP_LAG_S)
			start = s->deadline;
		else
			s->late_steps++;
	}
	s->deadline = start + d / s->opt.time_scale;
	ev_timer_set(&s->step_w, fmax(0.0, s->deadline - now), 0.0);
	ev_timer_start(s->loop, &s->step_w);
	s->stepping = true;
	s->busy = true;
}

static void step_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_stub_server *s = w->data;

	(void)loop;
	(void)revents;
	s->stepping = false;

	/* vLLM's per-step histogram counts what the step's outputs carry:
	 * the tokens generated and, at a first token, the whole prompt. */
	struct dbk_engine_stats before, after;

	dbk_engine_get_stats(s->eng, &before);
	dbk_engine_end_step(s->eng, dbk_stub_on_engine_event, s);
	dbk_engine_get_stats(s->eng, &after);
	dbk_prom_observe(&s->out.iteration_tokens,
	                 (double)(after.prompt_tokens_total - before.prompt_tokens_total +
	                          after.generation_tokens_total - before.generation_tokens_total));
	dbk_stub_lora_record(s);
	dbk_stub_kick_pending(s);
	dbk_stub_maybe_step(s);
}

void dbk_stub_pacer_init(struct dbk_stub_server *s)
{
	ev_init(&s->step_w, step_cb);
	s->step_w.data = s;
}
