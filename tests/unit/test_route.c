/* The router alone: NOTIFY frames in, ACK frames out, no sockets. */
#include <stdlib.h>

#include "check.h"
#include "frames.h"
#include "lib/log.h"
#include "policy_feed.h"
#include "policy_ttft.h"
#include "route.h"

static const char *const names[] = { "vllm0", "vllm1", "vllm2", "vllm3" };

struct fixture {
	struct dbk_balancer *bal;
	struct dbk_route r;
	uint8_t in[4096];
	uint8_t out[4096];
	struct dbk_spop_frame ack;
};

static void up(struct fixture *x, bool dynamic)
{
	struct dbk_bal_config bc;

	memset(x, 0, sizeof(*x));
	dbk_bal_config_default(&bc, 4, dynamic, 32768, 131072);
	x->bal = dbk_bal_new(&bc);
	x->r.bal = x->bal;
	x->r.names = names;
	x->r.nnames = 4;
}

static void down(struct fixture *x) { dbk_bal_free(x->bal); }

/* Runs a whole frame (with its length prefix) through the router. */
static enum dbk_spop_status run_frame(struct fixture *x, const uint8_t *frame, size_t len)
{
	struct dbk_spop_frame f;
	struct dbk_spop_writer w;
	enum dbk_spop_status st;

	st = dbk_spop_frame_parse(frame + 4, len - 4, &f);
	if (st != DBK_SPOP_OK)
		return st;
	dbk_spop_writer_init(&w, x->out, sizeof(x->out));
	dbk_spop_ack_begin(&w, f.stream_id, f.frame_id);
	st = dbk_route_notify(&x->r, &f, 1000, &w);
	if (st == DBK_SPOP_OK &&
	    (dbk_spop_frame_end(&w) == 0 || dbk_spop_frame_parse(x->out + 4, w.len - 4, &x->ack)))
		st = DBK_SPOP_ERR_UNKNOWN;
	return st;
}

static struct dbk_spop_data bin(const char *s)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_BIN };

	d.u.buf.ptr = (const uint8_t *)s;
	d.u.buf.len = strlen(s);
	return d;
}

static void test_route_sets_every_variable(void)
{
	struct fixture x;
	struct dbk_spop_data v;
	const char *const argn[] = { "id", "blen", "body", "details" };
	struct dbk_spop_data argv[4] = { dbk_spop_str("id-1"), dbk_spop_int(140000),
		                         bin("{\"prompt\":\"a\"}"), dbk_spop_bool(true) };

	up(&x, true);
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 4, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(x.ack.type, DBK_SPOP_ACK);
	CHECK_EQ_U(x.ack.stream_id, 3);
	CHECK_EQ_U(x.ack.frame_id, 4);
	CHECK(test_var_is(&x.ack, "server", "vllm2"));
	CHECK(test_var_is(&x.ack, "score", "35000"));
	int64_t i;
	CHECK(test_ack_var(&x.ack, "bucket", &v) && dbk_spop_data_to_i64(&v, &i) && i == 1);
	CHECK(test_ack_var(&x.ack, "group", &v) && dbk_spop_data_to_i64(&v, &i) && i == 1);
	CHECK(test_ack_var(&x.ack, "redirected", &v) && v.type == DBK_SPOP_T_BOOL && !v.u.b);
	CHECK(!test_ack_var(&x.ack, "error", &v));
	CHECK_EQ_U(x.r.stats.routed, 1);
	/* Dynamic mode scores by length alone and never parses the body. */
	CHECK_EQ_U(x.r.stats.truncated_bodies, 0);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 1);
	down(&x);
}

/* Without details (or with them off) the ACK names the server alone:
 * every other variable costs HAProxy work per request. The sample
 * configuration sends details=env(DBK_DEBUG_HEADERS): the string "1". */
static void test_details_only_when_asked(void)
{
	static const struct {
		struct dbk_spop_data d;
		bool want;
	} cases[] = {
		{ { .type = DBK_SPOP_T_NULL }, false },
		{ { .type = DBK_SPOP_T_BOOL, .u.b = false }, false },
		{ { .type = DBK_SPOP_T_BOOL, .u.b = true }, true },
		{ { .type = DBK_SPOP_T_INT32, .u.i32 = 0 }, false },
		{ { .type = DBK_SPOP_T_INT32, .u.i32 = 1 }, true },
		{ { .type = DBK_SPOP_T_STR, .u.buf = { (const uint8_t *)"1", 1 } }, true },
		{ { .type = DBK_SPOP_T_STR, .u.buf = { (const uint8_t *)"0", 1 } }, false },
		{ { .type = DBK_SPOP_T_STR, .u.buf = { (const uint8_t *)"", 0 } }, false },
	};
	struct dbk_spop_data v;
	struct fixture x;

	up(&x, true);
	size_t len = test_notify(x.in, sizeof(x.in), 1, 1, DBK_SPOP_FLAG_FIN, "plain", 100);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, "server", &v));
	CHECK(!test_ack_var(&x.ack, "score", &v));
	CHECK(!test_ack_var(&x.ack, "bucket", &v));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const argn[] = { "id", "blen", "details" };
		char id[8];

		snprintf(id, sizeof(id), "d%zu", i);
		struct dbk_spop_data argv[3] = { dbk_spop_str(id), dbk_spop_int(100), cases[i].d };
		len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 3, argn, argv);
		CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
		CHECK(test_ack_var(&x.ack, "server", &v));
		CHECK_EQ_U(test_ack_var(&x.ack, "score", &v), cases[i].want);
		CHECK_EQ_U(test_ack_var(&x.ack, "redirected", &v), cases[i].want);
		/* The prediction's variables are the ttft policy's alone. */
		CHECK(!test_ack_var(&x.ack, "ttft_ms", &v));
	}
	CHECK_EQ_U(x.r.stats.routed, 1 + sizeof(cases) / sizeof(cases[0]));
	down(&x);
}

