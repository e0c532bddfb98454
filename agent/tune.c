#include "tune.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numparse.h"

int dbk_tune_set(struct dbk_bal_config *c, const char *key, const char *value,
                 char *err, size_t errlen)
{
	double d;

	if (strcmp(key, "group-sizes") == 0) {
		unsigned sizes[DBK_BAL_MAX_BUCKETS] = { 0 };
		unsigned n = 0;
		const char *p = value;

		while (*p) {
			char *end;
			errno = 0;
			unsigned long v = strtoul(p, &end, 10);
			if (errno || end == p || v == 0 || v > DBK_BAL_MAX_SERVERS ||
			    n == DBK_BAL_MAX_BUCKETS || (*end != ',' && *end != '\0')) {
				snprintf(err, errlen, "group-sizes wants positive counts like 2,2, got '%s'",
				         value);
				return -1;
			}
			sizes[n++] = (unsigned)v;
			p = *end ? end + 1 : end;
		}
		if (n == 0) {
			snprintf(err, errlen, "group-sizes wants positive counts like 2,2");
			return -1;
		}
		memcpy(c->group_sizes, sizes, sizeof(sizes));
		return 0;
	}
	/* Any finite number here: each key checks its own range below. */
	if (!dbk_parse_double(value, -DBL_MAX, DBL_MAX, &d)) {
		snprintf(err, errlen, "%s wants a number, got '%s'", key, value);
		return -1;
	}
	if (strcmp(key, "server-group-threshold") == 0) {
		if (c->nbuckets != 2) {
			snprintf(err, errlen, "server-group-threshold needs dynamic bucket mode");
			return -1;
		}
		c->bounds[1] = d;
	} else if (strcmp(key, "max-request-tokens") == 0) {
		c->bounds[c->nbuckets] = d;
	} else if (strcmp(key, "sensitivity") == 0) {
		c->sensitivity = d;
	} else if (strcmp(key, "affinity-strength") == 0) {
		c->affinity_strength = d;
	} else if (strcmp(key, "redirect-threshold") == 0) {
		c->redirect_threshold = d;
	} else if (strcmp(key, "max-leases") == 0) {
		if (d < 1 || d > 1e8 || d != floor(d)) {
			snprintf(err, errlen, "max-leases wants a whole number from 1 to 100000000");
			return -1;
		}
		c->max_leases = (size_t)d;
	} else {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -1;
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

int dbk_tune_parse(struct dbk_bal_config *c, const char *text, size_t len,
                   char *err, size_t errlen)
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
			snprintf(err, errlen, "line %u: longer than %zu bytes", lineno, sizeof(line) - 1);
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
			snprintf(err, errlen, "line %u: want 'key = value'", lineno);
			return -1;
		}
		*eq = '\0';
		if (dbk_tune_set(c, trim(l), trim(eq + 1), why, sizeof(why)) < 0) {
			snprintf(err, errlen, "line %u: %s", lineno, why);
			return -1;
		}
	}
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
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
			int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

int dbk_tune_query(struct dbk_bal_config *c, const char *query, char *err, size_t errlen)
{
	char key[64], value[256], why[256];
	const char *p = query;

	while (*p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', n);

		if (n) {
			if (!eq || url_decode(p, (size_t)(eq - p), key, sizeof(key)) < 0 ||
			    url_decode(eq + 1, n - (size_t)(eq - p) - 1, value, sizeof(value)) < 0) {
				snprintf(err, errlen, "want key=value pairs, got '%.*s'", (int)n, p);
				return -1;
			}
			if (dbk_tune_set(c, key, value, why, sizeof(why)) < 0) {
				snprintf(err, errlen, "%s", why);
				return -1;
			}
		}
		p += n + (amp ? 1 : 0);
	}
	return 0;
}

void dbk_tune_describe(const struct dbk_bal_config *c, bool one_line,
                       struct dbk_strbuf *out)
{
	/* The file format, or logfmt pairs for a log line. */
	const char *eq = one_line ? "=" : " = ", *end = one_line ? " " : "\n";

	if (c->nbuckets == 2)
		dbk_sb_printf(out, "server-group-threshold%s%.17g%s", eq, c->bounds[1], end);
	dbk_sb_printf(out, "max-request-tokens%s%.17g%s", eq, c->bounds[c->nbuckets], end);
	dbk_sb_printf(out, "sensitivity%s%.17g%s", eq, c->sensitivity, end);
	dbk_sb_printf(out, "affinity-strength%s%.17g%s", eq, c->affinity_strength, end);
	dbk_sb_printf(out, "redirect-threshold%s%.17g%s", eq, c->redirect_threshold, end);
	dbk_sb_printf(out, "group-sizes%s", eq);
	for (unsigned g = 0; g < c->nbuckets; g++)
		dbk_sb_printf(out, "%s%u", g ? "," : "", dbk_bal_group_size(c, g));
	dbk_sb_printf(out, "%smax-leases%s%zu%s", end, eq, c->max_leases, one_line ? "" : "\n");
}
