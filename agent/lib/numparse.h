/* Whole-string decimal numbers for command lines and settings: a value
 * is taken only when all of it is one number within the caller's bounds,
 * so "12abc", "" or an overflow is an error, never a silent 12, 0 or
 * LLONG_MAX. Pure. */
#ifndef DBK_NUMPARSE_H
#define DBK_NUMPARSE_H

#include <stdbool.h>

/* A base-10 integer in [lo, hi] (strtoll's syntax: leading white space
 * and a sign allowed). Sets *out only on success. NULL is rejected. */
bool dbk_parse_ll(const char *s, long long lo, long long hi, long long *out);

/* A finite number in [lo, hi] (strtod's syntax). "nan", "inf" and values
 * too large or too small for a double are rejected. Sets *out only on
 * success. NULL is rejected. */
bool dbk_parse_double(const char *s, double lo, double hi, double *out);

/* The agent's settings grammar, one for its command line, its --config
 * file and the admin endpoint's /config, so that no door takes what
 * another refuses. Plain decimal digits only: no sign, no white space,
 * no exponent, no hex, no leading zero ("0" itself aside), at most 19
 * digits. An integer is DIGITS; a decimal is DIGITS or DIGITS.DIGITS.
 * Both are checked against [lo, hi] (inclusive) and set *out only on
 * success. NULL is rejected. */
bool dbk_parse_uint(const char *s, unsigned long long lo, unsigned long long hi,
                    unsigned long long *out);
bool dbk_parse_decimal(const char *s, double lo, double hi, double *out);

/* A duration in the same grammar: DIGITS with an optional unit, "ms",
 * "s" or "m". A bare number is in the caller's unit, unit_ms
 * milliseconds (1 or 1000: what the option took before it had units),
 * so that old command lines keep their meaning. *out is in that unit,
 * within [lo, hi]; a value that is not a whole number of it ("1500ms"
 * where the unit is the second) is refused, not rounded. */
bool dbk_parse_duration(const char *s, long long unit_ms, long long lo, long long hi,
                        long long *out);

/* The value of one hex digit (either case), or -1: inline, since the
 * request-body scanner reads \u escapes with it on every decision. */
static inline int dbk_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
