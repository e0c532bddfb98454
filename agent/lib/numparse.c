#include "lib/numparse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool dbk_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool dbk_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* Length of the run of digits at s, or 0 when it is empty or has a
 * leading zero (a lone "0" is fine). */
static size_t digits(const char *s)
{
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (n > 1 && s[0] == '0')
		return 0;
	return n;
}

#define MAX_DIGITS 19 /* 10^19 - 1 still fits an unsigned long long */
/* A fraction overflows nothing (strtod reads it), but it is bounded all
 * the same; 30 holds what the agent itself writes back in /config and
 * its logs: %.17g without an exponent (values from 1e-4 up) has at
 * most 21 decimal places. */
#define MAX_FRACTION_DIGITS 30

bool dbk_parse_uint(const char *s, unsigned long long lo, unsigned long long hi,
                    unsigned long long *out)
{
	unsigned long long v = 0;
	size_t n;

	if (!s)
		return false;
	n = digits(s);
	if (n == 0 || n > MAX_DIGITS || s[n] != '\0')
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned long long)(s[i] - '0');
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool dbk_parse_decimal(const char *s, double lo, double hi, double *out)
{
	size_t n, f = 0;

	if (!s)
		return false;
	n = digits(s);
	if (n == 0 || n > MAX_DIGITS)
		return false;
	if (s[n] == '.') {
		while (s[n + 1 + f] >= '0' && s[n + 1 + f] <= '9')
			f++;
		if (f == 0 || f > MAX_FRACTION_DIGITS)
			return false;
		n += 1 + f;
	}
	if (s[n] != '\0')
		return false;
	/* The text is plain digits now: strtod reads it exactly as written
	 * (the agent never changes LC_NUMERIC). */
	return dbk_parse_double(s, lo, hi, out);
}

bool dbk_parse_duration(const char *s, long long unit_ms, long long lo, long long hi,
                        long long *out)
{
	static const struct {
		const char *name;
		long long ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 } };
	char num[MAX_DIGITS + 1];
	unsigned long long v;
	long long mult = unit_ms, ms;
	size_t n;

	if (!s || unit_ms <= 0)
		return false;
	n = digits(s);
	if (n == 0 || n > MAX_DIGITS)
		return false;
	if (s[n]) {
		mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(s + n, units[i].name) == 0)
				mult = units[i].ms;
		if (!mult)
			return false;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (!dbk_parse_uint(num, 0, (unsigned long long)(LLONG_MAX / mult), &v))
		return false;
	ms = (long long)v * mult;
	if (ms % unit_ms || ms / unit_ms < lo || ms / unit_ms > hi)
		return false;
	*out = ms / unit_ms;
	return true;
}
