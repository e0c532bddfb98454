/* Fuzzes the request-trace readers the benchmark and the simulator load
 * from the command line (agent/model/trace.c: Mooncake JSONL, Azure
 * CSV) and what is done to a trace after: spreading its ticks, keeping a
 * slice; and the synthetic mix's spec parser (contrib/bench/synth.c).
 *
 * Input: one parameter byte b, then the bytes of a file.
 *   b & 3: 0 detect the format by content, 1 Mooncake, 2 Azure, 3 the
 *          bytes are a --synthetic spec instead (up to the first NUL)
 *   b & 4: the slice skips what does not fit its max-model-len, else
 *          clips it
 *   b >> 3: that max-model-len in 4096s (0: none)
 *
 * Checked (trace.h):
 * - dbk_trace_parse: 0 or -1; on -1 a one-line reason; on 0 arrivals
 *   finite, from 0, sorted; lengths within [1, DBK_TRACE_MAX_TOKENS];
 *   every request's prefix ids inside the trace's id array;
 * - dbk_trace_spread keeps the count, the order of the lengths and the
 *   sorting, moves no arrival back nor past the next distinct one, and
 *   reports at most every request moved;
 * - dbk_trace_select keeps at most what it had, sorted, from 0, and with
 *   a max-model-len only requests that fit it;
 * - dbk_synth_parse: 0 or -1 with a reason. */
#include <math.h>

#include "bench/synth.h"
#include "model/trace.h"
#include "fuzz.h"
#include "lib/hash.h"

#define MAX_FILE 65536

static void check_trace(const struct dbk_trace *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct dbk_trace_req *r = &t->req[i];
		FUZZ_CHECK(isfinite(r->t) && r->t >= 0);
		FUZZ_CHECK(i == 0 || r->t >= t->req[i - 1].t);
		FUZZ_CHECK(r->input >= 1 && r->input <= DBK_TRACE_MAX_TOKENS);
		FUZZ_CHECK(r->output >= 1 && r->output <= DBK_TRACE_MAX_TOKENS);
		FUZZ_CHECK((size_t)r->hash_off + r->n_hash <= t->n_hash);
	}
}

static void spread(struct dbk_trace *t, uint64_t seed)
{
	size_t n = t->n;
	double *was = malloc((n ? n : 1) * sizeof(*was));
	uint32_t *in = malloc((n ? n : 1) * sizeof(*in));

	if (!was || !in)
		abort();
	for (size_t i = 0; i < n; i++) {
		was[i] = t->req[i].t;
		in[i] = t->req[i].input;
	}
	size_t moved = dbk_trace_spread(t, seed);
	FUZZ_CHECK(moved <= n && t->n == n);
	check_trace(t);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(t->req[i].input == in[i]);
		FUZZ_CHECK(t->req[i].t >= was[i]);
		/* Before the next distinct arrival; the last tick stays within
		 * the gap before it, which no later request bounds. */
		for (size_t j = i + 1; j < n; j++)
			if (was[j] > was[i]) {
				FUZZ_CHECK(t->req[i].t <= was[j]);
				break;
			}
	}
	free(was);
	free(in);
}

static void slice(struct dbk_trace *t, uint8_t b)
{
	struct dbk_select sel = { 0 };
	struct dbk_select_stats st;
	size_t n = t->n;

	sel.max_model_len = (uint32_t)(b >> 3) * 4096;
	sel.skip_overlong = b & 4;
	dbk_trace_select(t, &sel, &st);
	FUZZ_CHECK(t->n <= n && st.skipped <= n && st.clipped <= n);
	FUZZ_CHECK(t->n == 0 || t->req[0].t >= 0);
	check_trace(t);
	for (size_t i = 0; sel.max_model_len && i < t->n; i++)
		FUZZ_CHECK((uint64_t)t->req[i].input + t->req[i].output <= sel.max_model_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum dbk_trace_format fmt[] = { DBK_TRACE_UNKNOWN, DBK_TRACE_MOONCAKE,
		                                     DBK_TRACE_AZURE };
	struct fuzz_in in = { data, size };
	uint8_t b = fuzz_u8(&in);
	char err[256];

	if (in.n > MAX_FILE)
		return 0;
	char *s = (char *)fuzz_dup(in.p, in.n);
	if ((b & 3) == 3) {
		char *z = malloc(in.n + 1);
		if (!z)
			abort();
		memcpy(z, in.p, in.n);
		z[in.n] = 0;
		struct dbk_synth sy;
		err[0] = 0;
		int rc = dbk_synth_parse(z, &sy, err, sizeof(err));
		FUZZ_CHECK(rc == 0 || rc == -1);
		FUZZ_CHECK(rc == 0 || (err[0] && !strchr(err, '\n')));
		free(z);
		free(s);
		return 0;
	}
	enum dbk_trace_format f = fmt[b & 3];
	if (f == DBK_TRACE_UNKNOWN)
		f = dbk_trace_detect("fuzz", s, in.n);
	struct dbk_trace t = { 0 };
	err[0] = 0;
	int rc = f == DBK_TRACE_UNKNOWN ? -1 : dbk_trace_parse(f, s, in.n, &t, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == 0) {
		FUZZ_CHECK(t.n == 0 || t.req[0].t == 0);
		check_trace(&t);
		spread(&t, (uint64_t)b * DBK_HASH_GOLDEN);
		slice(&t, b);
	} else if (f != DBK_TRACE_UNKNOWN) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
	}
	dbk_trace_free(&t);
	free(s);
	return 0;
}
