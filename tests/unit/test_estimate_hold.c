/* Charges of bodies not whole when HAProxy asked. Strict
 * (--hold-partial-bodies): charged for what had arrived, in full once
 * their server counts them. Take back (the default): charged in full,
 * the prefill taken back only while the server's count persistently
 * shows them missing past their grace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate_hold.h"

struct fixture {
	struct dbk_balancer *bal;
	struct dbk_hold h;
};

/* Strict. */
static void up(struct fixture *x)
{
	struct dbk_bal_config bc;

	dbk_bal_config_default(&bc, 4, true, 32768, 131072);
	x->bal = dbk_bal_new(&bc);
	CHECK(x->bal != NULL);
	CHECK(dbk_hold_init(&x->h, 4) == 0);
	x->h.strict = true;
}

/* Take back, scrapes every 100 ms; servers 0 and 1 watched from 0 ms. */
static void up_take_back(struct fixture *x)
{
	up(x);
	x->h.strict = false;
	x->h.scrape_ms = 100;
	for (unsigned i = 0; i < 2; i++)
		dbk_hold_scraped(&x->h, x->bal, i, true, 0, 0);
}

static void down(struct fixture *x)
{
	dbk_hold_fini(&x->h);
	dbk_bal_free(x->bal);
}

/* A lease of body bytes on server (dynamic mode: scored body / 4). */
static void lease(struct fixture *x, const char *id, unsigned server, double body)
{
	struct dbk_bal_request r = { .body_bytes = body, .max_tokens = 16 };

	CHECK_EQ_U(dbk_bal_dispatch_to(x->bal, id, strlen(id), &r, server, 0, NULL), DBK_BAL_OK);
}

/* A lease of 900 KB, 880 KB of it still to come at now_ms (grace
 * 5.3 s), watched. */
static bool partial_at(struct fixture *x, const char *id, unsigned server, uint64_t now_ms)
{
	lease(x, id, server, 900000);
	return dbk_hold_add(&x->h, x->bal, id, strlen(id), 225000, 5000, 880000, now_ms);
}

/* The same at 0 ms (strict: held back at the score of its first 20 KB). */
static bool slow(struct fixture *x, const char *id, unsigned server)
{
	return partial_at(x, id, server, 0);
}

static void test_unwatched_server_is_charged_in_full(void)
{
	struct fixture x;

	up(&x);
	CHECK(!dbk_hold_watching(&x.h, 0));
	CHECK(!slow(&x, "a", 0));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225000, 1e-12);
	CHECK_EQ_U(dbk_hold_count(&x.h), 0);
	/* A failed scrape watches nothing either. */
	dbk_hold_scraped(&x.h, x.bal, 1, false, 0, 0);
	CHECK(!slow(&x, "b", 1));
	/* Counts that are not numbers are no evidence. */
	dbk_hold_scraped(&x.h, x.bal, 2, true, NAN, 0);
	CHECK(!slow(&x, "c", 2));
	CHECK_EQ_U(x.h.stats.held, 0);
	down(&x);
}

/* The trickled body is never in the engine's counts: it stays charged
 * for what had arrived, whatever the requests beside it do; the honest
 * one is charged in full once two scrapes in a row count it. */
static void test_charged_in_full_once_the_server_counts_it(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	CHECK(dbk_hold_watching(&x.h, 0));
	CHECK(slow(&x, "slow", 0));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5000, 1e-12);
	CHECK_EQ_U(dbk_bal_server_inflight(x.bal, 0), 1);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0), 0);
	/* Normal requests beside it, all in the engine: still held. */
	lease(&x, "n1", 0, 400);
	lease(&x, "n2", 0, 400);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 2, 0), 0);
	/* One of them not there yet (dispatched after the scrape): held. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 1, 0), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5200, 1e-12);
	CHECK_EQ_U(dbk_hold_count(&x.h), 1);
	/* A count that lags: n3 ended and its lease was released, but the
	 * scrape still counted it. One scrape's excess makes nothing whole. */
	lease(&x, "n3", 0, 400);
	CHECK_EQ_U(dbk_bal_release(x.bal, "n3", 2, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 3, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 2, 0), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5200, 1e-12);
	/* Its body came: three in the engine, on the second scrape made
	 * whole. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 3.5, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 3, 0), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225200, 1e-12);
	CHECK_EQ_U(dbk_hold_count(&x.h), 0);
	CHECK_EQ_U(x.h.stats.held, 1);
	CHECK_EQ_U(x.h.stats.confirmed, 1);
	/* The release gives back what is charged. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "slow", 4, NULL), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 200, 1e-12);
	down(&x);
}

/* A scrape of server 0 at t_ms that a completion line races: request
 * NUMBER is leased, the scrape sent (told, when told is true: what the
 * agent did not do before), vLLM counts engine requests, then the
 * request ends before the answer. Returns the charges the answer
 * changed. */
