/* The fleet's saturation: see saturation.h for the rule and its source. */
#include "saturation.h"

#include <stdlib.h>

int dbk_sat_init(struct dbk_saturation *s, const struct dbk_sat_config *c, unsigned n)
{
	*s = (struct dbk_saturation){ .c = *c, .n = n };
	s->s = calloc(n ? n : 1, sizeof(*s->s));
	return s->s ? 0 : -1;
}

void dbk_sat_free(struct dbk_saturation *s)
{
	free(s->s);
	s->s = NULL;
	s->n = 0;
}

void dbk_sat_scraped(struct dbk_saturation *s, unsigned server, bool have, double waiting,
                     double kv, uint64_t at_ms)
{
	if (server >= s->n)
		return;
	s->s[server].have = have;
	s->s[server].waiting = waiting;
	s->s[server].kv = kv;
	s->s[server].at_ms = at_ms;
}

void dbk_sat_forget(struct dbk_saturation *s, unsigned server)
{
	if (server < s->n)
		s->s[server] = (struct dbk_sat_server){ 0 };
}

/* Closes the window at at_ms: the mean first token over the servers read
 * at both its ends, and each server's numbers now as the next one's base. */
static void close_window(struct dbk_saturation *s, uint64_t at_ms)
{
	double sum = 0, n = 0;

	for (unsigned i = 0; i < s->n; i++) {
		struct dbk_sat_server *v = &s->s[i];

		if (v->have_ttft && v->base && v->ttft_count >= v->base_count &&
		    v->ttft_sum_s >= v->base_sum_s) {
			sum += v->ttft_sum_s - v->base_sum_s;
			n += v->ttft_count - v->base_count;
		}
		v->base = v->have_ttft;
		v->base_sum_s = v->ttft_sum_s;
		v->base_count = v->ttft_count;
	}
	s->fleet_ttft_ms = n > 0 ? sum / n * 1e3 : 0;
	s->fleet_ttft_at_ms = at_ms;
	s->win_open = true;
	s->win_ms = at_ms;
}

void dbk_sat_first_tokens(struct dbk_saturation *s, unsigned server, bool have, double sum_s,
                          double count, uint64_t at_ms)
{
	struct dbk_sat_server *v;

	if (server >= s->n)
		return;
	v = &s->s[server];
	v->have_ttft = have;
	v->ttft_sum_s = sum_s;
	v->ttft_count = count;
	if (!have)
		v->base = false;
	if (!s->win_open || at_ms < s->win_ms || at_ms - s->win_ms >= DBK_SAT_TTFT_WINDOW_MS)
		close_window(s, at_ms);
}

double dbk_sat_fleet_ttft_ms(const struct dbk_saturation *s, uint64_t now_ms)
{
	if (s->fleet_ttft_ms <= 0 || now_ms < s->fleet_ttft_at_ms ||
	    now_ms - s->fleet_ttft_at_ms > s->c.stale_ms + DBK_SAT_TTFT_WINDOW_MS)
		return 0;
	return s->fleet_ttft_ms;
}

bool dbk_sat_fleet(const struct dbk_saturation *s, const struct dbk_balancer *b, uint64_t now_ms)
{
	bool any = false;

	for (unsigned i = 0; i < s->n; i++) {
		const struct dbk_sat_server *v = &s->s[i];

		if (!dbk_bal_usable(b, i))
			continue;
		/* Unknown is not full: it may have room. */
		if (!v->have || now_ms - v->at_ms > s->c.stale_ms || v->at_ms > now_ms)
			return false;
		if (v->waiting <= s->c.queue && v->kv <= s->c.kv)
			return false;
		any = true;
	}
	return any;
}
