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

/* One predicted request at now_ms through the admission's memory: t its
 * first token, own its own prefill in it; what is expected of it
 * (retry: its Retry-After when shed, -1: not checked). */
struct step {
	enum dbk_class cls;
	uint64_t now_ms;
	double t, own;
	enum dbk_admit_verdict want;
	int retry;
};

/* Runs steps in order through one memory, admission on with the
 * defaults; the index of the first step not as expected, or -1. */
static int run_steps(const struct step *steps, size_t n, struct dbk_admit_state *st)
{
	struct dbk_admit_config c;

	dbk_admit_config_default(&c);
	c.enabled = true;
	for (size_t i = 0; i < n; i++) {
		const struct step *x = &steps[i];
		struct dbk_admit_input in = { .cls = x->cls,
			                      .predicted = true,
			                      .ttft_ms = x->t,
			                      .own_ms = x->own,
			                      .now_ms = x->now_ms };
		struct dbk_admit_result r = dbk_admit(&c, st, &in);

		if (r.verdict != x->want || (x->retry >= 0 && r.retry_after_s != x->retry) ||
		    (r.verdict == DBK_ADMIT_SHED && r.why != DBK_SHED_PREDICTED_LATE))
			return (int)i;
	}
	return -1;
}

#define ROUTE DBK_ADMIT_ROUTE
#define SHED DBK_ADMIT_SHED
#define CRIT DBK_CLASS_CRITICAL
#define STD DBK_CLASS_STANDARD
#define SHD DBK_CLASS_SHEDDABLE

/* Below capacity (nothing above at risk) a request is refused only when
 * it is late for its own objective because of the queue ahead of it:
 * never for its own length, nor for a burst that leaves it in time. */
static void test_nothing_at_risk(void)
{
	struct dbk_admit_state st = { 0 };
	static const struct step steps[] = {
		/* A long prompt, 4.8 s of its own prefill on an idle server:
		 * served late rather than refused by a fleet that cannot serve
		 * it sooner. */
		{ SHD, 1000, 5000, 4800, ROUTE, -1 },
		/* 1.9 s predicted, 1.4 s of it waiting: in time, admitted (the
		 * fixed share refused it). */
		{ STD, 1000, 1900, 500, ROUTE, -1 },
		{ SHD, 1000, 1900, 500, ROUTE, -1 },
		/* Late, but within the share of waiting: its own prompt makes
		 * it late, not the others. */
		{ STD, 1000, 3000, 2100, ROUTE, -1 },
		/* A long prompt behind a long queue: refused until the queue
		 * is down to its share (4 s of wait, 3 s to drain). */
		{ SHD, 1000, 9000, 5000, SHED, 3 },
		/* Late because of 4.2 s of queue: refused until predicted in
		 * time again, 2.5 s of drain (past the objective) rounded up. */
		{ STD, 1000, 4500, 300, SHED, 3 },
		/* That standard request's wait has put standard at risk: the
		 * sheddable one above, in time for itself, is refused now. */
		{ SHD, 1000, 1900, 500, SHED, -1 },
	};

	/* On failure: the step's index, plus one. */
	CHECK_EQ_U(run_steps(steps, sizeof(steps) / sizeof(steps[0]), &st) + 1, 0);
}

/* A critical request predicted to wait past 3/4 of the objective puts
 * critical at risk for DBK_ADMIT_BURST_HOLD_MS (a burst's evidence):
 * the lower classes get their share again (refused past half the
 * objective), then, the risk lapsed, the whole. Its own prefill is not
 * a risk the others cause. */
