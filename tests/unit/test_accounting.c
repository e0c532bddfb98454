/* Unit tests of agent/accounting.[ch]: the agent's books. Each test
 * drives a real balancer through the events the agent sees (dispatches,
 * completion lines in either order and twice, TTL ticks, runtime API
 * polls) with time passed in, and checks what was released, counted and
 * refused. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "accounting.h"
#include "check.h"

static const char *const names[] = { "s0", "s1", "s2" };

struct books {
	struct dbk_balancer *bal;
	struct dbk_acct acct;
};

static void books_init(struct books *k)
{
	struct dbk_bal_config c;

	dbk_bal_config_default(&c, 3, false, 32768, 131072);
	k->bal = dbk_bal_new(&c);
	CHECK(k->bal != NULL);
	dbk_acct_init(&k->acct, k->bal, names);
}

static void books_fini(struct books *k) { dbk_bal_free(k->bal); }

/* A lease on server, as a NOTIFY the agent routed there. */
static enum dbk_bal_result notify(struct books *k, const char *id, unsigned server, uint64_t now_ms)
{
	struct dbk_bal_request r = { .body_bytes = 4000, .max_tokens = 16 };

	return dbk_bal_dispatch_to(k->bal, id, strlen(id), &r, server, now_ms, NULL);
}

/* A completion line: "" for chosen means "-" (no decision variable). */
static struct dbk_completion line(const char *id, const char *chosen, const char *server,
                                  int64_t log_ms)
{
	struct dbk_completion c = {
		.id = id,
		.id_len = strlen(id),
		.chosen = chosen,
		.chosen_len = strlen(chosen),
		.server = server,
		.server_len = strlen(server),
		.status = 200,
		.log_ms = log_ms,
	};
	return c;
}

static enum dbk_acct_outcome complete(struct books *k, const char *id, const char *chosen,
                                      const char *server, uint64_t now_ms)
{
	struct dbk_completion c = line(id, chosen, server, 1700000000000);

	return dbk_acct_complete(&k->acct, &c, now_ms, 1700000000000, NULL);
}

static void test_first_copy_releases_second_is_counted(void)
{
	struct books k;
	struct dbk_bal_lease l = { .server = 99 };

	books_init(&k);
	CHECK_EQ_U(notify(&k, "a", 1, 1000), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 1), 1);
	struct dbk_completion c = line("a", "s1", "s1", 1700000000000);
	CHECK_EQ_U(dbk_acct_complete(&k.acct, &c, 1500, 1700000000025, &l), DBK_ACCT_RELEASED);
	CHECK_EQ_U(l.server, 1);
	CHECK_EQ_U(l.start_ms, 1000);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 1), 0);
	CHECK_EQ_U(k.acct.stats.completions, 1);
	CHECK_EQ_U(k.acct.stats.elsewhere, 0);
	/* The lag, stream end to release, is what the log time says. */
	CHECK_EQ_U(k.acct.lag_ms.count, 1);
	CHECK_NEAR(k.acct.lag_ms.sum, 25.0, 1e-12);

	/* The second path's copy: counted, and nothing released twice. */
	CHECK_EQ_U(dbk_acct_complete(&k.acct, &c, 1600, 1700000000030, &l), DBK_ACCT_DUPLICATE);
	CHECK_EQ_U(k.acct.stats.duplicates, 1);
	CHECK_EQ_U(k.acct.stats.completions, 1);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->releases, 1);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->unknown_releases, 0);
	CHECK_EQ_U(k.acct.lag_ms.count, 1);
	books_fini(&k);
}

static void test_served_elsewhere_released_where_charged(void)
{
	struct books k;

	books_init(&k);
	CHECK_EQ_U(notify(&k, "a", 1, 1000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "b", 1, 1000), DBK_BAL_OK);
	/* Redispatched to s2 without a dbucket-moved message. */
	CHECK_EQ_U(complete(&k, "a", "s1", "s2", 2000), DBK_ACCT_RELEASED);
	CHECK_EQ_U(k.acct.stats.elsewhere, 1);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 1), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 2), 0);
	/* A name that is a prefix of the lease's server is another server. */
	CHECK_EQ_U(complete(&k, "b", "s1", "s", 2000), DBK_ACCT_RELEASED);
	CHECK_EQ_U(k.acct.stats.elsewhere, 2);
	CHECK_NEAR(dbk_bal_server_load(k.bal, 1), 0.0, 0);
	books_fini(&k);
}