static size_t raced_scrape_at(struct fixture *x, int number, double engine, bool told,
                              uint64_t t_ms)
{
	char id[8];

	snprintf(id, sizeof(id), "n%d", number);
	lease(x, id, 0, 400);
	if (told)
		dbk_hold_scrape_sent(&x->h, x->bal, 0);
	CHECK_EQ_U(dbk_bal_release(x->bal, id, strlen(id), NULL), DBK_BAL_OK);
	return dbk_hold_scraped(&x->h, x->bal, 0, true, engine, t_ms);
}

static size_t raced_scrape(struct fixture *x, int number, double engine, bool told)
{
	return raced_scrape_at(x, number, engine, told, 0);
}

/* A completion line that races the scrape: the request was running when
 * vLLM counted, its lease released before the answer came. Every scrape
 * of a busy server can meet one; two in a row made the trickler whole
 * (an excess of one on each, where no request was beyond the leases).
 * Leases that left the server since the scrape was sent are taken off
 * its excess; a request that did come is still confirmed. */
static void test_release_during_scrape_is_no_excess(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	CHECK(slow(&x, "slow", 0));
	CHECK_EQ_U(raced_scrape(&x, 0, 1, true), 0);
	CHECK_EQ_U(raced_scrape(&x, 1, 1, true), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5000, 1e-12);
	CHECK_EQ_U(x.h.stats.confirmed, 0);
	/* Its body came, and a request ended during each scrape: still
	 * counted beyond the leases, made whole on the second. */
	CHECK_EQ_U(raced_scrape(&x, 2, 2, true), 0);
	CHECK_EQ_U(raced_scrape(&x, 3, 2, true), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225000, 1e-12);
	down(&x);
	/* Untold (the agent before): the same races made the trickler
	 * whole. */
	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	CHECK(slow(&x, "slow", 0));
	CHECK_EQ_U(raced_scrape(&x, 0, 1, false), 0);
	CHECK_EQ_U(raced_scrape(&x, 1, 1, false), 1);
	down(&x);
}

static void test_oldest_first_and_only_on_its_server(void)
{
	struct fixture x;
	struct dbk_bal_lease l;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	dbk_hold_scraped(&x.h, x.bal, 1, true, 0, 0);
	CHECK(slow(&x, "old", 0));
	CHECK(slow(&x, "other", 1));
	CHECK(slow(&x, "new", 0));
	/* Server 1's count says nothing of server 0's. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 1, true, 0, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 1, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 1, 0), 1);
	CHECK(dbk_bal_lease_get(x.bal, "old", 3, &l) && l.score == 225000);
	CHECK(dbk_bal_lease_get(x.bal, "new", 3, &l) && l.score == 5000);
	CHECK(dbk_bal_lease_get(x.bal, "other", 5, &l) && l.score == 5000);
	/* More in the engine than held: no more than held. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 50, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 50, 0), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 450000, 1e-12);
	/* A lease HAProxy moved is confirmed by its new server's count. */
	CHECK_EQ_U(dbk_bal_move(x.bal, "other", 5, 2, NULL), DBK_BAL_OK);
	dbk_hold_scraped(&x.h, x.bal, 2, true, 0, 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 1, true, 1, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 2, true, 1, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 2, true, 1, 0), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 2), 225000, 1e-12);
	down(&x);
}

/* No evidence can come from a server whose scrape fails: its held-back
 * charges are given in full, as before this module. */
