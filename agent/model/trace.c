#include "model/trace.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/hash.h"
#include "lib/log.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

enum dbk_trace_format dbk_trace_detect(const char *path, const char *data, size_t n)
{
	size_t i;

	if (path && (ends_with(path, ".jsonl") || ends_with(path, ".json")))
		return DBK_TRACE_MOONCAKE;
	if (path && ends_with(path, ".csv"))
		return DBK_TRACE_AZURE;
	/* Content: a JSON object per line, or a CSV header naming the
	 * Azure columns. A UTF-8 byte order mark is skipped. */
	i = (n >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) ? 3 : 0;
	while (i < n && isspace((unsigned char)data[i]))
		i++;
	if (i < n && data[i] == '{')
		return DBK_TRACE_MOONCAKE;
	if (n - i >= 9 && strncasecmp(data + i, "TIMESTAMP", 9) == 0)
		return DBK_TRACE_AZURE;
	return DBK_TRACE_UNKNOWN;
}

const char *dbk_trace_format_name(enum dbk_trace_format f)
{
	switch (f) {
	case DBK_TRACE_MOONCAKE: return "mooncake";
	case DBK_TRACE_AZURE: return "azure";
	default: return "unknown";
	}
}

void dbk_trace_free(struct dbk_trace *t)
{
	free(t->req);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc;
	void *np;

	if (need <= *cap)
		return true;
	nc = *cap ? *cap : 256;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return false;
		nc *= 2;
	}
	np = realloc(*p, nc * elem);
	if (!np)
		return false;
	*p = np;
	*cap = nc;
	return true;
}

struct dbk_trace_req *dbk_trace_push(struct dbk_trace *t)
{
	struct dbk_trace_req *r;

	if (!grow((void **)&t->req, &t->cap, t->n + 1, sizeof(*t->req)))
		return NULL;
	r = &t->req[t->n++];
	memset(r, 0, sizeof(*r));
	return r;
}

/* Zero-length rows are sent as one token; see dbk_trace.n_raised. */
static void raise_zero(struct dbk_trace *t, struct dbk_trace_req *r)
{
	if (r->input == 0 || r->output == 0)
		t->n_raised++;
	if (r->input == 0)
		r->input = 1;
	if (r->output == 0)
		r->output = 1;
}

/* ---- Mooncake JSONL. ---- */

static bool json_uint(const cJSON *o, const char *key, double max, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!isfinite(d) || d < 0 || d > max || d != floor(d))
		return false;
	*out = d;
	return true;
}

/* A row's "hash_ids" (absent or null: none) appended to t->hash for r. */
static int hash_ids(const cJSON *ids, struct dbk_trace *t, struct dbk_trace_req *r, unsigned line,
                    char *err, size_t errn)
{
	const cJSON *id;

	if (!ids || cJSON_IsNull(ids))
		return 0;
	if (!cJSON_IsArray(ids))
		return dbk_errf(err, errn,
		                "line %u: \"hash_ids\" must be an "
		                "array",
		                line),
		       -1;
	cJSON_ArrayForEach(id, ids)
	{
		double d = cJSON_IsNumber(id) ? id->valuedouble : -1;

		/* Beyond 2^53 a double no longer names one id. */
		if (!(d >= 0 && d <= 9007199254740992.0 && d == floor(d)))
			return dbk_errf(err, errn,
			                "line %u: \"hash_ids\" must "
			                "hold integers >= 0",
			                line),
			       -1;
		if (t->n_hash >= UINT32_MAX ||
		    !grow((void **)&t->hash, &t->cap_hash, t->n_hash + 1, sizeof(*t->hash)))
			return dbk_errf(err, errn, "line %u: too many hash ids", line), -1;
		t->hash[t->n_hash++] = (uint64_t)d;
		r->n_hash++;
	}
	return 0;
}

static const char *const lengths[] = { "input_length", "output_length" };

