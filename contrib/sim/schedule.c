/* Step functions and weights from the command line; see schedule.h. */
#include "schedule.h"

#include <string.h>

#include "lib/log.h"
#include "lib/numparse.h"

/* The comma-separated items of text, each copied into item (NUL
 * terminated); the callback sees one at a time. -1 when an item is
 * empty or too long, or fn fails. */
static int each_item(const char *text, int (*fn)(void *ctx, char *item, size_t k), void *ctx,
                     size_t *count, char *err, size_t errlen)
{
	char item[64];
	size_t k = 0;

	for (const char *p = text;; k++) {
		size_t len = strcspn(p, ",");

		if (len == 0 || len >= sizeof(item)) {
			dbk_errf(err, errlen, "item %zu of '%s' is %s", k + 1, text,
			         len ? "too long" : "empty");
			return -1;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		if (fn(ctx, item, k) != 0)
			return -1;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	*count = k + 1;
	return 0;
}

struct steps_ctx {
	double lo, hi;
	int whole;
	struct dbk_sim_step *out;
	size_t max;
	char *err;
	size_t errlen;
};

static int one_step(void *c, char *item, size_t k)
{
	struct steps_ctx *x = c;
	char *colon = strchr(item, ':');
	long long w;

	if (k >= x->max) {
		dbk_errf(x->err, x->errlen, "at most %zu steps", x->max);
		return -1;
	}
	if (!colon) {
		dbk_errf(x->err, x->errlen, "'%s' is not T:V", item);
		return -1;
	}
	*colon = '\0';
	struct dbk_sim_step *s = &x->out[k];
	if (!dbk_parse_double(item, 0, 1e12, &s->t_s)) {
		dbk_errf(x->err, x->errlen, "'%s': T is not a number of seconds >= 0", item);
		return -1;
	}
	if (x->whole ? !dbk_parse_ll(colon + 1, (long long)x->lo, (long long)x->hi, &w)
	             : !dbk_parse_double(colon + 1, x->lo, x->hi, &s->v)) {
		dbk_errf(x->err, x->errlen, "'%s': V must be %s in %g..%g", colon + 1,
		         x->whole ? "a whole number" : "a number", x->lo, x->hi);
		return -1;
	}
	if (x->whole)
		s->v = (double)w;
	if (k == 0 ? s->t_s != 0 : !(s->t_s > x->out[k - 1].t_s)) {
		dbk_errf(x->err, x->errlen, "%s",
		         k == 0 ? "the first step is at 0 s" : "the steps' times must rise");
		return -1;
	}
	return 0;
}

int dbk_sim_steps_parse(const char *text, double lo, double hi, int whole, struct dbk_sim_step *out,
                        size_t max, size_t *n, char *err, size_t errlen)
{
	struct steps_ctx x = { lo, hi, whole, out, max, err, errlen };

	*n = 0;
	return each_item(text, one_step, &x, n, err, errlen);
}

double dbk_sim_steps_at(const struct dbk_sim_step *st, size_t n, double t)
{
	size_t k = 0;

	while (k + 1 < n && st[k + 1].t_s <= t)
		k++;
	return st[k].v;
}

double dbk_sim_ramp_time(const struct dbk_sim_step *ramp, size_t n, double u)
{
	double used = 0; /* base-rate seconds the steps before k took */

	for (size_t k = 0; k < n; k++) {
		double len = k + 1 < n ? ramp[k + 1].t_s - ramp[k].t_s : 0;

		if (k + 1 == n || u < used + len * ramp[k].v)
			return ramp[k].t_s + (u - used) / ramp[k].v;
		used += len * ramp[k].v;
	}
	return u;
}

struct weights_ctx {
	double *out;
	size_t max;
	char *err;
	size_t errlen;
};

static int one_weight(void *c, char *item, size_t k)
{
	struct weights_ctx *x = c;
	long long w;

	if (k >= x->max) {
		dbk_errf(x->err, x->errlen, "at most %zu weights", x->max);
		return -1;
	}
	if (!dbk_parse_ll(item, 1, 256, &w)) {
		dbk_errf(x->err, x->errlen, "weight '%s' is not a whole number in 1..256", item);
		return -1;
	}
	x->out[k] = (double)w;
	return 0;
}

int dbk_sim_weights_parse(const char *text, double *out, size_t max, size_t *n, char *err,
                          size_t errlen)
{
	struct weights_ctx x = { out, max, err, errlen };

	*n = 0;
	return each_item(text, one_weight, &x, n, err, errlen);
}
