#include "settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/numparse.h"
#include "lib/log.h"
#include "lib/bounds.h"

/* Each key's grammar and bounds. Token counts are whole numbers, as on
 * the command line; the three weights are decimals. The balancer checks
 * how the values fit together (threshold below the maximum, ...). */
static const struct key {
	const char *name;
	bool integer;
	double lo, hi;
} keys[] = {
	{ "server-group-threshold", true, 1, DBK_MAX_TOKENS },
	{ "max-request-tokens", true, 1, DBK_MAX_TOKENS },
	{ "sensitivity", false, 0, 1e6 },
	{ "affinity-strength", false, 0, 1e6 },
	{ "redirect-threshold", false, 0, 1e6 },
	{ "max-leases", true, 1, DBK_MAX_LEASES },
};

static int set_group_sizes(struct dbk_bal_config *c, const char *value, char *err, size_t errlen)
{
	unsigned sizes[DBK_BAL_MAX_BUCKETS] = { 0 };
	unsigned n = 0;
	const char *p = value;

	for (;;) {
		char one[24];
		size_t len = strcspn(p, ",");
		unsigned long long v;

		if (n == DBK_BAL_MAX_BUCKETS || len >= sizeof(one))
			goto bad;
		memcpy(one, p, len);
		one[len] = '\0';
		if (!dbk_parse_uint(one, 1, DBK_MAX_SERVERS, &v))
			goto bad;
		sizes[n++] = (unsigned)v;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	memcpy(c->group_sizes, sizes, sizeof(sizes));
	return 0;
bad:
	dbk_errf(err, errlen, "group-sizes wants positive counts like 2,2, got '%s'", value);
	return -1;
}

int dbk_settings_set(struct dbk_bal_config *c, const char *key, const char *value, char *err,
                     size_t errlen)
{
	const struct key *k = NULL;
	double d;

	if (strcmp(key, "group-sizes") == 0)
		return set_group_sizes(c, value, err, errlen);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key, keys[i].name) == 0)
			k = &keys[i];
	if (!k) {
		dbk_errf(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	if (k->integer) {
		unsigned long long v;

		if (!dbk_parse_uint(value, (unsigned long long)k->lo, (unsigned long long)k->hi,
		                    &v)) {
			dbk_errf(err, errlen, "%s wants a whole number from %.0f to %.0f, got '%s'",
			         key, k->lo, k->hi, value);
			return -1;
		}
		d = (double)v;
	} else if (!dbk_parse_decimal(value, k->lo, k->hi, &d)) {
		dbk_errf(err, errlen, "%s wants a decimal number from %g to %g, got '%s'", key,
		         k->lo, k->hi, value);
		return -1;
	}
	if (k == &keys[0]) {
		if (c->nbuckets != 2) {
			dbk_errf(err, errlen, "server-group-threshold needs dynamic bucket mode");
			return -1;
		}
		c->bounds[1] = d;
	} else if (k == &keys[1]) {
		c->bounds[c->nbuckets] = d;
	} else if (k == &keys[2]) {
		c->sensitivity = d;
	} else if (k == &keys[3]) {
		c->affinity_strength = d;
	} else if (k == &keys[4]) {
		c->redirect_threshold = d;
	} else {
		c->max_leases = (size_t)d;
	}
	return 0;
}

/* Trims spaces and tabs at both ends of [s, s + n) in place. */
static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (*s == ' ' || *s == '\t')
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int dbk_settings_parse(struct dbk_bal_config *c, const char *text, size_t len, char *err,
                       size_t errlen)
{
	char line[512], why[256];
	size_t off = 0;
	unsigned lineno = 0;

	while (off < len) {
		size_t n = 0;
		lineno++;
		while (off + n < len && text[off + n] != '\n')
			n++;
		if (n >= sizeof(line)) {
			dbk_errf(err, errlen, "line %u: longer than %zu bytes", lineno,
			         sizeof(line) - 1);
			return -1;
		}
		memcpy(line, text + off, n);
		line[n] = '\0';
		off += n + 1;

		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *l = trim(line);
		if (*l == '\0')
			continue;
		char *eq = strchr(l, '=');
		if (!eq) {
			dbk_errf(err, errlen, "line %u: want 'key = value'", lineno);
			return -1;
		}
		*eq = '\0';
		if (dbk_settings_set(c, trim(l), trim(eq + 1), why, sizeof(why)) < 0) {
			dbk_errf(err, errlen, "line %u: %s", lineno, why);
			return -1;
		}
	}
	return 0;
}

/* Decodes [s, s + n) into out (size cap). Returns -1 on bad escapes or
 * if it does not fit. */
static int url_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '+') {
			ch = ' ';
		} else if (ch == '%') {
			if (i + 2 >= n)
				return -1;
			int hi = dbk_hex_digit(s[i + 1]), lo = dbk_hex_digit(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		/* A decoded NUL would end the C string early ("2%00junk" read as
		 * "2"); no setting has a control character in it. */
		if ((unsigned char)ch < 0x20 || ch == 0x7f)
			return -1;
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

int dbk_settings_query(struct dbk_bal_config *c, const char *query, char *err, size_t errlen)
{
	char key[64], value[256], why[256];
	const char *p = query;

	while (*p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', n);

		if (n) {
			if (!eq || url_decode(p, (size_t)(eq - p), key, sizeof(key)) < 0 ||
			    url_decode(eq + 1, n - (size_t)(eq - p) - 1, value, sizeof(value)) <
			            0) {
				dbk_errf(err, errlen, "want key=value pairs, got '%.*s'", (int)n,
				         p);
				return -1;
			}
			if (dbk_settings_set(c, key, value, why, sizeof(why)) < 0) {
				dbk_errf(err, errlen, "%s", why);
				return -1;
			}
		}
		p += n + (amp ? 1 : 0);
	}
	return 0;
}

/* A decimal in the settings grammar: %.17g round-trips, but writes an
 * exponent for very small or large values, which the grammar refuses. */
static void put_num(struct dbk_buf *out, double v)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.17g", v);
	if (strchr(buf, 'e')) {
		snprintf(buf, sizeof(buf), "%.20f", v);
		char *e = buf + strlen(buf);
		while (e[-1] == '0')
			*--e = '\0';
		if (e[-1] == '.')
			e[-1] = '\0';
	}
	dbk_buf_printf(out, "%s", buf);
}

void dbk_settings_describe(const struct dbk_bal_config *c, bool one_line, struct dbk_buf *out)
{
	/* The file format, or logfmt pairs for a log line. */
	const char *eq = one_line ? "=" : " = ", *end = one_line ? " " : "\n";

	if (c->nbuckets == 2)
		dbk_buf_printf(out, "server-group-threshold%s%.17g%s", eq, c->bounds[1], end);
	dbk_buf_printf(out, "max-request-tokens%s%.17g%s", eq, c->bounds[c->nbuckets], end);
	dbk_buf_printf(out, "sensitivity%s", eq);
	put_num(out, c->sensitivity);
	dbk_buf_printf(out, "%s", end);
	dbk_buf_printf(out, "affinity-strength%s", eq);
	put_num(out, c->affinity_strength);
	dbk_buf_printf(out, "%s", end);
	dbk_buf_printf(out, "redirect-threshold%s", eq);
	put_num(out, c->redirect_threshold);
	dbk_buf_printf(out, "%s", end);
	dbk_buf_printf(out, "group-sizes%s", eq);
	for (unsigned g = 0; g < c->nbuckets; g++)
		dbk_buf_printf(out, "%s%u", g ? "," : "", dbk_bal_group_size(c, g));
	dbk_buf_printf(out, "%smax-leases%s%zu%s", end, eq, c->max_leases, one_line ? "" : "\n");
}