static void test_failed_scrape_gives_in_full(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	CHECK(slow(&x, "a", 0));
	CHECK(slow(&x, "b", 0));
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, false, 0, 0), 2);
	CHECK(!dbk_hold_watching(&x.h, 0));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 450000, 1e-12);
	CHECK_EQ_U(x.h.stats.unwatched, 2);
	CHECK_EQ_U(x.h.stats.confirmed, 0);
	down(&x);
}

/* A lease that ends while held (completion, expiry) takes its entry
 * with it at the next scrape, of any server. */
static void test_ended_lease_leaves_no_entry(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	CHECK(slow(&x, "a", 0));
	CHECK_EQ_U(dbk_bal_release(x.bal, "a", 1, NULL), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 0, 1e-12);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 3, true, 9, 0), 0);
	CHECK_EQ_U(dbk_hold_count(&x.h), 0);
	/* No lease, nothing held. */
	CHECK(!dbk_hold_add(&x.h, x.bal, "gone", 4, 225000, 5000, 880000, 0));
	down(&x);
}

static void test_bounded(void)
{
	struct fixture x;
	char id[16];

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0, 0);
	for (unsigned i = 0; i < DBK_HOLD_MAX; i++) {
		snprintf(id, sizeof(id), "h%u", i);
		CHECK(slow(&x, id, 0));
	}
	CHECK(!slow(&x, "one-more", 0));
	CHECK_EQ_U(x.h.stats.no_room, 1);
	struct dbk_bal_lease l;
	CHECK(dbk_bal_lease_get(x.bal, "one-more", 8, &l) && l.score == 225000);
	down(&x);
}

/* The grace: three scrapes, plus the bytes still missing at 1 Mbit/s,
 * that part at most 5 s; no overflow at either end. */
static void test_grace(void)
{
	CHECK_EQ_U(dbk_hold_grace_ms(0, 100), 300);
	CHECK_EQ_U(dbk_hold_grace_ms(125000, 100), 1300);
	CHECK_EQ_U(dbk_hold_grace_ms(880000, 100), 5300);
	CHECK_EQ_U(dbk_hold_grace_ms(UINT64_MAX, 100), 5300);
	CHECK(dbk_hold_grace_ms(0, UINT64_MAX) >= UINT64_MAX / 4);
}

/* Take back: a scrape of server 0 at t_ms counting engine requests;
 * the charges it changed. */
static size_t scrape0(struct fixture *x, double engine, uint64_t t_ms)
{
	return dbk_hold_scraped(&x->h, x->bal, 0, true, engine, t_ms);
}

/* The policy's books follow through the callbacks: counts of each. */
struct told {
	unsigned whole, taken;
};

static void told_whole(void *arg, const char *id, size_t id_len)
{
	(void)id;
	(void)id_len;
	((struct told *)arg)->whole++;
}

static void told_taken(void *arg, const char *id, size_t id_len)
{
	CHECK(id_len == 4 && !memcmp(id, "slow", 4));
	((struct told *)arg)->taken++;
}

/* Charged in full at once (the decision every request had); its prefill
 * taken back only past its grace with the count short on three scrapes
 * in a row, and charged in full again the scrape the count shows it. */
static void test_taken_back_only_on_evidence(void)
{
	struct fixture x;
	struct dbk_bal_lease l;
	struct told told = { 0, 0 };

	up_take_back(&x);
	x.h.whole = told_whole;
	x.h.taken = told_taken;
	x.h.whole_arg = &told;
	CHECK(partial_at(&x, "slow", 0, 0));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225000, 1e-12);
	CHECK_EQ_U(x.h.stats.watched, 1);
	CHECK_EQ_U(x.h.stats.held, 0);
	/* Missing from the engine all along, but within its grace. */
	for (uint64_t t = 100; t < 5300; t += 100)
		CHECK_EQ_U(scrape0(&x, 0, t), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225000, 1e-12);
	CHECK_EQ_U(scrape0(&x, 0, 5300), 1);
	CHECK(dbk_bal_lease_get(x.bal, "slow", 4, &l) && l.score == 5000);
	CHECK_EQ_U(x.h.stats.taken_back, 1);
	CHECK_EQ_U(told.taken, 1);
	CHECK_EQ_U(scrape0(&x, 0, 5400), 0);
	CHECK_EQ_U(told.whole, 0);
	/* Its body came: in full at once, no run needed. */
	CHECK_EQ_U(scrape0(&x, 1, 5500), 1);
	CHECK(dbk_bal_lease_get(x.bal, "slow", 4, &l) && l.score == 225000);
	CHECK_EQ_U(x.h.stats.recharged, 1);
	CHECK_EQ_U(told.whole, 1);
	CHECK_EQ_U(told.taken, 1);
	down(&x);
}