static int mooncake_line(const char *p, size_t n, unsigned line, struct dbk_trace *t, char *err,
                         size_t errn)
{
	const char *end = NULL;
	const cJSON *ts;
	struct dbk_trace_req *r;
	cJSON *root;
	double in, out;
	int rc = -1;

	root = cJSON_ParseWithLengthOpts(p, n, &end, false);
	if (!root)
		return dbk_errf(err, errn, "line %u: not valid JSON (at byte %td)", line,
		                end ? end - p + 1 : (ptrdiff_t)0),
		       -1;
	while (end && end < p + n && isspace((unsigned char)*end))
		end++;
	if (end != p + n) {
		dbk_errf(err, errn, "line %u: text after the JSON object", line);
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		dbk_errf(err, errn, "line %u: expected a JSON object", line);
		goto out;
	}
	ts = cJSON_GetObjectItemCaseSensitive(root, "timestamp");
	if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || ts->valuedouble < 0 ||
	    ts->valuedouble > 1e15) {
		dbk_errf(err, errn,
		         "line %u: \"timestamp\" must be a number of "
		         "milliseconds >= 0",
		         line);
		goto out;
	}
	for (int k = 0; k < 2; k++)
		if (!json_uint(root, lengths[k], DBK_TRACE_MAX_TOKENS, k ? &out : &in)) {
			dbk_errf(err, errn, "line %u: \"%s\" must be an integer in 0..%u", line,
			         lengths[k], DBK_TRACE_MAX_TOKENS);
			goto out;
		}
	r = dbk_trace_push(t);
	if (!r) {
		dbk_errf(err, errn, "line %u: out of memory", line);
		goto out;
	}
	r->t = ts->valuedouble / 1000.0;
	r->input = (uint32_t)in;
	r->output = (uint32_t)out;
	r->line = line;
	r->hash_off = (uint32_t)t->n_hash;
	raise_zero(t, r);
	rc = hash_ids(cJSON_GetObjectItemCaseSensitive(root, "hash_ids"), t, r, line, err, errn);
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- Azure CSV. ---- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* H. Hinnant's algorithm: proleptic Gregorian, no time zone, no
	 * libc (timegm is neither standard nor free of locale state). */
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, size_t n, size_t at, size_t k, unsigned *v)
{
	size_t i;

	if (at + k > n)
		return false;
	*v = 0;
	for (i = 0; i < k; i++) {
		if (!isdigit((unsigned char)s[at + i]))
			return false;
		*v = *v * 10 + (unsigned)(s[at + i] - '0');
	}
	return true;
}

bool dbk_trace_parse_wallclock(const char *s, size_t n, int64_t *sec, double *frac)
{
	static const unsigned mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	unsigned y, mo, d, h, mi, se;
	size_t i;
	double f = 0, scale = 0.1;

	if (!digits(s, n, 0, 4, &y) || n < 19 || s[4] != '-' || !digits(s, n, 5, 2, &mo) ||
	    s[7] != '-' || !digits(s, n, 8, 2, &d) || (s[10] != ' ' && s[10] != 'T') ||
	    !digits(s, n, 11, 2, &h) || s[13] != ':' || !digits(s, n, 14, 2, &mi) || s[16] != ':' ||
	    !digits(s, n, 17, 2, &se))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 59)
		return false;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return false;
	i = 19;
	if (i < n && s[i] == '.') {
		size_t start = ++i;

		while (i < n && isdigit((unsigned char)s[i])) {
			f += (s[i] - '0') * scale;
			scale /= 10;
			i++;
		}
		if (i == start || i - start > 9)
			return false;
	}
	if (i < n && s[i] == 'Z')
		i++;
	if (i != n)
		return false;
	*sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	*frac = f;
	return true;
}

static void trim(const char **p, size_t *n)
{
	while (*n && isspace((unsigned char)**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*p)[*n - 1]))
		(*n)--;
	/* Plain quoting only: the Azure files never quote, but a
	 * spreadsheet round trip does. */
	if (*n >= 2 && (*p)[0] == '"' && (*p)[*n - 1] == '"') {
		(*p)++;
		*n -= 2;
	}
}

#define CSV_MAX_COLS 32

/* Splits one CSV line on commas; false if more than CSV_MAX_COLS. */
static bool csv_split(const char *p, size_t n, const char **f, size_t *fl, size_t *nf)
{
	size_t i, start = 0;

	*nf = 0;
	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != ',')
			continue;
		if (*nf == CSV_MAX_COLS)
			return false;
		f[*nf] = p + start;
		fl[*nf] = i - start;
		trim(&f[*nf], &fl[*nf]);
		(*nf)++;
		start = i + 1;
	}
	return true;
}

