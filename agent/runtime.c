#include "runtime.h"
#include "lib/log.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lib/buf.h"

/* The server list is the caller's array; a cap keeps the duplicate check
 * of show stat (a bitmap on the stack) bounded. The balancer's own cap. */
#define MAX_SERVERS 4096

/* Longest piece of HAProxy's own error text quoted in err. */
#define QUOTE_MAX 80

/* Copies at most QUOTE_MAX bytes of s into a printable, NUL-terminated
 * string: HAProxy's error text ends up in our logs, which are logfmt. */
static const char *quote(char *dst, size_t cap, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && i < QUOTE_MAX && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[o++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
	}
	dst[o] = '\0';
	return dst;
}

const char *dbk_rt_state_str(enum dbk_rt_server_state s)
{
	switch (s) {
	case DBK_RT_READY: return "ready";
	case DBK_RT_DRAIN: return "drain";
	case DBK_RT_DOWN:  return "down";
	case DBK_RT_MAINT: return "maint";
	}
	return "?";
}

enum dbk_rt_server_state dbk_rt_state_from_flags(unsigned op_state, unsigned admin_state)
{
	if (admin_state & DBK_RT_ADMF_MAINT)
		return DBK_RT_MAINT;
	/* Anything but STOPPED is up for HAProxy (use-server included); an
	 * op state we do not know is not one to route to. */
	if (op_state == DBK_RT_OP_STOPPED || op_state > DBK_RT_OP_STOPPING)
		return DBK_RT_DOWN;
	/* HAProxy still honours use-server for a draining or soft-stopping
	 * server (only its own balancing skips them), so the agent must. */
	if ((admin_state & DBK_RT_ADMF_DRAIN) || op_state == DBK_RT_OP_STOPPING)
		return DBK_RT_DRAIN;
	return DBK_RT_READY;
}

static bool word_is(const char *s, size_t len, const char *w)
{
	size_t n = strlen(w);

	return len == n && memcmp(s, w, n) == 0;
}

int dbk_rt_state_from_status(const char *s, size_t len, enum dbk_rt_server_state *out)
{
	size_t w = 0;

	*out = DBK_RT_DOWN;
	if (!s)
		return -1;
	if (word_is(s, len, "no check")) {
		*out = DBK_RT_READY;
		return 0;
	}
	/* The first word carries the state; what follows is a check counter
	 * ("UP 1/3") or an origin ("MAINT (via be/s1)", "DRAIN (agent)"). */
	while (w < len && s[w] != ' ')
		w++;
	if (w < len && w + 1 == len)
		return -1;      /* a lone trailing space: not HAProxy's */
	if (word_is(s, w, "UP"))
		*out = DBK_RT_READY;
	else if (word_is(s, w, "DRAIN") || word_is(s, w, "NOLB"))
		*out = DBK_RT_DRAIN;
	else if (word_is(s, w, "DOWN"))
		*out = DBK_RT_DOWN;
	else if (word_is(s, w, "MAINT"))
		*out = DBK_RT_MAINT;
	else
		return -1;
	return 0;
}

static void recompute(struct dbk_rt_server *s)
{
	enum dbk_rt_server_state st = DBK_RT_READY;

	if (s->op_state >= 0 && s->admin_state >= 0)
		st = dbk_rt_state_from_flags((unsigned)s->op_state, (unsigned)s->admin_state);
	/* The two commands run at different instants; between them a server
	 * may have changed. The worse view wins until the next poll. */
	if (s->stat_seen)
		st = dbk_rt_state_worse(st, s->stat_state);
	s->state = st;
}

void dbk_rt_server_init(struct dbk_rt_server *s, const char *name)
{
	size_t n = name ? strlen(name) : 0;

	memset(s, 0, sizeof(*s));
	if (n > DBK_RT_NAME_MAX)
		n = DBK_RT_NAME_MAX;
	if (n)
		memcpy(s->name, name, n);
	s->name[n] = '\0';
	s->state = DBK_RT_READY;
	s->op_state = -1;
	s->admin_state = -1;
	s->stat_seen = false;
	s->stat_state = DBK_RT_READY;
	s->scur = -1;
	s->qcur = -1;
}

