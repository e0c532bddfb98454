#include "server_watch.h"

#include <inttypes.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/log.h"
#include "prom_text.h"

static int find(const struct dbk_server_watch *w, const char *name, size_t len)
{
	for (unsigned i = 0; i < w->n; i++)
		if (strlen(w->names[i]) == len && memcmp(w->names[i], name, len) == 0)
			return (int)i;
	return -1;
}

/* Servers other than server the balancer may choose now; *present gets
 * the servers HAProxy's backend has now (the slots not free). */
static unsigned others_usable(const struct dbk_server_watch *w, unsigned server, unsigned *present)
{
	unsigned k = 0;

	*present = 0;
	for (unsigned i = 0; i < w->n; i++) {
		k += i != server && dbk_bal_usable(w->bal, i);
		*present += !(dbk_bal_out_reasons(w->bal, i) & DBK_BAL_OUT_ABSENT);
	}
	return k;
}

/* A free slot (a changing fleet's spare) has no name and is not shown. */
static bool shown(const struct dbk_server_watch *w, unsigned i) { return w->names[i][0] != '\0'; }

static void arm(struct dbk_server_watch *w, uint64_t now_ms)
{
	uint64_t due = dbk_outlier_next_due(&w->outlier);

	ev_timer_stop(w->loop, &w->timer);
	if (due == UINT64_MAX)
		return;
	ev_timer_set(&w->timer, due > now_ms ? (double)(due - now_ms) / 1000.0 : 0.0, 0.0);
	ev_timer_start(w->loop, &w->timer);
}

static void returned(void *arg, unsigned server)
{
	struct dbk_server_watch *w = arg;

	dbk_bal_set_out(w->bal, server, DBK_BAL_OUT_EJECTED, false);
	dbk_log(DBK_LOG_INFO, "server-returned", "server=%s state=half-open ejections=%" PRIu64,
	        w->names[server], w->outlier.s[server].ejections);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct dbk_server_watch *w =
	        (struct dbk_server_watch *)((char *)t - offsetof(struct dbk_server_watch, timer));
	uint64_t now = dbk_mono_ms();

	(void)loop;
	(void)revents;
	dbk_outlier_tick(&w->outlier, now, returned, w);
	arm(w, now);
}

int dbk_server_watch_start(struct dbk_server_watch *w, struct ev_loop *loop,
                           struct dbk_balancer *bal, const char *const *names, unsigned n,
                           const struct dbk_outlier_config *c)
{
	memset(w, 0, sizeof(*w));
	w->bal = bal;
	w->names = names;
	w->n = n;
	w->loop = loop;
	ev_timer_init(&w->timer, on_timer, 0.0, 0.0);
	if (dbk_outlier_init(&w->outlier, c, n) < 0)
		return -1;
	if (c->enabled)
		dbk_log(DBK_LOG_INFO, "outlier-detection",
		        "consecutive=%d ratio=%g min_requests=%d window_ms=%lld "
		        "base_ejection_ms=%lld "
		        "max_ejection_ms=%lld max_ejected_percent=%d",
		        c->consecutive, c->ratio, c->min_requests, c->window_ms, c->base_ms,
		        c->max_ms, c->max_percent);
	return 0;
}

void dbk_server_watch_stop(struct dbk_server_watch *w)
{
	if (w->loop)
		ev_timer_stop(w->loop, &w->timer);
	dbk_outlier_free(&w->outlier);
	w->loop = NULL;
}

static void observe(struct dbk_server_watch *w, unsigned server, enum dbk_outlier_verdict v,
                    const char *why)
{
	struct dbk_outlier_change ch;
	uint64_t now = dbk_mono_ms();
	unsigned present = 0;
	unsigned others = v == DBK_OUTLIER_FAILURE ? others_usable(w, server, &present) : 0;

	if (v == DBK_OUTLIER_FAILURE)
		dbk_outlier_set_fleet(&w->outlier, present);

	if (!dbk_outlier_observe(&w->outlier, server, v, why, now, others, &ch))
		return;
	dbk_bal_set_out(w->bal, server, DBK_BAL_OUT_EJECTED, true);
	dbk_log(DBK_LOG_WARN, "server-ejected",
	        "server=%s reason=%s last=%s for=%.3fs ejections=%" PRIu64 " ejected=%u",
	        w->names[server], ch.reason, ch.last, (double)ch.for_ms / 1000.0,
	        w->outlier.s[server].ejections, w->outlier.stats.ejected);
	arm(w, now);
}

void dbk_server_watch_completion(struct dbk_server_watch *w, const struct dbk_completion *c)
{
	const char *why;

	if (!w->outlier.cfg.enabled)
		return;
	enum dbk_outlier_verdict v = dbk_outlier_classify(c->status, c->term, &why);
	int server = find(w, c->server, c->server_len);
	int chosen = c->chosen_len ? find(w, c->chosen, c->chosen_len) : -1;
	/* A retry that went elsewhere (%rc's '+') left the agent's choice
	 * after a failed attempt there (a refused connection, an empty
	 * response or a 503, by the sample's retry-on): the line names only
	 * the last server, so that attempt is counted on the chosen one. */
	if (chosen >= 0 && chosen != server && c->redispatched && c->retries > 0)
		observe(w, (unsigned)chosen, DBK_OUTLIER_FAILURE, "retried-elsewhere");
	if (server >= 0)
		observe(w, (unsigned)server, v, why);
}

