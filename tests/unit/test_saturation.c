/* The fleet's saturation (GIE's detector): room is fresh numbers within
 * both thresholds; unknown is room; servers not usable do not count. */
#include "check.h"
#include "saturation.h"

static void test_saturation(void)
{
	struct dbk_bal_config bc;
	struct dbk_saturation s;
	const struct dbk_sat_config c = { .queue = 5, .kv = 0.8, .stale_ms = 400 };

	dbk_bal_config_default(&bc, 3, false, 32768, 131072);
	struct dbk_balancer *b = dbk_bal_new(&bc);
	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_EQ_U(dbk_sat_init(&s, &c, 3), 0);
	/* Nothing scraped: never saturated. */
	CHECK(!dbk_sat_fleet(&s, b, 1000));
	dbk_sat_scraped(&s, 0, true, 6, 0.1, 1000);
	dbk_sat_scraped(&s, 1, true, 0, 0.81, 1000);
	/* Server 2 unknown: it may have room. */
	CHECK(!dbk_sat_fleet(&s, b, 1000));
	/* At the thresholds is room (GIE compares with >). */
	dbk_sat_scraped(&s, 2, true, 5, 0.8, 1000);
	CHECK(!dbk_sat_fleet(&s, b, 1000));
	dbk_sat_scraped(&s, 2, true, 5.5, 0.2, 1000);
	CHECK(dbk_sat_fleet(&s, b, 1000));
	CHECK(dbk_sat_fleet(&s, b, 1400));
	/* Stale numbers are unknown: room. */
	CHECK(!dbk_sat_fleet(&s, b, 1401));
	/* A server out of use does not count: the others decide. */
	dbk_sat_scraped(&s, 2, false, 0, 0, 1000);
	CHECK(!dbk_sat_fleet(&s, b, 1000));
	dbk_bal_set_usable(b, 2, false);
	CHECK(dbk_sat_fleet(&s, b, 1000));
	/* None usable: not saturated (HAProxy answers 503 itself). */
	dbk_bal_set_usable(b, 0, false);
	dbk_bal_set_usable(b, 1, false);
	CHECK(!dbk_sat_fleet(&s, b, 1000));
	/* Out of range is ignored. */
	dbk_sat_scraped(&s, 7, true, 0, 0, 1000);
	dbk_sat_free(&s);
	dbk_bal_free(b);
}

/* The fleet's mean first token: deltas of the servers' histogram sums
 * over windows of a second, only servers read at both ends counting. */
static void test_fleet_first_tokens(void)
{
	struct dbk_saturation s;
	const struct dbk_sat_config c = { .queue = 5, .kv = 0.8, .stale_ms = 400 };

	CHECK_EQ_U(dbk_sat_init(&s, &c, 3), 0);
	CHECK(dbk_sat_fleet_ttft_ms(&s, 0) == 0);
	/* The first scrapes open the window: nothing known yet. */
	dbk_sat_first_tokens(&s, 0, true, 100, 200, 1000);
	dbk_sat_first_tokens(&s, 1, true, 10, 10, 1000);
	CHECK(dbk_sat_fleet_ttft_ms(&s, 1000) == 0);
	/* Within the second, nothing closes. */
	dbk_sat_first_tokens(&s, 0, true, 101, 201, 1500);
	CHECK(dbk_sat_fleet_ttft_ms(&s, 1500) == 0);
	/* Server 1 was first read after the window opened, server 2 appears
	 * with its history (400 s over 100): neither has a base, so only
	 * server 0 counts (1 s per first token). */
	dbk_sat_first_tokens(&s, 1, true, 16, 12, 1900);
	dbk_sat_first_tokens(&s, 2, true, 400, 100, 1950);
	dbk_sat_first_tokens(&s, 0, true, 102, 202, 2000);
	CHECK_NEAR(dbk_sat_fleet_ttft_ms(&s, 2000), 1e3, 1e-9);
	/* Stale after the scrapes' staleness and a window more. */
	CHECK(dbk_sat_fleet_ttft_ms(&s, 2000 + 400 + 1000) > 0);
	CHECK(dbk_sat_fleet_ttft_ms(&s, 2000 + 400 + 1001) == 0);
	/* Now all three count: 2 + 6 + 1 s over 2 + 2 + 1 first tokens. */
	dbk_sat_first_tokens(&s, 1, true, 22, 14, 2900);
	dbk_sat_first_tokens(&s, 2, true, 401, 101, 2950);
	dbk_sat_first_tokens(&s, 0, true, 104, 204, 3000);
	CHECK_NEAR(dbk_sat_fleet_ttft_ms(&s, 3000), 9.0 / 5 * 1e3, 1e-9);
	/* A server whose counters went back (a restarted engine) and one
	 * forgotten (a new instance in its slot) tell nothing. */
	dbk_sat_first_tokens(&s, 0, true, 1, 1, 3500);
	dbk_sat_forget(&s, 1);
	dbk_sat_first_tokens(&s, 2, true, 404, 102, 4000);
	CHECK_NEAR(dbk_sat_fleet_ttft_ms(&s, 4000), 3e3, 1e-9);
	/* No first token in a window: not known. */
	dbk_sat_first_tokens(&s, 2, true, 404, 102, 5000);
	CHECK(dbk_sat_fleet_ttft_ms(&s, 5000) == 0);
	dbk_sat_free(&s);
}

int main(void)
{
	RUN(test_saturation);
	RUN(test_fleet_first_tokens);
	return CHECK_DONE();
}
