/* Fuzzes the body sample's prefix keys (agent/prefix_key.c) and feeds
 * them, with a request length taken from the input, through the ttft
 * predictor (agent/predict.c) and its prefix index.
 *
 * Input: one parameter byte b, then the body sample.
 *   b & 7: servers - 1 (1..8); b >> 3: which are DOWN (bit i: server i)
 *   and whether server 0 has a 32768 max_model_len (bit 4)
 *
 * Checked (prefix_key.h, predict.h, prefix_index.h):
 * - at most max_keys keys, none 0; no more keys than full blocks of the
 *   text hashed, which is no longer than the sample; a session only with
 *   a "user" field's bytes somewhere in the sample;
 * - a sample cut anywhere gives a prefix of the whole sample's keys;
 * - max_keys caps the count without changing the keys;
 * - the predictor's choice is -1 exactly when no server is UP, otherwise
 *   an UP server, one that holds the request when any UP one does; a
 *   commit and its release leave the books as they were;
 * - a twin predictor committed with dbk_pred_commit_chosen (the choice's
 *   own hit) chooses alike and gets the very same tickets. */
#include <math.h>

#include "fuzz.h"
#include "predict.h"
#include "prefix_key.h"

static uint64_t keys[DBK_PKEY_MAX_KEYS], cut_keys[DBK_PKEY_MAX_KEYS];

static void check_keys(const uint8_t *s, size_t n, const struct dbk_pkey *pk)
{
	FUZZ_CHECK(pk->nkeys <= DBK_PKEY_MAX_KEYS);
	FUZZ_CHECK(pk->text_bytes <= n);
	FUZZ_CHECK(pk->nkeys <= pk->text_bytes / DBK_PKEY_BLOCK_BYTES);
	for (size_t i = 0; i < pk->nkeys; i++)
		FUZZ_CHECK(keys[i] != 0);
	if (pk->session)
		FUZZ_CHECK(fuzz_contains(s, n, "\"user\""));
	if (pk->source == DBK_PKEY_NONE)
		FUZZ_CHECK(pk->nkeys == 0);
}

static void check_cuts(const uint8_t *s, size_t n, const struct dbk_pkey *whole)
{
	struct dbk_pkey pk;
	size_t cuts[3] = { n / 2, n ? n - 1 : 0, n / 3 };

	for (size_t c = 0; c < 3; c++) {
		dbk_pkey_derive(s, cuts[c], cut_keys, DBK_PKEY_MAX_KEYS, &pk);
		FUZZ_CHECK(pk.nkeys <= whole->nkeys);
		FUZZ_CHECK(memcmp(cut_keys, keys, pk.nkeys * sizeof(uint64_t)) == 0);
	}
	size_t cap = whole->nkeys / 2;
	dbk_pkey_derive(s, n, cut_keys, cap, &pk);
	FUZZ_CHECK(pk.nkeys == cap);
	FUZZ_CHECK(memcmp(cut_keys, keys, cap * sizeof(uint64_t)) == 0);
}

static void check_predict(uint8_t b, size_t n, const struct dbk_pkey *pk)
{
	struct dbk_pred_config c;
	unsigned ns = (b & 7u) + 1;

	dbk_pred_config_default(&c, ns);
	c.index_entries = 64;
	struct dbk_pred *p = dbk_pred_new(&c);
	/* q is p's twin, committed with the choice's own hit. */
	struct dbk_pred *q = dbk_pred_new(&c);
	FUZZ_CHECK(p != NULL && q != NULL);
	bool any_up = false, any_holds = false;
	for (unsigned i = 0; i < ns; i++) {
		bool down = i < 4 && (b >> (3 + i)) & 1;
		dbk_pred_set_state(p, i, down ? DBK_PRED_DOWN : DBK_PRED_UP);
		dbk_pred_set_state(q, i, down ? DBK_PRED_DOWN : DBK_PRED_UP);
		if (i == 0 && (b & 0x80)) {
			dbk_pred_set_max_model_len(p, 0, 32768);
			dbk_pred_set_max_model_len(q, 0, 32768);
		}
		any_up |= !down;
	}
	struct dbk_pred_request r = {
		.prompt_tokens = (double)n * 7.5,
		.max_tokens = (double)(pk->text_bytes % 5000),
		.ignore_eos = pk->nkeys & 1,
		.keys = keys,
		.nkeys = pk->nkeys,
		.keys_cut = pk->cut,
		.session = pk->session,
	};
	for (unsigned i = 0; i < ns; i++) {
		struct dbk_pred_view v;
		dbk_pred_view(p, i, 0, &v);
		if (v.state == DBK_PRED_UP &&
		    (v.max_model_len == 0 || r.prompt_tokens + r.max_tokens <= v.max_model_len))
			any_holds = true;
	}
	struct dbk_pred_choice ch;
	struct dbk_pred_ticket t[2];
	for (int round = 0; round < 2; round++) {
		int s = dbk_pred_choose(p, &r, 1000 + (uint64_t)round, &ch);
		FUZZ_CHECK((s < 0) == !any_up);
		if (s < 0)
			break;
		struct dbk_pred_view v;
		dbk_pred_view(p, (unsigned)s, 1000, &v);
		FUZZ_CHECK(v.state == DBK_PRED_UP);
		FUZZ_CHECK(ch.reason == (any_holds ? DBK_PRED_FASTEST : DBK_PRED_TOO_LONG));
		FUZZ_CHECK(isfinite(ch.ttft_s) && ch.ttft_s >= 0);
		FUZZ_CHECK(ch.hit_tokens >= 0 && ch.hit_tokens < fmax(r.prompt_tokens, 1));
		dbk_pred_commit(p, &r, (unsigned)s, 1000 + (uint64_t)round, &t[round]);
		struct dbk_pred_choice qc;
		struct dbk_pred_ticket qt;
		FUZZ_CHECK(dbk_pred_choose(q, &r, 1000 + (uint64_t)round, &qc) == s);
		FUZZ_CHECK(qc.hit_tokens == ch.hit_tokens && qc.ttft_s == ch.ttft_s);
		dbk_pred_commit_chosen(q, &r, &qc, 1000 + (uint64_t)round, &qt);
		FUZZ_CHECK(memcmp(&qt, &t[round], sizeof(qt)) == 0);
	}
	for (int round = 0; any_up && round < 2; round++)
		dbk_pred_release(p, &t[round], 5000);
	for (unsigned i = 0; i < ns; i++) {
		struct dbk_pred_view v;
		dbk_pred_view(p, i, 5000, &v);
		FUZZ_CHECK(v.inflight == 0 && v.kv_committed == 0 && v.prompt_tokens == 0);
	}
	dbk_pred_free(p);
	dbk_pred_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dbk_pkey pk;

	if (size < 1)
		return 0;
	uint8_t b = data[0];
	const uint8_t *s = data + 1;
	size_t n = size - 1;
	dbk_pkey_derive(n ? s : NULL, n, keys, DBK_PKEY_MAX_KEYS, &pk);
	check_keys(s, n, &pk);
	check_cuts(s, n, &pk);
	check_predict(b, n, &pk);
	return 0;
}
