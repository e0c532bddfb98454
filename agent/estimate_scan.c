/* The estimate's fast reader (estimate_scan.h). Where the grammar allows
 * something cJSON reads differently, or where cJSON's reading would take
 * care to match, the answer is UNSURE: cJSON decides those. */
#include "estimate_scan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/numparse.h"

/* Deepest nesting read here (a bit a level); real bodies use about 5. */
#define ESCAN_MAX_DEPTH 64u
/* cJSON reads at most 63 characters of a number. */
#define ESCAN_MAX_NUMBER 63u

struct escan {
	const uint8_t *p, *end;
};

static void escan_ws(struct escan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* At "\u": its four hex digits, or -1 when they are not all there (cJSON
 * would read a bad digit as a code of 0). */
static long escan_u4(const uint8_t *u, const uint8_t *end)
{
	long v = 0;

	if (end - u < 6 || u[0] != '\\' || u[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		int h = dbk_hex_digit(u[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* One escape at b (a backslash): where it ends, or NULL when cJSON would
 * refuse it or read it differently than the grammar says. */
static const uint8_t *escan_escape(const uint8_t *b, const uint8_t *end)
{
	if (end - b < 2)
		return NULL;
	switch (b[1]) {
	case '"':
	case '\\':
	case '/':
	case 'b':
	case 'f':
	case 'n':
	case 'r':
	case 't': return b + 2;
	case 'u': break;
	default: return NULL;
	}
	long hi = escan_u4(b, end);
	if (hi < 0 || (hi >= 0xDC00 && hi <= 0xDFFF))
		return NULL;
	if (hi < 0xD800 || hi > 0xDBFF)
		return b + 6;
	long lo = escan_u4(b + 6, end);
	return lo >= 0xDC00 && lo <= 0xDFFF ? b + 12 : NULL;
}

/* At an opening quote: past the closing one, with the contents in
 * [*str, *str + *len). Any byte but '"' and '\\' stands for itself (as in
 * cJSON, raw control bytes included); escapes are checked. memchr does
 * the long runs of prompt text. False: not sure. */
static bool escan_string(struct escan *s, const uint8_t **str, size_t *len)
{
	const uint8_t *p = s->p + 1, *start = p;

	for (;;) {
		const uint8_t *q = memchr(p, '"', (size_t)(s->end - p));
		if (!q)
			return false;
		const uint8_t *b = memchr(p, '\\', (size_t)(q - p));
		if (!b) {
			*str = start;
			*len = (size_t)(q - start);
			s->p = q + 1;
			return true;
		}
		p = escan_escape(b, s->end);
		if (!p)
			return false;
	}
}

static bool escan_digits(struct escan *s)
{
	const uint8_t *p = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > p;
}

/* The grammar's number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
 * not followed by another character cJSON would take into it. */
static bool escan_number(struct escan *s)
{
	const uint8_t *start = s->p;

	if (*s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (!escan_digits(s))
		return false;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!escan_digits(s))
			return false;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!escan_digits(s))
			return false;
	}
	if ((size_t)(s->p - start) > ESCAN_MAX_NUMBER)
		return false;
	return s->p < s->end && !memchr("0123456789+-eE.", *s->p, 15);
}

static bool escan_literal(struct escan *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return false;
	s->p += n;
	return true;
}

/* A number's value as cJSON reads it: strtod over a copy (the agent
 * keeps the C locale, so '.' is the decimal point). An integer of up to
 * 15 digits, the usual max_tokens, is exact in a double, so adding its
 * digits gives strtod's value at a fraction of the cost. */
static double escan_number_value(const uint8_t *p, size_t len)
{
	size_t neg = *p == '-', i = neg;
	uint64_t u = 0;

	for (; i < len && i - neg < 15 && p[i] >= '0' && p[i] <= '9'; i++)
		u = u * 10 + (uint64_t)(p[i] - '0');
	if (i == len) {
		double v = (double)u;
		return neg ? -v : v;
	}
	char num[ESCAN_MAX_NUMBER + 1];
	memcpy(num, p, len);
	num[len] = '\0';
	return strtod(num, NULL);
}

/* What a top-level value is, for the two members read. */
enum escan_kind { ESCAN_OTHER = 0, ESCAN_NUMBER, ESCAN_TRUE, ESCAN_FALSE };

/* One scalar or an opening bracket at s->p (whitespace skipped). */
static bool escan_value_start(struct escan *s, enum escan_kind *kind)
{
	const uint8_t *str;
	size_t len;

	*kind = ESCAN_OTHER;
	switch (*s->p) {
	case '"': return escan_string(s, &str, &len);
	case 't': *kind = ESCAN_TRUE; return escan_literal(s, "true", 4);
	case 'f': *kind = ESCAN_FALSE; return escan_literal(s, "false", 5);
	case 'n': return escan_literal(s, "null", 4);
	default:
		*kind = ESCAN_NUMBER;
		return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && escan_number(s);
	}
}

/* Which of the two members a top-level key names: its bytes must be
 * plain (an escape or a NUL would need cJSON's decoding to compare). */
static bool escan_key(const uint8_t *k, size_t n, int *which)
{
	*which = 0;
	if (memchr(k, '\\', n) || memchr(k, '\0', n))
		return false;
	if (n == 10 && memcmp(k, "max_tokens", 10) == 0)
		*which = 1;
	else if (n == 10 && memcmp(k, "ignore_eos", 10) == 0)
		*which = 2;
	return true;
}

enum dbk_escan_result dbk_estimate_scan(const uint8_t *text, size_t n, double *max_tokens,
                                        bool *ignore_eos)
{
	if (!text) /* before text + n: no arithmetic on a null pointer */
		return DBK_ESCAN_UNSURE;
	struct escan s = { text, text + n };
	uint64_t objects = 0; /* bit d: level d + 1 is an object */
	unsigned depth = 0;
	int member = 0; /* the top-level member whose value comes next */
	const uint8_t *mt = NULL, *mt_end = NULL;
	enum escan_kind mt_kind = ESCAN_OTHER, eos_kind = ESCAN_OTHER;

	escan_ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return DBK_ESCAN_UNSURE;
	/* Each turn: s.p at a value (want_key false) or, inside an object,
	 * at a member's key (want_key true). */
	bool want_key = false;
	for (;;) {
		if (want_key) {
			const uint8_t *k;
			size_t klen;

			escan_ws(&s);
			if (s.p >= s.end || *s.p != '"' || !escan_string(&s, &k, &klen))
				return DBK_ESCAN_UNSURE;
			if (depth == 1 && !escan_key(k, klen, &member))
				return DBK_ESCAN_UNSURE;
			escan_ws(&s);
			if (s.p >= s.end || *s.p != ':')
				return DBK_ESCAN_UNSURE;
			s.p++;
			want_key = false;
		}
		escan_ws(&s);
		if (s.p >= s.end)
			return DBK_ESCAN_UNSURE;
		if (*s.p == '{' || *s.p == '[') {
			if (depth == ESCAN_MAX_DEPTH)
				return DBK_ESCAN_UNSURE;
			bool obj = *s.p == '{';
			objects = obj ? objects | (1ull << depth) : objects & ~(1ull << depth);
			depth++;
			s.p++;
			if (depth == 2 && member == 1)
				mt_kind = ESCAN_OTHER;
			if (depth == 2 && member == 2)
				eos_kind = ESCAN_OTHER;
			member = 0;
			escan_ws(&s);
			if (s.p < s.end && *s.p == (obj ? '}' : ']')) {
				s.p++;
				depth--;
			} else {
				want_key = obj;
				continue;
			}
		} else {
			const uint8_t *v = s.p;
			enum escan_kind kind;

			if (!escan_value_start(&s, &kind))
				return DBK_ESCAN_UNSURE;
			if (member == 1) {
				mt_kind = kind;
				mt = v;
				mt_end = s.p;
			} else if (member == 2) {
				eos_kind = kind;
			}
			member = 0;
		}
		/* After a value: a comma, or the end of its container(s). */
		for (;;) {
			if (depth == 0)
				goto done;
			escan_ws(&s);
			if (s.p >= s.end)
				return DBK_ESCAN_UNSURE;
			bool obj = (objects >> (depth - 1)) & 1;
			if (*s.p == ',') {
				s.p++;
				want_key = obj;
				break;
			}
			if (*s.p != (obj ? '}' : ']'))
				return DBK_ESCAN_UNSURE;
			s.p++;
			depth--;
		}
	}
done:
	/* cJSON stops right after the object; estimate.c allows only
	 * whitespace after it. */
	escan_ws(&s);
	if (s.p < s.end)
		return DBK_ESCAN_MALFORMED;
	if (mt_kind == ESCAN_NUMBER) {
		double v = escan_number_value(mt, (size_t)(mt_end - mt));
		if (isfinite(v))
			*max_tokens = v;
	}
	if (eos_kind == ESCAN_TRUE || eos_kind == ESCAN_FALSE)
		*ignore_eos = eos_kind == ESCAN_TRUE;
	return DBK_ESCAN_JSON;
}
