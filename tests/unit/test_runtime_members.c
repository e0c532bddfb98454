/* The agent's slots against HAProxy's changing backend (runtime_members.h),
 * and what the runtime API says of weights. The fleet fixtures are
 * HAProxy 2.6.12's own output for a backend of two configured servers
 * (a: weight 10, slowstart 10s, just re-enabled; b: weight 3, then "set
 * server be/b weight 0"), a two-slot server-template unresolved
 * (init-addr none) and a server added with "add server be/d ...
 * weight 5" and enabled. */
#include <stdio.h>

#include "check.h"
#include "fixture.h"
#include "runtime_members.h"

#define NSLOTS 6

static void server(struct dbk_rt_server *s, const char *name, const char *addr, int port)
{
	dbk_rt_server_init(s, name);
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	s->port = port;
}

static void slot(struct dbk_rt_slot *s, const char *name, const char *addr, int port)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	s->port = port;
}

static void test_fixed_list_stays(void)
{
	struct dbk_rt_slot sl[NSLOTS] = { 0 };
	struct dbk_rt_server f[3];
	int at[3];
	enum dbk_rt_change ch[NSLOTS];
	struct dbk_rt_plan_counts c;

	slot(&sl[0], "a", "", 0); /* the address not known yet (named at start) */
	slot(&sl[1], "b", "10.0.0.2", 80);
	slot(&sl[2], "c", "10.0.0.3", 80);
	server(&f[0], "a", "10.0.0.1", 80);
	server(&f[1], "b", "10.0.0.2", 80);
	server(&f[2], "c", "10.0.0.3", 80);
	dbk_rt_plan(sl, NSLOTS, f, 3, at, ch, &c);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_U(at[i], i);
		CHECK_EQ_U(ch[i], DBK_RT_SLOT_SAME);
	}
	CHECK_EQ_U(ch[3], DBK_RT_SLOT_FREE);
	CHECK_EQ_U(c.added + c.moved + c.gone + c.no_room, 0);
	dbk_rt_plan_apply(sl, NSLOTS, f, 3, at, ch);
	CHECK(strcmp(sl[0].addr, "10.0.0.1") == 0 && sl[0].port == 80);
	/* Another order (a reload that moved them) changes no slot. */
	server(&f[0], "c", "10.0.0.3", 80);
	server(&f[2], "a", "10.0.0.1", 80);
	dbk_rt_plan(sl, NSLOTS, f, 3, at, ch, &c);
	CHECK_EQ_U(at[0], 2);
	CHECK_EQ_U(at[2], 0);
	CHECK_EQ_U(c.added + c.moved + c.gone, 0);
}

static void test_add_remove_readdress(void)
{
	struct dbk_rt_slot sl[NSLOTS] = { 0 };
	struct dbk_rt_server f[4];
	int at[4];
	enum dbk_rt_change ch[NSLOTS];
	struct dbk_rt_plan_counts c;

	slot(&sl[0], "a", "10.0.0.1", 80);
	slot(&sl[1], "b", "10.0.0.2", 80);
	slot(&sl[2], "c", "10.0.0.3", 80);
	/* b deleted, d and e added, c at a new address (a new pod). */
	server(&f[0], "a", "10.0.0.1", 80);
	server(&f[1], "c", "10.0.0.9", 80);
	server(&f[2], "d", "10.0.0.4", 80);
	server(&f[3], "e", "", 0); /* unresolved: still a server */
	dbk_rt_plan(sl, NSLOTS, f, 4, at, ch, &c);
	CHECK_EQ_U(ch[0], DBK_RT_SLOT_SAME);
	CHECK_EQ_U(ch[1], DBK_RT_SLOT_GONE);
	CHECK_EQ_U(ch[2], DBK_RT_SLOT_MOVED);
	/* Slot 1 was freed by this very poll: not reused before the next. */
	CHECK_EQ_U(at[2], 3);
	CHECK_EQ_U(at[3], 4);
	CHECK_EQ_U(ch[3], DBK_RT_SLOT_ADDED);
	CHECK_EQ_U(ch[4], DBK_RT_SLOT_ADDED);
	CHECK_EQ_U(ch[5], DBK_RT_SLOT_FREE);
	CHECK_EQ_U(c.added, 2);
	CHECK_EQ_U(c.gone, 1);
	CHECK_EQ_U(c.moved, 1);
	dbk_rt_plan_apply(sl, NSLOTS, f, 4, at, ch);
	CHECK(sl[1].name[0] == '\0');
	CHECK(strcmp(sl[2].addr, "10.0.0.9") == 0);
	CHECK(strcmp(sl[4].name, "e") == 0 && sl[4].addr[0] == '\0');
	/* Next poll: f takes freed slot 1; e resolved (first address: not a
	 * move); then e unresolved again keeps its address, and back at
	 * the same one is the same pod. */
	server(&f[1], "f", "10.0.0.6", 80);
	server(&f[3], "e", "10.0.0.5", 80);
	dbk_rt_plan(sl, NSLOTS, f, 4, at, ch, &c);
	CHECK_EQ_U(at[1], 1);
	CHECK_EQ_U(ch[1], DBK_RT_SLOT_ADDED);
	CHECK_EQ_U(ch[2], DBK_RT_SLOT_GONE); /* c is gone now */
	CHECK_EQ_U(ch[4], DBK_RT_SLOT_SAME);
	dbk_rt_plan_apply(sl, NSLOTS, f, 4, at, ch);
	server(&f[3], "e", "", 0);
	dbk_rt_plan(sl, NSLOTS, f, 4, at, ch, &c);
	CHECK_EQ_U(ch[4], DBK_RT_SLOT_SAME);
	dbk_rt_plan_apply(sl, NSLOTS, f, 4, at, ch);
	CHECK(strcmp(sl[4].addr, "10.0.0.5") == 0);
	server(&f[3], "e", "10.0.0.5", 81);
	dbk_rt_plan(sl, NSLOTS, f, 4, at, ch, &c);
	CHECK_EQ_U(ch[4], DBK_RT_SLOT_MOVED);
}

