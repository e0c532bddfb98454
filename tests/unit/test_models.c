/* Model routing: the pool's model table (agent/models.h), the request's
 * model from the body sample (agent/prefix_key.h's dbk_pkey_model), and the candidate set
 * honoured by the balancer (the reference) and every policy that
 * chooses. */
#include <stdlib.h>
#include <string.h>

#include "balancer_test.h"
#include "check.h"
#include "frames.h"
#include "models.h"
#include "policy_ops.h"
#include "prefix_key.h"
#include "route.h"

static struct dbk_vm_models list_of(const char *const *ids, const char *const *parents, unsigned n)
{
	struct dbk_vm_models l = { 0 };

	for (unsigned i = 0; i < n; i++) {
		snprintf(l.m[i].id, sizeof(l.m[i].id), "%s", ids[i]);
		snprintf(l.m[i].parent, sizeof(l.m[i].parent), "%s", parents ? parents[i] : "");
	}
	l.n = n;
	return l;
}

static enum dbk_models_pick pick(const struct dbk_models *m, const char *id, uint64_t *set)
{
	set[0] = 0xdead;
	return dbk_models_pick(m, (const uint8_t *)id, strlen(id), set);
}

static void test_unknown_servers_take_every_model(void)
{
	struct dbk_models *m = dbk_models_new(4);
	uint64_t set[1];

	CHECK(m != NULL);
	/* Nothing known: no filter, whatever the model. */
	CHECK_EQ_U(pick(m, "a", set), DBK_MODELS_ANY);
	CHECK_EQ_U(set[0], 0xdead);
	for (unsigned s = 0; s < 4; s++)
		CHECK_EQ_U(dbk_models_state(m, s), DBK_MODELS_UNKNOWN);
	/* One server known: the others still take anything, so a model
	 * only they might serve goes to them. */
	static const char *const a[] = { "a" };
	struct dbk_vm_models la = list_of(a, NULL, 1);
	CHECK(dbk_models_set(m, 0, &la) == 0);
	CHECK_EQ_U(pick(m, "a", set), DBK_MODELS_ANY);
	CHECK_EQ_U(pick(m, "b", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 0xe);
	dbk_models_free(m);
}

static void test_two_models_and_an_adapter(void)
{
	struct dbk_models *m = dbk_models_new(5);
	uint64_t set[1];
	static const char *const a[] = { "base-a", "sql-lora" };
	static const char *const pa[] = { "", "base-a" };
	static const char *const b[] = { "base-b" };
	struct dbk_vm_models la = list_of(a, pa, 2), lb = list_of(b, NULL, 1);
	const char *parent;

	CHECK(dbk_models_set(m, 0, &la) == 0);
	CHECK(dbk_models_set(m, 1, &la) == 0);
	CHECK(dbk_models_set(m, 2, &lb) == 0);
	CHECK(dbk_models_set(m, 3, &lb) == 0);
	dbk_models_absent(m, 4);
	CHECK_EQ_U(pick(m, "base-a", set), DBK_MODELS_SOME);
	/* The free slot stays a candidate: it is never usable anyway. */
	CHECK_EQ_U(set[0], 0x13);
	CHECK_EQ_U(pick(m, "sql-lora", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 0x13);
	CHECK_EQ_U(pick(m, "base-b", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 0x1c);
	CHECK_EQ_U(pick(m, "base-c", set), DBK_MODELS_NONE);
	CHECK_EQ_U(set[0], 0xdead);
	CHECK_EQ_U(pick(m, "base", set), DBK_MODELS_NONE);
	CHECK_EQ_U(dbk_models_pick(m, (const uint8_t *)"", 0, set), DBK_MODELS_NONE);
	CHECK(strcmp(dbk_models_id(m, 0, 1, &parent), "sql-lora") == 0);
	CHECK(strcmp(parent, "base-a") == 0);
	CHECK(strcmp(dbk_models_id(m, 0, 0, &parent), "base-a") == 0 && parent[0] == '\0');
	CHECK(dbk_models_id(m, 0, 2, &parent) == NULL);
	CHECK_EQ_U(dbk_models_stats(m)->ids, 3);

	/* A server whose slot is reset is a candidate for every model
	 * again, until its list comes: one unknown server keeps base-c
	 * from being refused. */
	dbk_models_forget(m, 2);
	CHECK_EQ_U(dbk_models_state(m, 2), DBK_MODELS_UNKNOWN);
	CHECK(dbk_models_id(m, 2, 0, NULL) == NULL);
	CHECK_EQ_U(pick(m, "base-c", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 0x14);
	CHECK_EQ_U(pick(m, "base-b", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 0x1c);

	/* A list that changes: server 3 now serves base-a alone, and
	 * base-b's entry goes with its last server. */
	dbk_models_absent(m, 2);
	CHECK(dbk_models_set(m, 3, &la) == 0);
	CHECK_EQ_U(pick(m, "base-b", set), DBK_MODELS_NONE);
	CHECK_EQ_U(pick(m, "base-a", set), DBK_MODELS_ANY);
	CHECK_EQ_U(dbk_models_stats(m)->ids, 2);
	dbk_models_free(m);
}

/* A single-model fleet has no filter: every request decides as before. */
static void test_one_model_is_no_filter(void)
{
	struct dbk_models *m = dbk_models_new(130);
	uint64_t set[3];
	static const char *const a[] = { "only" };
	struct dbk_vm_models la = list_of(a, NULL, 1);

	CHECK_EQ_U(dbk_models_words(m), 3);
	for (unsigned s = 0; s < 130; s++)
		CHECK(dbk_models_set(m, s, &la) == 0);
	CHECK_EQ_U(pick(m, "only", set), DBK_MODELS_ANY);
	CHECK_EQ_U(pick(m, "other", set), DBK_MODELS_NONE);
	/* Server 129 (the third word) alone serves "late". */
	static const char *const b[] = { "only", "late" };
	struct dbk_vm_models lb = list_of(b, NULL, 2);
	CHECK(dbk_models_set(m, 129, &lb) == 0);
	CHECK_EQ_U(pick(m, "late", set), DBK_MODELS_SOME);
	CHECK(set[0] == 0 && set[1] == 0 && set[2] == UINT64_C(1) << 1);
	dbk_models_free(m);
}

/* The id table is bounded: a list past it leaves its server unknown. */
static void test_full_table(void)
{
	struct dbk_models *m = dbk_models_new(DBK_MODELS_MAX / DBK_VM_MAX_MODELS + 1);
	static struct dbk_vm_models l;
	uint64_t set[1];
	unsigned s = 0;

	for (; s < DBK_MODELS_MAX / DBK_VM_MAX_MODELS; s++) {
		l.n = DBK_VM_MAX_MODELS;
		for (unsigned i = 0; i < l.n; i++)
			snprintf(l.m[i].id, sizeof(l.m[i].id), "s%u-m%u", s, i);
		CHECK(dbk_models_set(m, s, &l) == 0);
	}
	CHECK_EQ_U(dbk_models_stats(m)->ids, DBK_MODELS_MAX);
	snprintf(l.m[0].id, sizeof(l.m[0].id), "one-more");
	l.n = 1;
	CHECK(dbk_models_set(m, s, &l) == -1);
	CHECK_EQ_U(dbk_models_state(m, s), DBK_MODELS_UNKNOWN);
	CHECK_EQ_U(dbk_models_stats(m)->full, 1);
	CHECK_EQ_U(pick(m, "s3-m7", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], (UINT64_C(1) << 3) | (UINT64_C(1) << s));
	/* Freeing a server's ids makes room. */
	dbk_models_forget(m, 0);
	CHECK(dbk_models_set(m, s, &l) == 0);
	CHECK_EQ_U(pick(m, "one-more", set), DBK_MODELS_SOME);
	CHECK_EQ_U(set[0], 1 | (UINT64_C(1) << s));
	dbk_models_free(m);
}

static bool field(const char *body, size_t cut, const char *want)
{
	const uint8_t *id;
	size_t len, n = cut ? cut : strlen(body);
	bool found = dbk_pkey_model((const uint8_t *)body, n, &id, &len);

	if (!want)
		return !found;
	return found && len == strlen(want) && memcmp(id, want, len) == 0;
}

static void test_model_field(void)
{
	CHECK(field("{\"model\":\"a\",\"prompt\":\"x\"}", 0, "a"));
	/* After a long prompt, nested messages, escapes and numbers. */
	CHECK(field("{\"messages\":[{\"role\":\"user\",\"content\":\"say \\\"model\\\": \\\\\"}],"
	            "\"max_tokens\":-1.5e3,\"stream\":true,\"x\":null,\"model\" : \"m/b-1\"}",
	            0, "m/b-1"));
	/* A "model" key below the top level is not the request's. */
	CHECK(field("{\"metadata\":{\"model\":\"no\"},\"model\":\"yes\"}", 0, "yes"));
	CHECK(field("{\"metadata\":{\"model\":\"no\"}}", 0, NULL));
	/* The first member wins. */
	CHECK(field("{\"model\":\"first\",\"model\":\"second\"}", 0, "first"));
	/* A sample cut after the member is enough; one cut before it or
	 * inside it is not. */
	const char *body = "{\"prompt\":\"abc\",\"model\":\"m\",\"max_tokens\":5}";
	CHECK(field(body, strlen("{\"prompt\":\"abc\",\"model\":\"m\""), "m"));
	CHECK(field(body, strlen("{\"prompt\":\"abc\",\"model\":\"m"), NULL));
	CHECK(field(body, strlen("{\"prompt\":\"ab"), NULL));
	/* Not a string, escaped, empty, not an object. */
	CHECK(field("{\"model\":7}", 0, NULL));
	CHECK(field("{\"model\":\"a\\u0062\"}", 0, NULL));
	CHECK(field("{\"mod\\u0065l\":\"a\"}", 0, NULL));
	CHECK(field("{\"model\":\"\"}", 0, NULL));
	CHECK(field("[\"model\",\"a\"]", 0, NULL));
	CHECK(field("", 0, NULL));
	CHECK(!dbk_pkey_model(NULL, 0, &(const uint8_t *){ NULL }, &(size_t){ 0 }));
}

/* The reference honours the candidates: the least loaded eligible
 * server of the request's group, the next group when its group has
 * none; without candidates, exactly dispatch. */
static void test_reference_among(void)
{
	struct dbk_balancer *b = reference_balancer(4), *twin = reference_balancer(4);
	struct dbk_bal_request r = req(400);
	struct dbk_bal_decision d, dt;
	uint64_t only1 = 1u << 1, only23 = (1u << 2) | (1u << 3), none = 0;
	char id[16];

	CHECK_EQ_U(dbk_bal_dispatch_among(b, "a", 1, &r, &only1, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	CHECK_EQ_U(dbk_bal_dispatch_among(b, "b", 1, &r, &only1, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	/* Short group (0, 1) has no eligible server: the long one. */
	CHECK_EQ_U(dbk_bal_dispatch_among(b, "c", 1, &r, &only23, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK(d.redirected);
	CHECK_EQ_U(dbk_bal_dispatch_among(b, "d", 1, &r, &only23, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 3);
	dbk_bal_set_usable(b, 1, false);
	CHECK_EQ_U(dbk_bal_dispatch_among(b, "e", 1, &r, &only1, 0, &d), DBK_BAL_NO_SERVER);
	CHECK_EQ_U(dbk_bal_dispatch_among(b, "f", 1, &r, &none, 0, &d), DBK_BAL_NO_SERVER);
	dbk_bal_set_usable(b, 1, true);
	dbk_bal_free(b);
	/* NULL is dispatch, decision for decision. */
	b = reference_balancer(4);
	uint64_t seed = 7;
	for (unsigned i = 0; i < 200; i++) {
		struct dbk_bal_request q = req((double)(rnd(&seed) % 300000));
		snprintf(id, sizeof(id), "n%u", i);
		CHECK_EQ_U(dbk_bal_dispatch_among(b, id, strlen(id), &q, NULL, 0, &d),
		           dbk_bal_dispatch(twin, id, strlen(id), &q, 0, &dt));
		CHECK(d.server == dt.server && d.group == dt.group && d.score == dt.score &&
		      d.redirected == dt.redirected);
	}
	dbk_bal_free(b);
	dbk_bal_free(twin);
}

/* Every policy that chooses picks among the candidates only. */
static void test_policies_honour_candidates(void)
{
	static const struct dbk_bal_request est = { 4000, 100, true };
	const struct dbk_policy_ops *p;

	for (size_t i = 0; (p = dbk_policy_at(i)) != NULL; i++) {
		if (!p->choose)
			continue;
		const struct dbk_policy_env env = {
			.nservers = 6, .engine_speed = 1.0, .stall_weight = -1, .seed = 1
		};
		void *st = p->create(&env);
		uint64_t set = (1u << 4) | (1u << 5);
		for (unsigned k = 0; k < 20; k++) {
			const struct dbk_policy_request r = { .est = &est, .eligible = &set };
			struct dbk_policy_choice c;
			uint32_t slot[DBK_BAL_SLOT_WORDS];
			int s = p->choose(st, &r, k, &c);
			CHECK(s == 4 || s == 5);
			if (s < 0)
				break;
			p->commit(st, &c, k, slot);
		}
		/* Both candidates down: none. */
		p->usable(st, 4, false);
		p->usable(st, 5, false);
		const struct dbk_policy_request r = { .est = &est, .eligible = &set };
		struct dbk_policy_choice c;
		CHECK(p->choose(st, &r, 100, &c) == -1);
		p->destroy(st);
	}
}

/* One route message for model through r; the ACK in ack (out its
 * bytes). */
static void route_model(struct dbk_route *r, const char *id, const char *model, uint8_t *out,
                        size_t cap, struct dbk_spop_frame *ack)
{
	uint8_t in[512];
	char body[128];
	const char *const argn[] = { "id", "body" };
	struct dbk_spop_data argv[2] = { dbk_spop_str(id), { .type = DBK_SPOP_T_BIN } };
	struct dbk_spop_frame f;
	struct dbk_spop_writer w;

	snprintf(body, sizeof(body), "{\"prompt\":\"hi\",\"model\":\"%s\"}", model);
	argv[1].u.buf.ptr = (const uint8_t *)body;
	argv[1].u.buf.len = strlen(body);
	size_t len = test_notify_args(in, sizeof(in), DBK_MSG_ROUTE, 2, argn, argv);
	CHECK(dbk_spop_frame_parse(in + 4, len - 4, &f) == DBK_SPOP_OK);
	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_ack_begin(&w, f.stream_id, f.frame_id);
	CHECK(dbk_route_notify(r, &f, 1000, &w) == DBK_SPOP_OK);
	len = dbk_spop_frame_end(&w);
	CHECK(len > 4 && dbk_spop_frame_parse(out + 4, len - 4, ack) == DBK_SPOP_OK);
}

/* A route over n servers (the reference) with model table m of as many
 * slots, set (n <= 64) its candidates' scratch. */
static struct dbk_route route_of(const char *const *names, unsigned n, struct dbk_models *m,
                                 uint64_t *set)
{
	return (struct dbk_route){ .bal = reference_balancer(n),
		                   .names = names,
		                   .nnames = n,
		                   .models = m,
		                   .eligible = set };
}

/* Through the route: a model's requests go to its servers only; one no
 * server lists sets action unknown_model, one whose servers are all
 * unusable model_unavailable, neither with a server or a lease. */
static void test_route_by_model(void)
{
	static const char *const names[] = { "vllm0", "vllm1", "vllm2", "vllm3" };
	static const char *const a[] = { "model-a" }, *const b[] = { "model-b" };
	struct dbk_vm_models la = list_of(a, NULL, 1), lb = list_of(b, NULL, 1);
	struct dbk_models *m = dbk_models_new(4);
	uint64_t set[1];
	struct dbk_route r = route_of(names, 4, m, set);
	struct dbk_balancer *bal = r.bal;
	uint8_t out[512];
	struct dbk_spop_frame ack;
	char id[16];

	for (unsigned s = 0; s < 4; s++)
		dbk_models_set(m, s, s < 2 ? &la : &lb);
	for (unsigned i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "b%u", i);
		route_model(&r, id, "model-b", out, sizeof(out), &ack);
		CHECK(test_var_is(&ack, DBK_VAR_SERVER, i % 2 ? "vllm3" : "vllm2"));
		snprintf(id, sizeof(id), "a%u", i);
		route_model(&r, id, "model-a", out, sizeof(out), &ack);
		CHECK(test_var_is(&ack, DBK_VAR_SERVER, i % 2 ? "vllm1" : "vllm0"));
	}
	CHECK_EQ_U(r.stats.model_filtered, 12);
	route_model(&r, "x", "model-x", out, sizeof(out), &ack);
	CHECK(test_var_is(&ack, DBK_VAR_ACTION, DBK_ACTION_UNKNOWN_MODEL));
	struct dbk_spop_data v;
	CHECK(!test_ack_var(&ack, DBK_VAR_SERVER, &v));
	dbk_bal_set_usable(bal, 2, false);
	dbk_bal_set_usable(bal, 3, false);
	route_model(&r, "y", "model-b", out, sizeof(out), &ack);
	CHECK(test_var_is(&ack, DBK_VAR_ACTION, DBK_ACTION_MODEL_UNAVAILABLE));
	CHECK(!test_ack_var(&ack, DBK_VAR_SERVER, &v));
	CHECK_EQ_U(r.stats.unknown_model, 1);
	CHECK_EQ_U(r.stats.model_unavailable, 1);
	CHECK_EQ_U(dbk_bal_stats(bal)->leases, 12);
	/* Without the table (no scrapes): any server, as before. */
	r.models = NULL;
	route_model(&r, "z", "model-x", out, sizeof(out), &ack);
	CHECK(test_ack_var(&ack, DBK_VAR_SERVER, &v));
	dbk_models_free(m);
	dbk_bal_free(bal);
}

/* One backend per model: every server lists the model, so nothing
 * narrows it; with every one unusable it is still the model's 503
 * (model_unavailable), not a decision left to HAProxy's own 503. Before
 * any list is read nothing says the model is served: HAProxy decides. */
static void test_route_one_model_all_down(void)
{
	static const char *const names[] = { "vllm0", "vllm1" };
	static const char *const a[] = { "model-a" };
	struct dbk_vm_models la = list_of(a, NULL, 1);
	struct dbk_models *m = dbk_models_new(2);
	uint64_t set[1];
	struct dbk_route r = route_of(names, 2, m, set);
	struct dbk_spop_frame ack;
	struct dbk_spop_data v;
	uint8_t out[512];

	dbk_bal_set_usable(r.bal, 0, false);
	dbk_bal_set_usable(r.bal, 1, false);
	CHECK(!dbk_models_some_known(m));
	route_model(&r, "u", "model-a", out, sizeof(out), &ack);
	CHECK(!test_ack_var(&ack, DBK_VAR_ACTION, &v));
	CHECK_EQ_U(r.stats.model_unavailable, 0);
	dbk_models_set(m, 1, &la);
	CHECK(dbk_models_some_known(m));
	route_model(&r, "d", "model-a", out, sizeof(out), &ack);
	CHECK(test_var_is(&ack, DBK_VAR_ACTION, DBK_ACTION_MODEL_UNAVAILABLE));
	CHECK(!test_ack_var(&ack, DBK_VAR_SERVER, &v));
	CHECK_EQ_U(r.stats.model_unavailable, 1);
	CHECK_EQ_U(r.stats.model_filtered, 0);
	/* One back: routed there, unfiltered, as before. */
	dbk_bal_set_usable(r.bal, 0, true);
	route_model(&r, "e", "model-a", out, sizeof(out), &ack);
	CHECK(test_var_is(&ack, DBK_VAR_SERVER, "vllm0"));
	CHECK_EQ_U(r.stats.model_unavailable, 1);
	CHECK_EQ_U(dbk_bal_stats(r.bal)->leases, 1);
	dbk_models_free(m);
	dbk_bal_free(r.bal);
}

int main(void)
{
	RUN(test_unknown_servers_take_every_model);
	RUN(test_two_models_and_an_adapter);
	RUN(test_one_model_is_no_filter);
	RUN(test_full_table);
	RUN(test_model_field);
	RUN(test_reference_among);
	RUN(test_policies_honour_candidates);
	RUN(test_route_by_model);
	RUN(test_route_one_model_all_down);
	return CHECK_DONE();
}