static void test_whole_json_body_is_read(void)
{
	struct fixture x;
	static const char body[] = "{\"prompt\":\"hi\",\"max_tokens\":1000,\"ignore_eos\":true}";
	const char *const argn[] = { "id", "blen", "body", "details" };
	struct dbk_spop_data argv[4] = { dbk_spop_str("j"), dbk_spop_int(sizeof(body) - 1),
		                         bin(body), dbk_spop_bool(true) };
	char want[32];

	up(&x, false);
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 4, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	snprintf(want, sizeof(want), "%d", (int)(sizeof(body) - 1) + 1000);
	CHECK(test_var_is(&x.ack, "score", want));
	CHECK_EQ_U(x.r.stats.truncated_bodies, 0);
	down(&x);
}

/* Scores print as %.10g would, quarters by a fast path. */
static void test_score_spelling(void)
{
	static const struct {
		const char *body;
		const char *want;
	} cases[] = {
		{ "{\"max_tokens\":3}", "17.5" },                   /* 16 B + 1.5 */
		{ "{\"max_tokens\":3,\"ignore_eos\":true}", "37" }, /* 34 B + 3 */
		{ "{\"max_tokens\":0.3}", "18.15" },                /* not quarters */
		{ "{\"max_tokens\":1e9}", "500000018" },
		{ "{\"max_tokens\":4e9}", "2000000018" },  /* past the fast path */
		{ "{\"max_tokens\":1e12}", "2147483667" }, /* clamped at 2^32 */
	};
	const char *const argn[] = { "id", "body", "details" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture x;
		char id[8];
		snprintf(id, sizeof(id), "s%zu", i);
		struct dbk_spop_data argv[3] = { dbk_spop_str(id), bin(cases[i].body),
			                         dbk_spop_bool(true) };

		up(&x, false);
		size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 3, argn, argv);
		CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
		if (!test_var_is(&x.ack, "score", cases[i].want)) {
			struct dbk_spop_data v;
			test_ack_var(&x.ack, "score", &v);
			fprintf(stderr, "  %s: got '%.*s', want '%s'\n", cases[i].body,
			        (int)v.u.buf.len, (const char *)v.u.buf.ptr, cases[i].want);
			CHECK(0);
		}
		down(&x);
	}
}

static void test_null_blen_uses_the_sample(void)
{
	struct fixture x;
	const char *const argn[] = { "id", "blen", "body", "details" };
	struct dbk_spop_data argv[4] = { dbk_spop_str("n"),
		                         { .type = DBK_SPOP_T_NULL },
		                         bin("{\"max_tokens\":4}"),
		                         dbk_spop_bool(true) };

	up(&x, false);
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 4, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	/* 16 bytes + 0.5 * 4 */
	CHECK(test_var_is(&x.ack, "score", "18"));
	down(&x);
}

static void test_missing_id_is_an_error_not_a_lease(void)
{
	struct fixture x;
	const char *const argn[] = { "blen" };
	struct dbk_spop_data argv[1] = { dbk_spop_int(10) };

	up(&x, true);
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 1, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "error", "no-id"));
	CHECK_EQ_U(x.r.stats.no_id, 1);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 0);
	down(&x);
}

static void test_duplicate_id_refused(void)
{
	struct fixture x;
	struct dbk_spop_data v;

	up(&x, true);
	size_t len = test_notify(x.in, sizeof(x.in), 1, 1, DBK_SPOP_FLAG_FIN, "same", 100);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, "error", &v));
	CHECK(!test_ack_var(&x.ack, "server", &v));
	CHECK_EQ_U(x.r.stats.refused, 1);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 1);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->duplicates, 1);
	down(&x);
}

/* route.c logs nothing: it tells its caller each decision, routed or
 * refused, and the caller (route_handler.c) decides what to log. */
struct seen {
	unsigned n;
	char id[16];
	enum dbk_bal_result res;
	bool has_decision;
	unsigned server;
	double body_bytes;
	uint64_t now_ms;
};

static void record(void *arg, const struct dbk_route_event *e)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->id, sizeof(s->id), "%.*s", (int)e->id_len, (const char *)e->id);
	s->res = e->res;
	s->has_decision = e->d != NULL;
	s->server = e->d ? e->d->server : 99;
	s->body_bytes = e->req->body_bytes;
	s->now_ms = e->now_ms;
}

static void test_decisions_are_reported_not_logged(void)
{
	struct fixture x;
	struct seen s = { 0 };
	const char *const argn[] = { "blen" };
	struct dbk_spop_data argv[1] = { dbk_spop_int(10) };

	up(&x, true);
	x.r.on_decision = record;
	x.r.decision_arg = &s;
	size_t len = test_notify(x.in, sizeof(x.in), 1, 1, DBK_SPOP_FLAG_FIN, "ev-1", 140000);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(s.n, 1);
	CHECK(strcmp(s.id, "ev-1") == 0);
	CHECK_EQ_U(s.res, DBK_BAL_OK);
	CHECK(s.has_decision);
	CHECK_EQ_U(s.server, 2); /* the long group's first */
	CHECK(s.body_bytes == 140000);
	CHECK_EQ_U(s.now_ms, 1000);
	/* The same id again: refused, reported with why, no decision. */
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(s.n, 2);
	CHECK_EQ_U(s.res, DBK_BAL_DUPLICATE);
	CHECK(!s.has_decision);
	/* No id: nothing was asked of the balancer, nothing to report. */
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 1, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(s.n, 2);
	CHECK_EQ_U(x.r.stats.no_id, 1);
	/* Its client left first: reported, but not a refusal. */
	dbk_bal_bury(x.bal, "gone", 4, 1000);
	len = test_notify(x.in, sizeof(x.in), 1, 2, DBK_SPOP_FLAG_FIN, "gone", 100);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(s.n, 3);
	CHECK_EQ_U(s.res, DBK_BAL_ENDED);
	CHECK_EQ_U(x.r.stats.refused, 1);
	down(&x);
}

