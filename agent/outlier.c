#include "outlier.h"

#include <stdlib.h>
#include <string.h>

void dbk_outlier_config_default(struct dbk_outlier_config *c)
{
	c->enabled = true;
	c->consecutive = DBK_OUTLIER_DEFAULT_CONSECUTIVE;
	c->ratio = DBK_OUTLIER_DEFAULT_RATIO;
	c->min_requests = DBK_OUTLIER_DEFAULT_MIN_REQUESTS;
	c->window_ms = DBK_OUTLIER_DEFAULT_WINDOW_MS;
	c->base_ms = DBK_OUTLIER_DEFAULT_BASE_MS;
	c->max_ms = DBK_OUTLIER_DEFAULT_MAX_MS;
	c->max_percent = DBK_OUTLIER_DEFAULT_MAX_PERCENT;
}

/* A server-side termination (S: refused, reset or aborted by the server;
 * s: the server timed out), by the phase it hit. */
static enum dbk_outlier_verdict server_side(char cause, char phase, const char **why)
{
	bool timeout = cause == 's';

	switch (phase) {
	case 'C': *why = timeout ? "connect-timeout" : "connect"; return DBK_OUTLIER_FAILURE;
	case 'H': *why = timeout ? "timeout" : "reset"; return DBK_OUTLIER_FAILURE;
	case 'D':
	case 'L': *why = timeout ? "timeout" : "aborted"; return DBK_OUTLIER_FAILURE;
	default:
		/* Q: it waited in the queue (the server was full, not failing);
		 * R or anything else: not the server's answer. */
		return DBK_OUTLIER_IGNORE;
	}
}

enum dbk_outlier_verdict dbk_outlier_classify(int status, const char term[5], const char **why)
{
	static const char *const http5xx[] = {
		"http-500", "http-501", "http-502", "http-503", "http-504",
	};

	*why = NULL;
	switch (term[0]) {
	case 'S':
	case 's': return server_side(term[0], term[1], why);
	case '-':
		if (status >= 500 && status <= 599) {
			*why = status <= 504 ? http5xx[status - 500] : "http-5xx";
			return DBK_OUTLIER_FAILURE;
		}
		return status >= 100 ? DBK_OUTLIER_SUCCESS : DBK_OUTLIER_IGNORE;
	default:
		/* C and c: the client left or timed out; P, R, I, D, U, K, L:
		 * HAProxy itself refused, failed or answered. */
		return DBK_OUTLIER_IGNORE;
	}
}

int dbk_outlier_init(struct dbk_outlier *o, const struct dbk_outlier_config *c, unsigned n)
{
	memset(o, 0, sizeof(*o));
	o->cfg = *c;
	o->n = n;
	o->fleet = n;
	o->s = n ? calloc(n, sizeof(*o->s)) : NULL;
	return n && !o->s ? -1 : 0;
}

void dbk_outlier_free(struct dbk_outlier *o)
{
	free(o->s);
	o->s = NULL;
	o->n = o->fleet = 0;
}

/* Rolls the two-window count forward to now_ms. */
static void roll(const struct dbk_outlier *o, struct dbk_outlier_server *s, uint64_t now_ms)
{
	uint64_t w = o->cfg.window_ms > 0 ? (uint64_t)o->cfg.window_ms : 1;

	if (now_ms < s->win_start_ms + w)
		return;
	bool adjacent = now_ms < s->win_start_ms + 2 * w;
	s->prev_total = adjacent ? s->win_total : 0;
	s->prev_failed = adjacent ? s->win_failed : 0;
	s->win_total = s->win_failed = 0;
	s->win_start_ms = now_ms;
}

static unsigned max_ejected(const struct dbk_outlier *o)
{
	unsigned cap = (unsigned)((uint64_t)o->fleet * (unsigned)o->cfg.max_percent / 100);

	/* As Envoy: at least one, whatever the share; never all. */
	if (cap < 1)
		cap = 1;
	if (cap >= o->fleet)
		cap = o->fleet - 1;
	return cap;
}

/* Which rule a failure just tripped, or NULL. */
static const char *tripped(const struct dbk_outlier *o, const struct dbk_outlier_server *s)
{
	unsigned total = s->win_total + s->prev_total;
	unsigned failed = s->win_failed + s->prev_failed;

	if (s->state == DBK_OUTLIER_HALF_OPEN)
		return "half-open";
	if (o->cfg.consecutive > 0 && s->consecutive >= (unsigned)o->cfg.consecutive)
		return "consecutive";
	if (o->cfg.ratio > 0 && total >= (unsigned)o->cfg.min_requests && total > 0 &&
	    (double)failed >= o->cfg.ratio * (double)total)
		return "ratio";
	return NULL;
}

/* The back-off for this ejection: base x the steps owed, less one step
 * for each base period the server spent back in rotation since its last
 * return, capped at max. */
