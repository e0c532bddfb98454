/* The step budget of each server, learnt from its scrapes: what the
 * queue there is packed into when the operator did not tell it
 * (--max-num-batched-tokens).
 *
 * vLLM's /metrics carry no scheduler setting, and its per-step
 * histogram (vllm:iteration_tokens_total) cannot show the budget
 * either: a step's observation counts a prompt whole at its first
 * token, so the step that ends a 30,000-token prompt observes 30,000
 * whatever its chunk was. Its count is the steps, though, and the
 * token counters are the work: between two scrapes that both found
 * PRED_BUDGET_WAITING prompts waiting, the engine was filling its steps
 * from the queue, so the tokens it computed (prompt and generated, net
 * of the prompt tokens its prefix cache held) over the steps it took
 * are its budget. A prompt counted whole where only its last chunk fell
 * in the span evens out over the spans summed.
 *
 * Until a server has shown it, its queue is packed into the default
 * budget (vLLM's on an H100): a server that never queues long needs no
 * more, and one with a smaller budget (an A100's 2048) queues first and
 * is learnt. A mean below PRED_BUDGET_MIN is not a budget: those steps
 * waited for a seat (max-num-seqs) or for KV room, which packing does
 * not model, and the default is kept. */
#include "predict_int.h"

/* Prompts waiting at both ends of a span, at least: with fewer, they
 * are mostly requests that arrived during a step, not a queue; on 16
 * H100s and A100s under short code prompts, one waiting read
 * 1,550-7,360 tokens a step, four the A100s' 2,048 within 3%
 * (BENCHMARKS.md, "Stop 53: the step budget learnt"). */
#define PRED_BUDGET_WAITING 4.0
/* Steps summed, at least, before the budget is used: long enough that
 * a long prompt counted whole within one span is a small part of it. */
#define PRED_BUDGET_STEPS 16.0
/* vLLM's smallest default budget is 2048. On 16 servers of 64 seats
 * the spans averaged 300-800 tokens a step; packed into that, ttft's
 * capacity fell 14%, not packed 8%, and packed into the default it
 * held (BENCHMARKS.md, "Stop 53"). */
#define PRED_BUDGET_MIN 1024.0

static bool counted(const struct dbk_pred_scrape *sc)
{
	return sc->step_tokens >= 0 && sc->steps >= 0;
}

void dbk_pred_learn_budget(struct pred_srv *s, const struct dbk_pred_scrape *sc)
{
	const struct dbk_pred_scrape *then = &s->sc;

	if (!s->have_scrape || !counted(then) || !counted(sc))
		return;
	double dt = sc->step_tokens - then->step_tokens, dn = sc->steps - then->steps;

	if (dn < 0) {
		/* The steps went back: a new engine, maybe another budget. The
		 * tokens may fall over a span: vLLM counts a prompt's cached
		 * tokens when it is scheduled and the prompt when its first
		 * token comes, so a long cached prompt admitted late in a span
		 * takes its hits off before its prompt is in. Summed, the
		 * spans even it out; taken for a new engine, the budget was
		 * forgotten several times a second on a busy server. */
		s->bud_tokens = s->bud_steps = s->bud_learnt = 0;
		return;
	}
	if (!(then->waiting >= PRED_BUDGET_WAITING && sc->waiting >= PRED_BUDGET_WAITING) ||
	    dn == 0)
		return;
	s->bud_tokens += dt;
	s->bud_steps += dn;
	if (s->bud_steps >= PRED_BUDGET_STEPS) {
		double b = s->bud_tokens / s->bud_steps;

		s->bud_learnt = b >= PRED_BUDGET_MIN ? b : 0;
	}
}