/* The bury race: the client leaves while the agent decides, and the
 * completion line (no decision variable) overtakes the NOTIFY. */
static void test_completion_before_its_notify(void)
{
	struct books k;

	books_init(&k);
	CHECK_EQ_U(complete(&k, "late", "", "s0", 1000), DBK_ACCT_UNDECIDED);
	CHECK_EQ_U(k.acct.stats.undecided, 1);
	CHECK_EQ_U(notify(&k, "late", 0, 1001), DBK_BAL_ENDED);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->leases, 0);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->ended, 1);
	/* The other path's copy is still a copy. */
	CHECK_EQ_U(complete(&k, "late", "", "s0", 1002), DBK_ACCT_DUPLICATE);
	CHECK_EQ_U(k.acct.stats.completions, 1);
	books_fini(&k);
}

/* The other order: the lease was taken, but the ACK found no stream to
 * set the variable on, so the line has none. The lease must still go. */
static void test_client_left_after_the_decision(void)
{
	struct books k;

	books_init(&k);
	CHECK_EQ_U(notify(&k, "gone", 2, 1000), DBK_BAL_OK);
	CHECK_EQ_U(complete(&k, "gone", "", "<NOSRV>", 1100), DBK_ACCT_RELEASED);
	CHECK_EQ_U(k.acct.stats.undecided, 0);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->leases, 0);
	books_fini(&k);
}

static void test_lines_without_a_lease(void)
{
	struct books k;

	books_init(&k);
	/* Decided, but the lease is gone (expired, reclaimed). */
	CHECK_EQ_U(complete(&k, "old", "s1", "s1", 1000), DBK_ACCT_UNKNOWN);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->unknown_releases, 1);
	CHECK_EQ_U(k.acct.stats.completions, 1);
	CHECK_EQ_U(k.acct.lag_ms.count, 0);
	/* No unique-id ("-"): nothing to bury, so two such lines are two
	 * completions, not a completion and its copy. */
	CHECK_EQ_U(complete(&k, "", "", "s0", 1000), DBK_ACCT_UNDECIDED);
	CHECK_EQ_U(complete(&k, "", "", "s0", 1000), DBK_ACCT_UNDECIDED);
	CHECK_EQ_U(complete(&k, "", "s0", "s0", 1000), DBK_ACCT_UNKNOWN);
	CHECK_EQ_U(k.acct.stats.completions, 4);
	CHECK_EQ_U(k.acct.stats.duplicates, 0);
	books_fini(&k);
}

static void test_lag_never_negative(void)
{
	struct books k;
	struct dbk_completion c = line("a", "s0", "s0", 1700000000100);

	books_init(&k);
	CHECK_EQ_U(notify(&k, "a", 0, 1000), DBK_BAL_OK);
	/* HAProxy's clock a little ahead of ours. */
	CHECK_EQ_U(dbk_acct_complete(&k.acct, &c, 1000, 1700000000000, NULL), DBK_ACCT_RELEASED);
	CHECK_EQ_U(k.acct.lag_ms.count, 1);
	CHECK_NEAR(k.acct.lag_ms.sum, 0.0, 0);
	books_fini(&k);
}

struct seen {
	char ids[8][16];
	unsigned n;
};

static void record(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct seen *s = arg;

	(void)l;
	if (s->n < 8 && id_len < 16) {
		memcpy(s->ids[s->n], id, id_len);
		s->ids[s->n][id_len] = '\0';
	}
	s->n++;
}

