/* Fuzzes the request estimate (dbk_estimate) and feeds its output to the
 * balancer's decision, whose clamps it relies on.
 *
 * Input: one parameter byte b, then the body sample.
 *   b & 3: body_size 0: the sample's length (the whole body, the usual
 *          case: the JSON is parsed); 1: -1 (unknown); 2: longer than the
 *          sample by (b >> 2) + 1 (truncated); 3: the next 8 bytes as a
 *          signed int64
 *   b & 4 (with 0): a NULL sample pointer when the sample is empty
 *
 * Checked (estimate.h, balancer.h):
 * - the source is NO_BODY / TRUNCATED / JSON / MALFORMED exactly as the
 *   sample and body_size say; body_bytes is body_size when known, else
 *   the sample length; max_tokens is finite, 16 and ignore_eos false
 *   unless the whole body was parsed;
 * - on JSON, the values agree with an independent cJSON reading (last
 *   duplicate key wins, only numbers/booleans count);
 * - the balancer turns any estimate into finite tokens and score within
 *   the documented clamps, and a bucket/group/server in range. */
#include <math.h>

#include "balancer.h"
#include "estimate.h"
#include "estimate_model.h"
#include "fuzz.h"

static struct dbk_balancer *bal_dyn, *bal_plain;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dbk_bal_config c;

	(void)argc;
	(void)argv;
	dbk_bal_config_default(&c, 4, true, 32768, 131072);
	bal_dyn = dbk_bal_new(&c);
	dbk_bal_config_default(&c, 3, false, 32768, 131072);
	bal_plain = dbk_bal_new(&c);
	if (!bal_dyn || !bal_plain)
		abort();
	return 0;
}

static void check_decision(struct dbk_balancer *b, const struct dbk_bal_request *r)
{
	struct dbk_bal_decision d;
	const struct dbk_bal_config *c = dbk_bal_config(b);
	enum dbk_bal_result res = dbk_bal_decide(b, r, &d);

	FUZZ_CHECK(res == DBK_BAL_OK);
	FUZZ_CHECK(isfinite(d.request_tokens) && d.request_tokens >= 0);
	FUZZ_CHECK(d.request_tokens <= DBK_BAL_MAX_BODY_BYTES / 4);
	FUZZ_CHECK(isfinite(d.score) && d.score >= 0);
	FUZZ_CHECK(d.score <= DBK_BAL_MAX_BODY_BYTES + DBK_BAL_MAX_MAX_TOKENS);
	FUZZ_CHECK(isfinite(d.p) && d.p >= 0 && d.p <= 1);
	FUZZ_CHECK(d.std_bucket < c->nbuckets && d.group < c->nbuckets);
	FUZZ_CHECK(d.server < c->nservers && dbk_bal_group_of(b, d.server) == d.group);
	FUZZ_CHECK(d.redirected == (d.group != d.std_bucket));
	/* Bucket by length: [bounds[i], bounds[i+1]), the last one open. */
	unsigned want = 0;
	for (unsigned i = 0; i < c->nbuckets; i++)
		if (d.request_tokens >= c->bounds[i])
			want = i;
	FUZZ_CHECK(d.std_bucket == want);
	/* The score is the reference's formula on the clamped inputs. */
	double body = r->body_bytes >= 0 ? r->body_bytes : 0;
	if (!(r->body_bytes >= 0))
		body = 0;
	if (body > DBK_BAL_MAX_BODY_BYTES)
		body = DBK_BAL_MAX_BODY_BYTES;
	double mt = r->max_tokens;
	if (!isfinite(mt))
		mt = 16;
	else if (mt < 0)
		mt = 0;
	else if (mt > DBK_BAL_MAX_MAX_TOKENS)
		mt = DBK_BAL_MAX_MAX_TOKENS;
	FUZZ_CHECK(d.request_tokens == body / 4.0);
	if (c->dynamic)
		FUZZ_CHECK(d.score == body / 4.0);
	else
		FUZZ_CHECK(d.score == (r->ignore_eos ? body + mt : body + 0.5 * mt));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t b = fuzz_u8(&in);
	int64_t body_size;
	const uint8_t *sample;
	size_t sl;

	switch (b & 3) {
	case 0: body_size = (int64_t)in.n; break;
	case 1: body_size = -1; break;
	case 2: body_size = (int64_t)in.n + (b >> 2) + 1; break;
	default: body_size = (int64_t)fuzz_u64(&in); break;
	}
	sample = in.p;
	sl = in.n;
	if ((b & 3) == 0 && (b & 4) && sl == 0)
		sample = NULL;

	struct dbk_bal_request r;
	memset(&r, 0x5a, sizeof(r));
	enum dbk_estimate_source src = dbk_estimate(body_size, sample, sl, &r);

	/* What the estimate should see: the sample cut to body_size. */
	size_t eff = sample ? sl : 0;
	if (body_size >= 0 && (uint64_t)eff > (uint64_t)body_size)
		eff = (size_t)body_size;
	FUZZ_CHECK(r.body_bytes == (body_size >= 0 ? (double)body_size : (double)eff));
	FUZZ_CHECK(isfinite(r.body_bytes) && r.body_bytes >= 0);
	FUZZ_CHECK(isfinite(r.max_tokens));
	if (eff == 0) {
		FUZZ_CHECK(src == DBK_EST_NO_BODY);
	} else if (body_size >= 0 && (uint64_t)eff < (uint64_t)body_size) {
		FUZZ_CHECK(src == DBK_EST_TRUNCATED);
	} else {
		FUZZ_CHECK(src == DBK_EST_JSON || src == DBK_EST_MALFORMED);
		double mt;
		bool eos;
		bool ok = fuzz_estimate_model(sample, eff, &mt, &eos, NULL);

		FUZZ_CHECK(ok == (src == DBK_EST_JSON));
		if (ok)
			FUZZ_CHECK(r.max_tokens == mt && r.ignore_eos == eos);
	}
	if (src != DBK_EST_JSON)
		FUZZ_CHECK(r.max_tokens == DBK_DEFAULT_MAX_TOKENS && !r.ignore_eos);

	check_decision(bal_dyn, &r);
	check_decision(bal_plain, &r);
	return 0;
}
