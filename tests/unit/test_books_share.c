/* agent/books_share.[ch]: the `show table` parser on HAProxy 2.6's own
 * answer, this node's rows as `set table` commands, and the other
 * nodes' rows charged to and released from a policy (a fake one that
 * records what it is told). */
#include <stdlib.h>
#include <string.h>

#include "books_share.h"
#include "check.h"
#include "runtime_client.h"

/* What HAProxy 2.6.12 answers (contrib/bench-peers.sh's table). */
static const char ANSWER[] =
        "# table: dbk_books, type: string, size:4096, used:3\n"
        "0x7f1be4047180: key=n2/vllm1 use=0 exp=9850 gpt0=2 gpc0=200 http_req_cnt=2 gpc1=300\n"
        "0x7f1be4047290: key=n1/vllm0 use=0 exp=9850 gpt0=5 gpc0=900 http_req_cnt=9 gpc1=900\n"
        "0x7f1be40473a0: key=n2/gone use=0 exp=9892 gpt0=1 gpc0=1 http_req_cnt=1 gpc1=1\n"
        "\n";

/* A fake policy: the requests it was told of, and those that ended. */
struct fake {
	unsigned seen, released, committed, held, completed;
	double last_body, last_max;
	unsigned last_server;
	uint32_t last_slot[3]; /* prompt, KV, context complete booked */
	uint32_t next_slot;
	uint32_t last_released_prompt;
};

static void *fake_create(const struct dbk_policy_env *env)
{
	(void)env;
	return calloc(1, sizeof(struct fake));
}
static void fake_destroy(void *st) { free(st); }
static int fake_choose(void *st, const struct dbk_policy_request *r, uint64_t now_ms,
                       struct dbk_policy_choice *c)
{
	(void)st, (void)r, (void)now_ms;
	c->server = 0;
	return 0;
}
static void fake_commit(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                        uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct fake *f = st;
	(void)c, (void)now_ms;
	f->committed++;
	slot[0] = 100; /* prompt */
	slot[1] = 120; /* KV: 80 of the prompt cached, 100 of output */
	slot[2] = 150; /* context */
}
/* Held as the ttft policy holds: the slot filled, marked, nothing charged. */
static void fake_hold(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                      uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct fake *f = st;
	(void)c, (void)now_ms;
	f->held++;
	slot[0] = 100 | DBK_POLICY_HELD;
	slot[1] = 120;
	slot[2] = 150;
}
static bool fake_complete(void *st, const struct dbk_bal_lease *l, uint64_t now_ms,
                          uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct fake *f = st;
	(void)now_ms;
	if (!(l->slot[0] & DBK_POLICY_HELD))
		return false;
	f->completed++;
	f->last_server = l->server;
	memcpy(slot, l->slot, sizeof(l->slot));
	f->last_slot[0] = l->slot[0] & ~DBK_POLICY_HELD;
	f->last_slot[1] = l->slot[1];
	f->last_slot[2] = l->slot[2];
	slot[0] &= ~DBK_POLICY_HELD;
	return true;
}
static void fake_seen(void *st, const struct dbk_policy_request *r, unsigned server, bool prefix,
                      uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	struct fake *f = st;
	(void)prefix, (void)now_ms;
	f->seen++;
	f->last_body = r->est->body_bytes;
	f->last_max = r->est->max_tokens;
	f->last_server = server;
	slot[0] = (uint32_t)(r->est->body_bytes / 4);
	slot[1] = ++f->next_slot; /* which one ends, by its order */
	slot[2] = slot[0] + (uint32_t)(r->est->max_tokens / 2);
}
static void fake_release(void *st, const struct dbk_bal_lease *l, uint64_t now_ms)
{
	struct fake *f = st;
	(void)now_ms;
	f->released++;
	f->last_released_prompt = l->slot[0];
}

static const struct dbk_policy_ops fake_ops = {
	.name = "fake",
	.create = fake_create,
	.destroy = fake_destroy,
	.choose = fake_choose,
	.commit = fake_commit,
	.hold = fake_hold,
	.complete = fake_complete,
	.seen = fake_seen,
	.release = fake_release,
};

static const char *const NAMES[] = { "vllm0", "vllm1", "" };

static struct dbk_share *start_ops(struct dbk_policy *p, const struct dbk_policy_ops *ops,
                                   const char *node)
{
	char err[128];
	struct dbk_policy_env env = { .nservers = 3 };

	CHECK(dbk_policy_start(p, ops, &env, err, sizeof(err)) == 0);
	return dbk_share_wrap(p, 3, node, err, sizeof(err));
}