static void test_no_room(void)
{
	struct dbk_rt_slot sl[2] = { 0 };
	struct dbk_rt_server f[3];
	int at[3];
	enum dbk_rt_change ch[2];
	struct dbk_rt_plan_counts c;

	server(&f[0], "a", "", 0);
	server(&f[1], "b", "", 0);
	server(&f[2], "c", "", 0);
	dbk_rt_plan(sl, 2, f, 3, at, ch, &c);
	CHECK_EQ_U(at[0], 0);
	CHECK_EQ_U(at[1], 1);
	CHECK(at[2] == -1);
	CHECK_EQ_U(c.no_room, 1);
	dbk_rt_plan_apply(sl, 2, f, 3, at, ch);
	/* a leaves: c gets its slot a poll later. */
	dbk_rt_plan(sl, 2, f + 1, 2, at, ch, &c);
	CHECK_EQ_U(ch[0], DBK_RT_SLOT_GONE);
	CHECK(at[1] == -1);
	dbk_rt_plan_apply(sl, 2, f + 1, 2, at, ch);
	dbk_rt_plan(sl, 2, f + 1, 2, at, ch, &c);
	CHECK_EQ_U(at[1], 0);
	CHECK_EQ_U(c.no_room, 0);
	CHECK(strcmp(dbk_rt_change_str(DBK_RT_SLOT_MOVED), "moved") == 0);
}

/* HAProxy 2.6's own dumps: dynamic and template servers as any other,
 * the effective weight in show stat (slowstart ramps it, weight 0
 * drains), the user weight only in show servers state. */
static void test_fleet_fixtures(void)
{
	struct dbk_rt_server s[8];
	char err[256] = "";
	unsigned n = 0;
	struct text ss = fixture("haproxy26-fleet-servers-state.txt");
	struct text st = fixture("haproxy26-fleet-stat.txt");

	CHECK(dbk_rt_parse_servers_state(ss.s, ss.len, "be", s, 8, &n, err, sizeof(err)) == 0);
	CHECK_EQ_U(n, 5);
	CHECK(strcmp(s[4].name, "d") == 0 && s[4].port == 9004);
	CHECK(strcmp(s[2].name, "t1") == 0);
	CHECK(s[2].addr[0] == '\0' && s[2].state == DBK_RT_MAINT); /* unresolved */
	CHECK_EQ_U(s[0].op_state, DBK_RT_OP_STARTING);
	CHECK(dbk_rt_parse_stat(st.s, st.len, "be", s, n, NULL, err, sizeof(err)) == 0);
	CHECK(s[0].weight == 2); /* 10, ramping in slowstart */
	CHECK(s[1].weight == 0); /* set server be/b weight 0 */
	CHECK(s[4].weight == 5);
	CHECK(s[0].state == DBK_RT_READY && s[1].state == DBK_RT_READY);
	CHECK(dbk_rt_server_state(&s[1]) == DBK_RT_DRAIN); /* weight 0 */
	CHECK(dbk_rt_server_state(&s[0]) == DBK_RT_READY);
	CHECK(dbk_rt_server_state(&s[2]) == DBK_RT_MAINT);
	text_free(&ss);
	text_free(&st);
	/* A weight beyond HAProxy's 256 is not HAProxy's. */
	struct text bad = text_of("# pxname,svname,scur,status,weight\nbe,a,0,UP,257\n\n");
	CHECK(dbk_rt_parse_stat(bad.s, bad.len, "be", s, 1, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "weight") != NULL);
	text_free(&bad);
}

int main(void)
{
	RUN(test_fixed_list_stays);
	RUN(test_add_remove_readdress);
	RUN(test_no_room);
	RUN(test_fleet_fixtures);
	return CHECK_DONE();
}
