/* Unit tests of agent/runtime.[ch], the runtime API's parsers.
 *
 * The fixtures in tests/unit/fixtures/haproxy26-* are real outputs of
 * Debian's HAProxy 2.6.12, captured by fixtures/capture-haproxy.sh; the
 * 2.8/3.x shapes (columns added, moved, quoted) are derived from them
 * here. */
#include <limits.h>
#include <stdint.h>

#include "fixture.h"
#include "runtime.h"

/* ---- helpers ---- */
/* Parses a servers-state fixture of backend be; returns n or -1. */
static int state_of(const struct text *t, const char *be, struct dbk_rt_server *s, unsigned max,
                    char *err, size_t errlen)
{
	unsigned n = 77;
	int rc = dbk_rt_parse_servers_state(t->s, t->len, be, s, max, &n, err, errlen);

	if (rc < 0) {
		CHECK_EQ_U(n, 0);
		return -1;
	}
	return (int)n;
}

/* Splits a comma- or space-separated line (no quotes) into at most max
 * fields pointing into a copy. */
struct fields {
	char line[8192];
	char *f[256];
	unsigned n;
};

static void split(struct fields *fs, const char *s, size_t len, char sep)
{
	size_t l = len < sizeof(fs->line) - 1 ? len : sizeof(fs->line) - 1;
	char *p;

	memcpy(fs->line, s, l);
	fs->line[l] = '\0';
	fs->n = 0;
	p = fs->line;
	for (;;) {
		char *e = strchr(p, sep);
		if (fs->n < 256)
			fs->f[fs->n++] = p;
		if (!e)
			break;
		*e = '\0';
		p = e + 1;
	}
}

/* Rewrites text line by line: each non-empty line after the first
 * skip_lines is split on sep (after an optional "# " for header lines),
 * fields reordered by perm (perm[i] = source index of output field i,
 * -1 for an extra field whose value is extra_hdr on a header line or
 * extra_val on data lines), and joined again. Lines before skip_lines and
 * the closing empty line are copied as they are. */
static struct text permute(const struct text *in, char sep, unsigned skip_lines, const int *perm,
                           unsigned nperm, const char *extra_hdr, const char *extra_val)
{
	static char out[FIX_MAX * 2];
	size_t o = 0, pos = 0;
	unsigned lineno = 0;

	while (pos < in->len) {
		const char *l = in->s + pos;
		const char *nl = memchr(l, '\n', in->len - pos);
		size_t ll = nl ? (size_t)(nl - l) : in->len - pos;
		bool hdr = ll > 0 && l[0] == '#';
		struct fields fs;

		pos += ll + (nl ? 1 : 0);
		if (lineno++ < skip_lines || ll == 0) {
			memcpy(out + o, l, ll);
			o += ll;
			out[o++] = '\n';
			continue;
		}
		if (hdr) {
			l += 2; /* "# " */
			ll -= 2;
			memcpy(out + o, "# ", 2);
			o += 2;
		}
		split(&fs, l, ll, sep);
		for (unsigned i = 0; i < nperm; i++) {
			const char *v = perm[i] < 0
			                        ? (hdr ? extra_hdr : extra_val)
			                        : ((unsigned)perm[i] < fs.n ? fs.f[perm[i]] : "");
			size_t vl = strlen(v);
			if (i)
				out[o++] = sep;
			memcpy(out + o, v, vl);
			o += vl;
		}
		out[o++] = '\n';
	}
	return text_dup(out, o);
}

/* ---- states ---- */

static void test_state_from_flags(void)
{
	static const struct {
		unsigned op, admin;
		enum dbk_rt_server_state want;
	} t[] = {
		{ 2, 0x00, DBK_RT_READY },
		{ 1, 0x00, DBK_RT_READY }, /* slow start: up */
		{ 0, 0x00, DBK_RT_DOWN },  /* failed health check: no admin bit */
		{ 3, 0x00, DBK_RT_DRAIN }, /* NOLB (404 with disable-on-404) */
		{ 2, 0x08, DBK_RT_DRAIN }, /* set server state drain */
		{ 2, 0x10, DBK_RT_DRAIN }, /* drain inherited */
		{ 0, 0x08, DBK_RT_DOWN },  /* drained and down: DOWN wins */
		{ 0, 0x01, DBK_RT_MAINT }, /* set server state maint */
		{ 2, 0x01, DBK_RT_MAINT }, /* MAINT whatever the op state */
		{ 0, 0x02, DBK_RT_MAINT }, /* tracked server in maint */
		{ 0, 0x05, DBK_RT_MAINT }, /* "disabled" in the config */
		{ 2, 0x04, DBK_RT_READY }, /* "disabled" then "enable server" */
		{ 2, 0x20, DBK_RT_MAINT }, /* DNS resolution failed */
		{ 2, 0x40, DBK_RT_READY }, /* FQDN changed: not a maintenance */
		{ 2, 0x44, DBK_RT_READY },
		{ 2, 0x09, DBK_RT_MAINT }, /* MAINT wins over DRAIN */
		{ 3, 0x08, DBK_RT_DRAIN },
		{ 7, 0x00, DBK_RT_DOWN }, /* op state unknown: not routable */
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum dbk_rt_server_state s = dbk_rt_state_from_flags(t[i].op, t[i].admin);
		if (s != t[i].want)
			fprintf(stderr, "  op %u admin 0x%x: %s, want %s\n", t[i].op, t[i].admin,
			        dbk_rt_state_str(s), dbk_rt_state_str(t[i].want));
		CHECK(s == t[i].want);
	}
	CHECK(dbk_rt_state_worse(DBK_RT_DRAIN, DBK_RT_DOWN) == DBK_RT_DOWN);
	CHECK(dbk_rt_state_worse(DBK_RT_MAINT, DBK_RT_READY) == DBK_RT_MAINT);
	CHECK(strcmp(dbk_rt_state_str(DBK_RT_MAINT), "maint") == 0);
}