static void test_critical_at_risk(void)
{
	struct dbk_admit_state st = { 0 };
	const uint64_t lapse = 1000 + DBK_ADMIT_BURST_HOLD_MS;
	const struct step steps[] = {
		/* 3 s of its own prompt, 100 ms of wait: no risk. */
		{ CRIT, 1000, 3100, 3000, ROUTE, -1 },
		{ SHD, 1000, 1200, 1100, ROUTE, -1 },
		/* 1.5 s of wait is not past 3/4 of 2 s; 1.6 s is. Critical is
		 * never refused itself. */
		{ CRIT, 1000, 1700, 200, ROUTE, -1 },
		{ SHD, 1000, 1200, 1100, ROUTE, -1 },
		{ CRIT, 1000, 1e9, 200, ROUTE, -1 },
		/* Now a sheddable request past its share is refused, even one
		 * late only by its own prompt, whose prefill never fits the
		 * share: back once the risk lapses, 14 s from now. */
		{ SHD, 2000, 1200, 1100, SHED, (int)(lapse - 2000) / 1000 },
		/* A short one behind 1.5 s of queue: when the queue leaves it
		 * within the share, 0.7 s, rounded up; within it, admitted. */
		{ STD, 2000, 1700, 200, SHED, 1 },
		{ STD, 2000, 1000, 100, ROUTE, -1 },
		/* The risk lapses unless renewed. */
		{ SHD, lapse - 1, 1200, 1100, SHED, -1 },
		{ SHD, lapse, 1200, 1100, ROUTE, -1 },
		/* Standard at risk shields sheddable, not standard itself. */
		{ STD, lapse, 1700, 100, ROUTE, -1 },
		{ STD, lapse, 1200, 1100, ROUTE, -1 },
		{ SHD, lapse, 1200, 1100, SHED, -1 },
	};

	/* On failure: the step's index, plus one. */
	CHECK_EQ_U(run_steps(steps, sizeof(steps) / sizeof(steps[0]), &st) + 1, 0);
	/* With no memory every class above is at risk: the share alone. */
	CHECK_EQ_U(run_steps(&steps[1], 1, NULL), 0);
}

/* Critical's risk renewed over DBK_ADMIT_SUSTAINED_MS is the fleet past
 * capacity: the lower classes get an eighth of their share (125 ms of
 * the 2 s objective), only brief requests that start at once. One
 * burst's evidence, or a new episode, leaves them their share. */
static void test_sustained_risk(void)
{
	struct dbk_admit_state st = { 0 };
	const uint64_t t0 = 1000, sus = t0 + DBK_ADMIT_SUSTAINED_MS;
	const uint64_t lapse = sus + DBK_ADMIT_RISK_HOLD_MS;
	const struct step steps[] = {
		{ CRIT, t0, 1700, 100, ROUTE, -1 },
		/* A burst: 400 ms, within the share (1 s), admitted. */
		{ SHD, t0, 400, 100, ROUTE, -1 },
		{ STD, sus - 1, 400, 100, ROUTE, -1 },
		/* Renewed 5 s after it began: sustained. */
		{ CRIT, sus, 1700, 100, ROUTE, -1 },
		{ SHD, sus, 400, 100, SHED, 1 },
		{ STD, sus, 400, 100, SHED, 1 },
		{ STD, sus, 120, 100, ROUTE, -1 },
		/* Its own prefill past the eighth, within the share: back once
		 * the episode is quiet (10 s and a millisecond, rounded up),
		 * not at the end of the 30 s hold. */
		{ SHD, sus, 400, 200, SHED, DBK_ADMIT_SUSTAINED_RECENT_MS / 1000 + 1 },
		/* Past the share too: at the hold's end. */
		{ SHD, sus, 1500, 1200, SHED, DBK_ADMIT_RISK_HOLD_MS / 1000 },
		/* The hold lapsed: a new episode starts with the share. */
		{ CRIT, lapse, 1700, 100, ROUTE, -1 },
		{ SHD, lapse, 400, 100, ROUTE, -1 },
	};

	/* On failure: the step's index, plus one. */
	CHECK_EQ_U(run_steps(steps, sizeof(steps) / sizeof(steps[0]), &st) + 1, 0);
}

