/* Python's int(), float() and repr() on ASCII strings, as the reference's
 * argparse applies them to its flags' values. Pure. */
#include "pyval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool py_space(char c)
{
	/* str.strip()'s ASCII whitespace, including the separators 0x1c-0x1f. */
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Copies s without its surrounding whitespace into buf. Returns its length,
 * or -1 when it does not fit. */
static long strip_into(const char *s, char *buf, size_t buflen)
{
	size_t a = 0, b = strlen(s);

	while (a < b && py_space(s[a]))
		a++;
	while (b > a && py_space(s[b - 1]))
		b--;
	if (b - a >= buflen)
		return -1;
	memcpy(buf, s + a, b - a);
	buf[b - a] = '\0';
	return (long)(b - a);
}

/* A run of digits with single underscores between them, at *p, appended
 * (without the underscores) to out at *o. Returns the number of digits. */
static size_t digit_part(const char **p, char *out, size_t *o)
{
	const char *s = *p;
	size_t n = 0;

	while (is_digit(*s)) {
		out[(*o)++] = *s++;
		n++;
		if (*s == '_' && is_digit(s[1]))
			s++;
	}
	*p = s;
	return n;
}

int dbk_py_int(const char *s, long long *out)
{
	char buf[128], digits[128];
	size_t o = 0;

	if (strip_into(s, buf, sizeof(buf)) < 0)
		return -1;
	const char *p = buf;
	if (*p == '+' || *p == '-')
		digits[o++] = *p++;
	if (digit_part(&p, digits, &o) == 0 || *p != '\0')
		return -1;
	digits[o] = '\0';
	/* Python's ints have no bound; past long long's, saturate: every
	 * flag's range check then says what is wrong with the value. */
	*out = strtoll(digits, NULL, 10);
	return 0;
}

static bool ieq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a, y = *b;
		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (x != y)
			return false;
	}
	return *a == *b;
}

int dbk_py_float(const char *s, double *out)
{
	char buf[128], num[128];
	size_t o = 0;

	if (strip_into(s, buf, sizeof(buf)) < 0)
		return -1;
	const char *p = buf;
	double sign = 1.0;
	if (*p == '+' || *p == '-') {
		if (*p == '-')
			sign = -1.0;
		num[o++] = *p++;
	}
	if (ieq(p, "inf") || ieq(p, "infinity")) {
		*out = sign * INFINITY;
		return 0;
	}
	if (ieq(p, "nan")) {
		*out = NAN;
		return 0;
	}
	size_t whole = digit_part(&p, num, &o), frac = 0;
	if (*p == '.') {
		num[o++] = *p++;
		frac = digit_part(&p, num, &o);
	}
	if (whole == 0 && frac == 0)
		return -1;
	if (*p == 'e' || *p == 'E') {
		num[o++] = *p++;
		if (*p == '+' || *p == '-')
			num[o++] = *p++;
		if (digit_part(&p, num, &o) == 0)
			return -1;
	}
	if (*p != '\0')
		return -1;
	num[o] = '\0';
	/* Python gives inf for an overflowing literal, as strtod does. */
	*out = strtod(num, NULL);
	return 0;
}

void dbk_py_repr(const char *s, char *out, size_t outlen)
{
	size_t o = 0;
	/* Python quotes with ' unless the string has ' and no ". */
	char q = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';

	if (outlen < 8) {
		if (outlen)
			out[0] = '\0';
		return;
	}
	out[o++] = q;
	/* Leaves room for the longest escape, "...", the quote and the NUL. */
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (o + 9 >= outlen) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		unsigned char c = *p;
		if (c == '\\' || c == (unsigned char)q) {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n' || c == '\r' || c == '\t') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = q;
	out[o] = '\0';
}