static void test_state_from_status(void)
{
	static const struct {
		const char *s;
		int rc;
		enum dbk_rt_server_state want;
	} t[] = {
		{ "UP", 0, DBK_RT_READY },
		{ "UP 1/2", 0, DBK_RT_READY }, /* going down: still up */
		{ "UP 1/100000", 0, DBK_RT_READY },
		{ "no check", 0, DBK_RT_READY },
		{ "DRAIN", 0, DBK_RT_DRAIN },
		{ "DRAIN 1/2", 0, DBK_RT_DRAIN },
		{ "DRAIN (agent)", 0, DBK_RT_DRAIN },
		{ "NOLB", 0, DBK_RT_DRAIN },
		{ "NOLB 1/2", 0, DBK_RT_DRAIN },
		{ "DOWN", 0, DBK_RT_DOWN },
		{ "DOWN 1/2", 0, DBK_RT_DOWN }, /* going up: still down */
		{ "DOWN (agent)", 0, DBK_RT_DOWN },
		{ "MAINT", 0, DBK_RT_MAINT },
		{ "MAINT (via be2/m1)", 0, DBK_RT_MAINT },
		{ "MAINT (resolution)", 0, DBK_RT_MAINT },
		{ "", -1, DBK_RT_DOWN },
		{ "up", -1, DBK_RT_DOWN },
		{ "UPS", -1, DBK_RT_DOWN },
		{ "UP ", -1, DBK_RT_DOWN },
		{ "no", -1, DBK_RT_DOWN },
		{ "no checks", -1, DBK_RT_DOWN },
		{ "OPEN", -1, DBK_RT_DOWN }, /* a frontend's */
		{ "WARMUP", -1, DBK_RT_DOWN },
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum dbk_rt_server_state s = DBK_RT_READY;
		int rc = dbk_rt_state_from_status(t[i].s, strlen(t[i].s), &s);
		if (rc != t[i].rc || s != t[i].want)
			fprintf(stderr, "  \"%s\": rc %d %s\n", t[i].s, rc, dbk_rt_state_str(s));
		CHECK(rc == t[i].rc);
		CHECK(s == t[i].want);
	}
	/* Length-bounded: the text after len is not looked at. */
	enum dbk_rt_server_state s;
	CHECK(dbk_rt_state_from_status("UPxyz", 2, &s) == 0 && s == DBK_RT_READY);
	CHECK(dbk_rt_state_from_status(NULL, 0, &s) == -1 && s == DBK_RT_DOWN);
}

/* ---- real HAProxy 2.6 output ---- */

static void check_server(const struct dbk_rt_server *s, const char *name, int op, int admin,
                         enum dbk_rt_server_state st)
{
	if (strcmp(s->name, name) != 0 || s->op_state != op || s->admin_state != admin ||
	    s->state != st)
		fprintf(stderr, "  %s: op %d admin %d %s; want %s %d %d %s\n", s->name, s->op_state,
		        s->admin_state, dbk_rt_state_str(s->state), name, op, admin,
		        dbk_rt_state_str(st));
	CHECK(strcmp(s->name, name) == 0);
	CHECK(s->op_state == op);
	CHECK(s->admin_state == admin);
	CHECK(s->state == st);
}

static void test_real_be_servers_state(void)
{
	struct dbk_rt_server s[8];
	char err[256] = "";
	struct text t;

	/* Before checks settle every checked server is up ("UP 1/2"); s0's
	 * first check had already failed. */
	t = fixture("haproxy26-be-servers-state-initial.txt");
	CHECK(state_of(&t, "be", s, 8, err, sizeof(err)) == 4);
	check_server(&s[0], "s0", 0, 0, DBK_RT_DOWN);
	check_server(&s[1], "s1", 0, 0, DBK_RT_DOWN);
	check_server(&s[2], "s2", 2, 0, DBK_RT_READY);
	check_server(&s[3], "s3", 2, 0, DBK_RT_READY);
	text_free(&t);

	/* Closed ports, s1 in maint, s2 drained: the drained server is down
	 * too, and DOWN wins. */
	t = fixture("haproxy26-be-servers-state.txt");
	CHECK(state_of(&t, "be", s, 8, err, sizeof(err)) == 4);
	check_server(&s[0], "s0", 0, 0, DBK_RT_DOWN);
	check_server(&s[1], "s1", 0, 1, DBK_RT_MAINT);
	check_server(&s[2], "s2", 0, 8, DBK_RT_DOWN);
	check_server(&s[3], "s3", 0, 0, DBK_RT_DOWN);
	/* The addresses the scraper reaches each server at. */
	CHECK(strcmp(s[0].addr, "127.0.0.1") == 0 && s[0].port == 48148);
	CHECK(strcmp(s[2].addr, "127.0.0.1") == 0 && s[2].port == 55906);
	for (int i = 0; i < 4; i++) {
		CHECK(!s[i].stat_seen);
		CHECK(s[i].scur == -1);
		CHECK(dbk_rt_server_load(&s[i]) == -1);
	}
	/* Another backend's name finds none of these lines. */
	CHECK(state_of(&t, "be2", s, 8, err, sizeof(err)) == 0);
	/* max too small. */
	CHECK(state_of(&t, "be", s, 3, err, sizeof(err)) == -1);
	CHECK(has(err, "more than 3 servers"));
	text_free(&t);
}

