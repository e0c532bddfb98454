#include "runtime_lex.h"

#include "lib/log.h"
#include "runtime.h"

const char *dbk_rt_quote(char *dst, size_t cap, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && i < DBK_RT_QUOTE_MAX && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[o++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
	}
	dst[o] = '\0';
	return dst;
}

void dbk_rt_haproxy_says(const char *buf, size_t len, char *err, size_t errlen)
{
	char q[DBK_RT_QUOTE_MAX + 1];
	const char *nl = memchr(buf, '\n', len);
	size_t n = nl ? (size_t)(nl - buf) : len;

	if (n == 0)
		dbk_errf(err, errlen, "empty response");
	else
		dbk_errf(err, errlen, "haproxy says \"%s\"", dbk_rt_quote(q, sizeof(q), buf, n));
}

bool dbk_rt_parse_num(const char *s, size_t len, long max, long *out)
{
	unsigned long long v = 0; /* 18 digits always fit */

	if (len == 0 || len > 18)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > (unsigned long long)max)
		return false;
	*out = (long)v;
	return true;
}

bool dbk_rt_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > DBK_RT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '"' || c == ',')
			return false;
	}
	return true;
}

enum dbk_rt_line dbk_rt_next_line(struct dbk_rt_cursor *c, const char **l, size_t *ll)
{
	const char *p = c->p;
	bool inq = false;

	c->lineno++;
	if (p >= c->end)
		return DBK_RT_LINE_END;
	for (; p < c->end; p++) {
		if ((size_t)(p - c->p) > DBK_RT_MAX_LINE)
			return DBK_RT_LINE_LONG;
		if (c->csv && *p == '"')
			inq = !inq;
		else if (*p == '\n' && !inq)
			break;
	}
	if (p == c->end)
		return inq ? DBK_RT_LINE_BADQUOTE : DBK_RT_LINE_PARTIAL;
	*l = c->p;
	*ll = (size_t)(p - c->p);
	if (*ll && (*l)[*ll - 1] == '\r')
		(*ll)--;
	c->p = p + 1;
	return DBK_RT_LINE_OK;
}

const char *dbk_rt_line_error(enum dbk_rt_line rc)
{
	switch (rc) {
	case DBK_RT_LINE_END: return "response truncated (no closing empty line)";
	case DBK_RT_LINE_PARTIAL: return "response truncated (last line unterminated)";
	case DBK_RT_LINE_LONG: return "line longer than the limit";
	case DBK_RT_LINE_BADQUOTE: return "unterminated quoted field";
	case DBK_RT_LINE_OK: break;
	}
	return "?";
}

int dbk_rt_next_record(struct dbk_rt_cursor *c, const char **l, size_t *ll, char *err,
                       size_t errlen)
{
	/* Each round consumes one line, so the loop ends within len rounds. */
	for (;;) {
		enum dbk_rt_line rc = dbk_rt_next_line(c, l, ll);

		if (rc != DBK_RT_LINE_OK) {
			dbk_errf(err, errlen, "line %u: %s", c->lineno, dbk_rt_line_error(rc));
			return -1;
		}
		if (*ll == 0)
			return 0; /* HAProxy's end of output */
		if ((*l)[0] != '#')
			return 1;
	}
}

/* The fields of one line, as words or as CSV (RFC 4180 quoting: "" inside
 * quotes is a quote). A quoted field is returned without its quotes and
 * with its "" pairs left doubled: no field we read needs them undone, and
 * a name holding one is refused by dbk_rt_name_ok. */
struct fields {
	const char *p, *end;
	bool csv, done, bad;
};

static bool next_word(struct fields *w, const char **f, size_t *fl)
{
	while (w->p < w->end && (*w->p == ' ' || *w->p == '\t'))
		w->p++;
	if (w->p >= w->end)
		return false;
	*f = w->p;
	while (w->p < w->end && *w->p != ' ' && *w->p != '\t')
		w->p++;
	*fl = (size_t)(w->p - *f);
	return true;
}

static bool next_quoted(struct fields *c, const char **f, size_t *fl)
{
	const char *s = c->p + 1, *q = s;

	while (q < c->end) {
		if (*q == '"') {
			if (q + 1 < c->end && q[1] == '"') {
				q += 2;
				continue;
			}
			break;
		}
		q++;
	}
	if (q >= c->end || (q + 1 < c->end && q[1] != ',')) {
		c->bad = true;
		c->done = true;
		return false;
	}
	*f = s;
	*fl = (size_t)(q - s);
	if (q + 1 >= c->end)
		c->done = true;
	else
		c->p = q + 2;
	return true;
}

static bool next_field(struct fields *c, const char **f, size_t *fl)
{
	if (!c->csv)
		return next_word(c, f, fl);
	if (c->done)
		return false;
	if (c->p < c->end && *c->p == '"')
		return next_quoted(c, f, fl);
	const char *comma = memchr(c->p, ',', (size_t)(c->end - c->p));
	*f = c->p;
	if (!comma) {
		*fl = (size_t)(c->end - c->p);
		c->done = true;
	} else {
		*fl = (size_t)(comma - c->p);
		c->p = comma + 1;
	}
	return true;
}

int dbk_rt_header(struct dbk_rt_columns *cols, unsigned nneed, bool csv, const char *l, size_t ll,
                  char *err, size_t errlen)
{
	size_t s = 1; /* past the '#' */
	const char *f;
	size_t fl;
	long i = 0;

	while (csv && s < ll && l[s] == ' ')
		s++;
	struct fields h = { l + s, l + ll, csv, false, false };
	for (unsigned k = 0; k < cols->n; k++)
		cols->idx[k] = -1;
	while (next_field(&h, &f, &fl)) {
		for (unsigned k = 0; k < cols->n; k++)
			if (cols->idx[k] < 0 &&
			    dbk_rt_eq(f, fl, cols->names[k], strlen(cols->names[k])))
				cols->idx[k] = i;
		i++;
	}
	if (h.bad) {
		dbk_errf(err, errlen, "line 1: bad quoting in the header");
		return -1;
	}
	cols->need = 0;
	for (unsigned k = 0; k < cols->n; k++) {
		if (cols->idx[k] < 0 && k < cols->nreq) {
			dbk_errf(err, errlen, "header has no column %s", cols->names[k]);
			return -1;
		}
		if (k < nneed && cols->idx[k] + 1 > cols->need)
			cols->need = cols->idx[k] + 1;
	}
	return 0;
}

int dbk_rt_fields(const struct dbk_rt_columns *cols, const struct dbk_rt_cursor *c, const char *l,
                  size_t ll, const char **v, size_t *vl, char *err, size_t errlen)
{
	struct fields r = { l, l + ll, c->csv, false, false };
	const char *f;
	size_t fl;
	long nf = 0;

	for (unsigned k = 0; k < cols->n; k++) {
		v[k] = NULL;
		vl[k] = 0;
	}
	while (next_field(&r, &f, &fl)) {
		for (unsigned k = 0; k < cols->n; k++)
			if (cols->idx[k] == nf) {
				v[k] = f;
				vl[k] = fl;
			}
		nf++;
	}
	if (r.bad) {
		dbk_errf(err, errlen, "line %u: bad quoting", c->lineno);
		return -1;
	}
	if (nf < cols->need) {
		dbk_errf(err, errlen, "line %u: %ld fields, the header needs %ld", c->lineno, nf,
		         cols->need);
		return -1;
	}
	return 0;
}