static uint64_t backoff(const struct dbk_outlier *o, struct dbk_outlier_server *s, uint64_t now_ms)
{
	uint64_t base = o->cfg.base_ms > 0 ? (uint64_t)o->cfg.base_ms : 1;
	uint64_t max = o->cfg.max_ms > 0 ? (uint64_t)o->cfg.max_ms : base;

	if (s->returned_ms && now_ms > s->returned_ms) {
		uint64_t good = (now_ms - s->returned_ms) / base;
		s->multiplier = good >= s->multiplier ? 0 : s->multiplier - (unsigned)good;
	}
	if (s->multiplier < 1u << 20)
		s->multiplier++;
	uint64_t d = base * s->multiplier;
	return d > max || d / s->multiplier != base ? max : d;
}

bool dbk_outlier_observe(struct dbk_outlier *o, unsigned server, enum dbk_outlier_verdict v,
                         const char *why, uint64_t now_ms, unsigned others,
                         struct dbk_outlier_change *ch)
{
	if (!o->cfg.enabled || server >= o->n || v == DBK_OUTLIER_IGNORE)
		return false;
	struct dbk_outlier_server *s = &o->s[server];
	bool failed = v == DBK_OUTLIER_FAILURE;

	if (failed) {
		s->failures++;
		o->stats.failures++;
	} else {
		s->successes++;
	}
	/* Requests that were in flight when it was ejected. */
	if (s->state == DBK_OUTLIER_EJECTED)
		return false;
	roll(o, s, now_ms);
	s->win_total++;
	if (!failed) {
		s->consecutive = 0;
		if (s->state == DBK_OUTLIER_HALF_OPEN &&
		    ++s->half_open_ok >= DBK_OUTLIER_HALF_OPEN_SUCCESSES)
			s->state = DBK_OUTLIER_CLOSED;
		return false;
	}
	s->win_failed++;
	s->consecutive++;
	const char *rule = tripped(o, s);
	if (!rule)
		return false;
	if (o->fleet < 2 || others == 0 || o->stats.ejected >= max_ejected(o)) {
		o->stats.capped++;
		return false;
	}
	s->state = DBK_OUTLIER_EJECTED;
	s->reason = rule;
	s->ejections++;
	o->stats.ejections++;
	o->stats.ejected++;
	ch->server = server;
	ch->reason = rule;
	ch->last = why ? why : "failure";
	ch->for_ms = backoff(o, s, now_ms);
	s->until_ms = now_ms + ch->for_ms;
	return true;
}

/* Back in rotation, on probation, with a clean slate. */
static void half_open(struct dbk_outlier *o, struct dbk_outlier_server *s, uint64_t now_ms)
{
	s->state = DBK_OUTLIER_HALF_OPEN;
	s->consecutive = s->half_open_ok = 0;
	s->win_total = s->win_failed = s->prev_total = s->prev_failed = 0;
	s->win_start_ms = now_ms;
	s->returned_ms = now_ms ? now_ms : 1;
	o->stats.ejected--;
	o->stats.returns++;
}

size_t dbk_outlier_tick(struct dbk_outlier *o, uint64_t now_ms,
                        void (*cb)(void *arg, unsigned server), void *arg)
{
	size_t k = 0;

	for (unsigned i = 0; i < o->n; i++) {
		struct dbk_outlier_server *s = &o->s[i];

		if (s->state != DBK_OUTLIER_EJECTED || now_ms < s->until_ms)
			continue;
		half_open(o, s, now_ms);
		k++;
		if (cb)
			cb(arg, i);
	}
	return k;
}

uint64_t dbk_outlier_next_due(const struct dbk_outlier *o)
{
	uint64_t due = UINT64_MAX;

	for (unsigned i = 0; i < o->n; i++)
		if (o->s[i].state == DBK_OUTLIER_EJECTED && o->s[i].until_ms < due)
			due = o->s[i].until_ms;
	return due;
}

bool dbk_outlier_ejected(const struct dbk_outlier *o, unsigned server)
{
	return server < o->n && o->s[server].state == DBK_OUTLIER_EJECTED;
}

void dbk_outlier_set_fleet(struct dbk_outlier *o, unsigned fleet)
{
	o->fleet = fleet < o->n ? fleet : o->n;
}

bool dbk_outlier_reset(struct dbk_outlier *o, unsigned server)
{
	if (server >= o->n)
		return false;
	bool was = o->s[server].state == DBK_OUTLIER_EJECTED;

	if (was)
		o->stats.ejected--;
	memset(&o->s[server], 0, sizeof(o->s[server]));
	return was;
}

const char *dbk_outlier_state_str(enum dbk_outlier_state s)
{
	switch (s) {
	case DBK_OUTLIER_EJECTED: return "ejected";
	case DBK_OUTLIER_HALF_OPEN: return "half-open";
	default: return "in";
	}
}
