/* Synthetic request mixes: parsing "NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]]"
 * lists and generating Poisson arrivals from them, seeded and
 * reproducible. */
#include "synth.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/log.h"
#include "lib/numparse.h"

/* "N" or "N-M", 1 <= N <= M <= DBK_TRACE_MAX_TOKENS, digits only. */
static bool parse_range(const char *s, uint32_t *lo, uint32_t *hi)
{
	const char *dash = strchr(s, '-');
	size_t n = dash ? (size_t)(dash - s) : strlen(s);
	long long a, b;
	char first[16];

	if (n == 0 || n >= sizeof(first) || !isdigit((unsigned char)*s) ||
	    (dash && !isdigit((unsigned char)dash[1])))
		return false;
	memcpy(first, s, n);
	first[n] = 0;
	if (!dbk_parse_ll(first, 1, DBK_TRACE_MAX_TOKENS, &a))
		return false;
	b = a;
	if (dash && !dbk_parse_ll(dash + 1, a, DBK_TRACE_MAX_TOKENS, &b))
		return false;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return true;
}

static int synth_class(const char *s, struct dbk_synth_class *c, char *err, size_t errn)
{
	char buf[128], *name, *w, *in, *out;
	size_t i;

	if (strlen(s) >= sizeof(buf))
		return dbk_errf(err, errn, "synthetic class '%s' is too long", s), -1;
	strcpy(buf, s);
	name = buf;
	w = strchr(buf, '=');
	if (!w)
		return dbk_errf(err, errn,
		                "synthetic class '%s': want "
		                "NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]]",
		                s),
		       -1;
	*w++ = 0;
	if (!*name || strlen(name) >= sizeof(c->name))
		return dbk_errf(err, errn,
		                "synthetic class '%s': name must be "
		                "1..%zu characters",
		                s, sizeof(c->name) - 1),
		       -1;
	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-' &&
		    name[i] != '.')
			return dbk_errf(err, errn,
			                "synthetic class '%s': name may "
			                "hold letters, digits, '_', '-', '.'",
			                s),
			       -1;
	in = strchr(w, ':');
	if (!in)
		return dbk_errf(err, errn,
		                "synthetic class '%s': no prompt "
		                "length range (NAME=WEIGHT:IN[-IN_MAX])",
		                s),
		       -1;
	*in++ = 0;
	out = strchr(in, ':');
	if (out)
		*out++ = 0;
	if (!dbk_parse_double(w, 0, DBL_MAX, &c->weight) || !(c->weight > 0))
		return dbk_errf(err, errn,
		                "synthetic class '%s': weight must be "
		                "a number > 0",
		                s),
		       -1;
	if (!parse_range(in, &c->in_lo, &c->in_hi))
		return dbk_errf(err, errn,
		                "synthetic class '%s': prompt length "
		                "must be N or N-M with 1 <= N <= M <= %u",
		                s, DBK_TRACE_MAX_TOKENS),
		       -1;
	c->out_lo = c->out_hi = DBK_SYNTH_DEFAULT_OUTPUT;
	if (out && !parse_range(out, &c->out_lo, &c->out_hi))
		return dbk_errf(err, errn,
		                "synthetic class '%s': output length "
		                "must be N or N-M with 1 <= N <= M <= %u",
		                s, DBK_TRACE_MAX_TOKENS),
		       -1;
	memcpy(c->name, name, strlen(name) + 1); /* length checked */
	return 0;
}

int dbk_synth_parse(const char *spec, struct dbk_synth *out, char *err, size_t errn)
{
	const char *p = spec;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!*spec)
		return dbk_errf(err, errn, "empty synthetic mix"), -1;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[160];

		if (out->n == DBK_SYNTH_MAX_CLASSES)
			return dbk_errf(err, errn, "at most %d synthetic classes",
			                DBK_SYNTH_MAX_CLASSES),
			       -1;
		if (len >= sizeof(item))
			return dbk_errf(err, errn,
			                "synthetic class '%.40s...' is "
			                "too long",
			                p),
			       -1;
		memcpy(item, p, len);
		item[len] = 0;
		if (synth_class(item, &out->c[out->n], err, errn) != 0)
			return -1;
		for (i = 0; i < out->n; i++)
			if (strcmp(out->c[i].name, out->c[out->n].name) == 0)
				return dbk_errf(err, errn,
				                "synthetic class '%s' "
				                "given twice",
				                out->c[i].name),
				       -1;
		out->n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static uint32_t uniform_u32(uint64_t *x, uint32_t lo, uint32_t hi)
{
	uint64_t span = (uint64_t)hi - lo + 1;

	/* Multiply-shift: no modulo bias worth the name for spans < 2^32. */
	return lo + (uint32_t)(((dbk_hash_next(x) >> 32) * span) >> 32);
}

int dbk_synth_generate(const struct dbk_synth *s, double rate, size_t max_n, double max_t,
                       uint64_t seed, struct dbk_trace *out, char *err, size_t errn)
{
	double total = 0, t = 0;
	uint64_t st = seed;
	size_t i;

	if (s->n == 0)
		return dbk_errf(err, errn, "empty synthetic mix"), -1;
	if (!(rate > 0))
		return dbk_errf(err, errn, "the request rate must be > 0"), -1;
	if (max_n == 0 && !(max_t > 0))
		return dbk_errf(err, errn,
		                "a synthetic run needs a request count "
		                "or a duration"),
		       -1;
	if (isinf(rate) && max_n == 0)
		return dbk_errf(err, errn, "an infinite rate needs a request count"), -1;
	for (i = 0; i < s->n; i++)
		total += s->c[i].weight;
	while (max_n == 0 || out->n < max_n) {
		const struct dbk_synth_class *c = &s->c[s->n - 1];
		struct dbk_trace_req *r;
		double pick;

		if (max_t > 0 && t >= max_t)
			break;
		pick = dbk_hash_unit(&st) * total;
		for (i = 0; i < s->n; i++) {
			if (pick <= s->c[i].weight) {
				c = &s->c[i];
				break;
			}
			pick -= s->c[i].weight;
		}
		r = dbk_trace_push(out);
		if (!r)
			return dbk_errf(err, errn, "out of memory"), -1;
		r->t = t;
		r->input = uniform_u32(&st, c->in_lo, c->in_hi);
		r->output = uniform_u32(&st, c->out_lo, c->out_hi);
		if (!isinf(rate))
			t += -log(dbk_hash_unit(&st)) / rate;
	}
	return 0;
}