static struct dbk_share *start(struct dbk_policy *p, const char *node)
{
	return start_ops(p, &fake_ops, node);
}

/* A policy that prices the others' requests itself (seen), with no
 * ticket to book (complete). */
static struct dbk_share *start_seen(struct dbk_policy *p, const char *node)
{
	static struct dbk_policy_ops seen_only;

	seen_only = fake_ops;
	seen_only.hold = NULL;
	seen_only.complete = NULL;
	return start_ops(p, &seen_only, node);
}

static struct fake *inner(struct dbk_policy *p)
{
	/* The first member of the share is the wrapped policy. */
	return (struct fake *)((struct dbk_policy *)p->st)->st;
}

struct rows {
	unsigned n, all;
	char keys[4][32];
	uint32_t inflight[4], started[4];
};
static void on_row(void *arg, const struct dbk_share_row *r)
{
	struct rows *x = arg;
	if (x->n < 4) {
		snprintf(x->keys[x->n], sizeof(x->keys[0]), "%.*s", (int)r->key_len, r->key);
		x->inflight[x->n] = r->inflight;
		x->started[x->n] = r->started;
	}
	x->n++;
	x->all += r->has_all;
}

static void test_parse(void)
{
	struct rows x = { 0 };
	char err[128];

	CHECK(dbk_share_parse(ANSWER, strlen(ANSWER), on_row, &x, err, sizeof(err)) == 3);
	CHECK_EQ_U(x.all, 3);
	CHECK(strcmp(x.keys[0], "n2/vllm1") == 0);
	CHECK_EQ_U(x.inflight[1], 5);
	CHECK_EQ_U(x.started[1], 9);
	/* An empty table, HAProxy's error, nothing, a row short of a field. */
	const char *empty = "# table: dbk_books, type: string, size:4096, used:0\n\n";
	memset(&x, 0, sizeof(x));
	CHECK(dbk_share_parse(empty, strlen(empty), on_row, &x, err, sizeof(err)) == 0);
	const char *no = "Unknown table.\n";
	CHECK(dbk_share_parse(no, strlen(no), on_row, &x, err, sizeof(err)) == -1);
	CHECK(strstr(err, "Unknown table") != NULL);
	CHECK(dbk_share_parse("", 0, on_row, &x, err, sizeof(err)) == -1);
	const char *short_row =
	        "# table: t\n0x1: key=a/b use=0 gpt0=1 gpc0=x gpc1=2 http_req_cnt=3\n";
	memset(&x, 0, sizeof(x));
	CHECK(dbk_share_parse(short_row, strlen(short_row), on_row, &x, err, sizeof(err)) == 1);
	CHECK_EQ_U(x.all, 0);
	/* Not NUL-terminated: the length is the end. */
	memset(&x, 0, sizeof(x));
	CHECK(dbk_share_parse(ANSWER, 60, on_row, &x, err, sizeof(err)) == 0);
}

static void test_wrap_needs_seen_and_a_name(void)
{
	struct dbk_policy p;
	struct dbk_policy_ops no_seen = fake_ops;
	struct dbk_policy_env env = { .nservers = 3 };
	char err[128];

	no_seen.seen = NULL;
	no_seen.complete = NULL;
	no_seen.hold = NULL;
	CHECK(dbk_policy_start(&p, &no_seen, &env, err, sizeof(err)) == 0);
	CHECK(dbk_share_wrap(&p, 3, "n1", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "seen") != NULL);
	CHECK(dbk_share_wrap(&p, 3, "n 1", err, sizeof(err)) == NULL);
	dbk_policy_stop(&p);
	CHECK(!dbk_share_node_ok("a/b"));
	CHECK(!dbk_share_node_ok(""));
	CHECK(dbk_share_node_ok("lb-1.eu_west"));
}

