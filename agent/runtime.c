#include "runtime.h"
#include "lib/log.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtime_lex.h"
#include "lib/bounds.h"

const char *dbk_rt_state_str(enum dbk_rt_server_state s)
{
	switch (s) {
	case DBK_RT_READY: return "ready";
	case DBK_RT_DRAIN: return "drain";
	case DBK_RT_DOWN: return "down";
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
	return dbk_rt_eq(s, len, w, strlen(w));
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
		return -1; /* a lone trailing space: not HAProxy's */
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
	s->weight = -1;
}

int dbk_rt_find(const struct dbk_rt_server *srv, unsigned n, const char *name, size_t len)
{
	if (len == 0 || len > DBK_RT_NAME_MAX)
		return -1;
	for (unsigned i = 0; i < n && i < DBK_MAX_SERVERS; i++)
		if (strnlen(srv[i].name, sizeof(srv[i].name)) == len &&
		    memcmp(srv[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

enum dbk_rt_server_state dbk_rt_server_state(const struct dbk_rt_server *s)
{
	return s->weight == 0 ? dbk_rt_state_worse(s->state, DBK_RT_DRAIN) : s->state;
}

long dbk_rt_server_load(const struct dbk_rt_server *s)
{
	if (!s->stat_seen || s->scur < 0)
		return -1;
	if (s->qcur > 0 && s->scur <= LONG_MAX - s->qcur)
		return s->scur + s->qcur;
	return s->scur;
}

/* What both parsers refuse before reading anything. */
static int check_args(const char *buf, size_t len, const char *backend, char *err, size_t errlen)
{
	if (!buf || len == 0) {
		dbk_errf(err, errlen, "empty response");
		return -1;
	}
	if (!backend || !*backend) {
		dbk_errf(err, errlen, "no backend name");
		return -1;
	}
	return 0;
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
static void take_addr(struct dbk_rt_server *s, const char *a, size_t al, const char *p, size_t pl)
{
	long port;

	if (!a || !p || !addr_ok(a, al) || !dbk_rt_parse_num(p, pl, 65535, &port) || port == 0)
		return;
	memcpy(s->addr, a, al);
	s->addr[al] = '\0';
	s->port = (int)port;
}

/* Fills out[cnt] from one line of the backend's: 0, or -1 with err. */
static int ss_server(const char *const *v, const size_t *vl, unsigned lineno,
                     struct dbk_rt_server *out, unsigned cnt, unsigned max, char *err,
                     size_t errlen)
{
	char q[DBK_RT_QUOTE_MAX + 1], name[DBK_RT_NAME_MAX + 1];
	long op, admin;

	if (!dbk_rt_name_ok(v[SS_NAME], vl[SS_NAME])) {
		dbk_errf(err, errlen, "line %u: bad server name \"%s\"", lineno,
		         dbk_rt_quote(q, sizeof(q), v[SS_NAME], vl[SS_NAME]));
		return -1;
	}
	if (!dbk_rt_parse_num(v[SS_OP], vl[SS_OP], DBK_RT_OP_STOPPING, &op) ||
	    !dbk_rt_parse_num(v[SS_ADMIN], vl[SS_ADMIN], 0xffff, &admin)) {
		dbk_errf(err, errlen, "line %u: bad srv_op_state or srv_admin_state", lineno);
		return -1;
	}
	if (dbk_rt_find(out, cnt, v[SS_NAME], vl[SS_NAME]) >= 0) {
		dbk_errf(err, errlen, "line %u: server \"%s\" listed twice", lineno,
		         dbk_rt_quote(q, sizeof(q), v[SS_NAME], vl[SS_NAME]));
		return -1;
	}
	if (cnt >= max || cnt >= DBK_MAX_SERVERS) {
		dbk_errf(err, errlen, "more than %u servers",
		         max < DBK_MAX_SERVERS ? max : DBK_MAX_SERVERS);
		return -1;
	}
	struct dbk_rt_server *s = &out[cnt];
	memcpy(name, v[SS_NAME], vl[SS_NAME]);
	name[vl[SS_NAME]] = '\0';
	dbk_rt_server_init(s, name);
	s->op_state = (int)op;
	s->admin_state = (int)admin;
	take_addr(s, v[SS_ADDR], vl[SS_ADDR], v[SS_PORT], vl[SS_PORT]);
	recompute(s);
	return 0;
}

/* The version line and the column header. */
static int ss_head(const char *buf, size_t len, struct dbk_rt_cursor *c,
                   struct dbk_rt_columns *cols, char *err, size_t errlen)
{
	const char *l;
	size_t ll;
	long version;
	enum dbk_rt_line rc = dbk_rt_next_line(c, &l, &ll);

	if (rc != DBK_RT_LINE_OK && buf[0] >= '0' && buf[0] <= '9') {
		dbk_errf(err, errlen, "line 1: %s", dbk_rt_line_error(rc));
		return -1;
	}
	if (rc != DBK_RT_LINE_OK || !dbk_rt_parse_num(l, ll, 1000000, &version)) {
		dbk_rt_haproxy_says(buf, len, err, errlen);
		return -1;
	}
	if (version != 1) {
		dbk_errf(err, errlen, "servers state format version %ld, only 1 is known", version);
		return -1;
	}
	rc = dbk_rt_next_line(c, &l, &ll);
	if (rc != DBK_RT_LINE_OK) {
		dbk_errf(err, errlen, "line 2: %s", dbk_rt_line_error(rc));
		return -1;
	}
	if (ll == 0 || l[0] != '#') {
		dbk_errf(err, errlen, "line 2: no '#' column header");
		return -1;
	}
	/* A line may stop before the address columns. */
	return dbk_rt_header(cols, SS_NREQ, false, l, ll, err, errlen);
}

int dbk_rt_parse_servers_state(const char *buf, size_t len, const char *backend,
                               struct dbk_rt_server *out, unsigned max, unsigned *n, char *err,
                               size_t errlen)
{
	struct dbk_rt_cursor c = { buf, NULL, false, 0 };
	struct dbk_rt_columns cols = { ss_cols, SS_NCOLS, SS_NREQ, { 0 }, 0 };
	const char *l, *v[SS_NCOLS];
	size_t ll, vl[SS_NCOLS];
	unsigned cnt = 0;
	int more;

	*n = 0;
	if (check_args(buf, len, backend, err, errlen) < 0)
		return -1;
	c.end = buf + len; /* buf is not NULL now */
	if (ss_head(buf, len, &c, &cols, err, errlen) < 0)
		return -1;
	while ((more = dbk_rt_next_record(&c, &l, &ll, err, errlen)) > 0) {
		if (dbk_rt_fields(&cols, &c, l, ll, v, vl, err, errlen) < 0)
			return -1;
		if (!dbk_rt_eq(v[SS_BE], vl[SS_BE], backend, strlen(backend)))
			continue;
		if (ss_server(v, vl, c.lineno, out, cnt, max, err, errlen) < 0)
			return -1;
		cnt++;
	}
	if (more < 0)
		return -1;
	*n = cnt;
	return 0;
}

/* ---- show stat ---- */

enum { ST_PX, ST_SV, ST_SCUR, ST_STATUS, ST_QCUR, ST_TYPE, ST_WEIGHT, ST_NCOLS };
static const char *const st_cols[ST_NCOLS] = {
	"pxname", "svname", "scur", "status", "qcur", "type", "weight",
};
#define ST_REQUIRED 4 /* the first four; the others are used if present */
/* HAProxy's largest weight (SRV_UWGHT_MAX). */
#define ST_MAX_WEIGHT 256

/* show stat's "type" column: 2 is a server (0 frontend, 1 backend,
 * 3 listener). */
#define STAT_TYPE_SERVER 2

/* What one record of the backend says; 0 (with *i -1 for a row to skip:
 * a frontend, the backend, a server not in the list), or -1 with err. */
struct st_row {
	int i; /* index in the list */
	long scur, qcur, weight;
	enum dbk_rt_server_state st;
};

static int st_record(const struct dbk_rt_columns *cols, const char *const *v, const size_t *vl,
                     unsigned lineno, const struct dbk_rt_server *srv, unsigned n,
                     struct dbk_rt_stat_result *res, struct st_row *row, char *err, size_t errlen)
{
	char q[DBK_RT_QUOTE_MAX + 1];
	long type;

	row->i = -1;
	row->qcur = -1;
	row->weight = -1;
	if (cols->idx[ST_TYPE] >= 0 && vl[ST_TYPE] > 0) {
		if (!dbk_rt_parse_num(v[ST_TYPE], vl[ST_TYPE], 1000, &type)) {
			dbk_errf(err, errlen, "line %u: bad type", lineno);
			return -1;
		}
		if (type != STAT_TYPE_SERVER)
			return 0;
	} else if (dbk_rt_eq(v[ST_SV], vl[ST_SV], "FRONTEND", 8) ||
	           dbk_rt_eq(v[ST_SV], vl[ST_SV], "BACKEND", 7)) {
		return 0;
	}
	if (!dbk_rt_name_ok(v[ST_SV], vl[ST_SV])) {
		dbk_errf(err, errlen, "line %u: bad server name \"%s\"", lineno,
		         dbk_rt_quote(q, sizeof(q), v[ST_SV], vl[ST_SV]));
		return -1;
	}
	if (!dbk_rt_parse_num(v[ST_SCUR], vl[ST_SCUR], LONG_MAX, &row->scur)) {
		dbk_errf(err, errlen, "line %u: bad scur", lineno);
		return -1;
	}
	if (cols->idx[ST_QCUR] >= 0 && vl[ST_QCUR] > 0 &&
	    !dbk_rt_parse_num(v[ST_QCUR], vl[ST_QCUR], LONG_MAX, &row->qcur)) {
		dbk_errf(err, errlen, "line %u: bad qcur", lineno);
		return -1;
	}
	if (cols->idx[ST_WEIGHT] >= 0 && vl[ST_WEIGHT] > 0 &&
	    !dbk_rt_parse_num(v[ST_WEIGHT], vl[ST_WEIGHT], ST_MAX_WEIGHT, &row->weight)) {
		dbk_errf(err, errlen, "line %u: bad weight", lineno);
		return -1;
	}
	if (dbk_rt_state_from_status(v[ST_STATUS], vl[ST_STATUS], &row->st) < 0)
		res->unknown_status++;
	row->i = dbk_rt_find(srv, n, v[ST_SV], vl[ST_SV]);
	if (row->i < 0)
		res->unknown_names++;
	return 0;
}

/* One pass over the records. The first (apply false) checks everything
 * and writes nothing; the second applies what the first accepted, so that
 * a bad response leaves the caller's list as it was. */
static int stat_pass(const char *buf, size_t len, const char *backend, struct dbk_rt_server *srv,
                     unsigned n, bool apply, struct dbk_rt_stat_result *res, char *err,
                     size_t errlen)
{
	struct dbk_rt_cursor c = { buf, buf + len, true, 0 };
	struct dbk_rt_columns cols = { st_cols, ST_NCOLS, ST_REQUIRED, { 0 }, 0 };
	const char *l, *v[ST_NCOLS];
	size_t ll, vl[ST_NCOLS];
	unsigned char seen[DBK_MAX_SERVERS / 8];
	char q[DBK_RT_QUOTE_MAX + 1];
	struct st_row row;
	int more;

	memset(res, 0, sizeof(*res));
	memset(seen, 0, sizeof(seen));
	enum dbk_rt_line rc = dbk_rt_next_line(&c, &l, &ll);
	if (rc != DBK_RT_LINE_OK && buf[0] == '#') {
		dbk_errf(err, errlen, "line 1: %s", dbk_rt_line_error(rc));
		return -1;
	}
	if (rc != DBK_RT_LINE_OK || ll < 2 || l[0] != '#') {
		dbk_rt_haproxy_says(buf, len, err, errlen);
		return -1;
	}
	if (dbk_rt_header(&cols, ST_NCOLS, true, l, ll, err, errlen) < 0)
		return -1;
	for (unsigned i = 0; apply && i < n; i++) {
		srv[i].stat_seen = false;
		srv[i].stat_state = DBK_RT_READY;
		srv[i].scur = -1;
		srv[i].qcur = -1;
		srv[i].weight = -1;
	}
	while ((more = dbk_rt_next_record(&c, &l, &ll, err, errlen)) > 0) {
		if (dbk_rt_fields(&cols, &c, l, ll, v, vl, err, errlen) < 0)
			return -1;
		if (!dbk_rt_eq(v[ST_PX], vl[ST_PX], backend, strlen(backend)))
			continue;
		if (st_record(&cols, v, vl, c.lineno, srv, n, res, &row, err, errlen) < 0)
			return -1;
		if (row.i < 0)
			continue;
		if (seen[row.i / 8] & (1u << (row.i % 8))) {
			dbk_errf(err, errlen, "line %u: server \"%s\" listed twice", c.lineno,
			         dbk_rt_quote(q, sizeof(q), v[ST_SV], vl[ST_SV]));
			return -1;
		}
		seen[row.i / 8] |= (unsigned char)(1u << (row.i % 8));
		res->matched++;
		if (apply) {
			srv[row.i].stat_seen = true;
			srv[row.i].stat_state = row.st;
			srv[row.i].scur = row.scur;
			srv[row.i].qcur = row.qcur;
			srv[row.i].weight = row.weight;
		}
	}
	if (more < 0)
		return -1;
	for (unsigned i = 0; apply && i < n; i++)
		recompute(&srv[i]);
	return 0;
}

int dbk_rt_parse_stat(const char *buf, size_t len, const char *backend, struct dbk_rt_server *srv,
                      unsigned n, struct dbk_rt_stat_result *res, char *err, size_t errlen)
{
	struct dbk_rt_stat_result r;

	if (!res)
		res = &r;
	memset(res, 0, sizeof(*res));
	if (check_args(buf, len, backend, err, errlen) < 0)
		return -1;
	if (n > DBK_MAX_SERVERS) {
		dbk_errf(err, errlen, "more than %u servers", DBK_MAX_SERVERS);
		return -1;
	}
	if (stat_pass(buf, len, backend, srv, n, false, res, err, errlen) < 0)
		return -1;
	return stat_pass(buf, len, backend, srv, n, true, res, err, errlen);
}
