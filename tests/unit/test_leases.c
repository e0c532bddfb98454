/* Unit tests of leases: the balancer's release-exactly-once, expiry,
 * reclaim and bury rules, and the lease table (agent/leases.c) on its
 * own. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "balancer_test.h"

/* ---- leases ---- */

/* The loads once x (4000 tokens, server 0) is released and y (2000,
 * redirected to server 2) holds its lease; when names the moment. */
static void loads_x_released(struct dbk_balancer *b, const char *when)
{
	int failed = dbk_check_cur_failed;

	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 500, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 500, 0);
	if (dbk_check_cur_failed != failed)
		fprintf(stderr, "    %s\n", when);
}

static void release_exactly_once(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;
	struct dbk_bal_lease l;

	CHECK_EQ_U(disp(b, "x", 4000, &d), DBK_BAL_OK);
	/* Short too, but the long group is empty: redirected there. */
	CHECK_EQ_U(disp(b, "y", 2000, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK_EQ_U(dbk_bal_release(b, "x", 1, &l), DBK_BAL_OK);
	CHECK_EQ_U(l.server, 0);
	CHECK_EQ_U(l.group, 0);
	CHECK_NEAR(l.score, 1000, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 0);
	loads_x_released(b, "after x's release");
	CHECK_EQ_U(rel(b, "x"), DBK_BAL_UNKNOWN);
	CHECK_EQ_U(rel(b, "never"), DBK_BAL_UNKNOWN);
	loads_x_released(b, "after the unknown releases (they change nothing)");
	CHECK_EQ_U(dbk_bal_server_inflight(b, 2), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->unknown_releases, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->releases, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	/* The id is free again. */
	CHECK_EQ_U(disp(b, "x", 4000, &d), DBK_BAL_OK);
	dbk_bal_free(b); /* with live leases: ASan checks nothing leaks */
}

static void duplicate_dispatch(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;

	CHECK_EQ_U(disp(b, "same", 4000, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "same", 8000, &d), DBK_BAL_DUPLICATE);
	CHECK_EQ_U(d.server, UINT_MAX);
	CHECK_NEAR(d.score, 2000, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 1000, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 1), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 1000, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->duplicates, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->decisions, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	/* Ids are byte strings: a prefix is another id. */
	CHECK_EQ_U(disp(b, "sam", 4000, &d), DBK_BAL_OK);
	struct dbk_bal_request r = req(4);

	CHECK_EQ_U(dbk_bal_dispatch(b, "same\0x", 6, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 3);
	dbk_bal_free(b);
}

static void bad_ids(void)
{
	struct dbk_balancer *b = reference_balancer(2);
	struct dbk_bal_request r = req(4);
	char id[DBK_BAL_MAX_ID_LEN + 1];

	memset(id, 'i', sizeof(id));
	CHECK_EQ_U(dbk_bal_dispatch(b, "", 0, &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, NULL, 3, &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, sizeof(id), &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, sizeof(id) - 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_release(b, id, sizeof(id), NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_release(b, id, sizeof(id) - 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->bad_ids, 4);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	for (int i = DBK_BAL_OK; i <= DBK_BAL_BAD_ID; i++)
		CHECK(strcmp(dbk_bal_result_str((enum dbk_bal_result)i), "?") != 0);
	dbk_bal_free(b);
}

static void max_leases(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;

	dbk_bal_config_default(&c, 2, false, 32768, 131072);
	c.max_leases = 2;
	b = dbk_bal_new(&c);
	CHECK_EQ_U(disp(b, "1", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "2", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "3", 10, &d), DBK_BAL_FULL);
	/* A duplicate is reported as such even when full. */
	CHECK_EQ_U(disp(b, "2", 10, &d), DBK_BAL_DUPLICATE);
	CHECK_EQ_U(dbk_bal_stats(b)->refused, 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0) + dbk_bal_server_load(b, 1), 36, 0);
	CHECK_EQ_U(rel(b, "1"), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "3", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 2);
	dbk_bal_free(b);
}

struct expired_log {
	char ids[8][8];
	double scores[8];
	unsigned n;
	struct dbk_balancer *b;
	double load_seen;
};

static void on_expired(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct expired_log *log = arg;

	if (log->n < 8 && id_len < 8) {
		memcpy(log->ids[log->n], id, id_len);
		log->ids[log->n][id_len] = '\0';
		log->scores[log->n] = l->score;
		/* The lease is already given back when the callback runs. */
		log->load_seen = dbk_bal_server_load(log->b, l->server);
	}
	log->n++;
}

static void expire_in_order(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_request r = req(40);
	struct expired_log log = { .n = 0 };

	dbk_bal_config_default(&c, 1, false, 32768, 131072);
	b = dbk_bal_new(&c);
	log.b = b;
	CHECK_EQ_U(dbk_bal_dispatch(b, "a", 1, &r, 0, NULL), DBK_BAL_OK);
	r.body_bytes = 80;
	CHECK_EQ_U(dbk_bal_dispatch(b, "b", 1, &r, 10, NULL), DBK_BAL_OK);
	r.body_bytes = 120;
	CHECK_EQ_U(dbk_bal_dispatch(b, "c", 1, &r, 20, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "d", 1, &r, 30, NULL), DBK_BAL_OK);
	/* b is released early: expiry skips it. */
	CHECK_EQ_U(rel(b, "b"), DBK_BAL_OK);

	CHECK_EQ_U(dbk_bal_expire(b, 5, 10, on_expired, &log), 0); /* now < ttl */
	CHECK_EQ_U(dbk_bal_expire(b, 9, 10, on_expired, &log), 0);
	CHECK_EQ_U(dbk_bal_expire(b, 30, 10, on_expired, &log), 2); /* a@0, c@20 */
	CHECK_EQ_U(log.n, 2);
	CHECK(strcmp(log.ids[0], "a") == 0);
	CHECK(strcmp(log.ids[1], "c") == 0);
	CHECK_NEAR(log.scores[0], 48, 0);
	CHECK_NEAR(log.scores[1], 128, 0);
	CHECK_NEAR(log.load_seen, 128, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 128, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->expired, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	CHECK_EQ_U(rel(b, "a"), DBK_BAL_UNKNOWN);
	/* ttl 0 takes everything started up to now, without a callback. */
	CHECK_EQ_U(dbk_bal_expire(b, 30, 0, NULL, NULL), 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	CHECK_EQ_U(dbk_bal_expire(b, 1000, 0, NULL, NULL), 0);
	dbk_bal_free(b);
}

/* A completion that overtook its decision: the id is buried, its late
 * dispatch takes no lease, and burial is forgotten in time. */
static void buried_ids_take_no_lease(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(100);

	dbk_bal_config_default(&c, 2, true, 32768, 131072);
	b = dbk_bal_new(&c);
	dbk_bal_bury(b, "late", 4, 1000);
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1001, &d), DBK_BAL_ENDED);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->ended, 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	/* A burial lasts until it expires: a NOTIFY that came twice takes
	 * no lease either, and a second completion copy is told apart. */
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1002, &d), DBK_BAL_ENDED);
	CHECK(!dbk_bal_holds(b, "late", 4));
	CHECK(dbk_bal_ended(b, "late", 4));
	CHECK(!dbk_bal_ended(b, "other", 5));
	CHECK(!dbk_bal_ended(b, "", 0));
	dbk_bal_bury(b, "late", 4, 1003);
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1004, &d), DBK_BAL_ENDED);
	CHECK_EQ_U(dbk_bal_stats(b)->ended, 3);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 0);

	/* Expiry forgets old burials only. */
	dbk_bal_bury(b, "x", 1, 2000);
	dbk_bal_bury(b, "y", 1, 5000);
	dbk_bal_expire_buried(b, 12000, 10000);
	CHECK(!dbk_bal_ended(b, "late", 4));
	CHECK(!dbk_bal_ended(b, "x", 1));
	CHECK(dbk_bal_ended(b, "y", 1));
	CHECK_EQ_U(dbk_bal_dispatch(b, "x", 1, &r, 12000, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "y", 1, &r, 12000, &d), DBK_BAL_ENDED);

	/* Bounded: the oldest burial goes first. */
	char id[16];
	for (unsigned i = 0; i <= DBK_BAL_MAX_BURIED; i++) {
		snprintf(id, sizeof(id), "b%u", i);
		dbk_bal_bury(b, id, strlen(id), 20000);
	}
	CHECK_EQ_U(dbk_bal_dispatch(b, "b0", 2, &r, 20000, &d), DBK_BAL_OK);
	snprintf(id, sizeof(id), "b%u", DBK_BAL_MAX_BURIED);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, strlen(id), &r, 20000, &d), DBK_BAL_ENDED);
	dbk_bal_free(b);
}