static void test_unknown_message_never_gets_an_empty_ack(void)
{
	struct fixture x;
	const char *const argn[] = { "id" };
	struct dbk_spop_data argv[1] = { dbk_spop_str("u") };

	up(&x, true);
	size_t len = test_notify_args(x.in, sizeof(x.in), "something-else", 1, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(x.ack.payload_len > 0);
	CHECK(test_var_is(&x.ack, "error", "unknown-message"));
	CHECK_EQ_U(x.r.stats.unknown_messages, 1);
	down(&x);
}

static void test_truncated_notify_takes_no_lease(void)
{
	struct fixture x;

	up(&x, true);
	/* Two messages; cut the frame inside the second one: the first must
	 * not be acted upon either. */
	struct dbk_spop_writer w;
	struct dbk_spop_data v;
	dbk_spop_writer_init(&w, x.in, sizeof(x.in));
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 1, 1);
	for (int m = 0; m < 2; m++) {
		dbk_spop_put_name(&w, DBK_MSG_ROUTE, strlen(DBK_MSG_ROUTE));
		w.buf[w.len++] = 1;
		dbk_spop_put_name(&w, "id", 2);
		v = dbk_spop_str(m ? "m1" : "m0");
		dbk_spop_put_data(&w, &v);
	}
	size_t len = dbk_spop_frame_end(&w);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 2);

	uint8_t frame[sizeof(x.in)];
	memcpy(frame, x.in, len);
	down(&x);
	up(&x, true);
	memcpy(x.in, frame, len);
	/* Same bytes with the last 2 cut and the length fixed. */
	size_t cut = len - 2;
	uint32_t body = (uint32_t)(cut - 4);
	x.in[0] = (uint8_t)(body >> 24);
	x.in[1] = (uint8_t)(body >> 16);
	x.in[2] = (uint8_t)(body >> 8);
	x.in[3] = (uint8_t)body;
	CHECK(run_frame(&x, x.in, cut) != DBK_SPOP_OK);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 0);
	down(&x);
}

static void test_moved_message_moves_the_lease(void)
{
	struct fixture x;
	struct dbk_spop_data v;
	const char *const argn[] = { "id", "server" };
	struct dbk_spop_data argv[2] = { dbk_spop_str("mv"), dbk_spop_str("vllm3") };

	up(&x, true);
	size_t len = test_notify(x.in, sizeof(x.in), 1, 1, DBK_SPOP_FLAG_FIN, "mv", 400);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm0"));
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 100, 0);

	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_MOVED, 2, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, "moved", &v) && v.type == DBK_SPOP_T_BOOL && v.u.b);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 0), 0, 0);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 3), 100, 0);
	CHECK_NEAR(dbk_bal_bucket_load(x.bal, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(x.bal, 1), 100, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(x.bal, 3), 1);
	CHECK_EQ_U(x.r.stats.moved, 1);
	/* The release gives back what is charged where it now is. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "mv", 2, NULL), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(x.bal, 3), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(x.bal, 1), 0, 0);

	/* Unknown server or id: answered, nothing moved. */
	argv[1] = dbk_spop_str("nosuch");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_MOVED, 2, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, "moved", &v) && v.type == DBK_SPOP_T_BOOL && !v.u.b);
	argv[1] = dbk_spop_str("vllm1");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_MOVED, 2, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, "moved", &v) && !v.u.b);
	CHECK_EQ_U(x.r.stats.moved, 1);
	down(&x);
}

static void test_ack_that_does_not_fit_is_an_error(void)
{
	struct fixture x;
	struct dbk_spop_frame f;
	struct dbk_spop_writer w;

	up(&x, true);
	size_t len = test_notify(x.in, sizeof(x.in), 1, 1, DBK_SPOP_FLAG_FIN, "tiny", 100);
	CHECK_EQ_U(dbk_spop_frame_parse(x.in + 4, len - 4, &f), DBK_SPOP_OK);
	dbk_spop_writer_init(&w, x.out, 20);
	CHECK_EQ_U(dbk_route_notify(&x.r, &f, 0, &w), DBK_SPOP_ERR_RES);
	down(&x);
}

/* --policy ttft: the predictor picks, the balancer leases there, and
 * the lease's end or move reaches the predictor's books (policy.c). */
static unsigned pred_inflight(const struct dbk_pred *p, unsigned server)
{
	struct dbk_pred_view v;

	dbk_pred_view(p, server, 1000, &v);
	return v.inflight;
}

/* The fixture under --policy ttft; NULL (checked, torn down) if the
 * policy could not be made. down_ttft tears it down. */
static struct dbk_policy ttft_policy;

static struct dbk_pred *up_ttft(struct fixture *x)
{
	const struct dbk_policy_env env = { .nservers = 4,
		                            .engine_speed = 1.0,
		                            .stall_weight = -1 };
	char err[128];

	up(x, false);
	int rc = dbk_policy_start(&ttft_policy, dbk_policy_find("ttft"), &env, err, sizeof(err));
	CHECK_EQ_U(rc, 0);
	if (rc) {
		down(x);
		return NULL;
	}
	dbk_policy_attach(&ttft_policy, x->bal);
	x->r.policy = &ttft_policy;
	return ((struct dbk_policy_ttft *)ttft_policy.st)->pred;
}

static void down_ttft(struct fixture *x)
{
	dbk_policy_detach(x->bal);
	dbk_policy_stop(&ttft_policy);
	down(x);
}

