/* Fuzzes the runtime API parsers (agent/runtime.h): the outputs of
 * "show servers state <be>" and "show stat <be> 4 -1", status texts,
 * state flags and the lease reconciliation.
 *
 * Input: one parameter byte h, then the text.
 *   h & 3:        0 servers state; 1 show stat against a fixed server
 *                 list; 2 both, the text split at its first NUL byte
 *                 (servers state, then show stat against its result);
 *                 3 status text, flags and reconciliation
 *   (h >> 2) & 3: backend name: be, vllm, be2, b
 *   h & 0x10:     small error buffer (8 bytes); h & 0x20: none (NULL)
 *   h & 0x40:     show stat without a result struct (res NULL)
 *
 * Checked:
 * - return values are 0 or -1; on -1 the count is 0, the caller's list
 *   is untouched (show stat) and err is a NUL-terminated reason;
 * - on 0: names valid (non-empty, <= 64, printable, no ',' '"' space),
 *   unique, found in the text; state derived from the flags and status
 *   as runtime.h says; counters consistent with the list;
 * - "accepted only when complete": every strict prefix of the response
 *   (up to its closing empty line) is refused, and the response alone
 *   (without what follows its empty line) gives the same result;
 * - the max bound: max = n works, max = n - 1 is refused;
 * - applying the same show stat twice gives the same list;
 * - dbk_rt_state_from_status, dbk_rt_state_from_flags,
 *   dbk_rt_server_load follow runtime.h, dbk_acct_reconcile_step
 *   accounting.h (it judges what the parsers read). */
#include <limits.h>

#include "fuzz.h"
#include "accounting.h"
#include "runtime.h"
#include "runtime_members.h"

#define MAXS 64
#define ERRLEN 160

static const char *const backends[4] = { "be", "vllm", "be2", "b" };

/* ---- models ---- */

static enum dbk_rt_server_state model_flags(unsigned op, unsigned admin)
{
	if (admin & (0x01 | 0x02 | 0x20))
		return DBK_RT_MAINT;
	if (op == 0 || op > 3)
		return DBK_RT_DOWN;
	if ((admin & (0x08 | 0x10)) || op == 3)
		return DBK_RT_DRAIN;
	return DBK_RT_READY;
}

static int model_status(const char *s, size_t len, enum dbk_rt_server_state *out)
{
	size_t w = 0;

	*out = DBK_RT_DOWN;
	if (len == 8 && memcmp(s, "no check", 8) == 0) {
		*out = DBK_RT_READY;
		return 0;
	}
	while (w < len && s[w] != ' ')
		w++;
	if (w + 1 == len) /* the first space is the last byte */
		return -1;
#define IS(lit) (w == strlen(lit) && memcmp(s, lit, w) == 0)
	if (IS("UP"))
		*out = DBK_RT_READY;
	else if (IS("DRAIN") || IS("NOLB"))
		*out = DBK_RT_DRAIN;
	else if (IS("DOWN"))
		*out = DBK_RT_DOWN;
	else if (IS("MAINT"))
		*out = DBK_RT_MAINT;
	else
		return -1;
#undef IS
	return 0;
}

static bool name_valid(const char *s)
{
	size_t n = strnlen(s, DBK_RT_NAME_MAX + 1);

	if (n == 0 || n > DBK_RT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '"' || c == ',')
			return false;
	}
	return true;
}

/* The end of a response: the byte after its closing empty line (the
 * first empty line after the two header lines for servers state, after
 * the header line for show stat; CSV quotes may hold newlines). 0 when
 * there is none. */
static size_t response_end(const char *buf, size_t len, unsigned header_lines, bool csv)
{
	size_t pos = 0;
	unsigned lineno = 0;

	while (pos < len) {
		size_t s = pos;
		bool inq = false;

		while (pos < len && !(buf[pos] == '\n' && !inq)) {
			if (csv && buf[pos] == '"')
				inq = !inq;
			pos++;
		}
		if (pos == len)
			return 0;
		size_t l = pos - s;
		if (l && buf[pos - 1] == '\r')
			l--;
		pos++;
		lineno++;
		if (lineno > header_lines && l == 0)
			return pos;
	}
	return 0;
}

static void check_err(int rc, const char *err, size_t errlen)
{
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == -1 && err && errlen) {
		FUZZ_CHECK(memchr(err, '\0', errlen) != NULL);
		FUZZ_CHECK(errlen == 1 || err[0] != '\0');
	}
}

/* ---- the slots' plan (runtime_members.h) ---- */

/* Slots holding every other server of the dump, last first, plus a
 * stranger, against the dump: every server gets its own slot or none
 * (only when every slot was taken), the slots then name exactly the
 * servers placed, and a second plan changes nothing. */
