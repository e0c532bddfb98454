#include "runtime_sync.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/bounds.h"

struct dbk_runtime_sync {
	struct ev_loop *loop;
	struct dbk_rt_addr addr;
	char state_cmd[DBK_RT_MAX_COMMAND];
	char stat_cmd[DBK_RT_MAX_COMMAND];
	const char *backend;
	uint64_t poll_ms;
	uint64_t min_age_ms;
	struct dbk_balancer *bal;
	unsigned nslots;
	struct dbk_runtime_sync_hooks hooks;
	ev_timer timer;
	struct dbk_rt_query *q;      /* the query under way, if any */
	struct dbk_rt_slot *slots;   /* who is in each of the balancer's slots */
	struct dbk_rt_server *srv;   /* HAProxy's view, by slot */
	struct dbk_rt_server *fresh; /* scratch for a servers-state dump */
	int *slot_of;                /* scratch: fresh[i]'s slot */
	enum dbk_rt_change *change;  /* scratch: what happens to each slot */
	long *told;                  /* the weight last told, by slot; -1: none */
	struct dbk_acct_reconcile *rec;
	bool answered; /* HAProxy has answered a query */
	ev_tstamp started;
	struct dbk_runtime_sync_stats stats;
};

/* HAProxy may start after the agent (the launcher starts it once the
 * agent's listeners are bound, a service manager in either order): until
 * HAProxy first answers, failures this early are waiting, not news. */
#define START_GRACE_S 5.0

static void poll_failed(struct dbk_runtime_sync *s, const char *why)
{
	if (!s->answered && ev_now(s->loop) - s->started < START_GRACE_S) {
		dbk_log(DBK_LOG_DEBUG, "runtime-api-waiting", "addr=%s reason=\"%s\"", s->addr.text,
		        why);
		return;
	}
	s->stats.failures++;
	/* Log transitions only: an HAProxy that is away for an hour must not
	 * write 3600 lines. */
	if (s->stats.up || s->stats.failures == 1)
		dbk_log(DBK_LOG_WARN, "runtime-api-unreachable",
		        "addr=%s reason=\"%s\" effect=\"server states frozen at the last poll\"",
		        s->addr.text, why);
	s->stats.up = false;
}

static void on_reclaimed(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct dbk_runtime_sync *s = arg;
	char q[DBK_BAL_MAX_ID_LEN + 1];

	dbk_log(DBK_LOG_WARN, "lease-reclaimed", "id=\"%s\" server=%s score=%.10g",
	        dbk_log_quote(q, sizeof(q), id, id_len), s->slots[l->server].name, l->score);
}

/* Applies a complete poll: usable flags and weights, then leak repair
 * (the rules are accounting.h's). */
static void apply(struct dbk_runtime_sync *s)
{
	uint64_t now = dbk_mono_ms();

	for (unsigned i = 0; i < s->nslots; i++) {
		if (!s->slots[i].name[0])
			continue;
		enum dbk_rt_server_state st = dbk_rt_server_state(&s->srv[i]);
		bool usable = st == DBK_RT_READY;
		bool held = dbk_bal_out_reasons(s->bal, i) & DBK_BAL_OUT_STATE;

		/* A server in maintenance has no weight worth balancing by
		 * (HAProxy shows 1 for a fresh one). */
		if (s->srv[i].weight > 0 && st != DBK_RT_MAINT && s->srv[i].weight != s->told[i]) {
			s->told[i] = s->srv[i].weight;
			dbk_bal_set_weight(s->bal, i, (double)s->srv[i].weight);
			if (s->hooks.weight)
				s->hooks.weight(s->hooks.arg, i, s->srv[i].weight);
		}
		if (usable == held) {
			dbk_bal_set_usable(s->bal, i, usable);
			s->stats.state_changes++;
			dbk_log(DBK_LOG_INFO, "server-state", "server=%s state=%s chosen=%s",
			        s->slots[i].name, dbk_rt_state_str(st), usable ? "yes" : "no");
		}
		dbk_acct_reconcile(s->bal, i, &s->rec[i], dbk_rt_server_load(&s->srv[i]), now,
		                   s->poll_ms, s->min_age_ms, on_reclaimed, s);
	}
	s->stats.polls++;
	if (!s->stats.up)
		dbk_log(DBK_LOG_INFO, "runtime-api-up", "addr=%s backend=%s", s->addr.text,
		        s->backend);
	s->stats.up = true;
}

static void on_stat(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                    const char *err)
{
	struct dbk_runtime_sync *s = arg;
	char why[256];

	s->q = NULL;
	if (st != DBK_RT_Q_OK) {
		poll_failed(s, err);
		return;
	}
	s->answered = true;
	if (dbk_rt_parse_stat(buf, len, s->backend, s->srv, s->nslots, NULL, why, sizeof(why))) {
		poll_failed(s, why);
		return;
	}
	apply(s);
}

static void on_dropped(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct dbk_runtime_sync *s = arg;
	char q[DBK_BAL_MAX_ID_LEN + 1];

	dbk_log(DBK_LOG_DEBUG, "lease-released", "id=\"%s\" server=%s reason=server-gone",
	        dbk_log_quote(q, sizeof(q), id, id_len), s->slots[l->server].name);
}