/* A completion line that races a scrape of a server with a charge taken
 * back: vLLM counted the short request, its lease was released before
 * the answer, so the count matches the leases though the trickler is
 * still missing. Told of the release, the charge stays taken back (a
 * flaky e2e case: one recharge at the end of a burst); a count that
 * shows the trickler, race or not, gives it back. */
static void test_release_during_scrape_keeps_taken_back(void)
{
	struct fixture x;
	struct dbk_bal_lease l;

	up_take_back(&x);
	CHECK(partial_at(&x, "slow", 0, 0));
	for (uint64_t t = 5100; t <= 5300; t += 100)
		scrape0(&x, 0, t);
	CHECK_EQ_U(x.h.stats.taken_back, 1);
	CHECK_EQ_U(raced_scrape_at(&x, 0, 1, true, 5400), 0);
	CHECK(dbk_bal_lease_get(x.bal, "slow", 4, &l) && l.score == 5000);
	CHECK_EQ_U(x.h.stats.recharged, 0);
	/* Its body came: counted beside a raced release, in full again. */
	CHECK_EQ_U(raced_scrape_at(&x, 1, 2, true, 5500), 1);
	CHECK(dbk_bal_lease_get(x.bal, "slow", 4, &l) && l.score == 225000);
	CHECK_EQ_U(x.h.stats.recharged, 1);
	down(&x);
}

/* Counts that lag (a request vLLM finished whose completion line has not
 * released its lease, one not yet in the engine) make a deficit of a
 * scrape or two: an honest partial lease past its grace keeps its
 * charge. A deficit is the smallest of the last three. */
static void test_lagging_counts_take_nothing(void)
{
	struct fixture x;
	struct dbk_bal_lease l;

	up_take_back(&x);
	CHECK(partial_at(&x, "honest", 0, 0));
	lease(&x, "n1", 0, 400);
	lease(&x, "n2", 0, 400);
	/* All three in the engine, then n1 finished before its line came,
	 * twice; then n2 on its way twice, with a scrape between. */
	const double engine[] = { 3, 2, 2, 3, 2, 2, 3, 2 };

	for (size_t i = 0; i < sizeof(engine) / sizeof(engine[0]); i++)
		CHECK_EQ_U(scrape0(&x, engine[i], 6000 + 100 * i), 0);
	CHECK(dbk_bal_lease_get(x.bal, "honest", 6, &l) && l.score == 225000);
	CHECK_EQ_U(x.h.stats.taken_back, 0);
	/* Three in a row, 1, 2 and 2 short: one taken back. */
	CHECK_EQ_U(scrape0(&x, 1, 7000), 0);
	CHECK_EQ_U(scrape0(&x, 1, 7100), 1);
	CHECK(dbk_bal_lease_get(x.bal, "honest", 6, &l) && l.score == 5000);
	/* Only partial-body leases lose a charge: the short requests keep
	 * theirs, whatever the deficit. */
	CHECK_EQ_U(scrape0(&x, 0, 7200), 0);
	CHECK_EQ_U(scrape0(&x, 0, 7300), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5200, 1e-12);
	down(&x);
}

/* Of the partial-body leases past their grace, the oldest lose their
 * charge first, as many as the deficit; one within its grace keeps it;
 * as the deficit shrinks the newest taken back are charged again. */