/* An episode is sustained only while its evidence keeps coming: two
 * bursts more than DBK_ADMIT_SUSTAINED_MS apart are not one (agentic
 * sessions at 0.8x capacity: one burst's evidence and another's 10 s
 * later held sheddable requests to the eighth, refusing ones that would
 * start at once on an idle server); evidence stopped for
 * DBK_ADMIT_SUSTAINED_RECENT_MS leaves the lower classes their share
 * for the rest of the hold, DBK_ADMIT_RISK_HOLD_MS once sustained. */
static void test_sustained_episode(void)
{
	struct dbk_admit_state st = { 0 };
	const uint64_t t0 = 1000, gap = t0 + DBK_ADMIT_SUSTAINED_MS + 1;
	const uint64_t half = DBK_ADMIT_SUSTAINED_MS / 2, t1 = 100000;
	const uint64_t sus = t1 + DBK_ADMIT_SUSTAINED_MS;
	const uint64_t quiet = sus + DBK_ADMIT_SUSTAINED_RECENT_MS + 1;
	const struct step steps[] = {
		/* Two bursts 5 s and 1 ms apart: the share, not the eighth. */
		{ CRIT, t0, 1700, 100, ROUTE, -1 },
		{ CRIT, gap, 1700, 100, ROUTE, -1 },
		{ SHD, gap, 400, 100, ROUTE, -1 },
		{ SHD, gap, 1200, 100, SHED, -1 },
		/* Evidence every 2.5 s for 5 s: sustained, the eighth. */
		{ CRIT, t1, 1700, 100, ROUTE, -1 },
		{ CRIT, t1 + half, 1700, 100, ROUTE, -1 },
		{ CRIT, sus, 1700, 100, ROUTE, -1 },
		{ SHD, sus + 1, 400, 100, SHED, -1 },
		/* Told to come back when quiet, 10 s from now (its own 200 ms
		 * past the eighth) ... */
		{ SHD, sus + 1, 400, 200, SHED, DBK_ADMIT_SUSTAINED_RECENT_MS / 1000 },
		/* ... then, none for 10 s: the share again, it is let in ... */
		{ SHD, quiet, 400, 100, ROUTE, -1 },
		{ SHD, quiet, 400, 200, ROUTE, -1 },
		{ SHD, quiet, 1200, 100, SHED, -1 },
		/* ... until the sustained episode's hold lapses. */
		{ SHD, sus + DBK_ADMIT_RISK_HOLD_MS - 1, 1200, 100, SHED, -1 },
		{ SHD, sus + DBK_ADMIT_RISK_HOLD_MS, 1200, 100, ROUTE, -1 },
	};

	/* On failure: the step's index, plus one. */
	CHECK_EQ_U(run_steps(steps, sizeof(steps) / sizeof(steps[0]), &st) + 1, 0);
}

/* A first token predicted before its own prefill is done (negative
 * wait, or negative time: the predictor's books gone wrong under KV
 * pressure on long agentic sessions) is taken as late, not in time. */
static void test_impossible_prediction(void)
{
	struct dbk_admit_state st = { 0 };
	const struct step steps[] = {
		/* Nothing at risk: refused for its own sake (Retry-After the
		 * bound: nothing says when it drains). */
		{ STD, 1000, -5e5, 300, SHED, 60 },
		{ SHD, 1000, 200, 300, SHED, 60 },
		/* A critical one is never refused, but its risk holds the
		 * others to their share. */
		{ CRIT, 1000, -1e6, 100, ROUTE, -1 },
		{ SHD, 2000, 1200, 1100, SHED, -1 },
		/* A sound prediction within the share still goes through. */
		{ STD, 2000, 900, 800, ROUTE, -1 },
	};

	/* On failure: the step's index, plus one. */
	CHECK_EQ_U(run_steps(steps, sizeof(steps) / sizeof(steps[0]), &st) + 1, 0);
}

