/* The agent's books: what a completion line, a TTL tick and a runtime
 * API poll each do to the balancer's leases, so that every lease is
 * released exactly once and none leaks for good.
 *
 * The rules, in one place:
 * - completion: each line comes by two paths (haproxy/README.md); the
 *   first copy releases the lease, the second is only counted. An id is
 *   buried when its line comes, so that a NOTIFY overtaken by its own
 *   completion (the client left while the agent decided; the two travel
 *   on different connections) takes no lease that nothing would release.
 * - TTL: a lease older than --lease-ttl is released; a buried id is
 *   forgotten after DBK_ACCT_BURIED_TTL_MS.
 * - reclaim: a server whose lease count stays above what HAProxy holds
 *   there for DBK_ACCT_RECONCILE_K polls has leaked leases (their lines
 *   were lost); the oldest ones, and only old ones, are reclaimed.
 *
 * Pure: no sockets, no clock, no logging. Time is passed in; what
 * happened is returned (an outcome, a count, a callback per lease) and
 * the caller logs it. */
#ifndef DBK_ACCOUNTING_H
#define DBK_ACCOUNTING_H

#include <stdint.h>

#include "balancer.h"
#include "completion.h"
#include "histo.h"

/* How long an ended id is remembered (DBK_BAL_MAX_BURIED of them at
 * most): far longer than a NOTIFY can trail its request's completion
 * line, and than one copy of a completion line can trail the other (the
 * ring delivers what it held during a cut when it reconnects, a second or
 * two later). A copy later than this counts as an unknown release. */
#define DBK_ACCT_BURIED_TTL_MS 60000

struct dbk_acct_stats {
	uint64_t completions; /* requests whose completion line came */
	uint64_t duplicates;  /* second copies of a line already seen */
	uint64_t undecided;   /* completions of requests the agent did not route */
	uint64_t elsewhere;   /* completed elsewhere than its lease said */
};

struct dbk_acct {
	struct dbk_balancer *bal;
	const char *const *names; /* the balancer's servers, by index */
	struct dbk_acct_stats stats;
	struct dbk_histo lag_ms; /* stream end (HAProxy's log) to release */
};

/* Keeps the books of bal, whose server i is called names[i] (both must
 * outlive a). */
void dbk_acct_init(struct dbk_acct *a, struct dbk_balancer *bal, const char *const *names);

enum dbk_acct_outcome {
	DBK_ACCT_RELEASED = 0, /* its lease released, where it was charged */
	DBK_ACCT_DUPLICATE,    /* a second copy of a line already applied */
	DBK_ACCT_UNDECIDED,    /* HAProxy balanced it alone, or its NOTIFY is
	                         * still to come (and will take no lease) */
	DBK_ACCT_UNKNOWN,      /* decided, but no lease is left (expired,
	                         * reclaimed) or the id is unusable */
};

/* Applies one completion line c at mono_ms (the clock leases are dated
 * by) and wall_ms (Unix ms, to compare with c->log_ms). *lease (may be
 * NULL) gets the lease released on DBK_ACCT_RELEASED. */
enum dbk_acct_outcome dbk_acct_complete(struct dbk_acct *a, const struct dbk_completion *c,
                                        uint64_t mono_ms, int64_t wall_ms,
                                        struct dbk_bal_lease *lease);

/* The periodic tick: releases every lease started at or before
 * now_ms - lease_ttl_ms (cb, if not NULL, sees each, as for
 * dbk_bal_expire) and forgets ids buried DBK_ACCT_BURIED_TTL_MS ago.
 * Returns how many leases expired. */
size_t dbk_acct_expire(struct dbk_acct *a, uint64_t now_ms, uint64_t lease_ttl_ms,
                       dbk_bal_lease_cb *cb, void *arg);

/* Leak detection: the agent's in-flight lease count on a server against
 * what HAProxy holds there (dbk_rt_server_load), poll after poll.
 *
 * The two never agree exactly, and a momentary excess is normal:
 * - a fresh decision is a lease before it is a session: the ACK travels
 *   back, the stream resumes, use-server assigns it (up to a connect time,
 *   more if the server's queue is full);
 * - a finished stream leaves scur at once, but its completion line (and so
 *   the release of its lease) arrives milliseconds later, or seconds later
 *   for a client abort on HAProxy 2.6;
 * - the two numbers are read at different instants.
 * A leaked lease (its completion line lost) is in the excess of every poll
 * for good. So a server is reclaimed from only when the agent's count
 * exceeds HAProxy's on k consecutive polls, and then by no more than the
 * smallest excess seen over those polls (each leak is in every one of
 * them) and no more than the count now minus the highest HAProxy count
 * seen (the older rule, tighter when the agent's count fell). Reclaiming
 * too few only delays the fix to the next window; reclaiming too many
 * would under-count a busy server and send it more work. */
#define DBK_ACCT_RECONCILE_K 3

struct dbk_acct_reconcile {
	unsigned streak;      /* consecutive polls with an excess */
	long max_haproxy;     /* highest HAProxy count over the streak */
	long long min_excess; /* smallest excess over the streak */
};

void dbk_acct_reconcile_init(struct dbk_acct_reconcile *r);

/* Feeds one poll of one server: ours = leases the agent holds on it,
 * haproxy = its sessions + queue (negative: unknown, which breaks the
 * streak: no evidence is not evidence of a leak). k = polls required,
 * 0 meaning DBK_ACCT_RECONCILE_K. Returns how many leases to reclaim now
 * (usually 0); after a reclaim the next one needs k new polls. */
unsigned dbk_acct_reconcile_step(struct dbk_acct_reconcile *r, unsigned k, unsigned ours,
                                 long haproxy);

/* Which leases may go: only ones already held when the streak began (a
 * leak has been in every poll; a run of short-lived leases, such as
 * requests redispatched away one after another, shows an excess at every
 * poll made of a different lease each time), and none younger than
 * min_age_ms (a retried request waiting for its response is not a leak).
 * Sets *started_by to the newest start time a reclaimed lease may have,
 * for polls every poll_ms; false when no lease can be that old yet. */
bool dbk_acct_reclaim_cutoff(uint64_t now_ms, uint64_t poll_ms, uint64_t min_age_ms,
                             uint64_t *started_by);

/* One poll of server: feeds r with the balancer's count and HAProxy's
 * (haproxy, as for dbk_acct_reconcile_step with the default k) and
 * reclaims the leak found, oldest first, within the cutoff above. cb as
 * for dbk_bal_reclaim; the completion lines of reclaimed leases will find
 * none. Returns how many were reclaimed. */
size_t dbk_acct_reconcile(struct dbk_balancer *bal, unsigned server, struct dbk_acct_reconcile *r,
                          long haproxy, uint64_t now_ms, uint64_t poll_ms, uint64_t min_age_ms,
                          dbk_bal_lease_cb *cb, void *arg);

#endif
