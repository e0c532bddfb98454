/* Outlier ejection: what a completion line says about its server, the
 * rules that eject, the back-off, half-open return and the cap. */
#include "check.h"
#include "outlier.h"

static enum dbk_outlier_verdict verdict(int status, const char *term)
{
	const char *why;

	return dbk_outlier_classify(status, term, &why);
}

static void test_classify(void)
{
	const char *why;

	CHECK_EQ_U(dbk_outlier_classify(500, "----", &why), DBK_OUTLIER_FAILURE);
	CHECK(strcmp(why, "http-500") == 0);
	CHECK_EQ_U(verdict(200, "----"), DBK_OUTLIER_SUCCESS);
	/* The client's doing: a 4xx answered, an abort, a client timeout. */
	CHECK_EQ_U(verdict(400, "----"), DBK_OUTLIER_SUCCESS);
	CHECK_EQ_U(verdict(429, "----"), DBK_OUTLIER_SUCCESS);
	CHECK_EQ_U(verdict(-1, "CD--"), DBK_OUTLIER_IGNORE);
	CHECK_EQ_U(verdict(200, "CD--"), DBK_OUTLIER_IGNORE);
	CHECK_EQ_U(verdict(408, "cR--"), DBK_OUTLIER_IGNORE);
	/* HAProxy's 503 for a server that stayed full (queue timeout). */
	CHECK_EQ_U(verdict(503, "sQ--"), DBK_OUTLIER_IGNORE);
	/* HAProxy's own: denied, no server, killed. */
	CHECK_EQ_U(verdict(403, "PR--"), DBK_OUTLIER_IGNORE);
	CHECK_EQ_U(verdict(503, "DC--"), DBK_OUTLIER_IGNORE);
	CHECK_EQ_U(verdict(-1, "KD--"), DBK_OUTLIER_IGNORE);
	/* The server's: refused, reset, timed out, aborted mid-stream. */
	CHECK_EQ_U(dbk_outlier_classify(503, "SC--", &why), DBK_OUTLIER_FAILURE);
	CHECK(strcmp(why, "connect") == 0);
	CHECK_EQ_U(dbk_outlier_classify(502, "SH--", &why), DBK_OUTLIER_FAILURE);
	CHECK(strcmp(why, "reset") == 0);
	CHECK_EQ_U(dbk_outlier_classify(504, "sH--", &why), DBK_OUTLIER_FAILURE);
	CHECK(strcmp(why, "timeout") == 0);
	CHECK_EQ_U(verdict(200, "SD--"), DBK_OUTLIER_FAILURE);
	CHECK_EQ_U(verdict(599, "----"), DBK_OUTLIER_FAILURE);
	CHECK_EQ_U(verdict(-1, "----"), DBK_OUTLIER_IGNORE);
}

static struct dbk_outlier_config config(void)
{
	struct dbk_outlier_config c;

	dbk_outlier_config_default(&c);
	c.ratio = 0; /* one rule at a time */
	c.base_ms = 1000;
	c.max_ms = 2500;
	return c;
}

/* n failures of server at now; returns whether the last ejected it. */
static bool fail(struct dbk_outlier *o, unsigned server, unsigned n, uint64_t now,
                 struct dbk_outlier_change *ch)
{
	bool ej = false;

	for (unsigned k = 0; k < n; k++)
		ej = dbk_outlier_observe(o, server, DBK_OUTLIER_FAILURE, "http-500", now, 3, ch);
	return ej;
}

static void test_consecutive_backoff_half_open(void)
{
	struct dbk_outlier_config c = config();
	struct dbk_outlier o;
	struct dbk_outlier_change ch;

	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	CHECK(!fail(&o, 1, 4, 100, &ch));
	/* A success breaks the run. */
	CHECK(!dbk_outlier_observe(&o, 1, DBK_OUTLIER_SUCCESS, NULL, 100, 3, &ch));
	CHECK(!fail(&o, 1, 4, 100, &ch));
	CHECK(fail(&o, 1, 1, 100, &ch));
	CHECK_EQ_U(ch.server, 1);
	CHECK(strcmp(ch.reason, "consecutive") == 0);
	CHECK_EQ_U(ch.for_ms, 1000);
	CHECK_EQ_U(o.stats.ejected, 1);
	CHECK_EQ_U(dbk_outlier_next_due(&o), 1100);
	/* Lines of requests in flight when it went out change nothing. */
	CHECK(!fail(&o, 1, 10, 500, &ch));
	CHECK_EQ_U(dbk_outlier_tick(&o, 1099, NULL, NULL), 0);
	CHECK_EQ_U(dbk_outlier_tick(&o, 1100, NULL, NULL), 1);
	CHECK_EQ_U(o.s[1].state, DBK_OUTLIER_HALF_OPEN);
	CHECK_EQ_U(o.stats.ejected, 0);
	/* Half-open: one failure is enough, and the back-off doubles. */
	CHECK(fail(&o, 1, 1, 1200, &ch));
	CHECK(strcmp(ch.reason, "half-open") == 0);
	CHECK_EQ_U(ch.for_ms, 2000);
	CHECK_EQ_U(dbk_outlier_tick(&o, 3200, NULL, NULL), 1);
	CHECK(fail(&o, 1, 1, 3200, &ch));
	CHECK_EQ_U(ch.for_ms, 2500); /* capped */
	CHECK_EQ_U(dbk_outlier_tick(&o, 5700, NULL, NULL), 1);
	/* Two successes close it. */
	CHECK(!dbk_outlier_observe(&o, 1, DBK_OUTLIER_SUCCESS, NULL, 5800, 3, &ch));
	CHECK_EQ_U(o.s[1].state, DBK_OUTLIER_HALF_OPEN);
	CHECK(!dbk_outlier_observe(&o, 1, DBK_OUTLIER_SUCCESS, NULL, 5800, 3, &ch));
	CHECK_EQ_U(o.s[1].state, DBK_OUTLIER_CLOSED);
	CHECK(!fail(&o, 1, 4, 5900, &ch));
	/* A long good period pays the back-off off: 3 steps owed, 10 s
	 * back (10 base periods), so the next is the base again. */
	CHECK(fail(&o, 1, 1, 15800, &ch));
	CHECK_EQ_U(ch.for_ms, 1000);
	CHECK_EQ_U(o.stats.ejections, 4);
	CHECK_EQ_U(o.s[1].failures, 4 + 4 + 1 + 10 + 1 + 1 + 4 + 1);
	dbk_outlier_free(&o);
}