int dbk_rt_find(const struct dbk_rt_server *srv, unsigned n, const char *name, size_t len)
{
	if (len == 0 || len > DBK_RT_NAME_MAX)
		return -1;
	for (unsigned i = 0; i < n && i < MAX_SERVERS; i++)
		if (strnlen(srv[i].name, sizeof(srv[i].name)) == len &&
		    memcmp(srv[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

long dbk_rt_server_load(const struct dbk_rt_server *s)
{
	if (!s->stat_seen || s->scur < 0)
		return -1;
	if (s->qcur > 0 && s->scur <= LONG_MAX - s->qcur)
		return s->scur + s->qcur;
	return s->scur;
}

/* ---- lines and fields ---- */

enum line_rc {
	LINE_OK,
	LINE_END,      /* nothing left */
	LINE_PARTIAL,  /* bytes without a final newline: cut short */
	LINE_LONG,     /* longer than DBK_RT_MAX_LINE */
	LINE_BADQUOTE, /* CSV: a quote never closed */
};

struct cursor {
	const char *p, *end;
};

/* The next record, ending at a newline (outside double quotes when csv).
 * The line excludes its newline and a CR before it. */
static enum line_rc next_line(struct cursor *c, bool csv, const char **l, size_t *ll)
{
	const char *p = c->p;
	bool inq = false;

	if (p >= c->end)
		return LINE_END;
	for (; p < c->end; p++) {
		if ((size_t)(p - c->p) > DBK_RT_MAX_LINE)
			return LINE_LONG;
		if (csv && *p == '"')
			inq = !inq;
		else if (*p == '\n' && !inq)
			break;
	}
	if (p == c->end)
		return inq ? LINE_BADQUOTE : LINE_PARTIAL;
	*l = c->p;
	*ll = (size_t)(p - c->p);
	if (*ll && (*l)[*ll - 1] == '\r')
		(*ll)--;
	c->p = p + 1;
	return LINE_OK;
}

static const char *line_error(enum line_rc rc)
{
	switch (rc) {
	case LINE_END:      return "response truncated (no closing empty line)";
	case LINE_PARTIAL:  return "response truncated (last line unterminated)";
	case LINE_LONG:     return "line longer than the limit";
	case LINE_BADQUOTE: return "unterminated quoted field";
	case LINE_OK:       break;
	}
	return "?";
}

/* Space/tab separated fields, as show servers state prints them. */
struct words {
	const char *p, *end;
};

static bool next_word(struct words *w, const char **f, size_t *fl)
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

/* Comma separated fields, RFC 4180 quoting ("" inside quotes is a quote).
 * A quoted field is returned without its quotes and with its "" pairs
 * left doubled: no field we read needs them undone, and a name holding
 * one is refused by name_ok. */
struct csv {
	const char *p, *end;
	bool done;
	bool bad;
};

static bool next_csv(struct csv *c, const char **f, size_t *fl)
{
	if (c->done)
		return false;
	if (c->p < c->end && *c->p == '"') {
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

/* A decimal number of at most 18 digits, no sign, at most max. */
static bool parse_num(const char *s, size_t len, long max, long *out)
{
	unsigned long long v = 0;   /* 18 digits always fit */

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

static bool name_ok(const char *s, size_t len)
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

static bool eq(const char *s, size_t len, const char *z, size_t zlen)
{
	return len == zlen && memcmp(s, z, len) == 0;
}

/* The first line of an answer that is not the dump we asked for is
 * HAProxy's error text ("Can't find backend.", "No such proxy.",
 * "Permission denied", "Unknown command..."): worth quoting as it is. */
static void haproxy_says(const char *buf, size_t len, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	const char *nl = memchr(buf, '\n', len);
	size_t n = nl ? (size_t)(nl - buf) : len;

	if (n == 0)
		dbk_errf(err, errlen, "empty response");
	else
		dbk_errf(err, errlen, "haproxy says \"%s\"", quote(q, sizeof(q), buf, n));
}

/* ---- show servers state ---- */

/* The first SS_NREQ columns are required; the address ones are read
 * when present (every 2.6..3.x prints them). */
enum { SS_BE, SS_NAME, SS_OP, SS_ADMIN, SS_NREQ, SS_ADDR = SS_NREQ, SS_PORT, SS_NCOLS };
static const char *const ss_cols[SS_NCOLS] = {
	"be_name", "srv_name", "srv_op_state", "srv_admin_state", "srv_addr", "srv_port",
};

/* An IPv4 or IPv6 literal's characters, as HAProxy prints srv_addr. */
static bool addr_ok(const char *a, size_t n)
{
	if (n == 0 || n > DBK_RT_ADDR_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f') ||
		      (a[i] >= 'A' && a[i] <= 'F') || a[i] == '.' || a[i] == ':'))
			return false;
	return true;
}

/* Sets s's address when both columns hold one, else leaves it unknown. */
static void take_addr(struct dbk_rt_server *s, const char *a, size_t al, const char *p,
                      size_t pl)
{
	long port;

	if (!a || !p || !addr_ok(a, al) || !parse_num(p, pl, 65535, &port) || port == 0)
		return;
	memcpy(s->addr, a, al);
	s->addr[al] = '\0';
	s->port = (int)port;
}

int dbk_rt_parse_servers_state(const char *buf, size_t len, const char *backend,
                               struct dbk_rt_server *out, unsigned max, unsigned *n,
                               char *err, size_t errlen)
{
	struct cursor c;
	const char *l, *f;
	size_t ll, fl, blen;
	enum line_rc rc;
	long idx[SS_NCOLS];
	long version, need = 0;
	unsigned cnt = 0, lineno = 2;
	char q[QUOTE_MAX + 1];

	*n = 0;
	if (!buf || len == 0) {
		dbk_errf(err, errlen, "empty response");
		return -1;
	}
	if (!backend || (blen = strlen(backend)) == 0) {
		dbk_errf(err, errlen, "no backend name");
		return -1;
	}
	c.p = buf;
	c.end = buf + len;

	rc = next_line(&c, false, &l, &ll);
	if (rc != LINE_OK && buf[0] >= '0' && buf[0] <= '9') {
		dbk_errf(err, errlen, "line 1: %s", line_error(rc));
		return -1;
	}
	if (rc != LINE_OK || !parse_num(l, ll, 1000000, &version)) {
		haproxy_says(buf, len, err, errlen);
		return -1;
	}
	if (version != 1) {
		dbk_errf(err, errlen, "servers state format version %ld, only 1 is known", version);
		return -1;
	}

	rc = next_line(&c, false, &l, &ll);
	if (rc != LINE_OK) {
		dbk_errf(err, errlen, "line 2: %s", line_error(rc));
		return -1;
	}
	if (ll == 0 || l[0] != '#') {
		dbk_errf(err, errlen, "line 2: no '#' column header");
		return -1;
	}
	for (unsigned k = 0; k < SS_NCOLS; k++)
		idx[k] = -1;
	{
		struct words w = { l + 1, l + ll };
		long i = 0;

		while (next_word(&w, &f, &fl)) {
			for (unsigned k = 0; k < SS_NCOLS; k++)
				if (idx[k] < 0 && eq(f, fl, ss_cols[k], strlen(ss_cols[k])))
					idx[k] = i;
			i++;
		}
	}
	for (unsigned k = 0; k < SS_NREQ; k++) {
		if (idx[k] < 0) {
			dbk_errf(err, errlen, "header has no column %s", ss_cols[k]);
			return -1;
		}
		if (idx[k] + 1 > need)
			need = idx[k] + 1;
	}

	/* Each round consumes one line, so the loop ends within len rounds. */
	for (;;) {
		const char *v[SS_NCOLS] = { 0 };
		size_t vl[SS_NCOLS] = { 0 };
		long nf = 0, op, admin;

		lineno++;
		rc = next_line(&c, false, &l, &ll);
		if (rc != LINE_OK) {
			dbk_errf(err, errlen, "line %u: %s", lineno, line_error(rc));
			return -1;
		}
		if (ll == 0)
			break;          /* HAProxy's end of output */
		if (l[0] == '#')
			continue;

		struct words w = { l, l + ll };
		while (next_word(&w, &f, &fl)) {
			for (unsigned k = 0; k < SS_NCOLS; k++)
				if (idx[k] == nf) {
					v[k] = f;
					vl[k] = fl;
				}
			nf++;
		}
		if (nf < need) {
			dbk_errf(err, errlen, "line %u: %ld fields, the header needs %ld",
			       lineno, nf, need);
			return -1;
		}
		if (!eq(v[SS_BE], vl[SS_BE], backend, blen))
			continue;
		if (!name_ok(v[SS_NAME], vl[SS_NAME])) {
			dbk_errf(err, errlen, "line %u: bad server name \"%s\"", lineno,
			       quote(q, sizeof(q), v[SS_NAME], vl[SS_NAME]));
			return -1;
		}
		if (!parse_num(v[SS_OP], vl[SS_OP], DBK_RT_OP_STOPPING, &op) ||
		    !parse_num(v[SS_ADMIN], vl[SS_ADMIN], 0xffff, &admin)) {
			dbk_errf(err, errlen, "line %u: bad srv_op_state or srv_admin_state", lineno);
			return -1;
		}
		if (dbk_rt_find(out, cnt, v[SS_NAME], vl[SS_NAME]) >= 0) {
			dbk_errf(err, errlen, "line %u: server \"%s\" listed twice", lineno,
			       quote(q, sizeof(q), v[SS_NAME], vl[SS_NAME]));
			return -1;
		}
		if (cnt >= max || cnt >= MAX_SERVERS) {
			dbk_errf(err, errlen, "more than %u servers", max < MAX_SERVERS ? max : MAX_SERVERS);
			return -1;
		}

		struct dbk_rt_server *s = &out[cnt++];
		char name[DBK_RT_NAME_MAX + 1];

		memcpy(name, v[SS_NAME], vl[SS_NAME]);
		name[vl[SS_NAME]] = '\0';
		dbk_rt_server_init(s, name);
		s->op_state = (int)op;
		s->admin_state = (int)admin;
		take_addr(s, v[SS_ADDR], vl[SS_ADDR], v[SS_PORT], vl[SS_PORT]);
		recompute(s);
	}
	*n = cnt;
	return 0;
}

/* ---- show stat ---- */

enum { ST_PX, ST_SV, ST_SCUR, ST_STATUS, ST_QCUR, ST_TYPE, ST_NCOLS };
static const char *const st_cols[ST_NCOLS] = {
	"pxname", "svname", "scur", "status", "qcur", "type",
};
#define ST_REQUIRED 4   /* the first four; qcur and type are used if present */

/* show stat's "type" column: 2 is a server (0 frontend, 1 backend,
 * 3 listener). */
#define STAT_TYPE_SERVER 2

/* One pass over the records. The first (apply false) checks everything
 * and writes nothing; the second applies what the first accepted, so that
 * a bad response leaves the caller's list as it was. */
static int stat_pass(const char *buf, size_t len, const char *backend, size_t blen,
                     struct dbk_rt_server *srv, unsigned n, bool apply,
                     struct dbk_rt_stat_result *res, char *err, size_t errlen)
{
	struct cursor c = { buf, buf + len };
	const char *l, *f;
	size_t ll, fl;
	enum line_rc rc;
	long idx[ST_NCOLS];
	long need = 0;
	unsigned lineno = 1;
	unsigned char seen[MAX_SERVERS / 8];
	char q[QUOTE_MAX + 1];

	memset(res, 0, sizeof(*res));
	memset(seen, 0, sizeof(seen));

	rc = next_line(&c, true, &l, &ll);
	if (rc != LINE_OK && buf[0] == '#') {
		dbk_errf(err, errlen, "line 1: %s", line_error(rc));
		return -1;
	}
	if (rc != LINE_OK || ll < 2 || l[0] != '#') {
		haproxy_says(buf, len, err, errlen);
		return -1;
	}
	for (unsigned k = 0; k < ST_NCOLS; k++)
		idx[k] = -1;
	{
		size_t s = 1;

		while (s < ll && l[s] == ' ')
			s++;
		struct csv h = { l + s, l + ll, false, false };
		long i = 0;

		while (next_csv(&h, &f, &fl)) {
			for (unsigned k = 0; k < ST_NCOLS; k++)
				if (idx[k] < 0 && eq(f, fl, st_cols[k], strlen(st_cols[k])))
					idx[k] = i;
			i++;
		}
		if (h.bad) {
			dbk_errf(err, errlen, "line 1: bad quoting in the header");
			return -1;
		}
	}
	for (unsigned k = 0; k < ST_NCOLS; k++) {
		if (idx[k] < 0 && k < ST_REQUIRED) {
			dbk_errf(err, errlen, "header has no column %s", st_cols[k]);
			return -1;
		}
		if (idx[k] + 1 > need)
			need = idx[k] + 1;
	}

	if (apply) {
		for (unsigned i = 0; i < n; i++) {
			srv[i].stat_seen = false;
			srv[i].stat_state = DBK_RT_READY;
			srv[i].scur = -1;
			srv[i].qcur = -1;
		}
	}

	/* Each round consumes one record, so the loop ends within len rounds. */
	for (;;) {
		const char *v[ST_NCOLS] = { 0 };
		size_t vl[ST_NCOLS] = { 0 };
		long nf = 0, scur, qcur = -1, type;
		enum dbk_rt_server_state st;

		lineno++;
		rc = next_line(&c, true, &l, &ll);
		if (rc != LINE_OK) {
			dbk_errf(err, errlen, "line %u: %s", lineno, line_error(rc));
			return -1;
		}
		if (ll == 0)
			break;          /* HAProxy's end of output */
		if (l[0] == '#')
			continue;

		struct csv r = { l, l + ll, false, false };
		while (next_csv(&r, &f, &fl)) {
			for (unsigned k = 0; k < ST_NCOLS; k++)
				if (idx[k] == nf) {
					v[k] = f;
					vl[k] = fl;
				}
			nf++;
		}
		if (r.bad) {
			dbk_errf(err, errlen, "line %u: bad quoting", lineno);
			return -1;
		}
		if (nf < need) {
			dbk_errf(err, errlen, "line %u: %ld fields, the header needs %ld",
			       lineno, nf, need);
			return -1;
		}
		if (!eq(v[ST_PX], vl[ST_PX], backend, blen))
			continue;
		if (idx[ST_TYPE] >= 0 && vl[ST_TYPE] > 0) {
			if (!parse_num(v[ST_TYPE], vl[ST_TYPE], 1000, &type)) {
				dbk_errf(err, errlen, "line %u: bad type", lineno);
				return -1;
			}
			if (type != STAT_TYPE_SERVER)
				continue;
		} else if (eq(v[ST_SV], vl[ST_SV], "FRONTEND", 8) ||
		           eq(v[ST_SV], vl[ST_SV], "BACKEND", 7)) {
			continue;
		}
		if (!name_ok(v[ST_SV], vl[ST_SV])) {
			dbk_errf(err, errlen, "line %u: bad server name \"%s\"", lineno,
			       quote(q, sizeof(q), v[ST_SV], vl[ST_SV]));
			return -1;
		}
		if (!parse_num(v[ST_SCUR], vl[ST_SCUR], LONG_MAX, &scur)) {
			dbk_errf(err, errlen, "line %u: bad scur", lineno);
			return -1;
		}
		if (idx[ST_QCUR] >= 0 && vl[ST_QCUR] > 0 &&
		    !parse_num(v[ST_QCUR], vl[ST_QCUR], LONG_MAX, &qcur)) {
			dbk_errf(err, errlen, "line %u: bad qcur", lineno);
			return -1;
		}
		if (dbk_rt_state_from_status(v[ST_STATUS], vl[ST_STATUS], &st) < 0)
			res->unknown_status++;

		int i = dbk_rt_find(srv, n, v[ST_SV], vl[ST_SV]);
		if (i < 0) {
			res->unknown_names++;
			continue;
		}
		if (seen[i / 8] & (1u << (i % 8))) {
			dbk_errf(err, errlen, "line %u: server \"%s\" listed twice", lineno,
			       quote(q, sizeof(q), v[ST_SV], vl[ST_SV]));
			return -1;
		}
		seen[i / 8] |= (unsigned char)(1u << (i % 8));
		res->matched++;
		if (apply) {
			srv[i].stat_seen = true;
			srv[i].stat_state = st;
			srv[i].scur = scur;
			srv[i].qcur = qcur;
		}
	}
	if (apply)
		for (unsigned i = 0; i < n; i++)
			recompute(&srv[i]);
	return 0;
}

int dbk_rt_parse_stat(const char *buf, size_t len, const char *backend,
                      struct dbk_rt_server *srv, unsigned n,
                      struct dbk_rt_stat_result *res, char *err, size_t errlen)
{
	struct dbk_rt_stat_result r;
	size_t blen;

	if (!res)
		res = &r;
	memset(res, 0, sizeof(*res));
	if (!buf || len == 0) {
		dbk_errf(err, errlen, "empty response");
		return -1;
	}
	if (!backend || (blen = strlen(backend)) == 0) {
		dbk_errf(err, errlen, "no backend name");
		return -1;
	}
	if (n > MAX_SERVERS) {
		dbk_errf(err, errlen, "more than %u servers", MAX_SERVERS);
		return -1;
	}
	if (stat_pass(buf, len, backend, blen, srv, n, false, res, err, errlen) < 0)
		return -1;
	return stat_pass(buf, len, backend, blen, srv, n, true, res, err, errlen);
}

/* ---- reconciliation ---- */

void dbk_rt_reconcile_init(struct dbk_rt_reconcile *r)
{
	r->streak = 0;
	r->max_haproxy = 0;
	r->min_excess = 0;
}

unsigned dbk_rt_reconcile_step(struct dbk_rt_reconcile *r, unsigned k,
                               unsigned ours, long haproxy)
{
	long long excess, by_max, take;

	if (k == 0)
		k = DBK_RT_RECONCILE_K;
	if (haproxy < 0 || (long long)ours <= (long long)haproxy) {
		dbk_rt_reconcile_init(r);
		return 0;
	}
	excess = (long long)ours - haproxy;
	if (r->streak == 0) {
		r->max_haproxy = haproxy;
		r->min_excess = excess;
	} else {
		if (haproxy > r->max_haproxy)
			r->max_haproxy = haproxy;
		if (excess < r->min_excess)
			r->min_excess = excess;
	}
	r->streak++;
	if (r->streak < k)
		return 0;

	by_max = (long long)ours - r->max_haproxy;
	take = by_max < r->min_excess ? by_max : r->min_excess;
	dbk_rt_reconcile_init(r);
	return take > 0 ? (unsigned)take : 0;
}