static void test_ttl(void)
{
	struct books k;
	struct seen s = { .n = 0 };

	books_init(&k);
	CHECK_EQ_U(notify(&k, "old", 0, 1000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "new", 1, 5000), DBK_BAL_OK);
	CHECK_EQ_U(dbk_acct_expire(&k.acct, 10999, 10000, record, &s), 0);
	CHECK_EQ_U(dbk_acct_expire(&k.acct, 11000, 10000, record, &s), 1);
	CHECK_EQ_U(s.n, 1);
	CHECK(strcmp(s.ids[0], "old") == 0);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 0), 0);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 1), 1);
	CHECK_EQ_U(dbk_acct_expire(&k.acct, 15000, 10000, NULL, NULL), 1);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->expired, 2);
	/* The expired lease's line comes at last: it finds none. */
	CHECK_EQ_U(complete(&k, "old", "s0", "s0", 16000), DBK_ACCT_UNKNOWN);
	books_fini(&k);
}

/* Buried ids are forgotten DBK_ACCT_BURIED_TTL_MS later, and not before:
 * a copy that late is a new line. */
static void test_buried_ids_expire(void)
{
	struct books k;

	books_init(&k);
	CHECK_EQ_U(complete(&k, "x", "", "s0", 2000), DBK_ACCT_UNDECIDED);
	dbk_acct_expire(&k.acct, 2000 + DBK_ACCT_BURIED_TTL_MS - 1, 10000, NULL, NULL);
	CHECK_EQ_U(notify(&k, "x", 0, 2000 + DBK_ACCT_BURIED_TTL_MS - 1), DBK_BAL_ENDED);
	CHECK_EQ_U(complete(&k, "x", "", "s0", 2000 + DBK_ACCT_BURIED_TTL_MS - 1),
	           DBK_ACCT_DUPLICATE);
	dbk_acct_expire(&k.acct, 2000 + DBK_ACCT_BURIED_TTL_MS, 10000, NULL, NULL);
	CHECK_EQ_U(complete(&k, "x", "", "s0", 2000 + DBK_ACCT_BURIED_TTL_MS), DBK_ACCT_UNDECIDED);
	CHECK_EQ_U(k.acct.stats.completions, 2);
	books_fini(&k);
}

static void test_reclaim_cutoff(void)
{
	uint64_t by = 0;

	/* k polls back, so only leases held through the whole streak. */
	CHECK(dbk_acct_reclaim_cutoff(100000, 1000, 0, &by));
	CHECK_EQ_U(by, 100000 - DBK_ACCT_RECONCILE_K * 1000);
	/* --reclaim-after wins when longer. */
	CHECK(dbk_acct_reclaim_cutoff(100000, 1000, 10000, &by));
	CHECK_EQ_U(by, 90000);
	CHECK(dbk_acct_reclaim_cutoff(100000, 5000, 10000, &by));
	CHECK_EQ_U(by, 85000);
	/* No lease can be that old yet. */
	by = 7;
	CHECK(!dbk_acct_reclaim_cutoff(10000, 1000, 10000, &by));
	CHECK(!dbk_acct_reclaim_cutoff(2999, 1000, 0, &by));
	CHECK_EQ_U(by, 7);
}

/* Two leases leaked on s0 long ago, one fresh request in flight there
 * that HAProxy has not yet counted: three polls in a row show the
 * excess; the old two go, the young one stays. */
static void test_reconcile_takes_only_old_leases(void)
{
	struct books k;
	struct dbk_acct_reconcile r;
	struct seen s = { .n = 0 };

	books_init(&k);
	dbk_acct_reconcile_init(&r);
	CHECK_EQ_U(notify(&k, "leak1", 0, 1000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "other", 1, 1500), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "leak2", 0, 2000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "young", 0, 99500), DBK_BAL_OK);
	/* HAProxy holds none on s0: the excess is 3, but the young lease is
	 * inside the window and survives. */
	CHECK_EQ_U(dbk_acct_reconcile(k.bal, 0, &r, 0, 98000, 1000, 0, record, &s), 0);
	CHECK_EQ_U(dbk_acct_reconcile(k.bal, 0, &r, 0, 99000, 1000, 0, record, &s), 0);
	CHECK_EQ_U(dbk_acct_reconcile(k.bal, 0, &r, 0, 100000, 1000, 0, record, &s), 2);
	CHECK_EQ_U(s.n, 2);
	CHECK(strcmp(s.ids[0], "leak1") == 0);
	CHECK(strcmp(s.ids[1], "leak2") == 0);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 0), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 1), 1);
	CHECK_EQ_U(dbk_bal_stats(k.bal)->reclaimed, 2);
	CHECK(dbk_bal_holds(k.bal, "young", 5));
	/* Their lines, should they come after all, find no lease. */
	CHECK_EQ_U(complete(&k, "leak1", "s0", "s0", 100001), DBK_ACCT_UNKNOWN);
	books_fini(&k);
}

