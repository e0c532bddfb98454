/* llm-d's latency predictor sidecars; see latpred.h. */
#include "latpred.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "u64map.h"

/* The test split: TEST_TRAIN_RATIO 0.1. */
#define LP_TEST_PERCENT 10u

/* _get_bucket_key. */
static unsigned queue_bucket(double waiting)
{
	return waiting <= 0 ? 0 : waiting <= 2 ? 1 : waiting <= 5 ? 2 : waiting <= 10 ? 3 : 4;
}

static unsigned clamp_bucket(double v, unsigned n)
{
	unsigned b;

	v = v < 0 ? 0 : v > 1 ? 1 : v;
	b = (unsigned)(v * n);
	return b < n ? b : n - 1;
}

static unsigned bucket_of(const struct dbk_latpred_row *r)
{
	return (queue_bucket(r->waiting) * 20 + clamp_bucket(r->kv, 20)) * 4 +
	       clamp_bucket(r->prefix, 4);
}

/* The columns _prepare_features_with_interaction gives Bayesian ridge,
 * in its order, less the constant ones (latpred.h); the no-queue
 * sub-model drops is_queued and the waiting count
 * (_prepare_features_for_ensemble). tokens: num_tokens_generated, 0 in
 * training (LATENCY_TPOT_ZERO_TOKEN_COUNT), 1 when the producer asks. */
static unsigned features(enum dbk_latpred_target t, bool noqueue, const struct dbk_latpred_row *r,
                         double tokens, double *x)
{
	unsigned n = 0;

	if (!noqueue)
		x[n++] = r->waiting > 0; /* is_queued */
	x[n++] = r->kv;
	x[n++] = r->input;
	if (!noqueue)
		x[n++] = r->waiting;
	x[n++] = r->running;
	x[n++] = r->prefill_tif;
	if (t == DBK_LATPRED_TTFT) {
		x[n++] = r->prefix;
		x[n++] = (1 - r->prefix) * r->input; /* effective_input_tokens */
	} else
		x[n++] = tokens;
	return n;
}

static unsigned nfeatures(enum dbk_latpred_target t, bool noqueue)
{
	struct dbk_latpred_row r = { 0 };
	double x[DBK_BR_MAX_FEATURES];

	return features(t, noqueue, &r, 0, x);
}

static void default_models(struct dbk_latpred_models *m, enum dbk_latpred_target t)
{
	dbk_bayesridge_constant(&m->single, nfeatures(t, false), DBK_LATPRED_DEFAULT_MS);
	m->queued = m->single;
	dbk_bayesridge_constant(&m->noqueue, nfeatures(t, true), DBK_LATPRED_DEFAULT_MS);
}

void dbk_latpred_init(struct dbk_latpred *p)
{
	memset(p, 0, sizeof(*p));
	p->min_samples = DBK_LATPRED_MIN_SAMPLES_FRESH;
	for (int t = 0; t < DBK_LATPRED_NTARGETS; t++) {
		default_models(&p->trained[t], (enum dbk_latpred_target)t);
		p->served[t] = p->trained[t];
	}
}

void dbk_latpred_free(struct dbk_latpred *p)
{
	for (int t = 0; t < DBK_LATPRED_NTARGETS; t++)
		for (unsigned b = 0; b < DBK_LATPRED_NBUCKETS; b++)
			free(p->bucket[t][b].s);
	free(p->x);
	free(p->y);
}

int dbk_latpred_add(struct dbk_latpred *p, enum dbk_latpred_target t,
                    const struct dbk_latpred_row *row, double actual_ms, uint64_t key)
{
	struct dbk_latpred_bucket *b;

	/* The server keeps a sample for a target only with a positive
	 * latency of it. */
	if (!(actual_ms > 0))
		return 0;
	p->received++;
	if (dbk_u64map_mix64(key) % 100 < LP_TEST_PERCENT) {
		p->held_out++;
		return 0;
	}
	b = &p->bucket[t][bucket_of(row)];
	if (!b->s && !(b->s = calloc(DBK_LATPRED_BUCKET_CAP, sizeof(*b->s))))
		return -1;
	if (b->n < DBK_LATPRED_BUCKET_CAP) {
		b->s[(b->head + b->n) % DBK_LATPRED_BUCKET_CAP] = (struct dbk_latpred_sample){
			*row, actual_ms
		};
		b->n++;
	} else {
		b->s[b->head] = (struct dbk_latpred_sample){ *row, actual_ms };
		b->head = (b->head + 1) % DBK_LATPRED_BUCKET_CAP;
	}
	return 0;
}

/* Samples of t, of one queue regime (0: no queue, 1: queued) or both
 * (-1). */
static size_t count(const struct dbk_latpred *p, enum dbk_latpred_target t, int regime)
{
	size_t n = 0;

	for (unsigned b = 0; b < DBK_LATPRED_NBUCKETS; b++)
		if (regime < 0 || (b / 80 == 0) == (regime == 0))
			n += p->bucket[t][b].n;
	return n;
}

size_t dbk_latpred_samples(const struct dbk_latpred *p, enum dbk_latpred_target t)
{
	return count(p, t, -1);
}

