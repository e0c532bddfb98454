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

	return dbk_admit(c, &in);
}

static void test_predicted(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_result r;

	dbk_admit_config_default(&c);
	/* Off by default: nothing refused however late. */
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

static void test_unpredicted(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_input in = { .cls = DBK_CLASS_SHEDDABLE, .saturated = true };
	struct dbk_admit_result r;

	dbk_admit_config_default(&c);
	c.enabled = true;
	r = dbk_admit(&c, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 1);
	CHECK(strcmp(dbk_shed_reason_name(r.why), "saturated") == 0);
	/* Saturation refuses sheddable requests only. */
	in.cls = DBK_CLASS_STANDARD;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	in.cls = DBK_CLASS_SHEDDABLE;
	in.saturated = false;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	/* No usable server: HAProxy's 503, not a 429. */
	in.saturated = true;
	in.no_server = true;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
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
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 1001;
	r = dbk_admit(&c, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK(strcmp(dbk_shed_reason_name(r.why), "fleet-late") == 0);
	CHECK_EQ_U(r.retry_after_s, 1);
	in.cls = DBK_CLASS_STANDARD;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 2000;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	in.fleet_ttft_ms = 4500;
	r = dbk_admit(&c, &in);
	CHECK_EQ_U(r.verdict, DBK_ADMIT_SHED);
	CHECK_EQ_U(r.retry_after_s, 3); /* 2.5 s past the objective, rounded up */
	in.cls = DBK_CLASS_CRITICAL;
	in.fleet_ttft_ms = 1e9;
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	/* A prediction wins over the fleet's mean. */
	in = (struct dbk_admit_input){
		.cls = DBK_CLASS_STANDARD, .predicted = true, .ttft_ms = 100, .fleet_ttft_ms = 1e6
	};
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
	/* Off: nothing. */
	c.enabled = false;
	in = (struct dbk_admit_input){ .cls = DBK_CLASS_SHEDDABLE, .fleet_ttft_ms = 1e6 };
	CHECK_EQ_U(dbk_admit(&c, &in).verdict, DBK_ADMIT_ROUTE);
}

int main(void)
{
	RUN(test_class_parse);
	RUN(test_predicted);
	RUN(test_unpredicted);
	RUN(test_fleet_late);
	return CHECK_DONE();
}