static void test_ttft_route_follows_the_context_limit_and_the_books(void)
{
	struct fixture x;
	const char *const argn[] = { "id", "blen", "body" };
	struct dbk_spop_data argv[3] = { dbk_spop_str("long-1"), dbk_spop_int(40000),
		                         bin("{\"prompt\":\"aaaa\"}") };

	struct dbk_pred *p = up_ttft(&x);
	if (!p)
		return;
	dbk_pred_set_max_model_len(p, 0, 4096);
	dbk_pred_set_max_model_len(p, 1, 4096);
	dbk_pred_set_max_model_len(p, 3, 131072);
	/* 10000 tokens: vllm0-1 cannot hold it, vllm2 (unknown) and vllm3
	 * may. Idle and equal, the first usable of them. */
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 3, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm2") || test_var_is(&x.ack, "server", "vllm3"));
	unsigned s1 = test_var_is(&x.ack, "server", "vllm2") ? 2 : 3;
	CHECK_EQ_U(pred_inflight(p, s1), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(x.bal, s1), 1);

	/* HAProxy served it elsewhere: both books follow. */
	const char *const mvn[] = { "id", "server" };
	struct dbk_spop_data mvv[2] = { dbk_spop_str("long-1"), dbk_spop_str("vllm3") };
	if (s1 == 3)
		mvv[1] = dbk_spop_str("vllm2");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_MOVED, 2, mvn, mvv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK_EQ_U(pred_inflight(p, s1), 0);
	CHECK_EQ_U(pred_inflight(p, 5 - s1), 1);

	/* Its end releases the predictor's charge exactly once. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "long-1", 6, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight(p, 5 - s1), 0);
	CHECK_EQ_U(dbk_bal_release(x.bal, "long-1", 6, NULL), DBK_BAL_UNKNOWN);

	/* vllm2-3 unusable: it goes to the largest usable one, counted. */
	dbk_bal_set_usable(x.bal, 2, false);
	dbk_bal_set_usable(x.bal, 3, false);
	argv[0] = dbk_spop_str("long-2");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 3, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm0") || test_var_is(&x.ack, "server", "vllm1"));
	CHECK_EQ_U(x.r.stats.too_long, 1);
	/* vLLM refuses it at once: a lease, but nothing booked (no queue a
	 * newcomer waits behind), and its end, milliseconds later, teaches
	 * no speed and gives nothing back. */
	unsigned s2 = test_var_is(&x.ack, "server", "vllm0") ? 0 : 1;
	struct dbk_pred_view v;
	CHECK_EQ_U(dbk_bal_server_inflight(x.bal, s2), 1);
	dbk_pred_view(p, s2, 1000, &v);
	CHECK_EQ_U(v.inflight, 0);
	CHECK(v.queue_s == 0 && v.kv_committed == 0);
	CHECK_EQ_U(dbk_bal_release(x.bal, "long-2", 6, NULL), DBK_BAL_OK);
	dbk_pred_view(p, s2, 1000, &v);
	CHECK_EQ_U(v.inflight, 0);
	CHECK(v.queue_s == 0 && v.slowness == 1);
	/* Nothing usable: an error, no lease, nothing charged. */
	dbk_bal_set_usable(x.bal, 0, false);
	dbk_bal_set_usable(x.bal, 1, false);
	argv[0] = dbk_spop_str("long-3");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 3, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "error", "no usable server"));
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 0);
	down_ttft(&x);
}

/* Routes a request of id whose body HAProxy sized blen, with sample as
 * its first bytes and clen Content-Length headers, through x (details
 * asked for when details); DBK_SPOP_OK when it ran. */
static enum dbk_spop_status route_clen(struct fixture *x, const char *id, int64_t blen,
                                       const char *sample, int64_t clen, bool details)
{
	const char *const argn[] = { "id", "blen", "body", "clen", "details" };
	struct dbk_spop_data argv[5] = { dbk_spop_str(id), dbk_spop_int(blen), bin(sample),
		                         dbk_spop_int(clen), dbk_spop_bool(true) };
	size_t len = test_notify_args(x->in, sizeof(x->in), DBK_MSG_ROUTE, details ? 5 : 4, argn,
	                              argv);

	return run_frame(x, x->in, len);
}

/* The ACK's bucket variable; -1 when absent. */
static int64_t ack_bucket(const struct fixture *x)
{
	struct dbk_spop_data v;
	int64_t bucket;

	return test_ack_var(&x->ack, "bucket", &v) && dbk_spop_data_to_i64(&v, &bucket) ? bucket
	                                                                                : -1;
}

/* 16,392 bytes: what HAProxy held of an 80 KB prompt sent in 4 KB
 * chunks; CUT is its cut first bytes, WHOLE a body whole in the sample. */
static const char CUT[] = "{\"prompt\":\"aaaa";
static const char WHOLE[] = "{\"prompt\":\"aaaa\"}";

/* A body without a Content-Length (clen 0) that goes on past the
 * sample has a length HAProxy could not know: only the servers with the
 * longest usable context may take it, however loaded. A whole JSON
 * sample, or a Content-Length, keeps the length trusted. */
