/* Held-back charges: a body not whole when HAProxy asked is charged for
 * what had arrived, and in full once its server counts it. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "estimate_hold.h"

struct fixture {
	struct dbk_balancer *bal;
	struct dbk_hold h;
};

static void up(struct fixture *x)
{
	struct dbk_bal_config bc;

	dbk_bal_config_default(&bc, 4, true, 32768, 131072);
	x->bal = dbk_bal_new(&bc);
	CHECK(x->bal != NULL);
	CHECK(dbk_hold_init(&x->h, 4) == 0);
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

/* A lease of 900 KB held back at the score of its first 20 KB. */
static bool slow(struct fixture *x, const char *id, unsigned server)
{
	lease(x, id, server, 900000);
	return dbk_hold_add(&x->h, x->bal, id, strlen(id), 225000, 5000);
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
	dbk_hold_scraped(&x.h, x.bal, 1, false, 0);
	CHECK(!slow(&x, "b", 1));
	/* Counts that are not numbers are no evidence. */
	dbk_hold_scraped(&x.h, x.bal, 2, true, NAN);
	CHECK(!slow(&x, "c", 2));
	CHECK_EQ_U(x.h.stats.held, 0);
	down(&x);
}

/* The trickled body is never in the engine's counts: it stays charged
 * for what had arrived, whatever the requests beside it do; the honest
 * one is charged in full at the first scrape that counts it. */
static void test_charged_in_full_once_the_server_counts_it(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0);
	CHECK(dbk_hold_watching(&x.h, 0));
	CHECK(slow(&x, "slow", 0));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5000, 1e-12);
	CHECK_EQ_U(dbk_bal_server_inflight(x.bal, 0), 1);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 0), 0);
	/* Normal requests beside it, all in the engine: still held. */
	lease(&x, "n1", 0, 400);
	lease(&x, "n2", 0, 400);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 2), 0);
	/* One of them not there yet (dispatched after the scrape): held. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 1), 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 5200, 1e-12);
	CHECK_EQ_U(dbk_hold_count(&x.h), 1);
	/* Its body came: three in the engine. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 3.5), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 225200, 1e-12);
	CHECK_EQ_U(dbk_hold_count(&x.h), 0);
	CHECK_EQ_U(x.h.stats.held, 1);
	CHECK_EQ_U(x.h.stats.confirmed, 1);
	/* The release gives back what is charged. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "slow", 4, NULL), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 200, 1e-12);
	down(&x);
}

static void test_oldest_first_and_only_on_its_server(void)
{
	struct fixture x;
	struct dbk_bal_lease l;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0);
	dbk_hold_scraped(&x.h, x.bal, 1, true, 0);
	CHECK(slow(&x, "old", 0));
	CHECK(slow(&x, "other", 1));
	CHECK(slow(&x, "new", 0));
	/* Server 1's count says nothing of server 0's. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 1, true, 0), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 1), 1);
	CHECK(dbk_bal_lease_get(x.bal, "old", 3, &l) && l.score == 225000);
	CHECK(dbk_bal_lease_get(x.bal, "new", 3, &l) && l.score == 5000);
	CHECK(dbk_bal_lease_get(x.bal, "other", 5, &l) && l.score == 5000);
	/* More in the engine than held: no more than held. */
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, true, 50), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 450000, 1e-12);
	/* A lease HAProxy moved is confirmed by its new server's count. */
	CHECK_EQ_U(dbk_bal_move(x.bal, "other", 5, 2, NULL), DBK_BAL_OK);
	dbk_hold_scraped(&x.h, x.bal, 2, true, 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 1, true, 1), 0);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 2, true, 1), 1);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 2), 225000, 1e-12);
	down(&x);
}

/* No evidence can come from a server whose scrape fails: its held-back
 * charges are given in full, as before this module. */
static void test_failed_scrape_gives_in_full(void)
{
	struct fixture x;

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0);
	CHECK(slow(&x, "a", 0));
	CHECK(slow(&x, "b", 0));
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 0, false, 0), 2);
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
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0);
	CHECK(slow(&x, "a", 0));
	CHECK_EQ_U(dbk_bal_release(x.bal, "a", 1, NULL), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 0, 1e-12);
	CHECK_EQ_U(dbk_hold_scraped(&x.h, x.bal, 3, true, 9), 0);
	CHECK_EQ_U(dbk_hold_count(&x.h), 0);
	/* No lease, nothing held. */
	CHECK(!dbk_hold_add(&x.h, x.bal, "gone", 4, 225000, 5000));
	down(&x);
}

static void test_bounded(void)
{
	struct fixture x;
	char id[16];

	up(&x);
	dbk_hold_scraped(&x.h, x.bal, 0, true, 0);
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

int main(void)
{
	RUN(test_unwatched_server_is_charged_in_full);
	RUN(test_charged_in_full_once_the_server_counts_it);
	RUN(test_oldest_first_and_only_on_its_server);
	RUN(test_failed_scrape_gives_in_full);
	RUN(test_ended_lease_leaves_no_entry);
	RUN(test_bounded);
	return CHECK_DONE();
}