static void test_writes_own_rows(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start(&p, "n1");
	struct dbk_policy_choice c = { .server = 1 };
	uint32_t slot[DBK_BAL_SLOT_WORDS];
	char cmd[1024];

	CHECK(s != NULL);
	/* Nothing written yet: every named server's row is due. */
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 0, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm0 data.gpt0 0 data.gpc0 0 data.gpc1 0 "
	                  "data.http_req_cnt 0 data.bytes_in_cnt 0;set table t key n1/vllm1 "
	                  "data.gpt0 0 data.gpc0 0 data.gpc1 0 data.http_req_cnt 0 "
	                  "data.bytes_in_cnt 0") == 0);
	dbk_share_written(s, 0);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 10, 1000, cmd, sizeof(cmd)) == 0);
	p.ops->commit(p.st, &c, 20, slot);
	CHECK_EQ_U(inner(&p)->committed, 1);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 30, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm1 data.gpt0 1 data.gpc0 100 data.gpc1 150 "
	                  "data.http_req_cnt 1 data.bytes_in_cnt 120") == 0);
	/* Not confirmed (the query failed): due again. */
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 40, 1000, cmd, sizeof(cmd)) > 0);
	dbk_share_written(s, 40);
	struct dbk_bal_lease l = { .server = 1, .slot = { 100, 120, 150 } };
	p.ops->release(p.st, &l, 50);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 60, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm1 data.gpt0 0 data.gpc0 0 data.gpc1 0 "
	                  "data.http_req_cnt 1 data.bytes_in_cnt 0") == 0);
	dbk_share_written(s, 60);
	/* Unchanged, rewritten once refresh_ms has passed (oldest first),
	 * as many as fit. */
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 999, 1000, cmd, sizeof(cmd)) == 0);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 1000, 1000, cmd, 120) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm0 data.gpt0 0 data.gpc0 0 data.gpc1 0 "
	                  "data.http_req_cnt 0 data.bytes_in_cnt 0") == 0);
	/* A table that does not store the KV (HAProxy said so): the four. */
	dbk_share_no_kv(s);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 1000, 1000, cmd, 100) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm0 data.gpt0 0 data.gpc0 0 data.gpc1 0 "
	                  "data.http_req_cnt 0") == 0);
	dbk_policy_stop(&p);
}

/* A request held (its body on its way) reaches the inner policy's hold
 * and complete with the inner policy's state, and is this node's load
 * in the table only once complete says its server has it; released
 * still held, it takes nothing from the rows. */
static void test_held_shared_once_whole(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start(&p, "n1");
	struct dbk_policy_choice c = { .server = 1 };
	struct dbk_bal_lease l = { .server = 1 };
	uint32_t slot[DBK_BAL_SLOT_WORDS] = { 0 };
	char cmd[1024];

	CHECK(s != NULL && p.ops->hold && p.ops->complete);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 0, 1000, cmd, sizeof(cmd)) > 0);
	dbk_share_written(s, 0);
	p.ops->hold(p.st, &c, 10, l.slot);
	CHECK_EQ_U(inner(&p)->held, 1);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 20, 1000, cmd, sizeof(cmd)) == 0);
	/* Released while held: nothing to give back. */
	struct dbk_bal_lease gone = l;
	p.ops->release(p.st, &gone, 25);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 30, 1000, cmd, sizeof(cmd)) == 0);
	CHECK(p.ops->complete(p.st, &l, 40, slot));
	CHECK_EQ_U(inner(&p)->completed, 1);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 50, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm1 data.gpt0 1 data.gpc0 100 data.gpc1 150 "
	                  "data.http_req_cnt 1 data.bytes_in_cnt 120") == 0);
	dbk_share_written(s, 50);
	memcpy(l.slot, slot, sizeof(slot));
	CHECK(!p.ops->complete(p.st, &l, 60, slot));
	p.ops->release(p.st, &l, 70);
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 80, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strcmp(cmd, "set table t key n1/vllm1 data.gpt0 0 data.gpc0 0 data.gpc1 0 "
	                  "data.http_req_cnt 1 data.bytes_in_cnt 0") == 0);
	dbk_policy_stop(&p);
}

/* A request taken back (estimate_hold.h: its body slow, route.c's
 * dbk_route_taken releases it and marks it held) and charged again once
 * whole counts two charges begun: between two reads the row's in-flight
 * count does not move, and only the counter tells the others that its
 * prefill is booked anew, as its sender booked it. */