static void test_servers_state_addresses(void)
{
	struct dbk_rt_server s[8];
	char err[256];
	struct text t = text_of("1\n"
	                        "# be_id be_name srv_id srv_name srv_addr srv_op_state "
	                        "srv_admin_state srv_port\n"
	                        "3 vllm 1 a 10.0.0.7 2 0 8000\n"
	                        "3 vllm 2 b ::1 2 0 8001\n"
	                        "3 vllm 3 c vllm.example 2 0 8002\n"
	                        "3 vllm 4 d 10.0.0.8 2 0 0\n"
	                        "3 vllm 5 e 10.0.0.9 2 0 -\n"
	                        "\n");

	CHECK(state_of(&t, "vllm", s, 8, err, sizeof(err)) == 5);
	CHECK(strcmp(s[0].addr, "10.0.0.7") == 0 && s[0].port == 8000);
	CHECK(strcmp(s[1].addr, "::1") == 0 && s[1].port == 8001);
	/* Not an IP literal, or no port: unknown, never half-set. */
	for (int i = 2; i < 5; i++)
		CHECK(s[i].addr[0] == '\0' && s[i].port == 0);
	text_free(&t);
	/* Without the columns (never seen, but not required): unknown. */
	t = text_of("1\n# be_id be_name srv_id srv_name srv_op_state srv_admin_state\n"
	            "3 vllm 1 a 2 0\n\n");
	CHECK(state_of(&t, "vllm", s, 8, err, sizeof(err)) == 1);
	CHECK(s[0].addr[0] == '\0' && s[0].port == 0);
	text_free(&t);
}

