/* The time per output token each server's decoders see, read from its
 * scrapes: what admission weighs a request's TPOT against.
 *
 * The TPOT the books predict is a decode step of the batch a request
 * joins at the model's pace. It leaves out the prompts sharing those
 * steps after it, and a server whose budget every step fills with them
 * decodes at the pace of a full step: an A100 with vLLM's 2,048-token
 * budget takes about 140 ms for one, against 14-20 ms predicted. On 8
 * A100s under code prompts at twice their capacity, admission's TPOT
 * rule never fired and 61% of critical requests kept their objectives
 * (BENCHMARKS.md, "Stop 58: a long prefill's steps at the fleet's
 * pace"). vLLM measures the gaps itself, each request's tokens after
 * its first (vllm:inter_token_latency_seconds, the same as
 * time_per_output_token_seconds before it): their mean since the last
 * reading is what a request decoding there now sees. */
#include "predict_int.h"

#include <math.h>

/* Gaps a reading needs, at least: about a second of decoding on a full
 * A100 (256 requests at a step every 60 ms). Steps that carry a prefill
 * chunk take ten times a decode step, so a short span reads a burst,
 * and a burst is not what a request decoding for seconds sees: read
 * every 32 gaps, or every 1-2 s on each server whatever it decoded,
 * admission shed 2-6 times as many requests below capacity over twelve
 * workloads, and 8,192 gaps came too late for code prompts on 8 A100s
 * (BENCHMARKS.md, "Stop 58: the TPOT measured"). */
#define PRED_GAPS_MIN 4096.0
/* A reading older than this tells nothing of now: its requests ended,
 * or the scrapes stopped. A few of its windows on a busy server. */
#define PRED_GAPS_FRESH_MS 10000

void dbk_pred_learn_gaps(struct pred_srv *s, const struct dbk_pred_scrape *sc, uint64_t now_ms)
{
	double n = sc->itl_count, sum = sc->itl_sum_s;

	if (!(n > 0 && sum >= 0 && isfinite(n) && isfinite(sum))) {
		s->gap_n_then = -1;
		return;
	}
	double dn = n - s->gap_n_then, ds = sum - s->gap_sum_then;
	if (s->gap_n_then < 0 || dn < 0 || ds < 0) {
		/* A first look, or the engine restarted (none of the decoders
		 * read before is there): read from now. */
		s->gap_n_then = n;
		s->gap_sum_then = sum;
		s->gap_s = 0;
		return;
	}
	if (dn < PRED_GAPS_MIN)
		return; /* keeps counting from the last reading */
	s->gap_s = ds / dn;
	s->gap_ms = now_ms;
	s->gap_n_then = n;
	s->gap_sum_then = sum;
}

double dbk_pred_gap_seen(const struct pred_srv *s, uint64_t now_ms)
{
	if (!(s->gap_s > 0) || now_ms < s->gap_ms || now_ms - s->gap_ms > PRED_GAPS_FRESH_MS)
		return 0;
	return s->gap_s;
}