/* --reclaim-after (min_age_ms) holds back a lease the polls alone would
 * take; HAProxy's count bounds how many go. */
static void test_reconcile_min_age_and_haproxy_count(void)
{
	struct books k;
	struct dbk_acct_reconcile r;

	books_init(&k);
	dbk_acct_reconcile_init(&r);
	CHECK_EQ_U(notify(&k, "a", 2, 1000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "b", 2, 50000), DBK_BAL_OK);
	CHECK_EQ_U(notify(&k, "c", 2, 60000), DBK_BAL_OK);
	/* HAProxy holds 1 of the 3: a leak of 2, but only "a" is older than
	 * 60 s at 100 s. */
	for (uint64_t t = 98000; t < 100000; t += 1000)
		CHECK_EQ_U(dbk_acct_reconcile(k.bal, 2, &r, 1, t, 1000, 60000, NULL, NULL), 0);
	CHECK_EQ_U(dbk_acct_reconcile(k.bal, 2, &r, 1, 100000, 1000, 60000, NULL, NULL), 1);
	CHECK(!dbk_bal_holds(k.bal, "a", 1));
	CHECK(dbk_bal_holds(k.bal, "b", 1));
	/* An unknown count (-1) is no evidence: nothing, however long. */
	for (uint64_t t = 200000; t < 210000; t += 1000)
		CHECK_EQ_U(dbk_acct_reconcile(k.bal, 2, &r, -1, t, 1000, 0, NULL, NULL), 0);
	CHECK_EQ_U(dbk_bal_server_inflight(k.bal, 2), 2);
	books_fini(&k);
}

/* The leak arithmetic of accounting.h, poll by poll: each case starts
 * from a fresh streak; want is what the poll says to reclaim. */
struct poll {
	unsigned k, ours;
	long haproxy;
	unsigned want;
};

static const struct {
	const char *why;
	struct poll p[12];
} reconcile_cases[] = {
	{ "in step, then fewer leases than sessions (not ours to fix): nothing",
	  { { 3, 4, 4, 0 },
	    { 3, 4, 4, 0 },
	    { 3, 4, 4, 0 },
	    { 3, 4, 4, 0 },
	    { 3, 4, 4, 0 },
	    { 3, 1, 9, 0 } } },
	{ "a transient excess that does not last k polls: the streak starts over",
	  { { 3, 6, 4, 0 },
	    { 3, 5, 4, 0 },
	    { 3, 4, 4, 0 },
	    { 3, 6, 4, 0 },
	    { 3, 6, 4, 0 },
	    { 3, 4, 4, 0 } } },
	{ "two leaks; once reclaimed, the next needs k new polls",
	  { { 3, 5, 3, 0 },
	    { 3, 5, 3, 0 },
	    { 3, 5, 3, 2 },
	    { 3, 4, 3, 0 },
	    { 3, 4, 3, 0 },
	    { 3, 4, 3, 1 } } },
	{ "HAProxy's count moves: reclaim by the highest it showed",
	  { { 3, 6, 3, 0 }, { 3, 6, 5, 0 }, { 3, 6, 4, 1 } } },
	{ "our count grew at the last poll: only the excess every poll shared",
	  { { 3, 3, 2, 0 }, { 3, 3, 2, 0 }, { 3, 10, 2, 1 } } },
	{ "our count fell: ours now minus HAProxy's highest bounds",
	  { { 3, 10, 4, 0 }, { 3, 10, 4, 0 }, { 3, 5, 0, 1 } } },
	{ "an unknown HAProxy count is no evidence: the streak starts over",
	  { { 3, 5, 3, 0 },
	    { 3, 5, 3, 0 },
	    { 3, 5, -1, 0 },
	    { 3, 5, 3, 0 },
	    { 3, 5, 3, 0 },
	    { 3, 5, 3, 2 } } },
	{ "k 0 is the default 3; k 1 acts at once",
	  { { 0, 2, 0, 0 }, { 0, 2, 0, 0 }, { 0, 2, 0, 2 }, { 1, 2, 1, 1 } } },
	{ "a larger k waits longer",
	  { { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 0 },
	    { 10, 7, 2, 5 } } },
	{ "extremes do not overflow",
	  { { 1, UINT_MAX, 0, UINT_MAX }, { 1, UINT_MAX, LONG_MAX, 0 }, { UINT_MAX, 1, 0, 0 } } },
};