/* Reclaim takes the oldest leases of one server only, and as many as asked. */
static void reclaim_oldest_of_server(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct expired_log log = { .n = 0 };

	dbk_bal_config_default(&c, 2, false, 32768, 131072);
	b = dbk_bal_new(&c);
	log.b = b;
	/* Plain mode, least load: a,c,e land on server 0, b,d on server 1. */
	CHECK_EQ_U(disp(b, "a", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(disp(b, "b", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	CHECK_EQ_U(disp(b, "c", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "d", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "e", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 3);

	/* disp() dates every lease 0: a cutoff of 0 admits them all. */
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 2, 0, on_expired, &log), 2);
	CHECK_EQ_U(log.n, 2);
	CHECK(strcmp(log.ids[0], "a") == 0);
	CHECK(strcmp(log.ids[1], "c") == 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 1), 2);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 108, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->reclaimed, 2);
	/* Asking for more than there is takes what there is. */
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 10, 0, NULL, NULL), 1);
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 10, 0, NULL, NULL), 0);
	/* Too young to be a leak: kept. */
	struct dbk_bal_request r = req(100);
	CHECK_EQ_U(dbk_bal_dispatch(b, "young", 5, &r, 500, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_reclaim(b, d.server, 10, 499, NULL, NULL), 0);
	CHECK_EQ_U(dbk_bal_reclaim(b, d.server, 10, 500, NULL, NULL), 1);
	CHECK_EQ_U(rel(b, "a"), DBK_BAL_UNKNOWN);
	CHECK_EQ_U(rel(b, "b"), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	dbk_bal_free(b);
}

/* A callback that dispatches an already-expired lease for each expiry:
 * the walk must still end. */
static void redispatch(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct dbk_balancer *b = arg;
	struct dbk_bal_request r = req(4);

	(void)id;
	(void)id_len;
	(void)l;
	char nid[32];
	snprintf(nid, sizeof(nid), "re%zu", dbk_bal_stats(b)->leases + dbk_bal_stats(b)->expired);
	dbk_bal_dispatch(b, nid, strlen(nid), &r, 0, NULL);
}

static void expire_reentrant(void)
{
	struct dbk_balancer *b = reference_balancer(2);
	struct dbk_bal_request r = req(4);

	CHECK_EQ_U(dbk_bal_dispatch(b, "a", 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "b", 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_expire(b, 100, 10, redispatch, b), 2);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 2);
	dbk_bal_free(b);
}

/* ---- the lease table on its own ---- */

static void lease_table_basics(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { .server = 1, .group = 0, .score = 2.5, .start_ms = 7 };
	struct dbk_lease *e, *e2;
	char id[32];
	enum { N = 20000 };

	CHECK_EQ_U(dbk_lease_init(&t, 42), 0);
	CHECK_EQ_U(dbk_lease_capacity(&t), 16);
	for (unsigned i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "req-%u", i);
		v.server = i;
		CHECK_EQ_U(dbk_lease_insert(&t, id, strlen(id), &v, &e), DBK_LEASE_INSERTED);
	}
	CHECK_EQ_U(dbk_lease_count(&t), N);
	CHECK(dbk_lease_capacity(&t) >= N);
	/* Everything is found, with its value, after the rehashes. */
	unsigned found = 0;
	for (unsigned i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "req-%u", i);
		e = dbk_lease_find(&t, id, strlen(id));
		if (e && e->val.server == i && e->id_len == strlen(id) && strcmp(e->id, id) == 0)
			found++;
	}
	CHECK_EQ_U(found, N);
	CHECK(!dbk_lease_find(&t, "req-", 4));
	CHECK(!dbk_lease_find(&t, "req-1x", 6));
	/* Insertion order survives the rehashes. */
	unsigned in_order = 0, i = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), i++)
		if (e->val.server == i)
			in_order++;
	CHECK_EQ_U(in_order, N);
	/* An existing id hands back the entry. */
	CHECK_EQ_U(dbk_lease_insert(&t, "req-5", 5, &v, &e2), DBK_LEASE_EXISTS);
	CHECK_EQ_U(e2->val.server, 5);
	/* Delete the odd ones by id. */
	unsigned removed = 0;
	for (i = 1; i < N; i += 2) {
		struct dbk_bal_lease out;

		snprintf(id, sizeof(id), "req-%u", i);
		if (dbk_lease_remove(&t, id, strlen(id), &out) && out.server == i)
			removed++;
	}
	CHECK_EQ_U(removed, N / 2);
	CHECK(!dbk_lease_remove(&t, "req-1", 5, NULL));
	CHECK_EQ_U(dbk_lease_count(&t), N / 2);
	unsigned even = 0;
	i = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), i += 2)
		if (e->val.server == i)
			even++;
	CHECK_EQ_U(even, N / 2);
	dbk_lease_fini(&t);
	CHECK_EQ_U(dbk_lease_count(&t), 0);
}