static void test_ttft_unsized_body_goes_to_the_longest_context(void)
{
	struct fixture x;
	char id[16];

	struct dbk_pred *p = up_ttft(&x);
	if (!p)
		return;
	dbk_pred_set_max_model_len(p, 0, 4096);
	dbk_pred_set_max_model_len(p, 1, 4096);
	dbk_pred_set_max_model_len(p, 2, 32768);
	dbk_pred_set_max_model_len(p, 3, 131072);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "u-%d", i);
		CHECK_EQ_U(route_clen(&x, id, 16392, CUT, 0, false), DBK_SPOP_OK);
		CHECK(test_var_is(&x.ack, "server", "vllm3"));
	}
	CHECK_EQ_U(x.r.stats.unsized_bodies, 3);
	CHECK_EQ_U(pred_inflight(p, 3), 3);

	/* With its Content-Length the same sample is 4,098 tokens: vllm2
	 * holds it and is idle. */
	CHECK_EQ_U(route_clen(&x, "s-1", 16392, CUT, 1, false), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm2"));
	/* Chunked but whole in the sample: its length is known, and the
	 * idle short servers hold it. */
	CHECK_EQ_U(route_clen(&x, "s-2", 17, WHOLE, 0, false), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm0") || test_var_is(&x.ack, "server", "vllm1"));
	CHECK_EQ_U(x.r.stats.unsized_bodies, 3);

	/* The longest down: the longest usable context takes it. */
	dbk_bal_set_usable(x.bal, 3, false);
	CHECK_EQ_U(route_clen(&x, "u-3", 16392, CUT, 0, false), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm2"));
	CHECK_EQ_U(x.r.stats.unsized_bodies, 4);
	down_ttft(&x);
}

/* Dynamic mode: a body without a Content-Length that goes on past the
 * sample is scored at the long bucket's threshold at least; with its
 * Content-Length, or whole in the sample, by its length. */
static void test_dynamic_unsized_body_goes_to_the_long_bucket(void)
{
	struct fixture x;

	up(&x, true);
	CHECK_EQ_U(route_clen(&x, "d-0", 16392, CUT, 0, true), DBK_SPOP_OK);
	CHECK_EQ_U(ack_bucket(&x), 1);
	CHECK(test_var_is(&x.ack, "score", "32768"));
	CHECK(test_var_is(&x.ack, "server", "vllm2") || test_var_is(&x.ack, "server", "vllm3"));
	CHECK_EQ_U(x.r.stats.unsized_bodies, 1);

	/* Its Content-Length twin: 4,098 tokens, the short bucket. */
	CHECK_EQ_U(route_clen(&x, "d-1", 16392, CUT, 1, true), DBK_SPOP_OK);
	CHECK_EQ_U(ack_bucket(&x), 0);
	CHECK(test_var_is(&x.ack, "score", "4098"));
	/* Chunked, whole in the sample: its own length. */
	CHECK_EQ_U(route_clen(&x, "d-2", 17, WHOLE, 0, true), DBK_SPOP_OK);
	CHECK_EQ_U(ack_bucket(&x), 0);
	CHECK_EQ_U(x.r.stats.unsized_bodies, 1);
	down(&x);

	/* Plain mode, one bucket: the floor is the score. */
	up(&x, false);
	CHECK_EQ_U(route_clen(&x, "p-0", 16392, CUT, 0, true), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "score", "16400"));
	CHECK_EQ_U(x.r.stats.unsized_bodies, 1);
	down(&x);
}

/* Under ttft the details carry the prediction: a conversation's second
 * turn, sent where its first went, expects that prefix from the cache. */
static void test_ttft_details_carry_the_prediction(void)
{
	static char body[2048];
	struct fixture x;
	struct dbk_spop_data v;
	const char *const argn[] = { "id", "blen", "body", "details" };

	snprintf(body, sizeof(body), "{\"prompt\":\"");
	for (size_t i = strlen(body); i < sizeof(body) - 3; i++)
		body[i] = (char)('a' + (i * 7 + i / 13) % 26);
	memcpy(body + sizeof(body) - 3, "\"}", 3);
	struct dbk_spop_data argv[4] = { dbk_spop_str("t-1"), dbk_spop_int(sizeof(body) - 1),
		                         bin(body), dbk_spop_bool(true) };

	struct dbk_pred *p = up_ttft(&x);
	if (!p)
		return;
	/* One usable server, so both turns meet there. */
	for (unsigned i = 1; i < 4; i++)
		dbk_bal_set_usable(x.bal, i, false);
	size_t len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 4, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm0"));
	CHECK(test_ack_var(&x.ack, "hit_tokens", &v) && v.type == DBK_SPOP_T_INT64 && v.u.i64 == 0);
	/* An idle server: the prompt's own prefill, a few ms. */
	CHECK(test_ack_var(&x.ack, "ttft_ms", &v) && v.type == DBK_SPOP_T_INT64 && v.u.i64 >= 1 &&
	      v.u.i64 < 1000);

	argv[0] = dbk_spop_str("t-2");
	len = test_notify_args(x.in, sizeof(x.in), DBK_MSG_ROUTE, 4, argn, argv);
	CHECK_EQ_U(run_frame(&x, x.in, len), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "server", "vllm0"));
	CHECK(test_ack_var(&x.ack, "hit_tokens", &v) && v.type == DBK_SPOP_T_INT64 && v.u.i64 > 0);
	CHECK(test_ack_var(&x.ack, "ttft_ms", &v) && v.type == DBK_SPOP_T_INT64 && v.u.i64 >= 1);
	down_ttft(&x);
}

/* Admission (issue 28): one route message of class cls (NULL: no class
 * argument) for a prompt of blen bytes. */
static enum dbk_spop_status route_class(struct fixture *x, const char *id, const char *cls,
                                        int64_t blen)
{
	const char *const argn[] = { "id", "blen", "body", "class" };
	struct dbk_spop_data argv[4] = { dbk_spop_str(id), dbk_spop_int(blen),
		                         bin("{\"prompt\":\"aaaa\"}"),
		                         dbk_spop_str(cls ? cls : "") };

	return run_frame(x, x->in,
	                 test_notify_args(x->in, sizeof(x->in), DBK_MSG_ROUTE, cls ? 4 : 3, argn,
	                                  argv));
}

static bool shed_ack(const struct fixture *x)
{
	struct dbk_spop_data v;

	return test_var_is(&x->ack, DBK_VAR_ACTION, DBK_ACTION_SHED) &&
	       test_ack_var(&x->ack, DBK_VAR_RETRY_AFTER, &v) && v.type == DBK_SPOP_T_INT64 &&
	       v.u.i64 >= 1 && v.u.i64 <= 60 && !test_ack_var(&x->ack, DBK_VAR_SERVER, &v);
}

/* Under ttft, admission asks between the choice and the lease: a request
 * predicted late because of the queue ahead takes no lease and no
 * charge, and its end releases nothing; critical always goes; a class
 * not known is standard and counted; off, nothing changes. */
