/* Fuzzes outlier ejection (outlier.h): any sequence of completion
 * verdicts, clock steps, ticks and resets over a small fleet.
 *
 * Input: a config byte, a fleet-size byte, then 4-byte ops: kind, server,
 * status/term selector, clock step.
 *
 * Checked, after every op:
 * - the ejected count is the number of servers in the ejected state, and
 *   never above the cap (max_percent of the fleet, at least one, never
 *   all) nor the fleet less one;
 * - an ejection never happens with no other usable server, and lasts
 *   no longer than max_ms;
 * - a tick at or past a back-off's end brings that server back, half-open;
 * - classify never calls a client abort or a queue wait the server's
 *   failure. */
#include "fuzz.h"
#include "outlier.h"

static const char *const terms[] = {
	"----", "CD--", "cR--", "SC--", "sC--", "SH--", "sH--", "SD--",
	"sQ--", "PR--", "DC--", "KD--", "LR--", "RC--", "IH--", "Cx--",
};
static const int statuses[] = { 200, 400, 429, 500, 502, 503, 504, -1 };

static void check_counts(const struct dbk_outlier *o)
{
	unsigned ej = 0;
	unsigned cap = (unsigned)((uint64_t)o->n * (unsigned)o->cfg.max_percent / 100);

	if (cap < 1)
		cap = 1;
	if (cap >= o->n)
		cap = o->n - 1;
	for (unsigned i = 0; i < o->n; i++)
		ej += o->s[i].state == DBK_OUTLIER_EJECTED;
	FUZZ_CHECK(ej == o->stats.ejected);
	FUZZ_CHECK(ej <= cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dbk_outlier_config c;
	struct dbk_outlier o;
	uint64_t now = 1;

	if (size < 2)
		return 0;
	dbk_outlier_config_default(&c);
	c.consecutive = data[0] & 7;
	c.ratio = (double)(data[0] >> 3 & 3) / 4.0;
	c.min_requests = 1 + (data[0] >> 5);
	c.window_ms = 50;
	c.base_ms = 20;
	c.max_ms = 70;
	c.max_percent = (int)(data[1] % 101);
	unsigned n = 1 + (data[1] >> 4 & 7);
	FUZZ_CHECK(dbk_outlier_init(&o, &c, n) == 0);
	for (size_t i = 2; i + 4 <= size; i += 4) {
		const uint8_t *op = data + i;
		unsigned server = op[1] % (n + 1); /* one past the end too */
		struct dbk_outlier_change ch;

		now += op[3];
		switch (op[0] % 4) {
		case 0:
		case 1: {
			const char *why;
			char term[5];
			memcpy(term, terms[op[2] & 15], 5);
			int status = statuses[op[2] >> 4 & 7];
			enum dbk_outlier_verdict v = dbk_outlier_classify(status, term, &why);
			unsigned others = op[0] >> 2 & 3;

			if (term[0] == 'C' || term[0] == 'c' || term[1] == 'Q')
				FUZZ_CHECK(v != DBK_OUTLIER_FAILURE);
			FUZZ_CHECK(v != DBK_OUTLIER_FAILURE || why != NULL);
			if (dbk_outlier_observe(&o, server, v, why, now, others, &ch)) {
				FUZZ_CHECK(v == DBK_OUTLIER_FAILURE && others > 0 && n > 1);
				FUZZ_CHECK(ch.server == server && ch.for_ms >= 1 &&
				           ch.for_ms <= (uint64_t)c.max_ms);
				FUZZ_CHECK(o.s[server].state == DBK_OUTLIER_EJECTED);
			}
			break;
		}
		case 2: {
			uint64_t due = dbk_outlier_next_due(&o);
			size_t back = dbk_outlier_tick(&o, now, NULL, NULL);

			FUZZ_CHECK((due <= now) == (back > 0));
			for (unsigned k = 0; k < n; k++)
				FUZZ_CHECK(o.s[k].state != DBK_OUTLIER_EJECTED ||
				           o.s[k].until_ms > now);
			break;
		}
		default: dbk_outlier_reset(&o, server); break;
		}
		check_counts(&o);
	}
	dbk_outlier_free(&o);
	return 0;
}