static bool csv_uint(const char *p, size_t n, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
		if (v > max)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

struct azure_cols {
	size_t n, ts, ctx, gen;
	bool have_base;
	int64_t base_sec;
	double base_frac;
};

static int azure_header(const char *p, size_t n, struct azure_cols *c, char *err, size_t errn)
{
	const char *f[CSV_MAX_COLS];
	size_t fl[CSV_MAX_COLS], nf, i;
	bool ts = false, ctx = false, gen = false;

	if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
		p += 3;
		n -= 3;
	}
	if (!csv_split(p, n, f, fl, &nf))
		return dbk_errf(err, errn, "line 1: too many CSV columns"), -1;
	for (i = 0; i < nf; i++) {
		if (fl[i] == 9 && strncasecmp(f[i], "TIMESTAMP", 9) == 0) {
			c->ts = i;
			ts = true;
		} else if (fl[i] == 13 && strncasecmp(f[i], "ContextTokens", 13) == 0) {
			c->ctx = i;
			ctx = true;
		} else if (fl[i] == 15 && strncasecmp(f[i], "GeneratedTokens", 15) == 0) {
			c->gen = i;
			gen = true;
		}
	}
	if (!ts || !ctx || !gen)
		return dbk_errf(err, errn,
		                "line 1: CSV header must name the "
		                "columns TIMESTAMP, ContextTokens and "
		                "GeneratedTokens"),
		       -1;
	c->n = nf;
	return 0;
}

static int azure_line(const char *p, size_t n, unsigned line, struct azure_cols *c,
                      struct dbk_trace *t, char *err, size_t errn)
{
	const char *f[CSV_MAX_COLS];
	size_t fl[CSV_MAX_COLS], nf;
	struct dbk_trace_req *r;
	uint32_t in, out;
	int64_t sec;
	double frac;

	if (!csv_split(p, n, f, fl, &nf) || nf != c->n)
		return dbk_errf(err, errn, "line %u: expected %zu CSV fields", line, c->n), -1;
	if (!dbk_trace_parse_wallclock(f[c->ts], fl[c->ts], &sec, &frac))
		return dbk_errf(err, errn,
		                "line %u: TIMESTAMP must look like "
		                "\"2023-11-16 18:15:46.6805900\"",
		                line),
		       -1;
	for (int k = 0; k < 2; k++) {
		size_t i = k ? c->gen : c->ctx;

		if (!csv_uint(f[i], fl[i], DBK_TRACE_MAX_TOKENS, k ? &out : &in))
			return dbk_errf(err, errn, "line %u: %s must be an integer in 0..%u", line,
			                k ? "GeneratedTokens" : "ContextTokens",
			                DBK_TRACE_MAX_TOKENS),
			       -1;
	}
	if (!c->have_base) {
		c->have_base = true;
		c->base_sec = sec;
		c->base_frac = frac;
	}
	r = dbk_trace_push(t);
	if (!r)
		return dbk_errf(err, errn, "line %u: out of memory", line), -1;
	/* Relative to the first row in two parts: whole seconds since 1970
	 * would leave only about 0.2 us of precision in a double. */
	r->t = (double)(sec - c->base_sec) + (frac - c->base_frac);
	r->input = in;
	r->output = out;
	r->line = line;
	raise_zero(t, r);
	return 0;
}

/* ---- Common. ---- */

static int cmp_req(const void *a, const void *b)
{
	const struct dbk_trace_req *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	/* Source line as tie-break keeps the sort stable. */
	return x->line < y->line ? -1 : x->line > y->line;
}

static void rebase_and_sort(struct dbk_trace *t)
{
	double t0;
	bool sorted = true;
	size_t i;

	if (t->n == 0)
		return;
	t0 = t->req[0].t;
	for (i = 1; i < t->n; i++) {
		if (t->req[i].t < t->req[i - 1].t)
			sorted = false;
		if (t->req[i].t < t0)
			t0 = t->req[i].t;
	}
	if (!sorted)
		qsort(t->req, t->n, sizeof(*t->req), cmp_req);
	for (i = 0; i < t->n; i++)
		t->req[i].t -= t0;
}

