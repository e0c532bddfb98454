/* The fleet's saturation: see saturation.h for the rule and its source. */
#include "saturation.h"

#include <stdlib.h>

int dbk_sat_init(struct dbk_saturation *s, const struct dbk_sat_config *c, unsigned n)
{
	s->c = *c;
	s->n = n;
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
	s->s[server] = (struct dbk_sat_server){ have, waiting, kv, at_ms };
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