static void test_real_be_stat(void)
{
	struct dbk_rt_server s[8];
	struct dbk_rt_stat_result res;
	char err[256] = "";
	struct text ss = fixture("haproxy26-be-servers-state.txt");
	struct text st = fixture("haproxy26-be-stat.txt");

	CHECK(state_of(&ss, "be", s, 8, err, sizeof(err)) == 4);
	CHECK(dbk_rt_parse_stat(st.s, st.len, "be", s, 4, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.matched, 4);
	CHECK_EQ_U(res.unknown_names, 0);
	CHECK_EQ_U(res.unknown_status, 0);
	for (int i = 0; i < 4; i++) {
		CHECK(s[i].stat_seen);
		CHECK(s[i].scur == 0);
		CHECK(s[i].qcur == 0);
		CHECK(dbk_rt_server_load(&s[i]) == 0);
	}
	CHECK(s[0].stat_state == DBK_RT_DOWN && s[0].state == DBK_RT_DOWN);
	CHECK(s[1].stat_state == DBK_RT_MAINT && s[1].state == DBK_RT_MAINT);
	/* Drained but down: show stat says only "DOWN"; the drain bit is
	 * visible in show servers state alone. */
	CHECK(s[2].stat_state == DBK_RT_DOWN && s[2].state == DBK_RT_DOWN);
	CHECK(s[3].stat_state == DBK_RT_DOWN);
	text_free(&st);

	/* The initial stat: "UP 1/2" (up, first check pending) is READY. */
	st = fixture("haproxy26-be-stat-initial.txt");
	struct text ssi = fixture("haproxy26-be-servers-state-initial.txt");
	CHECK(state_of(&ssi, "be", s, 8, err, sizeof(err)) == 4);
	CHECK(dbk_rt_parse_stat(st.s, st.len, "be", s, 4, &res, err, sizeof(err)) == 0);
	CHECK(s[0].state == DBK_RT_DOWN);
	CHECK(s[2].state == DBK_RT_READY && s[3].state == DBK_RT_READY);
	text_free(&st);
	text_free(&ssi);
	text_free(&ss);
}

static void test_real_be2_every_state(void)
{
	struct dbk_rt_server s[16];
	struct dbk_rt_stat_result res;
	char err[256] = "";
	struct text ss = fixture("haproxy26-be2-servers-state.txt");
	struct text st = fixture("haproxy26-be2-stat.txt");

	CHECK(state_of(&ss, "be2", s, 16, err, sizeof(err)) == 10);
	check_server(&s[0], "u0", 2, 0, DBK_RT_READY);
	check_server(&s[1], "m1", 0, 1, DBK_RT_MAINT); /* maint sets op STOPPED too */
	check_server(&s[2], "d2", 2, 8, DBK_RT_DRAIN);
	check_server(&s[3], "dd3", 0, 8, DBK_RT_DOWN);
	check_server(&s[4], "n4", 3, 0, DBK_RT_DRAIN);  /* NOLB */
	check_server(&s[5], "c5", 2, 4, DBK_RT_READY);  /* CMAINT alone */
	check_server(&s[6], "nc6", 2, 0, DBK_RT_READY); /* no check */
	check_server(&s[7], "t7", 0, 2, DBK_RT_MAINT);  /* tracks m1 */
	check_server(&s[8], "g8", 0, 0, DBK_RT_DOWN);
	check_server(&s[9], "cm9", 0, 5, DBK_RT_MAINT); /* "disabled" */

	CHECK(dbk_rt_parse_stat(st.s, st.len, "be2", s, 10, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.matched, 10);
	CHECK_EQ_U(res.unknown_status, 0);
	static const enum dbk_rt_server_state want[10] = {
		DBK_RT_READY, DBK_RT_MAINT, DBK_RT_DRAIN, DBK_RT_DOWN, DBK_RT_DRAIN,
		DBK_RT_READY, DBK_RT_READY, DBK_RT_MAINT, DBK_RT_DOWN, DBK_RT_MAINT,
	};
	for (int i = 0; i < 10; i++) {
		if (s[i].stat_state != want[i] || s[i].state != want[i])
			fprintf(stderr, "  %s: stat %s state %s\n", s[i].name,
			        dbk_rt_state_str(s[i].stat_state), dbk_rt_state_str(s[i].state));
		CHECK(s[i].stat_state == want[i]);
		CHECK(s[i].state == want[i]);
	}
	/* Three requests held on u0. */
	CHECK(s[0].scur == 3);
	CHECK(dbk_rt_server_load(&s[0]) == 3);
	CHECK(s[1].scur == 0);
	text_free(&st);
	text_free(&ss);
}

static void test_real_errors(void)
{
	struct dbk_rt_server s[4];
	char err[256] = "";
	struct text t = fixture("haproxy26-nosuch-servers-state.txt");

	CHECK(state_of(&t, "nosuch", s, 4, err, sizeof(err)) == -1);
	CHECK(has(err, "Can't find backend."));
	text_free(&t);

	t = fixture("haproxy26-nosuch-stat.txt");
	dbk_rt_server_init(&s[0], "s0");
	CHECK(dbk_rt_parse_stat(t.s, t.len, "nosuch", s, 1, NULL, err, sizeof(err)) == -1);
	CHECK(has(err, "No such proxy."));
	text_free(&t);

	/* Each parser refuses the other's output. */
	t = fixture("haproxy26-be-stat.txt");
	CHECK(state_of(&t, "be", s, 4, err, sizeof(err)) == -1);
	CHECK(has(err, "haproxy says"));
	text_free(&t);
	t = fixture("haproxy26-be-servers-state.txt");
	CHECK(dbk_rt_parse_stat(t.s, t.len, "be", s, 1, NULL, err, sizeof(err)) == -1);
	text_free(&t);

	struct text p = text_of("Permission denied\n\n");
	CHECK(state_of(&p, "be", s, 4, err, sizeof(err)) == -1);
	CHECK(strcmp(err, "haproxy says \"Permission denied\"") == 0);
	text_free(&p);
}

/* Every strict prefix of a real output lacks HAProxy's closing empty
 * line (or more) and must be refused, never half-applied. */
static void test_truncated_prefixes(void)
{
	static const char *const files[][2] = {
		{ "haproxy26-be2-servers-state.txt", "S" },
		{ "haproxy26-be2-stat.txt", "C" },
	};
	struct dbk_rt_server s[16];
	char err[256];

	for (unsigned f = 0; f < 2; f++) {
		struct text full = fixture(files[f][0]);
		unsigned ok = 0;

		for (size_t cut = 0; cut < full.len; cut++) {
			struct text t = text_dup(full.s, cut);
			int rc;

			if (files[f][1][0] == 'S') {
				unsigned n;
				rc = dbk_rt_parse_servers_state(t.s, t.len, "be2", s, 16, &n, err,
				                                sizeof(err));
			} else {
				for (int i = 0; i < 10; i++) {
					char nm[16];
					snprintf(nm, sizeof(nm), "x%d", i);
					dbk_rt_server_init(&s[i], nm);
				}
				rc = dbk_rt_parse_stat(t.s, t.len, "be2", s, 10, NULL, err,
				                       sizeof(err));
			}
			if (rc == 0)
				ok++;
			text_free(&t);
		}
		CHECK_EQ_U(ok, 0);
		text_free(&full);
	}
}

/* ---- 2.8 / 3.x shapes: columns by name ---- */

static void test_state_columns_by_name(void)
{
	struct text real = fixture("haproxy26-be2-servers-state.txt");
	struct dbk_rt_server a[16], b[16];
	char err[256] = "";

	CHECK(state_of(&real, "be2", a, 16, err, sizeof(err)) == 10);

	/* Every column reversed, and two unknown columns added in front and
	 * in the middle (as a later version might). */
	int perm[27];
	unsigned np = 0;
	perm[np++] = -1;
	for (int i = 24; i >= 0; i--) {
		perm[np++] = i;
		if (i == 12)
			perm[np++] = -1;
	}
	struct text v = permute(&real, ' ', 1, perm, np, "srv_new_col", "42");
	CHECK(state_of(&v, "be2", b, 16, err, sizeof(err)) == 10);
	for (int i = 0; i < 10; i++) {
		CHECK(strcmp(a[i].name, b[i].name) == 0);
		CHECK(a[i].op_state == b[i].op_state);
		CHECK(a[i].admin_state == b[i].admin_state);
		CHECK(a[i].state == b[i].state);
	}
	text_free(&v);

	/* Only the four columns we read, in yet another order. */
	static const int four[] = { 6, 3, 1, 5 };
	v = permute(&real, ' ', 1, four, 4, NULL, NULL);
	CHECK(state_of(&v, "be2", b, 16, err, sizeof(err)) == 10);
	CHECK(strcmp(b[4].name, "n4") == 0 && b[4].state == DBK_RT_DRAIN);
	text_free(&v);

	/* A needed column missing from the header. */
	static const int three[] = { 1, 3, 5 };
	v = permute(&real, ' ', 1, three, 3, NULL, NULL);
	CHECK(state_of(&v, "be2", b, 16, err, sizeof(err)) == -1);
	CHECK(has(err, "srv_admin_state"));
	text_free(&v);
	text_free(&real);

	/* Whole "show servers state" (every backend), comments, CRLF, tabs,
	 * runs of spaces. */
	struct text t = text_of(
	        "1\r\n"
	        "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\r\n"
	        "3 other 1 a 10.0.0.1 2 0\r\n"
	        "4 vllm 1 vllm0 10.0.0.2 2 0\r\n"
	        "# a comment line\r\n"
	        "4\tvllm\t2\tvllm1\t10.0.0.3\t2\t8\r\n"
	        "4  vllm  3  vllm2  10.0.0.4  3  0  extra fields are fine\r\n"
	        "5 vllm2 1 vllm3 10.0.0.5 0 1\r\n"
	        "\r\n");
	CHECK(state_of(&t, "vllm", b, 16, err, sizeof(err)) == 3);
	check_server(&b[0], "vllm0", 2, 0, DBK_RT_READY);
	check_server(&b[1], "vllm1", 2, 8, DBK_RT_DRAIN);
	check_server(&b[2], "vllm2", 3, 0, DBK_RT_DRAIN);
	CHECK(state_of(&t, "vllm2", b, 16, err, sizeof(err)) == 1);
	check_server(&b[0], "vllm3", 0, 1, DBK_RT_MAINT);
	text_free(&t);

	/* A backend with no servers: version and header only. */
	t = text_of("1\n# be_id be_name srv_id srv_name srv_op_state srv_admin_state\n\n");
	CHECK(state_of(&t, "empty", b, 16, err, sizeof(err)) == 0);
	text_free(&t);

	/* Whatever follows the closing empty line is not ours. */
	t = text_of("1\n# be_name srv_name srv_op_state srv_admin_state\nvllm a 2 0\n\ngarbage");
	CHECK(state_of(&t, "vllm", b, 16, err, sizeof(err)) == 1);
	text_free(&t);
}

static void test_stat_columns_by_name(void)
{
	struct text real = fixture("haproxy26-be2-stat.txt");
	struct text ss = fixture("haproxy26-be2-servers-state.txt");
	struct dbk_rt_server a[16], b[16];
	struct dbk_rt_stat_result res;
	char err[256] = "";
	int perm[140];
	unsigned np = 0;

	CHECK(state_of(&ss, "be2", a, 16, err, sizeof(err)) == 10);
	memcpy(b, a, sizeof(a));
	CHECK(dbk_rt_parse_stat(real.s, real.len, "be2", a, 10, &res, err, sizeof(err)) == 0);

	/* 129 columns (with the trailing empty one) reversed, plus new ones
	 * spread through them: a 3.x dump has more columns, in places a
	 * fixed-position parser would trip on. */
	for (int i = 128; i >= 0; i--) {
		perm[np++] = i;
		if (i % 40 == 0)
			perm[np++] = -1;
	}
	struct text v = permute(&real, ',', 0, perm, np, "sess_other", "7");
	CHECK(dbk_rt_parse_stat(v.s, v.len, "be2", b, 10, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.matched, 10);
	for (int i = 0; i < 10; i++) {
		CHECK(a[i].state == b[i].state);
		CHECK(a[i].stat_state == b[i].stat_state);
		CHECK(a[i].scur == b[i].scur);
		CHECK(a[i].qcur == b[i].qcur);
	}
	CHECK(b[0].scur == 3);
	text_free(&v);

	/* Just the columns read, shuffled; no qcur, no type. */
	static const int few[] = { 17, 1, 4, 0 }; /* status svname scur pxname */
	v = permute(&real, ',', 0, few, 4, NULL, NULL);
	memcpy(b, a, sizeof(a));
	CHECK(dbk_rt_parse_stat(v.s, v.len, "be2", b, 10, &res, err, sizeof(err)) == 0);
	CHECK(b[0].scur == 3 && b[0].qcur == -1 && dbk_rt_server_load(&b[0]) == 3);
	CHECK(b[7].state == DBK_RT_MAINT);
	text_free(&v);

	/* Without scur the dump is useless: refused. */
	static const int noscur[] = { 0, 1, 17 };
	v = permute(&real, ',', 0, noscur, 3, NULL, NULL);
	CHECK(dbk_rt_parse_stat(v.s, v.len, "be2", b, 10, &res, err, sizeof(err)) == -1);
	CHECK(has(err, "scur"));
	text_free(&v);
	text_free(&real);
	text_free(&ss);
}

/* A hand-made 3.x-like full "show stat": frontend, backend and other
 * proxies' rows, quoted fields holding commas and quotes, statuses a
 * lab rarely shows. */
static void test_stat_full_dump(void)
{
	struct dbk_rt_server s[6];
	struct dbk_rt_stat_result res;
	char err[256] = "";
	const char *names[6] = { "v0", "v1", "v2", "v3", "v4", "v5" };
	struct text t = text_of(
	        "# "
	        "pxname,svname,qcur,qmax,scur,smax,status,type,check_desc,agg_server_status,srid,\n"
	        "fe,FRONTEND,,,2,5,OPEN,0,,,,\n"
	        "vllm,v0,0,0,4,9,UP 2/3,2,\"Layer7 check passed, \"\"ok\"\"\",1,0,\n"
	        "vllm,v1,2,2,8,8,DRAIN (agent),2,,1,0,\n"
	        "vllm,v2,0,0,0,0,MAINT (resolution),2,,1,0,\n"
	        "vllm,v3,0,0,1,1,DOWN 1/2,2,\"multi\nline\",1,0,\n"
	        "vllm,v4,0,0,0,0,NOLB 1/2,2,,1,0,\n"
	        "vllm,v9,0,0,0,0,UP,2,,1,0,\n"
	        "vllm,BACKEND,2,2,13,20,UP,1,,1,,\n"
	        "other,v5,0,0,99,99,MAINT,2,,1,0,\n"
	        "\n");

	for (int i = 0; i < 6; i++)
		dbk_rt_server_init(&s[i], names[i]);
	CHECK(dbk_rt_parse_stat(t.s, t.len, "vllm", s, 6, &res, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "  err: %s\n", err);
	CHECK_EQ_U(res.matched, 5);
	CHECK_EQ_U(res.unknown_names, 1); /* v9: added at runtime */
	CHECK_EQ_U(res.unknown_status, 0);
	CHECK(s[0].state == DBK_RT_READY && s[0].scur == 4 && s[0].qcur == 0);
	CHECK(s[1].state == DBK_RT_DRAIN && s[1].scur == 8 && s[1].qcur == 2);
	CHECK(dbk_rt_server_load(&s[1]) == 10);
	CHECK(s[2].state == DBK_RT_MAINT);
	CHECK(s[3].state == DBK_RT_DOWN && s[3].scur == 1);
	CHECK(s[4].state == DBK_RT_DRAIN);
	/* v5 is only in another proxy: not seen, state from flags (none). */
	CHECK(!s[5].stat_seen && s[5].scur == -1 && s[5].state == DBK_RT_READY);
	text_free(&t);

	/* Without a type column, FRONTEND and BACKEND rows go by name. */
	t = text_of("# pxname,svname,scur,status\n"
	            "vllm,FRONTEND,1,OPEN\nvllm,v0,3,UP\nvllm,BACKEND,3,UP\n\n");
	CHECK(dbk_rt_parse_stat(t.s, t.len, "vllm", s, 6, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.matched, 1);
	CHECK_EQ_U(res.unknown_names, 0);
	CHECK(s[0].scur == 3);
	text_free(&t);

	/* An unknown status is DOWN, and counted. */
	t = text_of("# pxname,svname,scur,status\nvllm,v0,1,WARMING\n\n");
	CHECK(dbk_rt_parse_stat(t.s, t.len, "vllm", s, 6, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(res.unknown_status, 1);
	CHECK(s[0].state == DBK_RT_DOWN && s[0].scur == 1);
	text_free(&t);
}

/* The two sources together: the worse wins, and a later stat without the
 * server leaves the flags alone in charge. */
static void test_combined_sources(void)
{
	struct dbk_rt_server s[2];
	char err[256] = "";
	struct text st = text_of("1\n# be_name srv_name srv_op_state srv_admin_state\n"
	                         "b a 2 0\nb c 2 8\n\n");
	struct text down = text_of(
	        "# pxname,svname,scur,qcur,status\nb,a,2,1,DOWN\nb,c,0,0,UP\n\n");
	struct text none = text_of("# pxname,svname,scur,status\n\n");

	CHECK(state_of(&st, "b", s, 2, err, sizeof(err)) == 2);
	CHECK(s[0].state == DBK_RT_READY && s[1].state == DBK_RT_DRAIN);
	CHECK(dbk_rt_parse_stat(down.s, down.len, "b", s, 2, NULL, err, sizeof(err)) == 0);
	CHECK(s[0].state == DBK_RT_DOWN);  /* stat is worse */
	CHECK(s[1].state == DBK_RT_DRAIN); /* flags are worse */
	CHECK(dbk_rt_server_load(&s[0]) == 3);
	/* Re-polled without the servers: back to the flags, nothing stale. */
	CHECK(dbk_rt_parse_stat(none.s, none.len, "b", s, 2, NULL, err, sizeof(err)) == 0);
	CHECK(s[0].state == DBK_RT_READY && !s[0].stat_seen && s[0].scur == -1);
	CHECK(s[1].state == DBK_RT_DRAIN);
	text_free(&st);
	text_free(&down);
	text_free(&none);

	CHECK(dbk_rt_find(s, 2, "c", 1) == 1);
	CHECK(dbk_rt_find(s, 2, "cc", 2) == -1);
	CHECK(dbk_rt_find(s, 2, "c\0x", 3) == -1);
	CHECK(dbk_rt_find(s, 2, "", 0) == -1);
	struct dbk_rt_server l;
	char longname[100];
	memset(longname, 'x', 99);
	longname[99] = '\0';
	dbk_rt_server_init(&l, longname);
	CHECK(strlen(l.name) == DBK_RT_NAME_MAX);
}

/* ---- malformed input ---- */

static void test_state_malformed(void)
{
	static const struct {
		const char *in;
		const char *err;
	} t[] = {
		{ "", "empty" },
		{ "\n\n", "empty" },
		{ "1", "line 1: response truncated" }, /* no newline */
		{ "1\n", "line 2" },
		{ "2\n# be_name srv_name srv_op_state srv_admin_state\n\n", "version 2" },
		{ "-1\n# x\n\n", "haproxy says" },
		{ "1\nbe_name srv_name srv_op_state srv_admin_state\n\n", "no '#'" },
		{ "1\n# be_name srv_name srv_op_state\n\n", "srv_admin_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\n", "no closing empty line" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0\n", "no closing" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0", "unterminated" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2\n\n", "fields" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s x 0\n\n",
		  "srv_op_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 4 0\n\n",
		  "srv_op_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s -1 0\n\n",
		  "srv_op_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0x1\n\n",
		  "srv_op_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 "
		  "99999999999999999999\n\n",
		  "srv_admin_state" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0\nb s 2 0\n\n",
		  "twice" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\n"
		  "b xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 2 0\n\n",
		  "bad server name" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s\x01 2 0\n\n",
		  "bad server" },
		{ "1\n# be_name srv_name srv_op_state srv_admin_state\nb s\"q 2 0\n\n",
		  "bad server" },
	};
	struct dbk_rt_server s[4];
	char err[256];

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct text x = text_of(t[i].in);
		err[0] = '\0';
		int rc = state_of(&x, "b", s, 4, err, sizeof(err));
		if (rc != -1 || !has(err, t[i].err))
			fprintf(stderr, "  case %u: rc %d err \"%s\", want \"%s\"\n", i, rc, err,
			        t[i].err);
		CHECK(rc == -1);
		CHECK(has(err, t[i].err));
		text_free(&x);
	}

	/* A NUL byte inside a name. */
	static const char nul[] =
	        "1\n# be_name srv_name srv_op_state srv_admin_state\nb s\0t 2 0\n\n";
	struct text x = text_dup(nul, sizeof(nul) - 1);
	CHECK(state_of(&x, "b", s, 4, err, sizeof(err)) == -1);
	text_free(&x);

	/* NULL or empty arguments. */
	unsigned n = 5;
	CHECK(dbk_rt_parse_servers_state(NULL, 0, "b", s, 4, &n, err, sizeof(err)) == -1 && n == 0);
	x = text_of("1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0\n\n");
	CHECK(dbk_rt_parse_servers_state(x.s, x.len, NULL, s, 4, &n, err, sizeof(err)) == -1);
	CHECK(dbk_rt_parse_servers_state(x.s, x.len, "", s, 4, &n, err, sizeof(err)) == -1);
	CHECK(dbk_rt_parse_servers_state(x.s, x.len, "b", s, 0, &n, err, sizeof(err)) == -1);
	CHECK(dbk_rt_parse_servers_state(x.s, x.len, "b", s, 1, &n, NULL, 0) == 0 && n == 1);
	CHECK(dbk_rt_parse_servers_state(x.s, x.len, "b", s, 1, &n, err, 1) == 0);
	text_free(&x);
}

static void test_stat_malformed(void)
{
	static const struct {
		const char *in;
		const char *err;
	} t[] = {
		{ "", "empty" },
		{ "\n", "empty" },
		{ "pxname,svname,scur,status\nb,s,1,UP\n\n", "haproxy says" },
		{ "#\n\n", "haproxy says" },
		{ "# pxname,svname,status\nb,s,UP\n\n", "scur" },
		{ "# pxname,scur,status\nb,1,UP\n\n", "svname" },
		{ "# pxname,svname,scur,status\nb,s,1,UP\n", "no closing" },
		{ "# pxname,svname,scur,status\nb,s,1,UP", "unterminated" },
		{ "# pxname,svname,scur,status\nb,s,1\n\n", "fields" },
		{ "# pxname,svname,scur,status\nb,s,,UP\n\n", "bad scur" },
		{ "# pxname,svname,scur,status\nb,s,-1,UP\n\n", "bad scur" },
		{ "# pxname,svname,scur,status\nb,s,1e3,UP\n\n", "bad scur" },
		{ "# pxname,svname,scur,status\nb,s,9999999999999999999,UP\n\n", "bad scur" },
		{ "# pxname,svname,scur,qcur,status\nb,s,1,x,UP\n\n", "bad qcur" },
		{ "# pxname,svname,scur,status,type\nb,s,1,UP,two\n\n", "bad type" },
		{ "# pxname,svname,scur,status\nb,s,1,\"UP\n\n", "unterminated quoted" },
		{ "# pxname,svname,scur,status\nb,s,1,\"UP\"x\n\n", "bad quoting" },
		{ "# pxname,\"svname,scur,status\n\n", "unterminated quoted" },
		{ "# pxname,svname,scur,status\nb,s,1,UP\nb,s,2,UP\n\n", "twice" },
		{ "# pxname,svname,scur,status\nb,,1,UP\n\n", "bad server name" },
		{ "# pxname,svname,scur,status\nb,\"s\"\"\",1,UP\n\n", "bad server name" },
	};
	struct dbk_rt_server s[2], before[2];
	char err[256];

	dbk_rt_server_init(&s[0], "s");
	dbk_rt_server_init(&s[1], "t");
	s[0].op_state = 2;
	s[0].admin_state = 8;
	s[0].state = DBK_RT_DRAIN;
	s[0].stat_seen = true;
	s[0].scur = 5;
	memcpy(before, s, sizeof(s));
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct text x = text_of(t[i].in);
		err[0] = '\0';
		int rc = dbk_rt_parse_stat(x.s, x.len, "b", s, 2, NULL, err, sizeof(err));
		if (rc != -1 || !has(err, t[i].err))
			fprintf(stderr, "  case %u: rc %d err \"%s\", want \"%s\"\n", i, rc, err,
			        t[i].err);
		CHECK(rc == -1);
		CHECK(has(err, t[i].err));
		/* A refused dump changes nothing. */
		CHECK(memcmp(s, before, sizeof(s)) == 0);
		text_free(&x);
	}
	struct text x = text_of("# pxname,svname,scur,status\nb,s,1,UP\n\n");
	CHECK(dbk_rt_parse_stat(x.s, x.len, NULL, s, 2, NULL, err, sizeof(err)) == -1);
	CHECK(dbk_rt_parse_stat(x.s, x.len, "b", s, 5000, NULL, err, sizeof(err)) == -1);
	CHECK(dbk_rt_parse_stat(x.s, x.len, "b", s, 0, NULL, err, sizeof(err)) == 0);
	CHECK(memcmp(s, before, sizeof(s)) == 0);
	text_free(&x);
}

/* Lines beyond DBK_RT_MAX_LINE are refused, whatever they hold. */
static void test_huge_lines(void)
{
	size_t big = DBK_RT_MAX_LINE + 100;
	char *b = malloc(big + 200);
	struct dbk_rt_server s[2];
	char err[256];
	size_t o;

	o = (size_t)sprintf(b, "1\n# be_name srv_name srv_op_state srv_admin_state\nb s 2 0 ");
	memset(b + o, 'z', big);
	o += big;
	memcpy(b + o, "\n\n", 2);
	o += 2;
	struct text x = text_dup(b, o);
	CHECK(state_of(&x, "b", s, 2, err, sizeof(err)) == -1);
	CHECK(has(err, "longer"));
	text_free(&x);

	/* A huge header. */
	o = (size_t)sprintf(b, "# pxname,svname,scur,status,");
	memset(b + o, ',', big);
	o += big;
	memcpy(b + o, "\n\n", 2);
	o += 2;
	x = text_dup(b, o);
	dbk_rt_server_init(&s[0], "s");
	CHECK(dbk_rt_parse_stat(x.s, x.len, "b", s, 1, NULL, err, sizeof(err)) == -1);
	text_free(&x);

	/* A huge quoted field never closed. */
	o = (size_t)sprintf(b, "# pxname,svname,scur,status\nb,s,1,\"");
	memset(b + o, 'q', big);
	o += big;
	x = text_dup(b, o);
	CHECK(dbk_rt_parse_stat(x.s, x.len, "b", s, 1, NULL, err, sizeof(err)) == -1);
	text_free(&x);

	/* Many short lines are fine: only length per line is bounded. */
	o = (size_t)sprintf(b, "1\n# be_name srv_name srv_op_state srv_admin_state\n");
	for (int i = 0; i < 2000 && o + 40 < big; i++)
		o += (size_t)sprintf(b + o, "other s%d 2 0\n", i);
	o += (size_t)sprintf(b + o, "b s 2 0\n\n");
	x = text_dup(b, o);
	CHECK(state_of(&x, "b", s, 2, err, sizeof(err)) == 1);
	text_free(&x);
	free(b);
}

/* Deterministic mutation fuzzing of the real outputs: flips, cuts,
 * insertions and duplications; each mutant in a buffer of its exact size
 * (ASan reports any read past it). Any result is fine but a crash, a
 * read overrun, or a result that breaks the API's promises. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_fuzz_mutations(void)
{
	static const char *const files[] = {
		"haproxy26-be2-servers-state.txt",
		"haproxy26-be2-stat.txt",
		"haproxy26-be-servers-state.txt",
		"haproxy26-be-stat.txt",
	};
	static const char interesting[] = "\n\n,\" #\r\t0129-UPDOWNMAINT";
	static char m[FIX_MAX * 2];
	unsigned accepted = 0, runs = 0;

	for (unsigned f = 0; f < 4; f++) {
		struct text base = fixture(files[f]);
		const char *be = f < 2 ? "be2" : "be";

		for (unsigned iter = 0; iter < 4000 && base.len > 0; iter++) {
			size_t len = base.len;
			memcpy(m, base.s, len);
			unsigned edits = 1 + (unsigned)(rng() % 8);
			for (unsigned e = 0; e < edits; e++) {
				size_t at = len ? (size_t)(rng() % len) : 0;
				switch (rng() % 5) {
				case 0: /* flip a byte */
					if (len)
						m[at] = (char)rng();
					break;
				case 1: /* an interesting byte */
					if (len)
						m[at] = interesting[rng() %
						                    (sizeof(interesting) - 1)];
					break;
				case 2: /* cut */ len = at; break;
				case 3: { /* insert */
					size_t k = 1 + (size_t)(rng() % 4);
					if (len + k < sizeof(m)) {
						memmove(m + at + k, m + at, len - at);
						for (size_t j = 0; j < k; j++)
							m[at + j] = interesting
							        [rng() % (sizeof(interesting) - 1)];
						len += k;
					}
					break;
				}
				default: { /* duplicate a slice */
					size_t k = (size_t)(rng() % 200);
					if (at + k <= len && len + k < sizeof(m)) {
						memmove(m + at + k, m + at, len - at);
						len += k;
					}
					break;
				}
				}
			}
			struct text t = text_dup(m, len);
			struct dbk_rt_server s[16];
			struct dbk_rt_stat_result res;
			char err[128];
			unsigned n = 99;

			runs++;
			if (dbk_rt_parse_servers_state(t.s, t.len, be, s, 16, &n, err,
			                               sizeof(err)) == 0) {
				accepted++;
				CHECK(n <= 16);
				for (unsigned i = 0; i < n && i < 16; i++) {
					CHECK(strlen(s[i].name) >= 1 &&
					      strlen(s[i].name) <= DBK_RT_NAME_MAX);
					CHECK(s[i].state <= DBK_RT_MAINT);
					CHECK(s[i].op_state >= 0 && s[i].op_state <= 3);
				}
			} else {
				CHECK(n == 0);
				CHECK(strlen(err) < sizeof(err));
			}
			if (n == 0) {
				n = 10;
				for (unsigned i = 0; i < n; i++) {
					char nm[16];
					snprintf(nm, sizeof(nm), "%c%u", "usdm"[i % 4], i);
					dbk_rt_server_init(&s[i], nm);
				}
			}
			if (dbk_rt_parse_stat(t.s, t.len, be, s, n, &res, err, sizeof(err)) == 0) {
				accepted++;
				CHECK(res.matched <= n);
				for (unsigned i = 0; i < n && i < 16; i++) {
					CHECK(s[i].state <= DBK_RT_MAINT);
					CHECK(s[i].stat_seen ? s[i].scur >= 0 : s[i].scur == -1);
				}
			}
			text_free(&t);
		}
		text_free(&base);
	}
	/* Some mutants (a flipped digit, say) are still valid dumps. */
	CHECK(accepted > 0);
	CHECK(runs == 16000);
}

int main(void)
{
	RUN(test_state_from_flags);
	RUN(test_state_from_status);
	RUN(test_real_be_servers_state);
	RUN(test_servers_state_addresses);
	RUN(test_real_be_stat);
	RUN(test_real_be2_every_state);
	RUN(test_real_errors);
	RUN(test_truncated_prefixes);
	RUN(test_state_columns_by_name);
	RUN(test_stat_columns_by_name);
	RUN(test_stat_full_dump);
	RUN(test_combined_sources);
	RUN(test_state_malformed);
	RUN(test_stat_malformed);
	RUN(test_huge_lines);
	RUN(test_fuzz_mutations);
	return CHECK_DONE();
}