static void check_plan(const struct dbk_rt_server *f, unsigned n)
{
	enum { NSL = 8 };
	struct dbk_rt_slot sl[NSL];
	int at[MAXS];
	enum dbk_rt_change ch[NSL];
	struct dbk_rt_plan_counts c;
	unsigned k = 0, placed = 0;

	memset(sl, 0, sizeof(sl));
	/* Not a name HAProxy's dump can hold (not printable). */
	snprintf(sl[k++].name, sizeof(sl[0].name), "%s", "\x01stranger");
	for (unsigned i = n; i-- > 0 && k<NSL / 2; i -= i> 0)
		memcpy(&sl[k++], f[i].name, sizeof(f[i].name));
	dbk_rt_plan(sl, NSL, f, n, at, ch, &c);
	for (unsigned i = 0; i < n; i++) {
		if (at[i] < 0)
			continue;
		FUZZ_CHECK(at[i] < NSL && ch[at[i]] != DBK_RT_SLOT_GONE &&
		           ch[at[i]] != DBK_RT_SLOT_FREE);
		for (unsigned j = 0; j < i; j++)
			FUZZ_CHECK(at[j] != at[i]);
		placed++;
	}
	FUZZ_CHECK(placed + c.no_room == n);
	FUZZ_CHECK(ch[0] == DBK_RT_SLOT_GONE);
	dbk_rt_plan_apply(sl, NSL, f, n, at, ch);
	for (unsigned i = 0; i < n; i++)
		FUZZ_CHECK(at[i] < 0 || strcmp(sl[at[i]].name, f[i].name) == 0);
	unsigned named = 0;
	for (unsigned j = 0; j < NSL; j++)
		named += sl[j].name[0] != '\0';
	FUZZ_CHECK(named == placed);
	unsigned left = c.no_room;
	dbk_rt_plan(sl, NSL, f, n, at, ch, &c);
	FUZZ_CHECK(c.gone == 0 && c.moved == 0 && (left || c.added == 0));
}

/* ---- show servers state ---- */

static unsigned do_servers_state(const char *buf, size_t len, const char *be, char *err,
                                 size_t errlen, struct dbk_rt_server *out)
{
	unsigned n = 12345;
	int rc;

	memset(out, 0xa5, sizeof(*out) * MAXS);
	rc = dbk_rt_parse_servers_state(buf, len, be, out, MAXS, &n, err, errlen);
	check_err(rc, err, errlen);
	if (rc < 0) {
		FUZZ_CHECK(n == 0);
		return 0;
	}
	FUZZ_CHECK(n <= MAXS);
	for (unsigned i = 0; i < n; i++) {
		const struct dbk_rt_server *s = &out[i];

		FUZZ_CHECK(name_valid(s->name) && fuzz_contains(buf, len, s->name));
		FUZZ_CHECK(dbk_rt_find(out, n, s->name, strlen(s->name)) == (int)i);
		FUZZ_CHECK(s->op_state >= 0 && s->op_state <= 3 && s->weight == -1);
		FUZZ_CHECK(s->admin_state >= 0 && s->admin_state <= 0xffff);
		FUZZ_CHECK(s->state ==
		           model_flags((unsigned)s->op_state, (unsigned)s->admin_state));
		FUZZ_CHECK(!s->stat_seen && s->scur == -1 && s->qcur == -1);
		FUZZ_CHECK(dbk_rt_server_load(s) == -1);
	}

	/* Complete or refused: cut anywhere before the closing empty line,
	 * the response is refused; alone, it gives the same list. */
	size_t end = response_end(buf, len, 2, false);
	static struct dbk_rt_server again[MAXS];
	unsigned n2;

	FUZZ_CHECK(end > 0 && end <= len);
	size_t cuts[3] = { end - 1, end / 2, (unsigned char)buf[0] * end / 256 };
	for (int k = 0; k < 3; k++) {
		n2 = 77;
		FUZZ_CHECK(dbk_rt_parse_servers_state(buf, cuts[k], be, again, MAXS, &n2, NULL,
		                                      0) == -1);
		FUZZ_CHECK(n2 == 0);
	}
	FUZZ_CHECK(dbk_rt_parse_servers_state(buf, end, be, again, MAXS, &n2, NULL, 0) == 0);
	FUZZ_CHECK(n2 == n && memcmp(again, out, sizeof(*out) * n) == 0);
	/* The max bound. */
	FUZZ_CHECK(dbk_rt_parse_servers_state(buf, len, be, again, n, &n2, NULL, 0) == 0 &&
	           n2 == n);
	if (n > 0)
		FUZZ_CHECK(dbk_rt_parse_servers_state(buf, len, be, again, n - 1, &n2, NULL, 0) ==
		           -1);
	check_plan(out, n);
	return n;
}

/* ---- show stat ---- */