static void test_ratio(void)
{
	struct dbk_outlier_config c = config();
	struct dbk_outlier o;
	struct dbk_outlier_change ch;
	bool ej = false;
	unsigned k;

	c.consecutive = 0;
	c.ratio = 0.3;
	c.min_requests = 20;
	c.window_ms = 10000;
	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	/* One in four fails: under the ratio for good. */
	for (k = 0; k < 200; k++)
		CHECK(!dbk_outlier_observe(&o, 0,
		                           k % 4 == 0 ? DBK_OUTLIER_FAILURE : DBK_OUTLIER_SUCCESS,
		                           "x", k * 100, 3, &ch));
	/* Half fail: ejected once the window holds enough requests. */
	for (k = 0; k < 200 && !ej; k++)
		ej = dbk_outlier_observe(&o, 2, k % 2 ? DBK_OUTLIER_FAILURE : DBK_OUTLIER_SUCCESS,
		                         "x", 1000, 3, &ch);
	CHECK(ej);
	CHECK_EQ_U(k, 20);
	CHECK(strcmp(ch.reason, "ratio") == 0);
	dbk_outlier_free(&o);
}

/* A changing fleet keeps spare slots: the share ejected at once is of
 * the servers present, so 4 of 64 slots allow 2 ejections, not 32. */
static void test_cap_of_present(void)
{
	struct dbk_outlier_config c = config();
	struct dbk_outlier o;
	struct dbk_outlier_change ch;

	CHECK(dbk_outlier_init(&o, &c, 64) == 0);
	dbk_outlier_set_fleet(&o, 4);
	CHECK(fail(&o, 0, 5, 100, &ch));
	CHECK(fail(&o, 1, 5, 100, &ch));
	CHECK(!fail(&o, 2, 5, 100, &ch));
	CHECK_EQ_U(o.stats.ejected, 2);
	/* The fleet grows to 8: a third may go. */
	dbk_outlier_set_fleet(&o, 8);
	CHECK(fail(&o, 2, 1, 100, &ch));
	/* A new server in slot 0 starts afresh and gives its place back. */
	CHECK(dbk_outlier_reset(&o, 0));
	CHECK_EQ_U(o.stats.ejected, 2);
	dbk_outlier_set_fleet(&o, 1000); /* never above the slots */
	CHECK_EQ_U(o.fleet, 64);
	dbk_outlier_free(&o);
}

static void test_cap(void)
{
	struct dbk_outlier_config c = config();
	struct dbk_outlier o;
	struct dbk_outlier_change ch;

	/* Four servers, 10%: one may go (at least one, as Envoy). */
	c.max_percent = 10;
	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	CHECK(fail(&o, 0, 5, 0, &ch));
	CHECK(!fail(&o, 1, 5, 0, &ch));
	CHECK_EQ_U(o.stats.capped, 1);
	dbk_outlier_free(&o);

	/* 100%: all but one, and never the last usable one. */
	c.max_percent = 100;
	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	CHECK(fail(&o, 0, 5, 0, &ch));
	CHECK(fail(&o, 1, 5, 0, &ch));
	CHECK(fail(&o, 2, 5, 0, &ch));
	CHECK(!fail(&o, 3, 5, 0, &ch));
	CHECK_EQ_U(o.stats.ejected, 3);
	dbk_outlier_free(&o);

	c.max_percent = 50;
	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	/* No other server usable (the rest DOWN in HAProxy): it stays. */
	for (unsigned k = 0; k < 5; k++)
		CHECK(!dbk_outlier_observe(&o, 0, DBK_OUTLIER_FAILURE, "x", 0, 0, &ch));
	/* A reset server starts afresh. */
	CHECK(fail(&o, 1, 5, 0, &ch));
	CHECK(dbk_outlier_reset(&o, 1));
	CHECK_EQ_U(o.stats.ejected, 0);
	CHECK_EQ_U(o.s[1].failures, 0);
	dbk_outlier_free(&o);

	/* A fleet of one is never ejected from. */
	CHECK(dbk_outlier_init(&o, &c, 1) == 0);
	CHECK(!fail(&o, 0, 50, 0, &ch));
	dbk_outlier_free(&o);

	/* Disabled: counts nothing. */
	c.enabled = false;
	CHECK(dbk_outlier_init(&o, &c, 4) == 0);
	CHECK(!fail(&o, 0, 50, 0, &ch));
	CHECK_EQ_U(o.stats.failures, 0);
	dbk_outlier_free(&o);
}

int main(void)
{
	RUN(test_classify);
	RUN(test_consecutive_backoff_half_open);
	RUN(test_ratio);
	RUN(test_cap);
	RUN(test_cap_of_present);
	return CHECK_DONE();
}