/* Ids as HAProxy's unique-id-format makes them differ in a few
 * characters; every length from 1 to 48 exercises each tail of the hash.
 * With about as many slots as entries, chains stay short (6 or 7 here,
 * as for entries thrown at random; a poor hash gives hundreds). */
static void lease_table_spread(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { .server = 0 };
	char id[64];
	enum { N = 100000 };
	size_t inserted = 0;

	CHECK_EQ_U(dbk_lease_init(&t, 7), 0);
	for (unsigned i = 0; i < N; i++) {
		int n = snprintf(id, sizeof(id), "7F000001%04X-%u-%08X", i % 7, i, i * 2654435761u);
		size_t len = 1 + i % 48;

		if (len > (size_t)n)
			len = (size_t)n;
		/* Short lengths repeat: count only what went in. */
		if (dbk_lease_insert(&t, id + (size_t)n - len, len, &v, NULL) == DBK_LEASE_INSERTED)
			inserted++;
	}
	CHECK_EQ_U(dbk_lease_count(&t), inserted);
	CHECK(inserted > N / 2);
	CHECK(dbk_lease_longest_chain(&t) <= 12);
	dbk_lease_fini(&t);
}

static void lease_table_delete_while_walking(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { 0 };
	struct dbk_lease *e;
	char id[16];

	CHECK_EQ_U(dbk_lease_init(&t, 1), 0);
	for (unsigned i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "%u", i);
		v.start_ms = i;
		dbk_lease_insert(&t, id, strlen(id), &v, NULL);
	}
	/* Walk oldest first, deleting every third entry as we go. */
	e = dbk_lease_oldest(&t);
	while (e) {
		struct dbk_lease *next = dbk_lease_newer(e);

		if (e->val.start_ms % 3 == 0)
			dbk_lease_delete(&t, e);
		e = next;
	}
	CHECK_EQ_U(dbk_lease_count(&t), 66);
	uint64_t prev = 0;
	unsigned seen = 0, bad = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), seen++) {
		if (e->val.start_ms % 3 == 0 || (seen && e->val.start_ms <= prev))
			bad++;
		prev = e->val.start_ms;
	}
	CHECK_EQ_U(seen, 66);
	CHECK_EQ_U(bad, 0);
	/* Pop the oldest until empty, as expiry does. */
	unsigned popped = 0;
	while ((e = dbk_lease_oldest(&t))) {
		char copy[16];

		dbk_lease_unlink(&t, e);
		memcpy(copy, e->id, e->id_len + 1); /* readable after unlink */
		dbk_lease_free(e);
		if (!dbk_lease_find(&t, copy, strlen(copy)))
			popped++;
	}
	CHECK_EQ_U(popped, 66);
	CHECK(!dbk_lease_oldest(&t));
	/* Reusable after emptying. */
	CHECK_EQ_U(dbk_lease_insert(&t, "z", 1, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_count(&t), 1);
	/* Ids are bytes: embedded NULs and prefixes are distinct. */
	CHECK_EQ_U(dbk_lease_insert(&t, "z\0", 2, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_insert(&t, "z\0a", 3, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_count(&t), 3);
	CHECK(dbk_lease_find(&t, "z\0", 2) != dbk_lease_find(&t, "z", 1));
	dbk_lease_fini(&t);
}

int main(void)
{
	RUN(release_exactly_once);
	RUN(duplicate_dispatch);
	RUN(bad_ids);
	RUN(max_leases);
	RUN(expire_in_order);
	RUN(expire_reentrant);
	RUN(reclaim_oldest_of_server);
	RUN(buried_ids_take_no_lease);
	RUN(lease_table_basics);
	RUN(lease_table_spread);
	RUN(lease_table_delete_while_walking);
	return CHECK_DONE();
}