static void test_admission_sheds_before_the_lease(void)
{
	struct fixture x;
	struct dbk_admit_config ac;

	struct dbk_pred *p = up_ttft(&x);
	if (!p)
		return;
	dbk_admit_config_default(&ac);
	x.r.admit = &ac;
	/* Off by default: a sheddable request is routed however late. */
	CHECK_EQ_U(route_class(&x, "off-1", "sheddable", 400000), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, DBK_VAR_SERVER, &(struct dbk_spop_data){ 0 }));
	CHECK_EQ_U(dbk_bal_release(x.bal, "off-1", 5, NULL), DBK_BAL_OK);
	/* On, with a 1 ms objective: 10k tokens cannot make it anywhere,
	 * but on an idle fleet only its own length makes it late, and it is
	 * served late rather than refused. */
	ac.enabled = true;
	ac.ttft_ms = 1;
	CHECK_EQ_U(route_class(&x, "long-1", "sheddable", 40000), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, DBK_VAR_SERVER, &(struct dbk_spop_data){ 0 }));
	CHECK_EQ_U(dbk_bal_release(x.bal, "long-1", 6, NULL), DBK_BAL_OK);
	/* Critical is never shed: one on each server, a queue everywhere. */
	for (unsigned i = 0; i < 4; i++) {
		char id[8];

		snprintf(id, sizeof(id), "crit-%u", i);
		CHECK_EQ_U(route_class(&x, id, "critical", 400000), DBK_SPOP_OK);
		CHECK(test_ack_var(&x.ack, DBK_VAR_SERVER, &(struct dbk_spop_data){ 0 }));
		CHECK(!test_ack_var(&x.ack, DBK_VAR_ACTION, &(struct dbk_spop_data){ 0 }));
	}
	CHECK_EQ_U(x.r.stats.admitted[DBK_CLASS_CRITICAL], 4);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 4);
	/* Now late because of the queue ahead: shed, no lease, no charge. */
	CHECK_EQ_U(route_class(&x, "shed-1", "Sheddable", 400000), DBK_SPOP_OK);
	CHECK(shed_ack(&x));
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 4);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ_U(pred_inflight(p, i), 1);
	CHECK_EQ_U(x.r.stats.shed[DBK_CLASS_SHEDDABLE][DBK_SHED_PREDICTED_LATE], 1);
	/* Its completion line finds nothing to release. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "shed-1", 6, NULL), DBK_BAL_UNKNOWN);
	/* Not known, or not a class at all: standard, counted, shed as such. */
	CHECK_EQ_U(route_class(&x, "bad-1", "urgent", 400000), DBK_SPOP_OK);
	CHECK(shed_ack(&x));
	CHECK_EQ_U(x.r.stats.bad_class, 1);
	CHECK_EQ_U(x.r.stats.shed[DBK_CLASS_STANDARD][DBK_SHED_PREDICTED_LATE], 1);
	/* No class argument (or an empty one): standard, not counted. */
	CHECK_EQ_U(route_class(&x, "none-1", NULL, 400000), DBK_SPOP_OK);
	CHECK(shed_ack(&x));
	CHECK_EQ_U(route_class(&x, "empty-1", "", 400000), DBK_SPOP_OK);
	CHECK_EQ_U(x.r.stats.bad_class, 1);
	CHECK_EQ_U(x.r.stats.shed[DBK_CLASS_STANDARD][DBK_SHED_PREDICTED_LATE], 3);
	/* In time: routed, whatever the class. */
	ac.ttft_ms = 3600 * 1000;
	CHECK_EQ_U(route_class(&x, "ok-1", "sheddable", 400000), DBK_SPOP_OK);
	CHECK(test_ack_var(&x.ack, DBK_VAR_SERVER, &(struct dbk_spop_data){ 0 }));
	CHECK_EQ_U(x.r.stats.admitted[DBK_CLASS_SHEDDABLE], 3);
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 5);
	down_ttft(&x);
}

/* The reference predicts nothing: only sheddable requests are shed, and
 * only while the fleet is saturated (saturation.h). */
static void test_admission_on_saturation_for_the_reference(void)
{
	struct fixture x;
	struct dbk_admit_config ac;
	struct dbk_saturation sat;
	const struct dbk_sat_config sc = { .queue = 5, .kv = 0.8, .stale_ms = 400 };

	up(&x, false);
	dbk_admit_config_default(&ac);
	ac.enabled = true;
	x.r.admit = &ac;
	CHECK_EQ_U(dbk_sat_init(&sat, &sc, 4), 0);
	x.r.sat = &sat;
	/* No scrapes: never saturated. */
	CHECK_EQ_U(route_class(&x, "r-1", "sheddable", 400), DBK_SPOP_OK);
	CHECK(!test_ack_var(&x.ack, DBK_VAR_ACTION, &(struct dbk_spop_data){ 0 }));
	for (unsigned i = 0; i < 4; i++)
		dbk_sat_scraped(&sat, i, true, 6, 0.1, 900);
	CHECK_EQ_U(route_class(&x, "r-2", "sheddable", 400), DBK_SPOP_OK);
	CHECK(shed_ack(&x));
	CHECK_EQ_U(x.r.stats.shed[DBK_CLASS_SHEDDABLE][DBK_SHED_SATURATED], 1);
	CHECK_EQ_U(route_class(&x, "r-3", "standard", 400), DBK_SPOP_OK);
	CHECK(!test_ack_var(&x.ack, DBK_VAR_ACTION, &(struct dbk_spop_data){ 0 }));
	CHECK_EQ_U(dbk_bal_stats(x.bal)->leases, 2);
	/* One server with room again: nothing shed. */
	dbk_sat_scraped(&sat, 2, true, 5, 0.8, 950);
	CHECK_EQ_U(route_class(&x, "r-4", "sheddable", 400), DBK_SPOP_OK);
	CHECK(!test_ack_var(&x.ack, DBK_VAR_ACTION, &(struct dbk_spop_data){ 0 }));
	/* Room by the queues, but the servers' first tokens of the last
	 * second took 2.5 s each (prompts already in vLLM's batch, still
	 * prefilling): standard is past its share, shed for that reason;
	 * critical still goes. */
	dbk_sat_first_tokens(&sat, 0, true, 10, 10, 0);
	dbk_sat_first_tokens(&sat, 0, true, 15, 12, 1000);
	CHECK_EQ_U(route_class(&x, "r-6", "standard", 400), DBK_SPOP_OK);
	CHECK(shed_ack(&x));
	CHECK_EQ_U(x.r.stats.shed[DBK_CLASS_STANDARD][DBK_SHED_FLEET_LATE], 1);
	CHECK_EQ_U(route_class(&x, "r-7", "critical", 400), DBK_SPOP_OK);
	CHECK(!test_ack_var(&x.ack, DBK_VAR_ACTION, &(struct dbk_spop_data){ 0 }));
	dbk_sat_forget(&sat, 0);
	dbk_sat_first_tokens(&sat, 1, true, 0, 0, 2000);
	/* No usable server: HAProxy's 503, not a 429. */
	dbk_sat_scraped(&sat, 2, true, 9, 0.9, 950);
	for (unsigned i = 0; i < 4; i++)
		dbk_bal_set_usable(x.bal, i, false);
	CHECK_EQ_U(route_class(&x, "r-5", "sheddable", 400), DBK_SPOP_OK);
	CHECK(test_var_is(&x.ack, "error", "no usable server"));
	dbk_sat_free(&sat);
	down(&x);
}