static void test_taken_back_is_booked_anew(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start(&p, "n1");
	struct dbk_policy_choice c = { .server = 1 };
	struct dbk_bal_lease l = { .server = 1 };
	uint32_t slot[DBK_BAL_SLOT_WORDS];
	char cmd[1024];

	p.ops->commit(p.st, &c, 10, l.slot);
	p.ops->release(p.st, &l, 10); /* taken back */
	l.slot[0] |= DBK_POLICY_HELD;
	CHECK(p.ops->complete(p.st, &l, 30, slot)); /* whole: charged again */
	CHECK(dbk_share_write_cmd(s, "t", NAMES, 40, 1000, cmd, sizeof(cmd)) > 0);
	CHECK(strstr(cmd, "key n1/vllm1 data.gpt0 1 data.gpc0 100 data.gpc1 150 "
	                  "data.http_req_cnt 2 data.bytes_in_cnt 120") != NULL);
	dbk_policy_stop(&p);

	/* Read on another node: the old charge released, one booked now. */
	struct dbk_policy q;
	struct dbk_share *o = start(&q, "n2");
	struct fake *f = inner(&q);
	char a[512], err[128];
	const char *row = "# table: t\n0x1: key=n1/vllm1 use=0 gpt0=1 gpc0=100 "
	                  "http_req_cnt=%u bytes_in_cnt=120 gpc1=150\n\n";
	snprintf(a, sizeof(a), row, 1u);
	CHECK(dbk_share_read(o, a, strlen(a), NAMES, 3, 20, err, sizeof(err)) == 0);
	snprintf(a, sizeof(a), row, 2u);
	CHECK(dbk_share_read(o, a, strlen(a), NAMES, 3, 40, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 1);
	CHECK_EQ_U(f->completed, 2);
	CHECK_EQ_U(dbk_share_stats(o)->others_inflight, 1);
	dbk_policy_stop(&q);
}

static const char *table(char *buf, size_t cap, unsigned inflight, unsigned prompt, unsigned ctx,
                         unsigned started)
{
	snprintf(buf, cap,
	         "# table: t, type: string, size:4096, used:2\n"
	         "0x1: key=n2/vllm1 use=0 exp=9000 gpt0=%u gpc0=%u http_req_cnt=%u gpc1=%u\n"
	         "0x2: key=n1/vllm0 use=0 exp=9000 gpt0=7 gpc0=7 http_req_cnt=7 gpc1=7\n\n",
	         inflight, prompt, started, ctx);
	return buf;
}

static void test_reads_the_others(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start_seen(&p, "n1");
	struct fake *f = inner(&p);
	char a[512], err[128];

	/* Two requests of node 2 on vllm1: each half the tokens; our own
	 * row (n1) is not charged. */
	table(a, sizeof(a), 2, 200, 300, 2);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 100, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->seen, 2);
	CHECK_EQ_U(f->last_server, 1);
	CHECK_NEAR(f->last_body, 400, 1e-9);
	CHECK_NEAR(f->last_max, 100, 1e-9);
	CHECK_EQ_U(dbk_share_stats(s)->nodes, 1);
	CHECK_EQ_U(dbk_share_stats(s)->others_inflight, 2);
	/* Unchanged: nothing told. */
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 110, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->seen, 2);
	CHECK_EQ_U(f->released, 0);
	/* One ended and one began between two reads: the count alone would
	 * not show it, the started counter does. */
	table(a, sizeof(a), 2, 300, 400, 3);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 120, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 1);
	CHECK_EQ_U(f->seen, 3);
	CHECK_NEAR(f->last_body, 4 * (300 - 100), 1e-9);
	/* Both ended. */
	table(a, sizeof(a), 0, 0, 0, 3);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 130, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 3);
	CHECK_EQ_U(dbk_share_stats(s)->others_inflight, 0);
	/* An agent restarted (its counter went back): what it had is
	 * released, what it says now charged. */
	table(a, sizeof(a), 1, 50, 60, 5);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 140, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->seen, 4);
	table(a, sizeof(a), 1, 50, 60, 1);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 150, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 4);
	CHECK_EQ_U(f->seen, 5);
	/* Its row gone (expired): its requests end. A bad answer changes
	 * nothing. */
	const char *none = "# table: t, type: string, size:4096, used:0\n\n";
	CHECK(dbk_share_read(s, "oops\n", 5, NAMES, 3, 155, err, sizeof(err)) == -1);
	CHECK_EQ_U(f->released, 4);
	CHECK(dbk_share_read(s, none, strlen(none), NAMES, 3, 160, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 5);
	CHECK_EQ_U(dbk_share_stats(s)->nodes, 0);
	/* A row naming no server of ours is counted, not charged. */
	CHECK(dbk_share_read(s, ANSWER, strlen(ANSWER), NAMES, 3, 170, err, sizeof(err)) == 0);
	CHECK_EQ_U(dbk_share_stats(s)->unknown_rows, 1);
	dbk_policy_stop(&p);
}

/* The request that ended is the one the row's tokens say, not the
 * oldest: a long prompt is not released for a short one. */
static void test_ends_the_one_that_ended(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start_seen(&p, "n1");
	struct fake *f = inner(&p);
	char a[512], err[128];

	table(a, sizeof(a), 1, 100, 100, 1);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 100, err, sizeof(err)) == 0);
	table(a, sizeof(a), 2, 8100, 8100, 2);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 110, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->seen, 2);
	/* The long one (8,000 tokens) ended, the older short one runs on. */
	table(a, sizeof(a), 1, 100, 100, 2);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 120, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 1);
	CHECK_EQ_U(f->last_released_prompt, 8000);
	table(a, sizeof(a), 0, 0, 0, 2);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 130, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->last_released_prompt, 100);
	dbk_policy_stop(&p);
}