/* Off: nothing learnt, nothing refused. */
static void test_off_learns_nothing(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_state st = { 0 };
	struct dbk_admit_input in = {
		.cls = DBK_CLASS_CRITICAL, .predicted = true, .ttft_ms = 1e6, .now_ms = 1000
	};

	dbk_admit_config_default(&c);
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, DBK_ADMIT_ROUTE);
	CHECK_EQ_U(st.risk_until_ms[DBK_CLASS_CRITICAL], 0);
}

static enum dbk_admit_verdict decide(struct dbk_admit_state *st, enum dbk_class cls,
                                     uint64_t now_ms, double t, double own, double kv_wait,
                                     double tpot_share, int *retry)
{
	struct dbk_admit_config c;
	struct dbk_admit_input in = { .cls = cls,
		                      .predicted = true,
		                      .ttft_ms = t,
		                      .own_ms = own,
		                      .kv_wait_ms = kv_wait,
		                      .tpot_ms = tpot_share * DBK_ADMIT_DEFAULT_TPOT_MS,
		                      .now_ms = now_ms };

	dbk_admit_config_default(&c);
	c.enabled = true;
	struct dbk_admit_result r = dbk_admit(&c, st, &in);

	*retry = r.retry_after_s;
	return r.verdict;
}

/* A class is at TPOT risk after one of its requests is predicted a TPOT
 * past 3/4 of its objective; a lower request is then refused when the
 * decoders on its server would step past that with it, though its first
 * token is in time. */
static void test_tpot_risk(void)
{
	struct dbk_admit_state st = { 0 };
	const uint64_t lapse = 1000 + DBK_ADMIT_BURST_HOLD_MS;
	int retry;

	/* 70 ms of a 100 ms objective is no risk: critical routed, and a
	 * standard request at 80 ms is not refused for it. */
	CHECK_EQ_U(decide(&st, CRIT, 500, 300, 200, 0, 0.7, &retry), ROUTE);
	CHECK_EQ_U(decide(&st, STD, 500, 300, 200, 0, 0.8, &retry), ROUTE);
	/* 80 ms on a critical request: critical at risk, never refused. */
	CHECK_EQ_U(decide(&st, CRIT, 1000, 300, 200, 0, 0.8, &retry), ROUTE);
	CHECK_EQ_U(decide(&st, STD, 2000, 300, 200, 0, 0.8, &retry), SHED);
	CHECK_EQ_U(retry, (lapse - 2000) / 1000);
	CHECK_EQ_U(decide(&st, SHD, 2000, 300, 200, 0, 0.76, &retry), SHED);
	/* Where it leaves the decoders within 3/4, it is let in. */
	CHECK_EQ_U(decide(&st, STD, 2000, 300, 200, 0, 0.7, &retry), ROUTE);
	/* The risk lapses unless renewed (standard's own, from the requests
	 * above, now shields sheddable). */
	CHECK_EQ_U(decide(&st, STD, lapse - 1, 300, 200, 0, 0.8, &retry), SHED);
	CHECK_EQ_U(decide(&st, STD, lapse, 300, 200, 0, 0.8, &retry), ROUTE);
	CHECK_EQ_U(decide(&st, SHD, lapse, 300, 200, 0, 0.8, &retry), SHED);
}

/* A TPOT measured on the server (tpot_seen_ms) is held to the objective
 * itself, not to the share a prediction is: 90 ms of 100 measured is no
 * risk, 110 ms is, and then a lower request there is refused though
 * its predicted TPOT is small. */
static void test_tpot_seen(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_state st = { 0 };
	struct dbk_admit_input in = { .cls = CRIT,
		                      .predicted = true,
		                      .ttft_ms = 300,
		                      .own_ms = 200,
		                      .tpot_ms = 20,
		                      .tpot_seen_ms = 90,
		                      .now_ms = 1000 };

	dbk_admit_config_default(&c);
	c.enabled = true;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	in.cls = STD;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	CHECK_EQ_U(st.tpot_until_ms[CRIT], 0);
	in.cls = CRIT;
	in.tpot_seen_ms = 110;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	CHECK(st.tpot_until_ms[CRIT] > in.now_ms);
	in.cls = STD;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, SHED);
	/* Measured within the objective on another server: let in there. */
	in.tpot_seen_ms = 60;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
}

