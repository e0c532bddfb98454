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

int main(void)
{
	RUN(test_saturation);
	return CHECK_DONE();
}