static void test_reconcile_step(void)
{
	for (size_t c = 0; c < sizeof(reconcile_cases) / sizeof(reconcile_cases[0]); c++) {
		struct dbk_acct_reconcile r;

		dbk_acct_reconcile_init(&r);
		for (size_t i = 0; i < 12 && reconcile_cases[c].p[i].ours; i++) {
			const struct poll *p = &reconcile_cases[c].p[i];
			unsigned got = dbk_acct_reconcile_step(&r, p->k, p->ours, p->haproxy);

			if (got != p->want)
				fprintf(stderr, "  %s: poll %zu\n", reconcile_cases[c].why, i + 1);
			CHECK_EQ_U(got, p->want);
		}
	}
}

/* What the policy hears with each end (dbk_bal_lease.unserved): a 2xx
 * was served; an error status, no status (the client or the server
 * left first), or no line at all (expired) was not. */
struct ends {
	unsigned n, unserved;
};

static void on_ended(void *arg, const struct dbk_bal_lease *l)
{
	struct ends *e = arg;

	e->n++;
	e->unserved += l->unserved;
}

static void test_the_status_says_served(void)
{
	static const int status[] = { 200, 206, 400, 429, 500, 503, -1, 302 };
	static const bool served[] = { true, true, false, false, false, false, false, false };
	struct books k;
	struct ends e = { 0 };

	books_init(&k);
	dbk_bal_observe(k.bal, &(struct dbk_bal_observer){ .ended = on_ended, .arg = &e });
	for (unsigned i = 0; i < sizeof(status) / sizeof(status[0]); i++) {
		char id[8];
		snprintf(id, sizeof(id), "r%u", i);
		CHECK_EQ_U(notify(&k, id, 0, 1000), DBK_BAL_OK);
		struct dbk_completion c = line(id, "s0", "s0", 1700000000000);
		c.status = status[i];
		struct dbk_bal_lease l = { .unserved = served[i] };
		CHECK_EQ_U(dbk_acct_complete(&k.acct, &c, 1500, 1700000000000, &l),
		           DBK_ACCT_RELEASED);
		CHECK(l.unserved == !served[i]);
		CHECK_EQ_U(e.n, i + 1);
	}
	CHECK_EQ_U(e.unserved, 6);
	/* A lease whose line never came. */
	CHECK_EQ_U(notify(&k, "lost", 1, 2000), DBK_BAL_OK);
	CHECK_EQ_U(dbk_acct_expire(&k.acct, 12000, 10000, NULL, NULL), 1);
	CHECK_EQ_U(e.n, 9);
	CHECK_EQ_U(e.unserved, 7);
	books_fini(&k);
}

int main(void)
{
	RUN(test_first_copy_releases_second_is_counted);
	RUN(test_served_elsewhere_released_where_charged);
	RUN(test_completion_before_its_notify);
	RUN(test_client_left_after_the_decision);
	RUN(test_lines_without_a_lease);
	RUN(test_lag_never_negative);
	RUN(test_the_status_says_served);
	RUN(test_ttl);
	RUN(test_buried_ids_expire);
	RUN(test_reclaim_cutoff);
	RUN(test_reconcile_step);
	RUN(test_reconcile_takes_only_old_leases);
	RUN(test_reconcile_min_age_and_haproxy_count);
	return CHECK_DONE();
}
