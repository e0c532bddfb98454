/* Fuzzes the simulator's fleet schedules (contrib/sim/schedule.h): the
 * --scale and --ramp steps and the --weights list.
 *
 * Input: one selector byte, then the text (cut at the first NUL).
 *   even: steps of whole counts 1..64 (--scale); odd, below 128: steps
 *   of numbers 0.001..1000 (--ramp); 128 and up: weights.
 *
 * Checked:
 * - each parser returns 0 or -1; on -1 a non-empty one-line reason;
 * - steps taken: at least one, at most the maximum, the first at 0 s,
 *   times strictly rising and finite, values within the bounds (whole
 *   for the scale); dbk_sim_steps_at gives each step's value at its
 *   own time; the ramp's time warp is finite and monotone over them;
 * - weights taken: whole numbers 1..256. */
#include <math.h>

#include "fuzz.h"
#include "sim/schedule.h"

static void check_steps(const struct dbk_sim_step *st, size_t n, double lo, double hi, bool whole)
{
	FUZZ_CHECK(n >= 1 && n <= DBK_SIM_MAX_STEPS);
	FUZZ_CHECK(st[0].t_s == 0);
	for (size_t k = 0; k < n; k++) {
		FUZZ_CHECK(isfinite(st[k].t_s) && st[k].v >= lo && st[k].v <= hi);
		FUZZ_CHECK(!whole || st[k].v == floor(st[k].v));
		FUZZ_CHECK(k == 0 || st[k].t_s > st[k - 1].t_s);
		FUZZ_CHECK(dbk_sim_steps_at(st, n, st[k].t_s) == st[k].v);
	}
	if (whole)
		return;
	double last = -1;
	for (size_t k = 0; k < n; k++) {
		double t = dbk_sim_ramp_time(st, n, st[k].t_s);
		FUZZ_CHECK(isfinite(t) && t >= last);
		last = t;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dbk_sim_step st[DBK_SIM_MAX_STEPS];
	double w[64];
	char err[200];
	size_t n = 0;
	int rc;

	if (size < 1)
		return 0;
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	err[0] = '\0';
	if (data[0] >= 128) {
		rc = dbk_sim_weights_parse(text, w, 64, &n, err, sizeof(err));
		for (size_t k = 0; rc == 0 && k < n; k++)
			FUZZ_CHECK(w[k] >= 1 && w[k] <= 256 && w[k] == floor(w[k]));
		FUZZ_CHECK(rc == -1 || (n >= 1 && n <= 64));
	} else {
		bool whole = data[0] % 2 == 0;
		double lo = whole ? 1 : 1e-3, hi = whole ? 64 : 1e3;

		rc = dbk_sim_steps_parse(text, lo, hi, whole, st, DBK_SIM_MAX_STEPS, &n, err,
		                         sizeof(err));
		if (rc == 0)
			check_steps(st, n, lo, hi, whole);
	}
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc < 0)
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
	free(text);
	return 0;
}