/* The others' requests are booked at the KV their sender priced, net
 * of the prefix it expected cached there: two 20,000-token turns of
 * which 19,000 were cached take 1,100 tokens each (19,000 new ones
 * each, charged whole: the agentic sessions' loss with books shared,
 * BENCHMARKS.md); no prefix recorded (complete, not seen). A row
 * without the KV (an older agent or table) is booked whole. */
static void test_others_booked_net_of_their_prefix(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start(&p, "n1");
	struct fake *f = inner(&p);
	char a[512], err[128];

	snprintf(a, sizeof(a),
	         "# table: t, type: string, size:4096, used:1\n"
	         "0x1: key=n2/vllm1 use=0 exp=9000 gpt0=2 gpc0=40000 "
	         "http_req_cnt=2 bytes_in_cnt=2200 gpc1=40100\n\n");
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 100, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->completed, 2);
	CHECK_EQ_U(f->seen, 0);
	CHECK_EQ_U(f->last_server, 1);
	CHECK_EQ_U(f->last_slot[0], 20000);
	CHECK_EQ_U(f->last_slot[1], 1100);
	CHECK_EQ_U(f->last_slot[2], 20050);
	CHECK_EQ_U(dbk_share_stats(s)->others_inflight, 2);
	/* One ended: released with the slot complete gave it. */
	snprintf(a, sizeof(a),
	         "# table: t, type: string, size:4096, used:1\n"
	         "0x1: key=n2/vllm1 use=0 exp=9000 gpt0=1 gpc0=20000 "
	         "http_req_cnt=2 bytes_in_cnt=1100 gpc1=20050\n\n");
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 110, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->released, 1);
	CHECK_EQ_U(f->last_released_prompt, 20000);
	/* Another node's row without it: the prompt and output whole. */
	snprintf(a, sizeof(a),
	         "# table: t, type: string, size:4096, used:2\n"
	         "0x1: key=n2/vllm1 use=0 exp=9000 gpt0=1 gpc0=20000 "
	         "http_req_cnt=2 bytes_in_cnt=1100 gpc1=20050\n"
	         "0x2: key=n3/vllm0 use=0 exp=9000 gpt0=1 gpc0=20000 "
	         "http_req_cnt=1 gpc1=20050\n\n");
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 120, err, sizeof(err)) == 0);
	CHECK_EQ_U(f->completed, 3);
	CHECK_EQ_U(f->last_server, 0);
	CHECK_EQ_U(f->last_slot[1], 20100);
	dbk_policy_stop(&p);
}

static void test_a_row_claims_at_most_the_bound(void)
{
	struct dbk_policy p;
	struct dbk_share *s = start_seen(&p, "n1");
	char a[512], err[128];

	table(a, sizeof(a), 4000000000u, 1, 1, 7);
	CHECK(dbk_share_read(s, a, strlen(a), NAMES, 3, 100, err, sizeof(err)) == 0);
	CHECK_EQ_U(inner(&p)->seen, DBK_SHARE_MAX_ROW_INFLIGHT);
	dbk_policy_stop(&p);
}

static void test_batch_is_commands(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct dbk_rt_addr addr;
	char err[128];
	char big[DBK_RT_MAX_BATCH + 10];

	CHECK(dbk_rt_addr_parse("/nonexistent/dbk.sock", &addr, err, sizeof(err)) == 0);
	CHECK(!dbk_rt_query_start_batch(loop, &addr, "show info;", 0, 0, NULL, NULL, err,
	                                sizeof(err)));
	CHECK(!dbk_rt_query_start_batch(loop, &addr, "a;;b", 0, 0, (dbk_rt_query_cb)1, NULL, err,
	                                sizeof(err)));
	CHECK(!dbk_rt_query_start_batch(loop, &addr, "show info\nshow stat", 0, 0,
	                                (dbk_rt_query_cb)1, NULL, err, sizeof(err)));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(!dbk_rt_query_start_batch(loop, &addr, big, 0, 0, (dbk_rt_query_cb)1, NULL, err,
	                                sizeof(err)));
	ev_loop_destroy(loop);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_wrap_needs_seen_and_a_name);
	RUN(test_writes_own_rows);
	RUN(test_held_shared_once_whole);
	RUN(test_taken_back_is_booked_anew);
	RUN(test_reads_the_others);
	RUN(test_ends_the_one_that_ended);
	RUN(test_others_booked_net_of_their_prefix);
	RUN(test_a_row_claims_at_most_the_bound);
	RUN(test_batch_is_commands);
	return CHECK_DONE();
}
