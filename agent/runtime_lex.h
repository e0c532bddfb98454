/* The runtime API parsers' lexer (runtime.c's only): records and fields
 * of HAProxy's CLI output, bounded by (buffer, length) like the parsers.
 *
 *   show servers state: space-separated words, a "# col col ..." header;
 *   show stat:          CSV with RFC 4180 quoting, a "# col,col,..." header.
 *
 * Both dumps end with an empty line; a column is found by its name in the
 * header, never by its position (see runtime.h). */
#ifndef DBK_RUNTIME_LEX_H
#define DBK_RUNTIME_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Longest piece of HAProxy's own text quoted in err. */
#define DBK_RT_QUOTE_MAX 80

/* Copies at most DBK_RT_QUOTE_MAX bytes of s into dst (cap bytes) as a
 * printable, NUL-terminated string: HAProxy's text ends up in our logs,
 * which are logfmt. Returns dst. */
const char *dbk_rt_quote(char *dst, size_t cap, const char *s, size_t len);

/* The first line of an answer that is not the dump we asked for is
 * HAProxy's error text ("Can't find backend.", "No such proxy.",
 * "Permission denied", "Unknown command..."): quoted into err as it is. */
void dbk_rt_haproxy_says(const char *buf, size_t len, char *err, size_t errlen);

/* A decimal number of at most 18 digits, no sign, at most max. */
bool dbk_rt_parse_num(const char *s, size_t len, long max, long *out);

/* A server name we keep: 1..DBK_RT_NAME_MAX printable bytes, none of
 * space, '"' or ','. */
bool dbk_rt_name_ok(const char *s, size_t len);

static inline bool dbk_rt_eq(const char *s, size_t len, const char *z, size_t zlen)
{
	return len == zlen && (len == 0 || memcmp(s, z, len) == 0);
}

enum dbk_rt_line {
	DBK_RT_LINE_OK,
	DBK_RT_LINE_END,      /* nothing left */
	DBK_RT_LINE_PARTIAL,  /* bytes without a final newline: cut short */
	DBK_RT_LINE_LONG,     /* longer than DBK_RT_MAX_LINE */
	DBK_RT_LINE_BADQUOTE, /* CSV: a quote never closed */
};

/* Reads a dump: csv chooses show stat's fields over show servers state's
 * words, and lets a quoted field hold a newline. */
struct dbk_rt_cursor {
	const char *p, *end;
	bool csv;
	unsigned lineno; /* of the line last read */
};

/* The next line, without its newline and a CR before it. */
enum dbk_rt_line dbk_rt_next_line(struct dbk_rt_cursor *c, const char **l, size_t *ll);
const char *dbk_rt_line_error(enum dbk_rt_line rc);

/* The next data record after the header: 1 with the record in l/ll, 0 at
 * the dump's closing empty line, -1 with "line N: reason" in err when the
 * dump ends without it. '#' comment lines are skipped. */
int dbk_rt_next_record(struct dbk_rt_cursor *c, const char **l, size_t *ll, char *err,
                       size_t errlen);

#define DBK_RT_MAX_COLS 8

/* The columns a parser reads, by name; the first nreq are required. */
struct dbk_rt_columns {
	const char *const *names;
	unsigned n, nreq;
	long idx[DBK_RT_MAX_COLS]; /* position in the header, or -1 */
	long need;                 /* fields a record must have */
};

/* Finds cols' names in the header line l (after its '#'); need counts
 * the columns up to the last one found of the first nneed. Returns 0, or
 * -1 with a reason in err (bad quoting, a required column missing). */
int dbk_rt_header(struct dbk_rt_columns *cols, unsigned nneed, bool csv, const char *l, size_t ll,
                  char *err, size_t errlen);

/* Splits record l into v[k]/vl[k], the field of column k (NULL/0 when the
 * record is shorter). Returns 0, or -1 with "line N: reason" in err for
 * bad quoting or fewer fields than need. */
int dbk_rt_fields(const struct dbk_rt_columns *cols, const struct dbk_rt_cursor *c, const char *l,
                  size_t ll, const char **v, size_t *vl, char *err, size_t errlen);

#endif