static void check_stat_result(const struct dbk_rt_server *before, const struct dbk_rt_server *srv,
                              unsigned n, const struct dbk_rt_stat_result *res)
{
	unsigned seen = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct dbk_rt_server *s = &srv[i], *b = &before[i];
		enum dbk_rt_server_state st = DBK_RT_READY;

		FUZZ_CHECK(memcmp(s->name, b->name, sizeof(s->name)) == 0);
		FUZZ_CHECK(s->op_state == b->op_state && s->admin_state == b->admin_state);
		if (s->op_state >= 0 && s->admin_state >= 0)
			st = model_flags((unsigned)s->op_state, (unsigned)s->admin_state);
		if (s->stat_seen) {
			seen++;
			FUZZ_CHECK(s->scur >= 0 && s->qcur >= -1);
			st = dbk_rt_state_worse(st, s->stat_state);
			long load = dbk_rt_server_load(s);
			FUZZ_CHECK(load >= s->scur);
			if (s->qcur > 0 && s->scur <= LONG_MAX - s->qcur)
				FUZZ_CHECK(load == s->scur + s->qcur);
		} else {
			FUZZ_CHECK(s->scur == -1 && s->qcur == -1);
			FUZZ_CHECK(dbk_rt_server_load(s) == -1);
		}
		FUZZ_CHECK(s->state == st);
	}
	if (res)
		FUZZ_CHECK(res->matched == seen);
}

static void do_stat(const char *buf, size_t len, const char *be, char *err, size_t errlen,
                    bool with_res, struct dbk_rt_server *srv, unsigned n)
{
	static struct dbk_rt_server before[MAXS], again[MAXS];
	struct dbk_rt_stat_result res, res2;
	int rc;

	memcpy(before, srv, sizeof(*srv) * n);
	memset(&res, 0xa5, sizeof(res));
	rc = dbk_rt_parse_stat(buf, len, be, srv, n, with_res ? &res : NULL, err, errlen);
	check_err(rc, err, errlen);
	if (rc < 0) {
		FUZZ_CHECK(memcmp(before, srv, sizeof(*srv) * n) == 0);
		return;
	}
	check_stat_result(before, srv, n, with_res ? &res : NULL);

	/* Applied twice, the same list. */
	memcpy(again, srv, sizeof(*srv) * n);
	FUZZ_CHECK(dbk_rt_parse_stat(buf, len, be, again, n, &res2, NULL, 0) == 0);
	FUZZ_CHECK(memcmp(again, srv, sizeof(*srv) * n) == 0);
	if (with_res)
		FUZZ_CHECK(memcmp(&res, &res2, sizeof(res)) == 0);

	/* Complete or refused. */
	size_t end = response_end(buf, len, 1, true);
	FUZZ_CHECK(end > 0 && end <= len);
	size_t cuts[3] = { end - 1, end / 2, (unsigned char)buf[0] * end / 256 };
	for (int k = 0; k < 3; k++) {
		memcpy(again, before, sizeof(*srv) * n);
		FUZZ_CHECK(dbk_rt_parse_stat(buf, cuts[k], be, again, n, NULL, NULL, 0) == -1);
		FUZZ_CHECK(memcmp(again, before, sizeof(*srv) * n) == 0);
	}
	memcpy(again, before, sizeof(*srv) * n);
	FUZZ_CHECK(dbk_rt_parse_stat(buf, end, be, again, n, &res2, NULL, 0) == 0);
	FUZZ_CHECK(memcmp(again, srv, sizeof(*srv) * n) == 0);
	if (with_res)
		FUZZ_CHECK(memcmp(&res, &res2, sizeof(res)) == 0);
}

/* What an earlier show stat left: some servers seen, in a state worse
 * than their flags, so that a poll without them must bring them back to
 * what the flags say. */
static void earlier_poll(struct dbk_rt_server *srv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (i % 3 == 2)
			continue;
		srv[i].stat_seen = true;
		srv[i].stat_state = i % 3 ? DBK_RT_MAINT : DBK_RT_DRAIN;
		srv[i].scur = (long)i;
		srv[i].qcur = i % 2 ? -1 : 2;
		srv[i].state = dbk_rt_state_worse(srv[i].state, srv[i].stat_state);
	}
}

/* A list as a servers-state dump of 2.6 would leave it, plus servers
 * nothing is known about. */
static unsigned fixed_list(struct dbk_rt_server *srv)
{
	static const struct {
		const char *name;
		int op, admin;
	} l[] = {
		{ "s0", 2, 0 },    { "s1", 0, 1 },    { "s2", 2, 8 },      { "s3", 3, 0 },
		{ "vllm0", 2, 0 }, { "vllm1", 0, 0 }, { "vllm2", -1, -1 }, { "vllm3", 1, 0x40 },
	};
	unsigned n = sizeof(l) / sizeof(l[0]);

	for (unsigned i = 0; i < n; i++) {
		dbk_rt_server_init(&srv[i], l[i].name);
		srv[i].op_state = l[i].op;
		srv[i].admin_state = l[i].admin;
		if (l[i].op >= 0)
			srv[i].state = model_flags((unsigned)l[i].op, (unsigned)l[i].admin);
	}
	return n;
}

