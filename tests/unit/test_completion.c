/* Completion lines and their octet-count framing; the histogram used for
 * completion lag. */
#include "check.h"
#include "completion.h"
#include "histo.h"

#define LINE(s) s, sizeof(s) - 1

static void test_parse_real_line(void)
{
	struct dbk_completion c;
	/* As HAProxy 2.6 formats the sample configuration's log-format. */
	static const char l[] = "dbk1 1C2B-6B0D0AA6124-0007 vllm2 vllm2 200 ---- 5231 18734 0 "
	                        "1796016806292 127.0.0.1:4242 [30/Nov/2026:05:29:47.675] llm vllm "
	                        "0/0/0/12/5231 \"POST /v1/completions HTTP/1.1\"\n";

	CHECK_EQ_U(dbk_completion_parse(LINE(l), &c), DBK_COMPLETION_OK);
	CHECK(c.id_len == 21 && memcmp(c.id, "1C2B-6B0D0AA6124-0007", 21) == 0);
	CHECK(c.chosen_len == 5 && memcmp(c.chosen, "vllm2", 5) == 0);
	CHECK(c.server_len == 5 && memcmp(c.server, "vllm2", 5) == 0);
	CHECK_EQ_U(c.status, 200);
	CHECK(strcmp(c.term, "----") == 0);
	CHECK_EQ_U(c.total_ms, 5231);
	CHECK_EQ_U(c.bytes, 18734);
	CHECK_EQ_U(c.retries, 0);
	CHECK(!c.redispatched);
	CHECK_EQ_U(c.log_ms, 1796016806292ULL);
}

static void test_parse_abort_and_redispatch(void)
{
	struct dbk_completion c;

	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 id7 vllm0 vllm1 -1 CD-- 812 0 +1 5"), &c),
	           DBK_COMPLETION_OK);
	CHECK_EQ_U(c.status, -1);
	CHECK(strcmp(c.term, "CD--") == 0);
	CHECK(c.redispatched);
	CHECK_EQ_U(c.retries, 1);
	/* No decision: the agent's variable was not set. */
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 id8 - <NOSRV> 503 SC-- 0 0 0 5"), &c),
	           DBK_COMPLETION_OK);
	CHECK_EQ_U(c.chosen_len, 0);
	/* A request HAProxy could not parse has neither. */
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 - - <NOSRV> 400 CR-- 0 0 0 5 \"<BADREQ>\""), &c),
	           DBK_COMPLETION_OK);
	CHECK_EQ_U(c.id_len, 0);
	CHECK_EQ_U(c.chosen_len, 0);
}

/* HAProxy 2.6's %{+Q,+E}ID: quoted, '"' '\\' and ']' escaped; an id
 * with spaces and quotes (from a client's header) keeps its fields in
 * place and comes out as the SPOE sent it. */
static void test_parse_quoted_id(void)
{
	struct dbk_completion c;

	CHECK_EQ_U(dbk_completion_parse(
	                   LINE("dbk1 \"a b\\\"c\\\\d\\]e\" vllm1 vllm1 500 ---- 3 7 0 5 x y"), &c),
	           DBK_COMPLETION_OK);
	CHECK(c.id_len == 9 && memcmp(c.id, "a b\"c\\d]e", 9) == 0);
	CHECK(c.chosen_len == 5 && memcmp(c.chosen, "vllm1", 5) == 0);
	CHECK_EQ_U(c.status, 500);
	CHECK_EQ_U(c.log_ms, 5);
	/* "" is none; "-" is an id of one dash (not HAProxy's empty field). */
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 \"\" - <NOSRV> 400 CR-- 0 0 0 5"), &c),
	           DBK_COMPLETION_OK);
	CHECK_EQ_U(c.id_len, 0);
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 \"-\" v v 200 ---- 0 0 0 5"), &c),
	           DBK_COMPLETION_OK);
	CHECK_EQ_U(c.id_len, 1);
	/* Unterminated, glued to the next field, a dangling escape. */
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 \"a b v v 200 ---- 0 0 0 5"), &c),
	           DBK_COMPLETION_BAD_LINE);
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 \"ab\"v v v 200 ---- 0 0 0 5"), &c),
	           DBK_COMPLETION_BAD_LINE);
	CHECK_EQ_U(dbk_completion_parse(LINE("dbk1 \"ab\\"), &c), DBK_COMPLETION_BAD_LINE);
	/* Longer than any lease's id. */
	char l[400];
	int n = snprintf(l, sizeof(l), "dbk1 \"%0300d\" v v 200 ---- 0 0 0 5", 0);
	CHECK_EQ_U(dbk_completion_parse(l, (size_t)n, &c), DBK_COMPLETION_BAD_LINE);
	n = snprintf(l, sizeof(l), "dbk1 \"%0255d\" v v 200 ---- 0 0 0 5", 0);
	CHECK_EQ_U(dbk_completion_parse(l, (size_t)n, &c), DBK_COMPLETION_OK);
	CHECK_EQ_U(c.id_len, 255);
}