/* A server left HAProxy's backend: its leases end (the policy hears of
 * each through the balancer's observer), its slot is held out and
 * freed. */
static void member_gone(struct dbk_runtime_sync *s, unsigned k)
{
	size_t n = dbk_bal_release_server(s->bal, k, on_dropped, s);

	dbk_bal_set_out(s->bal, k, DBK_BAL_OUT_ABSENT, true);
	s->stats.removed++;
	dbk_log(DBK_LOG_INFO, "server-removed", "server=%s slot=%u leases_released=%zu",
	        s->slots[k].name, k, n);
	if (s->hooks.member)
		s->hooks.member(s->hooks.arg, k, DBK_RT_SLOT_GONE, &s->srv[k]);
}

/* Follows the backend's list (runtime_members.h), then takes each
 * present server's state from the dump. */
static void follow(struct dbk_runtime_sync *s, unsigned n)
{
	struct dbk_rt_plan_counts c;

	dbk_rt_plan(s->slots, s->nslots, s->fresh, n, s->slot_of, s->change, &c);
	for (unsigned k = 0; k < s->nslots; k++)
		if (s->change[k] == DBK_RT_SLOT_GONE)
			member_gone(s, k);
	dbk_rt_plan_apply(s->slots, s->nslots, s->fresh, n, s->slot_of, s->change);
	if (c.no_room != s->stats.no_room)
		dbk_log(c.no_room ? DBK_LOG_WARN : DBK_LOG_INFO, "server-slots",
		        "backend=%s slots=%u servers=%u left_out=%u%s", s->backend, s->nslots, n,
		        c.no_room, c.no_room ? " hint=\"raise --max-servers\"" : "");
	s->stats.no_room = c.no_room;
	for (unsigned i = 0; i < n; i++) {
		int k = s->slot_of[i];

		if (k < 0)
			continue;
		struct dbk_rt_server *r = &s->srv[k];
		enum dbk_rt_change ch = s->change[k];

		if (ch == DBK_RT_SLOT_ADDED) {
			dbk_rt_server_init(r, s->fresh[i].name);
			dbk_acct_reconcile_init(&s->rec[k]);
		}
		/* Whoever is in the slot now hears its weight afresh (the
		 * policy forgot the old one's). */
		if (ch == DBK_RT_SLOT_ADDED || ch == DBK_RT_SLOT_MOVED)
			s->told[k] = -1;
		r->op_state = s->fresh[i].op_state;
		r->admin_state = s->fresh[i].admin_state;
		r->state = s->fresh[i].state;
		memcpy(r->addr, s->fresh[i].addr, sizeof(r->addr));
		r->port = s->fresh[i].port;
		if (ch == DBK_RT_SLOT_ADDED || ch == DBK_RT_SLOT_MOVED) {
			/* In with HAProxy's state of it: not chosen before the
			 * poll says it may be. */
			dbk_bal_set_usable(s->bal, (unsigned)k, r->state == DBK_RT_READY);
			if (ch == DBK_RT_SLOT_ADDED)
				dbk_bal_set_out(s->bal, (unsigned)k, DBK_BAL_OUT_ABSENT, false);
			s->stats.added += ch == DBK_RT_SLOT_ADDED;
			s->stats.readdressed += ch == DBK_RT_SLOT_MOVED;
			dbk_log(DBK_LOG_INFO,
			        ch == DBK_RT_SLOT_ADDED ? "server-added" : "server-readdressed",
			        "server=%s slot=%u addr=%s port=%d state=%s", r->name, (unsigned)k,
			        r->addr[0] ? r->addr : "-", r->port, dbk_rt_state_str(r->state));
			if (s->hooks.member)
				s->hooks.member(s->hooks.arg, (unsigned)k, ch, r);
		}
	}
	for (unsigned k = 0; k < s->nslots; k++)
		if (s->change[k] == DBK_RT_SLOT_GONE)
			dbk_rt_server_init(&s->srv[k], "");
	s->stats.present = 0;
	for (unsigned k = 0; k < s->nslots; k++)
		s->stats.present += s->slots[k].name[0] != '\0';
}

static void on_state(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                     const char *err)
{
	struct dbk_runtime_sync *s = arg;
	char why[256];
	unsigned n;

	s->q = NULL;
	if (st != DBK_RT_Q_OK) {
		poll_failed(s, err);
		return;
	}
	s->answered = true;
	if (dbk_rt_parse_servers_state(buf, len, s->backend, s->fresh, DBK_MAX_SERVERS, &n, why,
	                               sizeof(why))) {
		poll_failed(s, why);
		return;
	}
	follow(s, n);
	s->q = dbk_rt_query_start(s->loop, &s->addr, s->stat_cmd, 0, 0, on_stat, s, why,
	                          sizeof(why));
	if (!s->q)
		poll_failed(s, why);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_runtime_sync *s =
	        (struct dbk_runtime_sync *)((char *)w - offsetof(struct dbk_runtime_sync, timer));
	char why[256];

	(void)loop;
	(void)revents;
	if (s->q)
		return; /* the previous poll is still out: skip a beat */
	s->q = dbk_rt_query_start(s->loop, &s->addr, s->state_cmd, 0, 0, on_state, s, why,
	                          sizeof(why));
	if (!s->q)
		poll_failed(s, why);
}