/* route_arrived: request id announcing blen bytes of which HAProxy held
 * arrived (negative: no arrived argument). Returns the lease's score. */
static double route_arrived(struct fixture *x, const char *id, int64_t blen, int64_t arrived)
{
	const char *const argn[] = { "id", "blen", "arrived" };
	struct dbk_spop_data argv[3] = { dbk_spop_str(id), dbk_spop_int(blen),
		                         dbk_spop_int(arrived) };
	struct dbk_bal_lease l;

	size_t len = test_notify_args(x->in, sizeof(x->in), DBK_MSG_ROUTE, arrived < 0 ? 2 : 3,
	                              argn, argv);
	CHECK_EQ_U(run_frame(x, x->in, len), DBK_SPOP_OK);
	CHECK(dbk_bal_lease_get(x->bal, id, strlen(id), &l));
	return l.score;
}

/* A body not whole when HAProxy asked (arrived below blen) is charged
 * without its prefill where the server's counts can correct it, and in
 * full everywhere else; the decision is the whole length's. */
static void test_body_not_whole_is_charged_for_what_arrived(void)
{
	struct fixture x;
	struct dbk_hold h;
	struct dbk_spop_data v;

	up(&x, false);
	/* No hold: in full, as always. */
	CHECK_NEAR(route_arrived(&x, "a", 900000, 16000), 900008, 1e-12);
	CHECK(dbk_hold_init(&h, 4) == 0);
	h.strict = true;
	x.r.hold = &h;
	/* Servers not scraped: in full. */
	CHECK_NEAR(route_arrived(&x, "b", 900000, 16000), 900008, 1e-12);
	for (unsigned i = 0; i < 4; i++)
		dbk_hold_scraped(&h, x.bal, i, true, 0, 0);
	/* Its prefill held back: half its default max_tokens. */
	CHECK_NEAR(route_arrived(&x, "c", 900000, 16000), 8, 1e-12);
	/* Bucketed by its announced length: the long group. */
	CHECK(test_ack_var(&x.ack, "server", &v) && v.u.buf.len == 5 &&
	      (v.u.buf.ptr[4] == '2' || v.u.buf.ptr[4] == '3'));
	/* Whole, or no arrived argument: in full. */
	CHECK_NEAR(route_arrived(&x, "d", 900000, 900000), 900008, 1e-12);
	CHECK_NEAR(route_arrived(&x, "e", 900000, -1), 900008, 1e-12);
	CHECK_EQ_U(h.stats.held, 1);
	CHECK_EQ_U(dbk_hold_count(&h), 1);
	dbk_hold_fini(&h);
	down(&x);
}

/* By default a body not whole is charged in full, as a whole one, and
 * watched where the server's counts can later take its prefill back. */
static void test_body_not_whole_is_charged_in_full_and_watched(void)
{
	struct fixture x;
	struct dbk_hold h;

	up(&x, false);
	CHECK(dbk_hold_init(&h, 4) == 0);
	x.r.hold = &h;
	for (unsigned i = 0; i < 4; i++)
		dbk_hold_scraped(&h, x.bal, i, true, 0, 0);
	CHECK_NEAR(route_arrived(&x, "a", 900000, 16000), 900008, 1e-12);
	CHECK_NEAR(route_arrived(&x, "b", 900000, 900000), 900008, 1e-12);
	CHECK_EQ_U(h.stats.watched, 1);
	CHECK_EQ_U(h.stats.held, 0);
	CHECK_EQ_U(dbk_hold_count(&h), 1);
	dbk_hold_fini(&h);
	down(&x);
}

/* The route's side of a held charge made whole: the policy's books
 * follow (what agent.c wires). */
static void made_whole(void *arg, const char *id, size_t id_len)
{
	dbk_route_whole(arg, id, id_len, 1000);
}

static unsigned pred_inflight_all(const struct dbk_pred *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < 4; i++)
		n += pred_inflight(p, i);
	return n;
}

static void taken_back(void *arg, const char *id, size_t id_len)
{
	dbk_route_taken(arg, id, id_len);
}

/* x under --policy ttft (up_ttft: NULL when it could not start), and h
 * watching its partial bodies (strict or taken back, scrapes every
 * 100 ms), the policy's books following, every server's counts read. */
static struct dbk_pred *ttft_hold_up(struct fixture *x, struct dbk_hold *h, bool strict)
{
	struct dbk_pred *p = up_ttft(x);

	if (!p)
		return NULL;
	CHECK(dbk_hold_init(h, 4) == 0);
	h->strict = strict;
	h->scrape_ms = 100;
	h->whole = made_whole;
	h->taken = taken_back;
	h->whole_arg = &x->r;
	x->r.hold = h;
	for (unsigned i = 0; i < 4; i++)
		dbk_hold_scraped(h, x->bal, i, true, 0, 0);
	return p;
}

/* Under --policy ttft a body not whole is held on the predictor's books
 * too: nothing booked until its server counts it, then booked once; its
 * release gives back what was booked, held or not. */
