/* Unit tests of agent/session_hint.c: the CRC-32 HAProxy's crc32
 * converter writes into the session table, the server it names, and the
 * hint told to the policy only when everything is there. */
#include <string.h>

#include "check.h"
#include "session_hint.h"

static void test_crc32(void)
{
	/* HAProxy 2.6.12: str(vllm3),crc32 stored 4010732657. */
	CHECK_EQ_U(dbk_shint_crc32("vllm3", 5), 4010732657u);
	CHECK_EQ_U(dbk_shint_crc32("123456789", 9), 0xCBF43926u);
	CHECK_EQ_U(dbk_shint_crc32("", 0), 0);
	/* Every byte value, as the bitwise definition computes it. */
	uint8_t all[256];
	uint32_t want = UINT32_MAX;
	for (unsigned i = 0; i < 256; i++) {
		all[i] = (uint8_t)(255 - i);
		want ^= all[i];
		for (unsigned k = 0; k < 8; k++)
			want = (want >> 1) ^ (UINT32_C(0xEDB88320) & (0u - (want & 1u)));
		CHECK_EQ_U(dbk_shint_crc32(all, i + 1), ~want);
	}
}

static void test_server(void)
{
	const char *names[] = { "vllm0", "", NULL, "vllm3" };

	CHECK_EQ_U(dbk_shint_server(names, 4, 4010732657u), 3);
	CHECK(dbk_shint_server(names, 3, 4010732657u) < 0);
	/* 0: a key the table does not hold (table_gpt reads 0). */
	CHECK(dbk_shint_server(names, 4, 0) < 0);
	CHECK(dbk_shint_server(names, 4, dbk_shint_crc32("vllm9", 5)) < 0);
}

static unsigned hinted_server, hints;
static uint32_t hinted_tokens;

static void hint(void *st, const struct dbk_policy_request *r, unsigned server, uint32_t tokens)
{
	(void)st;
	(void)r;
	hinted_server = server;
	hinted_tokens = tokens;
	hints++;
}

static void test_apply(void)
{
	const struct dbk_policy_ops ops = { .name = "t", .hint = hint };
	const struct dbk_policy_ops none = { .name = "u" };
	const struct dbk_policy p = { &ops, NULL }, q = { &none, NULL };
	const char *names[] = { "vllm0", "vllm1", "vllm2", "vllm3" };
	struct dbk_spop_data srv = dbk_spop_int(4010732657), tok = dbk_spop_int(12000);
	struct dbk_spop_data zero = dbk_spop_int(0), null = { .type = DBK_SPOP_T_NULL };
	struct dbk_policy_request r = { .has_session = true, .session = 7 };

	CHECK(dbk_shint_apply(&p, names, 4, &srv, &tok, &r));
	CHECK_EQ_U(hints, 1);
	CHECK_EQ_U(hinted_server, 3);
	CHECK_EQ_U(hinted_tokens, 12000);
	/* Nothing told: no table (absent or NULL args), a key not there,
	 * no session, a policy without the hook. */
	CHECK(!dbk_shint_apply(&p, names, 4, NULL, NULL, &r));
	CHECK(!dbk_shint_apply(&p, names, 4, &null, &null, &r));
	CHECK(!dbk_shint_apply(&p, names, 4, &zero, &zero, &r));
	CHECK(!dbk_shint_apply(&p, names, 4, &srv, &zero, &r));
	CHECK(!dbk_shint_apply(&q, names, 4, &srv, &tok, &r));
	r.has_session = false;
	CHECK(!dbk_shint_apply(&p, names, 4, &srv, &tok, &r));
	CHECK_EQ_U(hints, 1);
}

int main(void)
{
	RUN(test_crc32);
	RUN(test_server);
	RUN(test_apply);
	return CHECK_DONE();
}
