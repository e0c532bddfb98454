/* The seats of each server (vLLM's --max-num-seqs), learnt from its
 * scrapes: past them a newcomer waits for a running request to end,
 * however short its prompt, and the prefill queue the books price
 * does not show that wait.
 *
 * vLLM's /metrics carry no scheduler setting, but a server out of seats
 * shows one: prompts wait while the running count stays at the most it
 * ever reached, the KV cache has room, and the steps are far from full
 * (a step budget spent would keep prompts waiting too, but its steps
 * are full: a long prompt's chunks). Three scrapes in a row that show
 * that, at one count, make it the server's seats. A span whose tokens
 * fell (vLLM counts a cached prompt's hits when it is scheduled, its
 * prompt at its first token: predict_budget.c) shows nothing of its
 * steps, and breaks the run. A count past them later, steps that go
 * back (another engine) and a reset forget them. Nothing changes on a
 * server never short of seats, nor on one whose /metrics count no
 * steps (vllm:iteration_tokens_total). */
#include "predict_int.h"

/* The KV cache's use below which waiting prompts are not waiting for
 * KV: vLLM admits while blocks are free, short of a 1% watermark, so a
 * queue held for KV shows a cache nearly full. */
#define PRED_SEATS_KV_BELOW 0.9
/* Tokens a step, over the span, below this share of the server's
 * budget: its steps had room, so the queue waited for something else. */
#define PRED_SEATS_STEP_SHARE 0.5
/* Spans in a row at one count: a count that merely stayed put over one
 * span while the budget was spent shows no more. Three learnt later,
 * and on 16 servers of 64 seats up to 4 points fewer requests were
 * within the objectives at a fixed rate than with two (BENCHMARKS.md,
 * "Stop 54: the seats learnt"). */
#define PRED_SEATS_SPANS 2

static bool counted(const struct dbk_pred_scrape *sc)
{
	return sc->step_tokens >= 0 && sc->steps >= 0 && sc->running >= 0 && sc->waiting >= 0 &&
	       sc->kv_usage >= 0;
}

static void forget(struct pred_srv *s)
{
	s->seats = s->seat_at = s->run_max = 0;
	s->seat_spans = 0;
}

void dbk_pred_learn_seats(struct pred_srv *s, const struct dbk_pred_scrape *sc, double budget)
{
	const struct dbk_pred_scrape *then = &s->sc;

	if (!s->have_scrape || !counted(then) || !counted(sc))
		return;
	double dt = sc->step_tokens - then->step_tokens, dn = sc->steps - then->steps;

	if (dn < 0) {
		forget(s);
		return;
	}
	if (s->seats > 0 && sc->running > s->seats)
		s->seats = 0; /* more ran than it had: not the seats */
	s->run_max = fmax(s->run_max, fmax(then->running, sc->running));
	bool bound = then->waiting >= 1 && sc->waiting >= 1 && sc->running >= 1 &&
	             then->running == sc->running && sc->running >= s->run_max &&
	             then->kv_usage < PRED_SEATS_KV_BELOW && sc->kv_usage < PRED_SEATS_KV_BELOW &&
	             dn > 0 && dt >= 0 && dt / dn < PRED_SEATS_STEP_SHARE * budget;

	if (!bound) {
		s->seat_spans = 0;
		return;
	}
	if (sc->running != s->seat_at)
		s->seat_spans = 0;
	s->seat_at = sc->running;
	if (++s->seat_spans >= PRED_SEATS_SPANS)
		s->seats = s->seat_at;
}