/* ---- status texts, flags, reconciliation ---- */

static void do_misc(const uint8_t *data, size_t size, uint8_t h)
{
	enum dbk_rt_server_state st, want;
	int rc = dbk_rt_state_from_status((const char *)data, size, &st);

	FUZZ_CHECK(rc == model_status((const char *)data, size, &want) && st == want);
	FUZZ_CHECK(strcmp(dbk_rt_state_str(st), "?") != 0);
	FUZZ_CHECK(dbk_rt_state_from_status(NULL, 0, &st) == -1 && st == DBK_RT_DOWN);

	struct fuzz_in in = { data, size };
	/* Flags. */
	unsigned op = fuzz_u8(&in), admin = (unsigned)fuzz_u8(&in) << 8 | fuzz_u8(&in);
	FUZZ_CHECK(dbk_rt_state_from_flags(op, admin) == model_flags(op, admin));
	FUZZ_CHECK(dbk_rt_state_from_flags(op % 5, admin & 0x7f) ==
	           model_flags(op % 5, admin & 0x7f));

	/* server_init truncates long names. */
	struct dbk_rt_server s;
	char name[100];
	size_t nl = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, nl);
	name[nl] = '\0';
	dbk_rt_server_init(&s, name);
	FUZZ_CHECK(strnlen(s.name, sizeof(s.name)) ==
	           (strlen(name) < DBK_RT_NAME_MAX ? strlen(name) : DBK_RT_NAME_MAX));
	FUZZ_CHECK(s.state == DBK_RT_READY && s.op_state == -1 && s.admin_state == -1 &&
	           !s.stat_seen && s.scur == -1 && s.qcur == -1);
	FUZZ_CHECK(dbk_rt_find(&s, 1, "", 0) == -1);

	/* Reconciliation against the model of accounting.h's text. */
	struct dbk_acct_reconcile r;
	unsigned k = (h >> 4) % 5, kk = k ? k : DBK_ACCT_RECONCILE_K;
	unsigned streak = 0;
	long max_h = 0;
	long long min_ex = 0;

	dbk_acct_reconcile_init(&r);
	while (in.n >= 4) {
		unsigned ours = (unsigned)fuzz_u8(&in) << 8 | fuzz_u8(&in);
		long hp = (int16_t)((uint16_t)fuzz_u8(&in) << 8 | fuzz_u8(&in));
		unsigned take = dbk_acct_reconcile_step(&r, k, ours, hp);
		unsigned want_take = 0;

		if (hp < 0 || (long long)ours <= hp) {
			streak = 0;
		} else {
			long long ex = (long long)ours - hp;

			if (streak == 0 || hp > max_h)
				max_h = hp;
			if (streak == 0 || ex < min_ex)
				min_ex = ex;
			if (++streak >= kk) {
				long long t = (long long)ours - max_h;

				if (min_ex < t)
					t = min_ex;
				want_take = t > 0 ? (unsigned)t : 0;
				streak = 0;
			}
		}
		FUZZ_CHECK(take == want_take);
		FUZZ_CHECK(take <= ours &&
		           (take == 0 || (hp >= 0 && (long long)take <= (long long)ours - hp)));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dbk_rt_server srv[MAXS];
	struct fuzz_in in = { data, size };
	uint8_t h = fuzz_u8(&in);
	const char *be = backends[(h >> 2) & 3];
	const char *buf = (const char *)in.p;
	size_t len = in.n;
	char errbuf[ERRLEN];
	char *err = errbuf;
	size_t errlen = sizeof(errbuf);
	unsigned n;

	if (h & 0x10)
		errlen = 8;
	if (h & 0x20) {
		err = NULL;
		errlen = 0;
	}
	memset(errbuf, 'x', sizeof(errbuf));

	switch (h & 3) {
	case 0: do_servers_state(buf, len, be, err, errlen, srv); break;
	case 1:
		n = fixed_list(srv);
		earlier_poll(srv, n);
		do_stat(buf, len, be, err, errlen, !(h & 0x40), srv, n);
		break;
	case 2: {
		const char *nul = memchr(buf, '\0', len);
		size_t l1 = nul ? (size_t)(nul - buf) : len;

		n = do_servers_state(buf, l1, be, err, errlen, srv);
		if (!n)
			n = fixed_list(srv);
		earlier_poll(srv, n);
		if (nul)
			do_stat(nul + 1, len - l1 - 1, be, err, errlen, !(h & 0x40), srv, n);
		break;
	}
	case 3: do_misc(in.p, in.n, h); break;
	}
	return 0;
}