static void test_parse_rejects(void)
{
	struct dbk_completion c;
	static const char *const bad[] = {
		"",
		"dbk1",
		"dbk2 id v v 200 ---- 1 1 0 5",
		"dbk1 - v v 200 ---- 1 1 0 5", /* a decision without an id */
		"dbk1 id v v 2000 ---- 1 1 0 5",
		"dbk1 id v v 200 --- 1 1 0 5",
		"dbk1 id v v 200 ---- x 1 0 5",
		"dbk1 id v v 200 ---- 1 1 0",
		"dbk1 id v v 200 ---- 1 1 0 -5",
		"dbk1 id v v 200 ---- 1 99999999999999999999 0 5",
		"dbk1  id v v 200 ---- 1 1 0 5",
		"<134>Nov 30 dbk1 id v v 200 ---- 1 1 0 5",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (dbk_completion_parse(bad[i], strlen(bad[i]), &c) != DBK_COMPLETION_BAD_LINE) {
			fprintf(stderr, "  accepted: '%s'\n", bad[i]);
			CHECK(0);
		}
	}
}

static void test_frames(void)
{
	static const char two[] = "12 dbk1 a b c d3 xyz";
	const char *msg;
	size_t mlen, used;

	CHECK_EQ_U(dbk_completion_frame(LINE(two), &msg, &mlen, &used), DBK_COMPLETION_OK);
	CHECK(mlen == 12 && memcmp(msg, "dbk1 a b c d", 12) == 0);
	CHECK_EQ_U(used, 15);
	CHECK_EQ_U(dbk_completion_frame(two + used, sizeof(two) - 1 - used, &msg, &mlen, &used),
	           DBK_COMPLETION_OK);
	CHECK(mlen == 3 && memcmp(msg, "xyz", 3) == 0);

	/* Every proper prefix of a frame asks for more. */
	for (size_t n = 0; n < 15; n++)
		CHECK_EQ_U(dbk_completion_frame(two, n, &msg, &mlen, &used),
		           DBK_COMPLETION_NEED_MORE);

	CHECK_EQ_U(dbk_completion_frame(LINE("x12 abc"), &msg, &mlen, &used),
	           DBK_COMPLETION_BAD_FRAME);
	CHECK_EQ_U(dbk_completion_frame(LINE("012 abc"), &msg, &mlen, &used),
	           DBK_COMPLETION_BAD_FRAME);
	CHECK_EQ_U(dbk_completion_frame(LINE("12\nabc"), &msg, &mlen, &used),
	           DBK_COMPLETION_BAD_FRAME);
	CHECK_EQ_U(dbk_completion_frame(LINE("99999999999999999999999 a"), &msg, &mlen, &used),
	           DBK_COMPLETION_BAD_FRAME);
	CHECK_EQ_U(dbk_completion_frame(LINE("16385 a"), &msg, &mlen, &used),
	           DBK_COMPLETION_BAD_FRAME);
}

static void test_histo_quantiles(void)
{
	static const double bounds[] = { 1, 2, 5, 10 };
	struct dbk_histo h;

	dbk_histo_init(&h, bounds, 4);
	CHECK_NEAR(dbk_histo_quantile(&h, 0.5), 0, 0);
	for (int i = 0; i < 100; i++)
		dbk_histo_add(&h, i < 50 ? 0.5 : 4);
	CHECK_EQ_U(h.count, 100);
	CHECK_NEAR(h.sum, 50 * 0.5 + 50 * 4, 1e-12);
	/* Half the mass in (0,1], half in (2,5]. */
	CHECK(dbk_histo_quantile(&h, 0.25) > 0 && dbk_histo_quantile(&h, 0.25) <= 1);
	CHECK(dbk_histo_quantile(&h, 0.99) > 2 && dbk_histo_quantile(&h, 0.99) <= 5);
	dbk_histo_add(&h, 1e9);
	CHECK_EQ_U(h.counts[4], 1);
	CHECK_NEAR(dbk_histo_quantile(&h, 1.0), 10, 0);
}

int main(void)
{
	RUN(test_parse_real_line);
	RUN(test_parse_abort_and_redispatch);
	RUN(test_parse_quoted_id);
	RUN(test_parse_rejects);
	RUN(test_frames);
	RUN(test_histo_quantiles);
	return CHECK_DONE();
}
