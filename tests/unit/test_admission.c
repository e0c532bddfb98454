/* Admission: class names, and which requests are refused when, with
 * what Retry-After. */
#include "admission.h"
#include "check.h"

static void test_class_parse(void)
{
	enum dbk_class c;

	CHECK(dbk_class_parse("critical", 8, &c) && c == DBK_CLASS_CRITICAL);
	CHECK(dbk_class_parse("Sheddable", 9, &c) && c == DBK_CLASS_SHEDDABLE);
	CHECK(dbk_class_parse("STANDARD", 8, &c) && c == DBK_CLASS_STANDARD);
	CHECK(dbk_class_parse("0", 1, &c) && c == DBK_CLASS_CRITICAL);
	CHECK(dbk_class_parse("2", 1, &c) && c == DBK_CLASS_SHEDDABLE);
	/* Unknown, empty, a prefix, out of range: standard, and said so. */
	c = DBK_CLASS_CRITICAL;
	CHECK(!dbk_class_parse("urgent", 6, &c) && c == DBK_CLASS_STANDARD);
	c = DBK_CLASS_CRITICAL;
	CHECK(!dbk_class_parse("", 0, &c) && c == DBK_CLASS_STANDARD);
	CHECK(!dbk_class_parse("crit", 4, &c) && c == DBK_CLASS_STANDARD);
	CHECK(!dbk_class_parse("criticalx", 9, &c) && c == DBK_CLASS_STANDARD);
	CHECK(!dbk_class_parse("3", 1, &c) && c == DBK_CLASS_STANDARD);
	CHECK(!dbk_class_parse("-1", 2, &c) && c == DBK_CLASS_STANDARD);
	CHECK(strcmp(dbk_class_name(DBK_CLASS_SHEDDABLE), "sheddable") == 0);
	CHECK(strcmp(dbk_class_name((enum dbk_class)7), "standard") == 0);
}

static struct dbk_admit_result admit(const struct dbk_admit_config *c, enum dbk_class cls,
                                     double ttft_ms)
{
	struct dbk_admit_input in = { .cls = cls, .predicted = true, .ttft_ms = ttft_ms };

	return dbk_admit(c, NULL, &in);
}

static void test_predicted(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_result r;

	dbk_admit_config_default(&c);
	/* With no memory (st NULL) every higher class counts as at risk:
	 * the share alone decides. Off by default: nothing refused however
	 * late. */
	CHECK_EQ_U(admit(&c, DBK_CLASS_SHEDDABLE, 1e9).verdict, DBK_ADMIT_ROUTE);
	c.enabled = true;
	/* Critical is never refused. */
	CHECK_EQ_U(admit(&c, DBK_CLASS_CRITICAL, 1e9).verdict, DBK_ADMIT_ROUTE);
	/* Standard and sheddable: refused past half the objective (1 s),
	 * leaving a critical request sent next room for its own prefill,
	 * long prompts too; Retry-After is the excess, rounded up. */
	CHECK_EQ_U(admit(&c, DBK_CLASS_STANDARD, 1000).verdict, DBK_ADMIT_ROUTE);
	r = admit(&c, DBK_CLASS_STANDARD, 1001);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 1);
	CHECK(strcmp(dbk_shed_reason_name(r.why), "predicted-late") == 0);
	CHECK_EQ_U(admit(&c, DBK_CLASS_SHEDDABLE, 1000).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(admit(&c, DBK_CLASS_SHEDDABLE, 1001).verdict, DBK_ADMIT_SHED);
	r = admit(&c, DBK_CLASS_SHEDDABLE, 3800.5);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 3);
	/* A share set apart: sheddable below standard. */
	c.headroom[DBK_CLASS_SHEDDABLE] = 0.25;
	CHECK_EQ_U(admit(&c, DBK_CLASS_SHEDDABLE, 501).verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(admit(&c, DBK_CLASS_STANDARD, 501).verdict, DBK_ADMIT_ROUTE);
	c.headroom[DBK_CLASS_SHEDDABLE] = DBK_ADMIT_DEFAULT_HEADROOM_SHEDDABLE;
	/* Bounded: a wild prediction, or not a number, stays in [1, 60]. */
	CHECK_EQ_U(admit(&c, DBK_CLASS_STANDARD, 1e12).retry_after_s, 60);
	CHECK_EQ_U(admit(&c, DBK_CLASS_STANDARD, INFINITY).retry_after_s, 60);
	CHECK_EQ_U(admit(&c, DBK_CLASS_STANDARD, NAN).verdict, DBK_ADMIT_ROUTE);
	/* An out-of-range class is the default, standard. */
	CHECK_EQ_U(admit(&c, (enum dbk_class)9, 1500).verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(admit(&c, (enum dbk_class)9, 900).verdict, DBK_ADMIT_ROUTE);
}

/* The defaults, on. */
static struct dbk_admit_config enabled(void)
{
	struct dbk_admit_config c;

	dbk_admit_config_default(&c);
	c.enabled = true;
	return c;
}

static struct dbk_admit_result at(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                                  enum dbk_class cls, double ttft_ms, uint64_t now_ms)
{
	struct dbk_admit_input in = {
		.cls = cls, .predicted = true, .ttft_ms = ttft_ms, .now_ms = now_ms
	};

	return dbk_admit(c, st, &in);
}

/* Below capacity: critical finds servers in time, so a request past its
 * share but within the objective is served; one past the objective is
 * refused (it would miss its own), with the excess as Retry-After. */
static void test_risk_calm(void)
{
	struct dbk_admit_config c = enabled();
	struct dbk_admit_state st = { 0 };
	struct dbk_admit_result r;

	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 300, 1000).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 500, 1100).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 1200).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 500, 1200).verdict, DBK_ADMIT_ROUTE);
	r = at(&c, &st, DBK_CLASS_SHEDDABLE, 3500, 1300);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 2);
	/* A critical request with no prediction, or with no server, is no
	 * evidence of a queue. */
	struct dbk_admit_input in = { .cls = DBK_CLASS_CRITICAL, .ttft_ms = 1e6, .now_ms = 1400 };
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, DBK_ADMIT_ROUTE);
	in.predicted = in.no_server = true;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 1500).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 2000, 1600).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 2001, 1600).verdict, DBK_ADMIT_SHED);
}