static void test_oldest_past_grace_first(void)
{
	struct fixture x;
	struct dbk_bal_lease l;

	up_take_back(&x);
	dbk_hold_scraped(&x.h, x.bal, 1, true, 0, 0);
	CHECK(partial_at(&x, "a", 0, 0));
	CHECK(partial_at(&x, "other", 1, 0));
	CHECK(partial_at(&x, "b", 0, 100));
	CHECK(partial_at(&x, "young", 0, 9000));
	/* Three missing from server 0, server 1 says nothing of it. */
	for (uint64_t t = 9000; t < 9300; t += 100) {
		dbk_hold_scraped(&x.h, x.bal, 1, true, 1, t);
		scrape0(&x, 0, t);
	}
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l) && l.score == 5000);
	CHECK(dbk_bal_lease_get(x.bal, "b", 1, &l) && l.score == 5000);
	CHECK(dbk_bal_lease_get(x.bal, "young", 5, &l) && l.score == 225000);
	CHECK(dbk_bal_lease_get(x.bal, "other", 5, &l) && l.score == 225000);
	CHECK_EQ_U(x.h.stats.taken_back, 2);
	/* One more counted: the newer of the two in full again. */
	CHECK_EQ_U(scrape0(&x, 2, 9300), 1);
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l) && l.score == 5000);
	CHECK(dbk_bal_lease_get(x.bal, "b", 1, &l) && l.score == 225000);
	/* The trickler's lease ends (HAProxy's timeout): its entry goes. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "a", 1, NULL), DBK_BAL_OK);
	scrape0(&x, 2, 9400);
	CHECK_EQ_U(dbk_hold_count(&x.h), 3);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 450000, 1e-12);
	down(&x);
}

/* A failed scrape is no evidence: every charge taken back there is
 * given in full again, and a new run is needed after. */
static void test_failed_scrape_recharges(void)
{
	struct fixture x;

	up_take_back(&x);
	CHECK(partial_at(&x, "a", 0, 0));
	CHECK(partial_at(&x, "b", 0, 0));
	for (uint64_t t = 6000; t < 6300; t += 100)
		scrape0(&x, 0, t);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 10000, 1e-12);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, false, 0, 6300), 2);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 450000, 1e-12);
	CHECK_EQ_U(scrape0(&x, 0, 6400), 0);
	CHECK_EQ_U(scrape0(&x, 0, 6500), 0);
	CHECK_EQ_U(scrape0(&x, 0, 6600), 2);
	CHECK_EQ_U(x.h.stats.taken_back, 4);
	CHECK_EQ_U(x.h.stats.recharged, 2);
	down(&x);
}

/* Faster scrapes (10 ms): the deficit must still last 3 spans of
 * 100 ms, not 3 scrapes, before anything is taken back. */
static void test_fast_scrapes_persist_as_long(void)
{
	struct fixture x;

	up_take_back(&x);
	x.h.scrape_ms = 10;
	CHECK_EQ_U(dbk_hold_grace_ms(880000, 10), 5030);
	CHECK(partial_at(&x, "slow", 0, 0));
	for (uint64_t t = 10; t < 5030; t += 10)
		CHECK_EQ_U(scrape0(&x, 1, t), 0);
	/* Missing from 5030 on: spans from 5030, 5130 and 5230. */
	for (uint64_t t = 5030; t < 5230; t += 10)
		CHECK_EQ_U(scrape0(&x, 0, t), 0);
	CHECK_EQ_U(scrape0(&x, 0, 5230), 1);
	CHECK_EQ_U(x.h.stats.taken_back, 1);
	/* One scrape that counts it ends the run and gives it back. */
	CHECK_EQ_U(scrape0(&x, 1, 5240), 1);
	for (uint64_t t = 5250; t < 5450; t += 10)
		CHECK_EQ_U(scrape0(&x, 0, t), 0);
	CHECK_EQ_U(scrape0(&x, 0, 5450), 1);
	down(&x);
}

int main(void)
{
	RUN(test_grace);
	RUN(test_fast_scrapes_persist_as_long);
	RUN(test_taken_back_only_on_evidence);
	RUN(test_lagging_counts_take_nothing);
	RUN(test_release_during_scrape_keeps_taken_back);
	RUN(test_oldest_past_grace_first);
	RUN(test_failed_scrape_recharges);
	RUN(test_unwatched_server_is_charged_in_full);
	RUN(test_charged_in_full_once_the_server_counts_it);
	RUN(test_release_during_scrape_is_no_excess);
	RUN(test_oldest_first_and_only_on_its_server);
	RUN(test_failed_scrape_gives_in_full);
	RUN(test_ended_lease_leaves_no_entry);
	RUN(test_bounded);
	return CHECK_DONE();
}