/* Scratch for need rows. 0 or -1. */
static int room(struct dbk_latpred *p, size_t need)
{
	while (p->xcap < need) {
		double *x = dbk_array_room(p->x, &p->xcap, p->xcap,
		                           sizeof(double) * DBK_BR_MAX_FEATURES, 256);

		if (!x)
			return -1;
		p->x = x;
	}
	while (p->ycap < need) {
		double *y = dbk_array_room(p->y, &p->ycap, p->ycap, sizeof(double), 256);

		if (!y)
			return -1;
		p->y = y;
	}
	return 0;
}

/* Fits m to the samples of t in regime (count's), with the features of
 * the no-queue sub-model when noqueue. 0, 1 when the fit failed (m
 * unchanged, as the server keeps the old model), -1 (memory). */
static int fit(struct dbk_latpred *p, enum dbk_latpred_target t, int regime, bool noqueue,
               struct dbk_bayesridge *m)
{
	unsigned nf = nfeatures(t, noqueue);
	size_t n = 0, need = count(p, t, regime);

	if (room(p, need) != 0)
		return -1;
	for (unsigned b = 0; b < DBK_LATPRED_NBUCKETS; b++) {
		const struct dbk_latpred_bucket *k = &p->bucket[t][b];

		if (regime >= 0 && (b / 80 == 0) != (regime == 0))
			continue;
		for (uint32_t j = 0; j < k->n; j++) {
			const struct dbk_latpred_sample *s =
			        &k->s[(k->head + j) % DBK_LATPRED_BUCKET_CAP];

			features(t, noqueue, &s->row, 0, &p->x[n * nf]);
			p->y[n++] = s->actual_ms;
		}
	}
	return dbk_bayesridge_fit(m, p->x, p->y, n, nf) == 0 ? 0 : 1;
}

int dbk_latpred_train(struct dbk_latpred *p)
{
	size_t n[DBK_LATPRED_NTARGETS];
	bool changed = false, ensemble = true;
	struct dbk_latpred_models sub[DBK_LATPRED_NTARGETS];
	int rc;

	for (int t = 0; t < DBK_LATPRED_NTARGETS; t++)
		n[t] = count(p, (enum dbk_latpred_target)t, -1);
	if (n[DBK_LATPRED_TTFT] + n[DBK_LATPRED_TPOT] < p->min_samples)
		return 0;
	for (int t = 0; t < DBK_LATPRED_NTARGETS; t++) {
		if (n[t] < p->min_samples)
			continue;
		if ((rc = fit(p, (enum dbk_latpred_target)t, -1, false, &p->trained[t].single)) < 0)
			return -1;
		changed |= rc == 0;
	}
	for (int t = 0; t < DBK_LATPRED_NTARGETS; t++)
		for (int regime = 0; regime < 2; regime++)
			ensemble &= count(p, (enum dbk_latpred_target)t, regime) >=
			            DBK_LATPRED_MIN_ENSEMBLE;
	for (int t = 0; ensemble && t < DBK_LATPRED_NTARGETS; t++) {
		sub[t] = p->trained[t];
		if ((rc = fit(p, (enum dbk_latpred_target)t, 0, true, &sub[t].noqueue)) < 0 ||
		    (rc == 0 &&
		     (rc = fit(p, (enum dbk_latpred_target)t, 1, false, &sub[t].queued)) < 0))
			return -1;
		ensemble = rc == 0;
	}
	/* The gated pair's files stay on the server's volume once written
	 * (_save_models_unlocked writes them, nothing removes them), so the
	 * prediction server keeps loading the last pair. */
	if (ensemble)
		for (int t = 0; t < DBK_LATPRED_NTARGETS; t++) {
			p->trained[t].noqueue = sub[t].noqueue;
			p->trained[t].queued = sub[t].queued;
		}
	p->trained_ensemble |= ensemble;
	if (changed || ensemble)
		p->trained_gen++;
	return 0;
}

void dbk_latpred_sync(struct dbk_latpred *p)
{
	memcpy(p->served, p->trained, sizeof(p->served));
	p->served_ensemble = p->trained_ensemble;
	p->served_gen = p->trained_gen;
}

static double predict_one(const struct dbk_latpred *p, enum dbk_latpred_target t,
                          const struct dbk_latpred_row *row)
{
	const struct dbk_latpred_models *m = &p->served[t];
	bool noqueue = p->served_ensemble && !(row->waiting > 0);
	double x[DBK_BR_MAX_FEATURES];

	features(t, noqueue, row, 1, x);
	if (!p->served_ensemble)
		return dbk_bayesridge_predict(&m->single, x);
	return dbk_bayesridge_predict(noqueue ? &m->noqueue : &m->queued, x);
}

void dbk_latpred_predict(const struct dbk_latpred *p, const struct dbk_latpred_row *row,
                         double *ttft_ms, double *tpot_ms)
{
	*ttft_ms = predict_one(p, DBK_LATPRED_TTFT, row);
	*tpot_ms = predict_one(p, DBK_LATPRED_TPOT, row);
}
