/* Admission by class: see admission.h for the rule and its sources. */
#include "admission.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const class_names[DBK_CLASS_N] = {
	[DBK_CLASS_CRITICAL] = "critical",
	[DBK_CLASS_STANDARD] = "standard",
	[DBK_CLASS_SHEDDABLE] = "sheddable",
};

void dbk_admit_config_default(struct dbk_admit_config *c)
{
	*c = (struct dbk_admit_config){
		.enabled = false,
		.ttft_ms = DBK_ADMIT_DEFAULT_TTFT_MS,
		.headroom = { [DBK_CLASS_CRITICAL] = INFINITY,
		              [DBK_CLASS_STANDARD] = DBK_ADMIT_DEFAULT_HEADROOM_STANDARD,
		              [DBK_CLASS_SHEDDABLE] = DBK_ADMIT_DEFAULT_HEADROOM_SHEDDABLE },
		.retry_min_s = DBK_ADMIT_DEFAULT_RETRY_MIN_S,
		.retry_max_s = DBK_ADMIT_DEFAULT_RETRY_MAX_S,
	};
}

bool dbk_class_parse(const char *s, size_t n, enum dbk_class *cls)
{
	*cls = DBK_CLASS_DEFAULT;
	if (n == 1 && s[0] >= '0' && s[0] < '0' + DBK_CLASS_N) {
		*cls = (enum dbk_class)(s[0] - '0');
		return true;
	}
	for (int i = 0; i < DBK_CLASS_N; i++) {
		const char *name = class_names[i];

		if (strlen(name) == n && strncasecmp(s, name, n) == 0) {
			*cls = (enum dbk_class)i;
			return true;
		}
	}
	return false;
}

const char *dbk_shed_reason_name(enum dbk_shed_reason why)
{
	static const char *const names[DBK_SHED_NREASONS] = {
		[DBK_SHED_PREDICTED_LATE] = "predicted-late",
		[DBK_SHED_SATURATED] = "saturated",
		[DBK_SHED_FLEET_LATE] = "fleet-late",
	};

	return (unsigned)why < DBK_SHED_NREASONS ? names[why] : "?";
}

const char *dbk_class_name(enum dbk_class cls)
{
	return (unsigned)cls < DBK_CLASS_N ? class_names[cls] : "standard";
}

/* The excess over the bound that refused it drains at one millisecond of
 * queue per millisecond if nothing more arrives: a retry after it would
 * be predicted within that bound again. Rounded up, and bounded so that a
 * wild prediction never tells a client to go away for an hour. */
static int retry_after(const struct dbk_admit_config *c, double excess_ms)
{
	double s = ceil(excess_ms / 1000.0);

	if (!(s >= c->retry_min_s))
		return c->retry_min_s;
	if (s > c->retry_max_s)
		return c->retry_max_s;
	return (int)s;
}

/* When a request of cls refused at now_ms, excess_ms past its bound,
 * would be admitted on a retry: its excess drained (nothing else
 * arriving), and not before the retries of the requests of its class
 * refused before it, each given DBK_ADMIT_RETRY_SPACING_MS: a room that
 * frees takes one of them, and told the same second they would all come
 * back to find it taken by the first. With no memory, the excess. The
 * order never reaches past the longest Retry-After: one wild prediction
 * does not send the class's next refusals away for as long. */
static double retry_in_ms(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                          enum dbk_class cls, double excess_ms, uint64_t now_ms)
{
	if (!st)
		return excess_ms;
	double now = (double)now_ms;
	double at = fmin(fmax(now + excess_ms, st->next_retry_ms[cls]), now + c->retry_max_s * 1e3);

	st->next_retry_ms[cls] = at + DBK_ADMIT_RETRY_SPACING_MS;
	return at - now;
}

/* Whether a class above cls was seen at risk lately (always, with no
 * memory). */
static bool above_at_risk(const struct dbk_admit_state *st, enum dbk_class cls, uint64_t now_ms)
{
	if (!st)
		return true;
	for (int k = 0; k < (int)cls; k++)
		if (st->risk_until_ms[k] > now_ms)
			return true;
	return false;
}

struct dbk_admit_result dbk_admit(const struct dbk_admit_config *c, struct dbk_admit_state *st,
                                  const struct dbk_admit_input *in)
{
	struct dbk_admit_result r = { DBK_ADMIT_ROUTE, 0, DBK_SHED_PREDICTED_LATE };
	enum dbk_class cls = (unsigned)in->cls < DBK_CLASS_N ? in->cls : DBK_CLASS_DEFAULT;
	double obj = (double)c->ttft_ms;

	if (!c->enabled)
		return r;
	if (st && in->predicted && !in->no_server && in->ttft_ms > obj * DBK_ADMIT_RISK_SHARE)
		st->risk_until_ms[cls] = in->now_ms + DBK_ADMIT_RISK_WINDOW_MS;
	if (cls == DBK_CLASS_CRITICAL)
		return r;
	/* With no usable server HAProxy answers 503 on its own: a 429
	 * would send the client back to a fleet that is not there. */
	if (in->no_server)
		return r;
	if (in->predicted) {
		double share = obj * c->headroom[cls];
		double bound = above_at_risk(st, cls, in->now_ms) ? share : obj;

		if (in->ttft_ms > bound) {
			r.verdict = DBK_ADMIT_SHED;
			r.retry_after_s = retry_after(c,
			                              retry_in_ms(c, st, cls, in->ttft_ms - bound,
			                                          in->now_ms));
			r.why = DBK_SHED_PREDICTED_LATE;
		}
		return r;
	}
	if (in->saturated && cls == DBK_CLASS_SHEDDABLE) {
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = c->retry_min_s;
		r.why = DBK_SHED_SATURATED;
		return r;
	}
	double share = (double)c->ttft_ms * (cls == DBK_CLASS_SHEDDABLE
	                                             ? DBK_ADMIT_FLEET_SHARE_SHEDDABLE
	                                             : DBK_ADMIT_FLEET_SHARE_STANDARD);
	if (in->fleet_ttft_ms > share) {
		r.verdict = DBK_ADMIT_SHED;
		r.retry_after_s = retry_after(c, in->fleet_ttft_ms - share);
		r.why = DBK_SHED_FLEET_LATE;
	}
	return r;
}