/* A critical request predicted past a quarter of the objective puts critical at
 * risk for the window: the lower classes are held to their share, then
 * served past it again once the window is over. */
static void test_risk_critical(void)
{
	struct dbk_admit_config c = enabled();
	struct dbk_admit_state st = { 0 };
	struct dbk_admit_result r;

	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 501, 10000).verdict, DBK_ADMIT_ROUTE);
	r = at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 10500);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 1);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1001, 10500).verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1000, 10500).verdict, DBK_ADMIT_ROUTE);
	/* Critical itself is never refused, at risk or not. */
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 5000, 10600).verdict, DBK_ADMIT_ROUTE);
	/* That one renewed the risk: until 12600. */
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 12599).verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 12600).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1500, 12600).verdict, DBK_ADMIT_ROUTE);
}

/* Standard at risk protects standard from sheddable, not from itself;
 * a sheddable request at risk protects nobody. */
static void test_risk_standard(void)
{
	struct dbk_admit_config c = enabled();
	struct dbk_admit_state st = { 0 };

	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1900, 0).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1500, 100).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1500, 200).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 300).verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 900, 300).verdict, DBK_ADMIT_ROUTE);
}

/* Refused together, the retries are told apart: the first when its
 * excess has drained, each next DBK_ADMIT_RETRY_SPACING_MS later, so
 * that they do not all come back to the same room; per class. */
static void test_retry_spaced(void)
{
	struct dbk_admit_config c = enabled();
	struct dbk_admit_state st = { 0 };
	const int want[] = { 1, 1, 1, 2, 2, 2, 2, 2, 3 };

	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 1500, 5000).verdict, DBK_ADMIT_ROUTE);
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct dbk_admit_result r = at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 5000);

		CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
		CHECK_EQ_U(r.retry_after_s, want[i]);
	}
	/* Standard's retries have their own order. */
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_STANDARD, 1500, 5000).retry_after_s, 1);
	/* Once that order is past, the excess alone again. */
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 1500, 9000).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 9000).retry_after_s, 1);
	/* The bound holds: a wild excess is told the maximum. */
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1e12, 9000).retry_after_s, 60);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, INFINITY, 9000).retry_after_s, 60);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_CRITICAL, 1500, 70000).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(at(&c, &st, DBK_CLASS_SHEDDABLE, 1500, 70000).retry_after_s, 1);
}

static void test_unpredicted(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_input in = { .cls = DBK_CLASS_SHEDDABLE, .saturated = true };
	struct dbk_admit_result r;

	dbk_admit_config_default(&c);
	c.enabled = true;
	r = dbk_admit(&c, NULL, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 1);
	CHECK(strcmp(dbk_shed_reason_name(r.why), "saturated") == 0);
	/* Saturation refuses sheddable requests only. */
	in.cls = DBK_CLASS_STANDARD;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	in.cls = DBK_CLASS_SHEDDABLE;
	in.saturated = false;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	/* No usable server: HAProxy's 503, not a 429. */
	in.saturated = true;
	in.no_server = true;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
}

/* Without a prediction the fleet's recent first tokens weigh too:
 * sheddable past half the objective, standard past the whole, whatever
 * the predicted shares, critical never; 0 is not known. */
static void test_fleet_late(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_input in = { .cls = DBK_CLASS_SHEDDABLE, .fleet_ttft_ms = 1000 };
	struct dbk_admit_result r;

	dbk_admit_config_default(&c);
	c.enabled = true;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 1001;
	r = dbk_admit(&c, NULL, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK(strcmp(dbk_shed_reason_name(r.why), "fleet-late") == 0);
	CHECK_EQ_U(r.retry_after_s, 1);
	in.cls = DBK_CLASS_STANDARD;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 2000;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 4500;
	r = dbk_admit(&c, NULL, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 3); /* 2.5 s past the objective, rounded up */
	in.cls = DBK_CLASS_CRITICAL;
	in.fleet_ttft_ms = 1e9;
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	/* A prediction wins over the fleet's mean. */
	in = (struct dbk_admit_input){
		.cls = DBK_CLASS_STANDARD, .predicted = true, .ttft_ms = 100, .fleet_ttft_ms = 1e6
	};
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
	/* Off: nothing. */
	c.enabled = false;
	in = (struct dbk_admit_input){ .cls = DBK_CLASS_SHEDDABLE, .fleet_ttft_ms = 1e6 };
	CHECK_EQ_U(dbk_admit(&c, NULL, &in).verdict, DBK_ADMIT_ROUTE);
}

int main(void)
{
	RUN(test_class_parse);
	RUN(test_predicted);
	RUN(test_risk_calm);
	RUN(test_risk_critical);
	RUN(test_risk_standard);
	RUN(test_retry_spaced);
	RUN(test_unpredicted);
	RUN(test_fleet_late);
	return CHECK_DONE();
}
