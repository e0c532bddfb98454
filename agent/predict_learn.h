/* A server's prefill and decode speed learnt from its requests, one at a
 * time, beside what its scraped histograms say.
 *
 * What a request teaches: HAProxy's completion line ends the request's
 * lease, so the agent sees its whole duration (commit to end, HAProxy's
 * %Tt). None of HAProxy's timers marks the first token on vLLM's
 * response path: a stream's headers leave before it (%Tr ends there,
 * BENCHMARKS.md "Learning a server's speed"), a whole answer's with the
 * last token. So a request's duration y is fitted as
 *
 *   y = a * x1 + b * x2
 *
 * with x1 its predicted first token at the fleet's speed (the prefill
 * queued ahead and its own) and x2 its predicted decode (output tokens
 * times the step of the batch it joined, at the fleet's speed): a is how
 * much slower the server prefills than the engine model, b how much
 * slower it decodes. Each row is divided by x1 + x2, so that a long
 * request counts no more than a short one (the errors are relative), and
 * older rows fade (PRED_LEARN_HORIZON requests). The fit is pulled
 * towards a prior (a0, b0), the operator's weight or the fleet's mean:
 * its scale as PRED_LEARN_PRIOR requests would (a server learns from its
 * first request, and a few stray ones, an expired lease or an error
 * answered at once, move it little), its split between a and b as
 * PRED_LEARN_SPLIT would, so that requests all alike, which tell the sum
 * and not the split, scale both factors together.
 *
 * Pure: no clock, no I/O. */
#ifndef DBK_PREDICT_LEARN_H
#define DBK_PREDICT_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The normal equations of one server's fit, faded. */
struct dbk_plearn {
	double uu, uv, vv, uz, vz, zz, n;
};

/* Adds one observation: predicted first token x1 and decode x2 (seconds
 * at the fleet's speed), observed duration y, counted w times (1 for a
 * request; a histogram's sample counts as its count). Ignored unless
 * x1 + x2 > 0, y > 0 and all finite. */
void dbk_plearn_add(struct dbk_plearn *l, double x1, double x2, double y, double w);

/* Every row counts keep (0..1] times what it did: evidence fading with
 * its age rather than with the server's later requests. */
void dbk_plearn_fade(struct dbk_plearn *l, double keep);

/* The fit (a, b), pulled towards (a0, b0) scaled by the rows' common
 * factor; (a0, b0) without observations. Rows alike in their mix of
 * first token and decode cannot tell a from b: the fit then moves
 * both in the prior's ratio, and only rows that differ split them. */
void dbk_plearn_solve(const struct dbk_plearn *l, double a0, double b0, double *a, double *b);
/* The fit's b when a is known (another signal told it), pulled towards
 * b0. */
double dbk_plearn_solve_b(const struct dbk_plearn *l, double a, double b0);
/* The standard errors of a fit (a, b) of l: how far from the truth it
 * may be by the scatter of its rows alone (infinite with fewer than
 * three). */
void dbk_plearn_errors(const struct dbk_plearn *l, double a, double b, double *se_a, double *se_b);

/* A server's scraped first tokens matched to our requests in the order
 * we sent them. vLLM's first-token histogram gives, between two
 * scrapes, the count and the sum of the first tokens served: their mean
 * exactly, whatever their number. Which requests they were is not said,
 * but a server prefills in the order requests arrive, so the k-th first
 * token it serves after a moment is our k-th request sent after it.
 * Comparing them with the requests sent in the same span instead (what
 * a sample of 64 did) reads a growing queue as speed: the first tokens
 * are of requests sent earlier, with less queued ahead of them, so a
 * server sent more than its share looks fast and is sent more still.
 * The predictions are kept as running totals at each request sent and
 * each scrape (snapshots: our requests sent, the sum of their predicted
 * first tokens and of their own prefills in them), and a count between
 * two is priced at that span's mean. */
#define DBK_PLEARN_MATCH_SNAPS 64u
/* First tokens matched in a row, after the server counted some that
 * were not ours, before its matches count again: another balancer's
 * requests interleave with ours and overtake only now and then. */
#define DBK_PLEARN_MATCH_TRUST 64.0

struct dbk_plearn_match {
	double off;                      /* the server's count minus our request's index */
	double base;                     /* our index from which first tokens are ours to match */
	double done, done_sum, done_own; /* our index matched so far, the totals there */
	double last;                     /* the server's count at the last scrape */
	double clean;                    /* matched since the count last ran past ours */
	/* The snapshots, oldest first, each field an array of its own: a
	 * full set is merged on every request sent, by a scan of the
	 * counts alone (dbk_plearn_match_note). */
	double snap_n[DBK_PLEARN_MATCH_SNAPS], snap_sum[DBK_PLEARN_MATCH_SNAPS],
	        snap_own[DBK_PLEARN_MATCH_SNAPS];
	unsigned count;
};

/* Our totals for a server: `sent` requests, predicted first tokens
 * summing to `sum`, their own prefills (without the queue ahead) to
 * `own`, `pending` of them not yet had their first token (predicted). */
struct dbk_plearn_sent {
	double sent, sum, own, pending;
};

/* Starts matching: the server has counted `count` first tokens, we have
 * sent t. The pending ones' first tokens are skipped: their predictions
 * are not kept apart. */
void dbk_plearn_match_sync(struct dbk_plearn_match *m, double count,
                           const struct dbk_plearn_sent *t);
/* Our totals after a request sent (pending unused): a snapshot of its
 * own, so that its first token is priced at its own prediction, not at
 * the mean of those sent between two scrapes. A burst between two
 * scrapes, priced at its mean, made its first tokens, served in order
 * behind a growing queue, read late at its end and early at its start. */
void dbk_plearn_match_note(struct dbk_plearn_match *m, const struct dbk_plearn_sent *t);
/* A scrape: the server's count now, our totals as for the sync. 1 with
 * *pred the sum of the predictions of the count's growth since the last
 * scrape (the first tokens of our requests it stands for) and *own that
 * of their own prefills; 0 when there
 * is nothing to match (no growth, or first tokens of requests sent
 * before the sync); -1 when the server counted first tokens that are
 * not ours (another balancer's, or ours further behind than the
 * snapshots reach): the matcher starts again from now, and answers -1
 * until DBK_PLEARN_MATCH_TRUST more are matched. */
int dbk_plearn_match_scrape(struct dbk_plearn_match *m, double count,
                            const struct dbk_plearn_sent *t, double *pred, double *own);

#endif