int dbk_trace_parse(enum dbk_trace_format f, const char *data, size_t n, struct dbk_trace *out,
                    char *err, size_t errn)
{
	struct azure_cols cols;
	size_t pos = 0;
	unsigned line = 0;
	bool header = (f == DBK_TRACE_AZURE);

	if (f != DBK_TRACE_MOONCAKE && f != DBK_TRACE_AZURE)
		return dbk_errf(err, errn, "unknown trace format"), -1;
	memset(&cols, 0, sizeof(cols));
	while (pos < n) {
		const char *p = data + pos, *nl = memchr(p, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - p) : n - pos, k;
		int rc;

		pos += len + (nl ? 1 : 0);
		line++;
		if (len && p[len - 1] == '\r')
			len--;
		for (k = 0; k < len && isspace((unsigned char)p[k]); k++)
			;
		if (k == len)
			continue;
		if (line == UINT32_MAX)
			return dbk_errf(err, errn, "too many lines"), -1;
		if (header) {
			if (azure_header(p, len, &cols, err, errn) != 0)
				return -1;
			header = false;
			continue;
		}
		if (f == DBK_TRACE_MOONCAKE)
			rc = mooncake_line(p, len, line, out, err, errn);
		else
			rc = azure_line(p, len, line, &cols, out, err, errn);
		if (rc != 0)
			return -1;
	}
	if (out->n == 0)
		return dbk_errf(err, errn, "no requests in the trace"), -1;
	rebase_and_sort(out);
	if (dbk_trace_sessions(out) != 0)
		return dbk_errf(err, errn, "out of memory"), -1;
	return 0;
}

size_t dbk_trace_spread(struct dbk_trace *t, uint64_t seed)
{
	size_t moved = 0, i = 0;
	double gap = 0;

	while (i < t->n) {
		size_t j = i;
		while (j < t->n && t->req[j].t == t->req[i].t)
			j++;
		if (j < t->n)
			gap = t->req[j].t - t->req[i].t;
		if (gap <= 0)
			break; /* the only distinct arrival */
		if (j - i < 2) {
			i = j; /* a single arrival says nothing of a tick */
			continue;
		}
		/* The j - i sorted uniforms without sorting: the partial sums
		 * of j - i + 1 exponential draws over their total. */
		double sum = 0, total = 0, base = t->req[i].t;
		uint64_t st0 = seed ^ dbk_hash_fmix64((uint64_t)i + 1), st = st0;
		for (size_t k = i; k <= j; k++)
			total += -log(dbk_hash_unit(&st));
		st = st0;
		for (size_t k = i; k < j; k++) {
			sum += -log(dbk_hash_unit(&st));
			t->req[k].t = base + gap * sum / total;
			moved++;
		}
		i = j;
	}
	return moved;
}

/* ---- Selection. ---- */

bool dbk_trace_clip(uint32_t *input, uint32_t *output, uint32_t max_len)
{
	bool changed = false;

	if ((uint64_t)*input + *output <= max_len)
		return false;
	if (*output > max_len - 1) {
		*output = max_len - 1;
		changed = true;
	}
	if (*input > max_len - *output) {
		*input = max_len - *output;
		changed = true;
	}
	return changed;
}

void dbk_trace_select(struct dbk_trace *t, const struct dbk_select *sel,
                      struct dbk_select_stats *st)
{
	size_t i, kept = 0;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < t->n; i++) {
		struct dbk_trace_req r = t->req[i];
		double rel = r.t - sel->start_s;

		if (sel->max_requests && kept == sel->max_requests)
			break;
		if (rel < 0)
			continue;
		if (sel->duration_s > 0 && rel >= sel->duration_s)
			break;
		if (sel->max_model_len && (uint64_t)r.input + r.output > sel->max_model_len) {
			if (sel->skip_overlong) {
				st->skipped++;
				continue;
			}
			dbk_trace_clip(&r.input, &r.output, sel->max_model_len);
			st->clipped++;
		}
		r.t = rel;
		t->req[kept++] = r;
	}
	t->n = kept;
}