struct dbk_runtime_sync *dbk_runtime_sync_new(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                              const char *backend, double interval_s,
                                              double reclaim_after_s, struct dbk_balancer *bal,
                                              const char *const *names, unsigned n, unsigned nslots,
                                              const struct dbk_runtime_sync_hooks *hooks)
{
	struct dbk_runtime_sync *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (n > nslots)
		n = nslots;
	s->srv = calloc(nslots, sizeof(*s->srv));
	s->slots = calloc(nslots, sizeof(*s->slots));
	s->change = calloc(nslots, sizeof(*s->change));
	s->fresh = calloc(DBK_MAX_SERVERS, sizeof(*s->fresh));
	s->slot_of = calloc(DBK_MAX_SERVERS, sizeof(*s->slot_of));
	s->rec = calloc(nslots, sizeof(*s->rec));
	s->told = malloc(nslots * sizeof(*s->told));
	if (!s->srv || !s->slots || !s->change || !s->fresh || !s->slot_of || !s->rec || !s->told) {
		dbk_runtime_sync_free(s);
		return NULL;
	}
	s->loop = loop;
	s->started = ev_now(loop);
	s->addr = *addr;
	s->backend = backend;
	s->poll_ms = (uint64_t)(interval_s * 1000.0);
	s->min_age_ms = (uint64_t)(reclaim_after_s * 1000.0);
	s->bal = bal;
	s->nslots = nslots;
	if (hooks)
		s->hooks = *hooks;
	snprintf(s->state_cmd, sizeof(s->state_cmd), "show servers state %s", backend);
	snprintf(s->stat_cmd, sizeof(s->stat_cmd), "show stat %s 4 -1", backend);
	for (unsigned i = 0; i < nslots; i++) {
		if (i < n)
			snprintf(s->slots[i].name, sizeof(s->slots[i].name), "%s", names[i]);
		dbk_rt_server_init(&s->srv[i], s->slots[i].name);
		dbk_acct_reconcile_init(&s->rec[i]);
		s->told[i] = -1;
	}
	s->stats.present = n;
	ev_timer_init(&s->timer, on_tick, 0, interval_s);
	ev_timer_start(loop, &s->timer);
	return s;
}

void dbk_runtime_sync_free(struct dbk_runtime_sync *s)
{
	if (!s)
		return;
	if (s->loop)
		ev_timer_stop(s->loop, &s->timer);
	if (s->q)
		dbk_rt_query_cancel(s->q);
	free(s->srv);
	free(s->slots);
	free(s->change);
	free(s->fresh);
	free(s->slot_of);
	free(s->rec);
	free(s->told);
	free(s);
}

const struct dbk_runtime_sync_stats *dbk_runtime_sync_stats(const struct dbk_runtime_sync *s)
{
	return &s->stats;
}

const struct dbk_rt_server *dbk_runtime_sync_server(const struct dbk_runtime_sync *s, unsigned i)
{
	return &s->srv[i];
}

const char *dbk_runtime_sync_name(const struct dbk_runtime_sync *s, unsigned i)
{
	return s->slots[i].name;
}

int dbk_runtime_sync_discover(const char *addr, const char *backend, unsigned timeout_ms,
                              struct dbk_rt_server **out, unsigned *n, char *err, size_t errlen)
{
	char cmd[DBK_RT_MAX_COMMAND];
	size_t cap = DBK_RT_DEFAULT_MAX_RESPONSE, len;
	char *buf = malloc(cap);
	struct dbk_rt_server *srv = calloc(DBK_MAX_SERVERS, sizeof(*srv));
	enum dbk_rt_query_status st = DBK_RT_Q_CONNECT;
	int rc = -1;

	if (!srv || !buf) {
		dbk_errf(err, errlen, "out of memory");
		goto out;
	}
	snprintf(cmd, sizeof(cmd), "show servers state %s", backend);
	/* HAProxy may come up after the agent: retry, every 250 ms, bounded
	 * by timeout_ms. */
	for (unsigned waited = 0;; waited += 250) {
		st = dbk_rt_query_sync(addr, cmd, 2000, buf, cap, &len, err, errlen);
		if (st == DBK_RT_Q_OK || waited >= timeout_ms)
			break;
		poll(NULL, 0, 250);
	}
	if (st == DBK_RT_Q_OK && dbk_rt_parse_servers_state(buf, len, backend, srv, DBK_MAX_SERVERS,
	                                                    n, err, errlen) == 0) {
		if (*n == 0) {
			dbk_errf(err, errlen, "backend '%s' has no servers", backend);
		} else {
			*out = srv;
			srv = NULL;
			rc = 0;
		}
	}
out:
	free(buf);
	free(srv);
	return rc;
}