/* The KV-fit wait counts only while a class is at risk: with none, a
 * request predicted late only by it is let in (the books' phantom on
 * agentic sessions), with one it is refused as before. */
static void test_kv_wait_at_risk(void)
{
	struct dbk_admit_state st = { 0 };
	int retry;

	/* 4.5 s predicted, 3 s of it the KV-fit wait: 1.5 s in time. */
	CHECK_EQ_U(decide(&st, STD, 1000, 4500, 300, 3000, 0.2, &retry), ROUTE);
	/* Past the share of waiting without the KV-fit wait: refused. */
	CHECK_EQ_U(decide(&st, STD, 1000, 4500, 300, 1000, 0.2, &retry), SHED);
	/* Critical at risk (by its TPOT): the wait counts again. */
	CHECK_EQ_U(decide(&st, CRIT, 1000, 300, 200, 0, 0.8, &retry), ROUTE);
	CHECK_EQ_U(decide(&st, STD, 2000, 4500, 300, 3000, 0.2, &retry), SHED);
	/* With no memory, taken as at risk: counted. */
	CHECK_EQ_U(decide(NULL, STD, 2000, 4500, 300, 3000, 0.2, &retry), SHED);
}

/* The TPOT risk weighs the predicted TPOT against admission's own
 * objective (--admit-tpot), not routing's 100 ms: 120 ms is a risk
 * against the default, and none against 200 ms (60%, below 3/4). */
static void test_tpot_objective(void)
{
	struct dbk_admit_config c;
	struct dbk_admit_state st = { 0 };
	struct dbk_admit_input in = { .cls = DBK_CLASS_CRITICAL,
		                      .predicted = true,
		                      .ttft_ms = 300,
		                      .own_ms = 200,
		                      .tpot_ms = 120,
		                      .now_ms = 1000 };

	dbk_admit_config_default(&c);
	CHECK_EQ_U(c.tpot_ms, 100);
	c.enabled = true;
	c.tpot_ms = 200;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	CHECK_EQ_U(st.tpot_until_ms[DBK_CLASS_CRITICAL], 0);
	in.cls = DBK_CLASS_STANDARD;
	in.now_ms = 2000;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	/* 160 ms on a critical one is (80%); a standard one at 160 ms is
	 * then refused for the decoders it would slow. */
	in.cls = DBK_CLASS_CRITICAL;
	in.tpot_ms = 160;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, ROUTE);
	CHECK(st.tpot_until_ms[DBK_CLASS_CRITICAL] > 2000);
	in.cls = DBK_CLASS_STANDARD;
	CHECK_EQ_U(dbk_admit(&c, &st, &in).verdict, SHED);
	/* Against the default 100 ms, 120 ms was a risk already. */
	struct dbk_admit_state dflt = { 0 };

	c.tpot_ms = DBK_ADMIT_DEFAULT_TPOT_MS;
	in.cls = DBK_CLASS_CRITICAL;
	in.tpot_ms = 120;
	CHECK_EQ_U(dbk_admit(&c, &dflt, &in).verdict, ROUTE);
	CHECK(dflt.tpot_until_ms[DBK_CLASS_CRITICAL] > 2000);
}

int main(void)
{
	RUN(test_class_parse);
	RUN(test_predicted);
	RUN(test_unpredicted);
	RUN(test_fleet_late);
	RUN(test_nothing_at_risk);
	RUN(test_critical_at_risk);
	RUN(test_sustained_risk);
	RUN(test_sustained_episode);
	RUN(test_impossible_prediction);
	RUN(test_off_learns_nothing);
	RUN(test_tpot_risk);
	RUN(test_tpot_seen);
	RUN(test_kv_wait_at_risk);
	RUN(test_tpot_objective);
	return CHECK_DONE();
}