void dbk_server_watch_reset(struct dbk_server_watch *w, unsigned server)
{
	if (server >= w->n)
		return;
	if (dbk_outlier_reset(&w->outlier, server)) {
		dbk_bal_set_out(w->bal, server, DBK_BAL_OUT_EJECTED, false);
		arm(w, dbk_mono_ms());
	}
	dbk_bal_set_out(w->bal, server, DBK_BAL_OUT_ASLEEP, false);
}

void dbk_server_watch_scraped(struct dbk_server_watch *w, unsigned server,
                              const struct dbk_scrape_view *v, bool metrics)
{
	if (!metrics || !v->up || server >= w->n)
		return;
	bool asleep = (v->m.have & DBK_VM_SLEEP) && v->m.asleep > 0;
	bool was = (dbk_bal_out_reasons(w->bal, server) & DBK_BAL_OUT_ASLEEP) != 0;

	if (asleep == was)
		return;
	dbk_bal_set_out(w->bal, server, DBK_BAL_OUT_ASLEEP, asleep);
	w->sleeps += asleep;
	dbk_log(DBK_LOG_INFO, asleep ? "server-asleep" : "server-awake", "server=%s engines=%u",
	        w->names[server], asleep ? v->m.asleep : 0);
}

void dbk_server_watch_report_state(const struct dbk_server_watch *w, uint64_t now_ms,
                                   struct dbk_buf *o)
{
	const struct dbk_outlier *ol = &w->outlier;

	dbk_buf_printf(o,
	               "  \"outlier\": {\"enabled\": %s, \"ejected\": %u, \"ejections\": %" PRIu64
	               ", \"returns\": %" PRIu64 ", \"capped\": %" PRIu64 ", \"failures\": %" PRIu64
	               ", \"asleep_transitions\": %" PRIu64 ", \"servers\": [\n",
	               ol->cfg.enabled ? "true" : "false", ol->stats.ejected, ol->stats.ejections,
	               ol->stats.returns, ol->stats.capped, ol->stats.failures, w->sleeps);
	const char *sep = "";

	for (unsigned i = 0; i < w->n; i++) {
		const struct dbk_outlier_server *s = &ol->s[i];
		unsigned out = dbk_bal_out_reasons(w->bal, i);

		if (!shown(w, i))
			continue;
		dbk_buf_printf(o, "%s", sep);
		sep = ",\n";
		dbk_buf_printf(o,
		               "    {\"name\": \"%s\", \"state\": \"%s\", \"asleep\": %s, "
		               "\"failures\": %" PRIu64 ", \"successes\": %" PRIu64
		               ", \"ejections\": %" PRIu64,
		               w->names[i], dbk_outlier_state_str(s->state),
		               out & DBK_BAL_OUT_ASLEEP ? "true" : "false", s->failures,
		               s->successes, s->ejections);
		if (s->state == DBK_OUTLIER_EJECTED)
			dbk_buf_printf(o, ", \"reason\": \"%s\", \"back_in_ms\": %" PRIu64,
			               s->reason, s->until_ms > now_ms ? s->until_ms - now_ms : 0);
		dbk_buf_printf(o, "}");
	}
	dbk_buf_printf(o, "%s  ]},\n", *sep ? "\n" : "");
}

void dbk_server_watch_report_metrics(const struct dbk_server_watch *w, struct dbk_buf *o)
{
	const struct dbk_outlier *ol = &w->outlier;
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} totals[] = {
		{ "dbucket_outlier_ejections_total", "counter",
		  "Servers ejected for failing their requests (outlier detection).",
		  ol->stats.ejections },
		{ "dbucket_outlier_ejected", "gauge", "Servers ejected now.", ol->stats.ejected },
		{ "dbucket_outlier_capped_total", "counter",
		  "Ejections refused: the share of the fleet ejected at once, or the last usable "
		  "server.",
		  ol->stats.capped },
	};

	for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
		dbk_prom_head(o, totals[k].name, totals[k].type, totals[k].help);
		dbk_buf_printf(o, "%s %" PRIu64 "\n", totals[k].name, totals[k].v);
	}
	dbk_prom_head(o, "dbucket_server_ejected", "gauge",
	              "Whether outlier detection has the server out now (1).");
	for (unsigned i = 0; i < w->n; i++)
		if (shown(w, i))
			dbk_buf_printf(o, "dbucket_server_ejected{server=\"%s\"} %d\n", w->names[i],
			               dbk_outlier_ejected(ol, i));
	dbk_prom_head(o, "dbucket_server_failures_total", "counter",
	              "Completions counted as the server's failure (5xx, refused, reset, timed "
	              "out).");
	for (unsigned i = 0; i < w->n; i++)
		if (shown(w, i))
			dbk_buf_printf(o,
			               "dbucket_server_failures_total{server=\"%s\"} %" PRIu64 "\n",
			               w->names[i], ol->s[i].failures);
	dbk_prom_head(o, "dbucket_server_asleep", "gauge",
	              "Whether the server's vLLM engine sleeps (vllm:engine_sleep_state) (1).");
	for (unsigned i = 0; i < w->n; i++)
		if (shown(w, i))
			dbk_buf_printf(o, "dbucket_server_asleep{server=\"%s\"} %d\n", w->names[i],
			               (dbk_bal_out_reasons(w->bal, i) & DBK_BAL_OUT_ASLEEP) != 0);
}
