/* llm-d's latency predictor, the two sidecars of its endpoint picker's
 * pod, run with Bayesian ridge (bayesridge.h) instead of the chart's
 * XGBoost (policy_llmd_latency.c says why):
 *   the training server, llm-d/llm-d-latency-predictor,
 *     training/training_server.py at commit
 *     04e44cd801d5d79a215d99109081b6afb870b87e: samples kept in
 *     stratified buckets (waiting 0 / 1-2 / 3-5 / 6-10 / 11+ x KV use in
 *     5% steps x prefix score in quarters), at most 500 a bucket, the
 *     oldest out first; one sample in ten held out as its test set
 *     (add_training_sample: a hash of the sample; here of the request);
 *     a retrain once the samples number at least the minimum
 *     (LATENCY_MIN_SAMPLES_FOR_RETRAIN; a fresh server, one that found no
 *     model on its emptyDir and made the default one, lowers it to
 *     LATENCY_MIN_SAMPLES_FOR_RETRAIN_FRESH, 10, for good: load_models),
 *     each model only when it has that many of its own; the features of
 *     _prepare_features_with_interaction less the columns that are
 *     constant here (pod type, multimodal encoder sizes), which a ridge
 *     fit gives weight 0; and the ensemble (LATENCY_ENSEMBLE_MODE, on by
 *     default): a sub-model for requests that found no queue (without
 *     is_queued and the waiting count) and one for those that did, used
 *     once each of the four splits has 200 samples
 *     (LATENCY_MIN_SAMPLES_FOR_ENSEMBLE_SPLIT), else the single model
 *     (the pair last written, once there is one);
 *   the prediction server, prediction/prediction_server.py at the same
 *     commit: it serves the models it last downloaded
 *     (MODEL_SYNC_INTERVAL_SEC), picking the sub-model by the waiting
 *     count (predict_batch_fast, what /predict/bulk/strict runs).
 * Before any retrain both serve the default model, one sample of 10 ms
 * (_create_default_model): 10 ms for every pod.
 *
 * When it trains and syncs is the caller's (policy_llmd_latency.c). */
#ifndef DBK_SIM_LATPRED_H
#define DBK_SIM_LATPRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bayesridge.h"

/* What the picker sends for one pod (latencypredictorclient's
 * PredictionRequest / TrainingEntry); the decode tokens in flight are
 * always 0 (the producer sets decodeTokensAtDispatch to 0 and predicts
 * without it), so they are not carried. */
struct dbk_latpred_row {
	double kv;          /* kv_cache_percentage, 0..1 */
	double input;       /* input_token_length */
	double waiting;     /* num_request_waiting */
	double running;     /* num_request_running */
	double prefill_tif; /* prefill_tokens_in_flight */
	double prefix;      /* prefix_cache_score, 0..1 */
};

enum dbk_latpred_target { DBK_LATPRED_TTFT, DBK_LATPRED_TPOT, DBK_LATPRED_NTARGETS };

#define DBK_LATPRED_NBUCKETS (5 * 20 * 4)
#define DBK_LATPRED_BUCKET_CAP 500u
#define DBK_LATPRED_MIN_SAMPLES_FRESH 10u
#define DBK_LATPRED_MIN_ENSEMBLE 200u
#define DBK_LATPRED_DEFAULT_MS 10.0

struct dbk_latpred_sample {
	struct dbk_latpred_row row;
	double actual_ms;
};

struct dbk_latpred_bucket {
	struct dbk_latpred_sample *s; /* DBK_LATPRED_BUCKET_CAP, from its first sample */
	uint32_t n, head;             /* head: the oldest */
};

/* One target's models: the single one and the ensemble's two. */
struct dbk_latpred_models {
	struct dbk_bayesridge single, noqueue, queued;
};

struct dbk_latpred {
	struct dbk_latpred_bucket bucket[DBK_LATPRED_NTARGETS][DBK_LATPRED_NBUCKETS];
	unsigned min_samples;
	struct dbk_latpred_models trained[DBK_LATPRED_NTARGETS], served[DBK_LATPRED_NTARGETS];
	bool trained_ensemble, served_ensemble;
	uint64_t received, held_out;
	/* Retrains that changed a model, and the last one served (0: the
	 * default model). */
	uint64_t trained_gen, served_gen;
	double *x, *y; /* training scratch */
	size_t xcap, ycap;
};

/* A fresh training server (no model on its volume) and a prediction
 * server that downloaded its default model. */
void dbk_latpred_init(struct dbk_latpred *p);
void dbk_latpred_free(struct dbk_latpred *p);
/* The training server receives one sample of target t (key: the same
 * for the same sample, decides the test split). 0, or -1 (memory). */
int dbk_latpred_add(struct dbk_latpred *p, enum dbk_latpred_target t,
                    const struct dbk_latpred_row *row, double actual_ms, uint64_t key);
/* Samples of target t in the buckets. */
size_t dbk_latpred_samples(const struct dbk_latpred *p, enum dbk_latpred_target t);
/* One pass of the training loop. 0, or -1 (memory). */
int dbk_latpred_train(struct dbk_latpred *p);
/* The prediction server's sync: it now serves what was last trained. */
void dbk_latpred_sync(struct dbk_latpred *p);
/* The served models' TTFT and TPOT in ms for a pod's row; the producer
 * asks with one token generated. */
void dbk_latpred_predict(const struct dbk_latpred *p, const struct dbk_latpred_row *row,
                         double *ttft_ms, double *tpot_ms);

#endif
