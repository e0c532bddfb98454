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
	const char *const *names;
	unsigned n;
	ev_timer timer;
	struct dbk_rt_query *q;      /* the query under way, if any */
	struct dbk_rt_server *srv;   /* HAProxy's view, by balancer index */
	struct dbk_rt_server *fresh; /* scratch for a servers-state dump */
	struct dbk_acct_reconcile *rec;
	bool mismatch_logged;
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
	        dbk_log_quote(q, sizeof(q), id, id_len), s->names[l->server], l->score);
}

/* Applies a complete poll: usable flags, then leak repair (the rules
 * are accounting.h's). */
static void apply(struct dbk_runtime_sync *s)
{
	uint64_t now = dbk_mono_ms();

	for (unsigned i = 0; i < s->n; i++) {
		bool usable = s->srv[i].state == DBK_RT_READY;

		bool held = dbk_bal_out_reasons(s->bal, i) & DBK_BAL_OUT_STATE;

		if (usable == held) {
			dbk_bal_set_usable(s->bal, i, usable);
			s->stats.state_changes++;
			dbk_log(DBK_LOG_INFO, "server-state", "server=%s state=%s chosen=%s",
			        s->names[i], dbk_rt_state_str(s->srv[i].state),
			        usable ? "yes" : "no");
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
	if (dbk_rt_parse_stat(buf, len, s->backend, s->srv, s->n, NULL, why, sizeof(why))) {
		poll_failed(s, why);
		return;
	}
	apply(s);
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
	if (dbk_rt_parse_servers_state(buf, len, s->backend, s->fresh, s->n + 1, &n, why,
	                               sizeof(why))) {
		poll_failed(s, why);
		return;
	}
	/* The agent's indexes are HAProxy's order: if the backend changed
	 * under us, acting on it would mark the wrong servers. */
	bool same = n == s->n;
	for (unsigned i = 0; same && i < n; i++)
		same = strcmp(s->fresh[i].name, s->names[i]) == 0;
	if (!same) {
		if (!s->mismatch_logged)
			dbk_log(DBK_LOG_ERROR, "backend-mismatch",
			        "backend=%s reason=\"HAProxy's servers differ from the agent's "
			        "list; "
			        "restart the agent\"",
			        s->backend);
		s->mismatch_logged = true;
		poll_failed(s, "server list mismatch");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		s->srv[i].op_state = s->fresh[i].op_state;
		s->srv[i].admin_state = s->fresh[i].admin_state;
		s->srv[i].state = s->fresh[i].state;
	}
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
                                              const char *const *names, unsigned n)
{
	struct dbk_runtime_sync *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->srv = calloc(n, sizeof(*s->srv));
	s->fresh = calloc(n + 1, sizeof(*s->fresh));
	s->rec = calloc(n, sizeof(*s->rec));
	if (!s->srv || !s->fresh || !s->rec) {
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
	s->names = names;
	s->n = n;
	snprintf(s->state_cmd, sizeof(s->state_cmd), "show servers state %s", backend);
	snprintf(s->stat_cmd, sizeof(s->stat_cmd), "show stat %s 4 -1", backend);
	for (unsigned i = 0; i < n; i++) {
		dbk_rt_server_init(&s->srv[i], names[i]);
		dbk_acct_reconcile_init(&s->rec[i]);
	}
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
	free(s->fresh);
	free(s->rec);
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