static void test_ttft_holds_a_body_not_whole(void)
{
	struct fixture x;
	struct dbk_hold h;
	struct dbk_bal_lease l;

	struct dbk_pred *p = ttft_hold_up(&x, &h, true);
	if (!p)
		return;
	/* Whole: booked at once, as always. */
	route_arrived(&x, "w", 40000, 40000);
	CHECK_EQ_U(pred_inflight_all(p), 1);
	CHECK_EQ_U(dbk_bal_release(x.bal, "w", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	/* Not whole: held on both books. */
	CHECK_NEAR(route_arrived(&x, "a", 900000, 16000), 8, 1e-12);
	route_arrived(&x, "b", 900000, 16000);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	CHECK_EQ_U(h.stats.held, 2);
	/* One ends before its server counted it: nothing to give back. */
	CHECK_EQ_U(dbk_bal_release(x.bal, "b", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	/* Its server counts the other on two scrapes in a row: booked
	 * there, once. */
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l));
	CHECK_EQ_U(dbk_hold_scraped(&h, x.bal, l.server, true, 1, 0), 0);
	CHECK_EQ_U(pred_inflight(p, l.server), 0);
	CHECK_EQ_U(dbk_hold_scraped(&h, x.bal, l.server, true, 1, 0), 1);
	CHECK_EQ_U(pred_inflight(p, l.server), 1);
	CHECK_EQ_U(dbk_hold_scraped(&h, x.bal, l.server, true, 1, 0), 0);
	CHECK_EQ_U(pred_inflight(p, l.server), 1);
	CHECK_EQ_U(dbk_bal_release(x.bal, "a", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	/* A held one whose server's scrape fails: booked at once. */
	route_arrived(&x, "c", 900000, 16000);
	CHECK(dbk_bal_lease_get(x.bal, "c", 1, &l));
	CHECK_EQ_U(pred_inflight_all(p), 0);
	CHECK_EQ_U(dbk_hold_scraped(&h, x.bal, l.server, false, 0, 0), 1);
	CHECK_EQ_U(pred_inflight(p, l.server), 1);
	CHECK_EQ_U(dbk_bal_release(x.bal, "c", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	dbk_hold_fini(&h);
	down_ttft(&x);
}

/* server's count missed its leases on 3 scrapes from t_ms on. */
static void missed(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server, double engine,
                   uint64_t t_ms)
{
	for (unsigned i = 0; i < DBK_HOLD_SCRAPES; i++)
		dbk_hold_scraped(h, bal, server, true, engine, t_ms + 100 * i);
}

/* By default under --policy ttft a body not whole is booked at once;
 * taken back, the predictor gives back what it booked (its prefill's
 * place in the queue included) and holds it,
 * books it again once its server counts it, and gives it back once. */
static void test_ttft_takes_back_a_body_not_whole(void)
{
	struct fixture x;
	struct dbk_hold h;
	struct dbk_bal_lease l;

	struct dbk_pred *p = ttft_hold_up(&x, &h, false);
	if (!p)
		return;
	route_arrived(&x, "a", 900000, 16000);
	CHECK_EQ_U(pred_inflight_all(p), 1);
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l));
	/* Another request on its server, decoding: the books keep a queue
	 * while the server is not idle. */
	struct dbk_pred_request other = { .prompt_tokens = 10, .max_tokens = 100000 };
	struct dbk_pred_ticket ot;
	struct dbk_pred_view v;
	dbk_pred_commit(p, &other, l.server, 1000, &ot);
	/* Missing from its server's count long past its grace. */
	missed(&h, x.bal, l.server, 0, 100000);
	CHECK_EQ_U(h.stats.taken_back, 1);
	CHECK_EQ_U(pred_inflight_all(p), 1);
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l) && (l.slot[0] & DBK_POLICY_HELD));
	/* Its prefill (225,000 tokens: seconds) is off the queue too: booked
	 * again, it would wait behind itself. */
	dbk_pred_view(p, l.server, 1500, &v);
	CHECK(v.queue_s == 0);
	dbk_pred_release(p, &ot, 1500);
	/* Taken already: nothing given back twice. */
	dbk_route_taken(&x.r, "a", 1);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	/* Counted: booked again, once. */
	CHECK_EQ_U(dbk_hold_scraped(&h, x.bal, l.server, true, 1, 100300), 1);
	CHECK_EQ_U(pred_inflight(p, l.server), 1);
	CHECK(dbk_bal_lease_get(x.bal, "a", 1, &l) && !(l.slot[0] & DBK_POLICY_HELD));
	/* Taken back again, then ended: nothing left on the books. */
	missed(&h, x.bal, l.server, 0, 100400);
	CHECK_EQ_U(h.stats.taken_back, 2);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	CHECK_EQ_U(dbk_bal_release(x.bal, "a", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(pred_inflight_all(p), 0);
	dbk_hold_fini(&h);
	down_ttft(&x);
}

int main(void)
{
	dbk_log_set_level(DBK_LOG_ERROR);
	RUN(test_route_sets_every_variable);
	RUN(test_details_only_when_asked);
	RUN(test_whole_json_body_is_read);
	RUN(test_null_blen_uses_the_sample);
	RUN(test_score_spelling);
	RUN(test_missing_id_is_an_error_not_a_lease);
	RUN(test_duplicate_id_refused);
	RUN(test_decisions_are_reported_not_logged);
	RUN(test_unknown_message_never_gets_an_empty_ack);
	RUN(test_truncated_notify_takes_no_lease);
	RUN(test_moved_message_moves_the_lease);
	RUN(test_ack_that_does_not_fit_is_an_error);
	RUN(test_ttft_route_follows_the_context_limit_and_the_books);
	RUN(test_ttft_unsized_body_goes_to_the_longest_context);
	RUN(test_dynamic_unsized_body_goes_to_the_long_bucket);
	RUN(test_ttft_details_carry_the_prediction);
	RUN(test_admission_sheds_before_the_lease);
	RUN(test_admission_on_saturation_for_the_reference);
	RUN(test_body_not_whole_is_charged_for_what_arrived);
	RUN(test_body_not_whole_is_charged_in_full_and_watched);
	RUN(test_ttft_holds_a_body_not_whole);
	RUN(test_ttft_takes_back_a_body_not_whole);
	return CHECK_DONE();
}
