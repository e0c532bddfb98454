/* Unit tests of the trace readers and the selection (trace.c). */
#include "model/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int parse(enum dbk_trace_format f, const char *s, struct dbk_trace *t, char *err,
                 size_t errn)
{
	memset(t, 0, sizeof(*t));
	err[0] = 0;
	return dbk_trace_parse(f, s, strlen(s), t, err, errn);
}

/* Parses s, expects a failure whose message contains want. */
static bool fails_with(enum dbk_trace_format f, const char *s, const char *want)
{
	struct dbk_trace t;
	char err[256];
	int rc = parse(f, s, &t, err, sizeof(err));

	dbk_trace_free(&t);
	if (rc == 0 || !strstr(err, want)) {
		fprintf(stderr, "  input %s\n  error \"%s\", want \"%s\"\n", s, err, want);
		return false;
	}
	return true;
}

static void test_mooncake(void)
{
	const char *s = "{\"timestamp\": 5000, \"input_length\": 6758, "
	                "\"output_length\": 500, \"hash_ids\": [0, 1, 2]}\n"
	                "\r\n"
	                "{\"timestamp\": 5000, \"input_length\": 100, "
	                "\"output_length\": 7, \"hash_ids\": [0, 9]}\r\n"
	                "  \n"
	                "{\"timestamp\": 8000.5, \"input_length\": 33000, "
	                "\"output_length\": 1}";
	struct dbk_trace t;
	char err[256];

	CHECK_EQ_U(parse(DBK_TRACE_MOONCAKE, s, &t, err, sizeof(err)), 0);
	CHECK_EQ_U(t.n, 3);
	/* Arrivals in seconds, from the first request. */
	CHECK_NEAR(t.req[0].t, 0, 1e-12);
	CHECK_NEAR(t.req[1].t, 0, 1e-12);
	CHECK_NEAR(t.req[2].t, 3.0005, 1e-12);
	CHECK_EQ_U(t.req[0].input, 6758);
	CHECK_EQ_U(t.req[0].output, 500);
	CHECK_EQ_U(t.req[2].input, 33000);
	CHECK_EQ_U(t.req[2].output, 1);
	CHECK_EQ_U(t.req[0].line, 1);
	CHECK_EQ_U(t.req[1].line, 3);
	CHECK_EQ_U(t.req[2].line, 5);
	CHECK_EQ_U(t.req[0].n_hash, 3);
	CHECK_EQ_U(t.req[1].n_hash, 2);
	CHECK_EQ_U(t.req[2].n_hash, 0);
	CHECK_EQ_U(t.hash[t.req[1].hash_off], 0);
	CHECK_EQ_U(t.hash[t.req[1].hash_off + 1], 9);
	CHECK_EQ_U(t.hash[t.req[0].hash_off + 2], 2);
	CHECK_EQ_U(t.n_raised, 0);
	/* Every request with ids shares id 0 (a system prompt): the
	 * session is the next id; a request without ids has none. */
	CHECK(t.req[0].has_session && t.req[0].session == 1);
	CHECK(t.req[1].has_session && t.req[1].session == 9);
	CHECK(!t.req[2].has_session);
	dbk_trace_free(&t);
}

static void test_sessions(void)
{
	const char *s = "{\"timestamp\": 0, \"input_length\": 1500, "
	                "\"output_length\": 5, \"hash_ids\": [4, 5, 6]}\n"
	                "{\"timestamp\": 1, \"input_length\": 2000, "
	                "\"output_length\": 5, \"hash_ids\": [4, 5, 6, 7]}\n"
	                "{\"timestamp\": 2, \"input_length\": 900, "
	                "\"output_length\": 5, \"hash_ids\": [4, 5]}\n"
	                "{\"timestamp\": 3, \"input_length\": 1000, "
	                "\"output_length\": 5, \"hash_ids\": [8, 9]}\n";
	struct dbk_trace t;
	char err[256];

	/* Nothing shared by all: the session is the first id. */
	CHECK_EQ_U(parse(DBK_TRACE_MOONCAKE, s, &t, err, sizeof(err)), 0);
	CHECK(t.req[0].has_session && t.req[0].session == 4);
	CHECK(t.req[1].has_session && t.req[1].session == 4);
	CHECK(t.req[3].has_session && t.req[3].session == 8);
	dbk_trace_free(&t);
	/* Without the last row all share [4, 5]: a request holding only
	 * that prefix has no conversation of its own. */
	memset(&t, 0, sizeof(t));
	CHECK_EQ_U(dbk_trace_parse(DBK_TRACE_MOONCAKE, s,
	                           (size_t)(strstr(s, "{\"timestamp\": 3") - s), &t, err,
	                           sizeof(err)),
	           0);
	CHECK(t.req[0].has_session && t.req[0].session == 6);
	CHECK(t.req[1].has_session && t.req[1].session == 6);
	CHECK(!t.req[2].has_session);
	dbk_trace_free(&t);
}

/* Two system prompts (ids 1 and 2), three conversations behind each:
 * every conversation keeps a session of its own, its later turns the
 * same one; a request holding only a system prompt has none. (Keyed past
 * the prefix all requests share, which is none here, the conversations
 * of each prompt collapsed into one session, the prompt's id.) */
static void test_sessions_two_prompts(void)
{
	static const char *const rows[] = {
		"[1, 10, 11]", "[1, 20]", "[2, 40]", "[1, 30, 31]",
		"[2, 50, 51]", "[2, 60]", "[1]",     "[1, 10, 11, 12]",
	};
	static const uint64_t want[] = { 10, 20, 40, 30, 50, 60, 0, 10 };
	char s[1024];
	size_t n = 0, k;
	struct dbk_trace t;
	char err[256];

	for (k = 0; k < 8; k++)
		n += (size_t)snprintf(s + n, sizeof(s) - n,
		                      "{\"timestamp\": %zu, \"input_length\": 1500, "
		                      "\"output_length\": 5, \"hash_ids\": %s}\n",
		                      k, rows[k]);
	CHECK_EQ_U(parse(DBK_TRACE_MOONCAKE, s, &t, err, sizeof(err)), 0);
	for (k = 0; k < 8; k++) {
		CHECK(t.req[k].has_session == (want[k] != 0));
		CHECK_EQ_U(t.req[k].session, want[k]);
	}
	dbk_trace_free(&t);
}

static void test_mooncake_malformed(void)
{
	const enum dbk_trace_format M = DBK_TRACE_MOONCAKE;

	CHECK(fails_with(M, "{\"timestamp\": 0, \"input_length\": 1,", "line 1: not valid JSON"));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1,"
	                 "\"output_length\":1}\n\n{\"timestamp\":1}",
	                 "line 3: \"input_length\""));
	CHECK(fails_with(M, "{\"timestamp\":0,\"input_length\":1}", "line 1: \"output_length\""));
	CHECK(fails_with(M, "{\"input_length\":1,\"output_length\":1}", "line 1: \"timestamp\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":-1,\"input_length\":1,"
	                 "\"output_length\":1}",
	                 "\"timestamp\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":\"0\",\"input_length\":1,"
	                 "\"output_length\":1}",
	                 "\"timestamp\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1.5,"
	                 "\"output_length\":1}",
	                 "\"input_length\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":-3,"
	                 "\"output_length\":1}",
	                 "\"input_length\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":99999999,"
	                 "\"output_length\":1}",
	                 "\"input_length\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1,"
	                 "\"output_length\":true}",
	                 "\"output_length\""));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1,"
	                 "\"output_length\":1} x",
	                 "text after"));
	CHECK(fails_with(M, "[1, 2]", "expected a JSON object"));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1,"
	                 "\"output_length\":1,\"hash_ids\":3}",
	                 "\"hash_ids\" must be an array"));
	CHECK(fails_with(M,
	                 "{\"timestamp\":0,\"input_length\":1,"
	                 "\"output_length\":1,\"hash_ids\":[1,\"a\"]}",
	                 "\"hash_ids\" must hold"));
	CHECK(fails_with(M, "", "no requests"));
	CHECK(fails_with(M, "\n \r\n", "no requests"));
}

static void test_zero_lengths_raised(void)
{
	struct dbk_trace t;
	char err[256];

	CHECK_EQ_U(parse(DBK_TRACE_MOONCAKE,
	                 "{\"timestamp\":0,\"input_length\":0,"
	                 "\"output_length\":0}\n"
	                 "{\"timestamp\":0,\"input_length\":5,"
	                 "\"output_length\":0}\n"
	                 "{\"timestamp\":0,\"input_length\":5,"
	                 "\"output_length\":5}\n",
	                 &t, err, sizeof(err)),
	           0);
	CHECK_EQ_U(t.n, 3);
	CHECK_EQ_U(t.n_raised, 2);
	CHECK_EQ_U(t.req[0].input, 1);
	CHECK_EQ_U(t.req[0].output, 1);
	CHECK_EQ_U(t.req[1].output, 1);
	dbk_trace_free(&t);
}

static void test_unsorted_is_sorted_stably(void)
{
	struct dbk_trace t;
	char err[256];

	CHECK_EQ_U(parse(DBK_TRACE_MOONCAKE,
	                 "{\"timestamp\":3000,\"input_length\":1,"
	                 "\"output_length\":1}\n"
	                 "{\"timestamp\":1000,\"input_length\":2,"
	                 "\"output_length\":1}\n"
	                 "{\"timestamp\":3000,\"input_length\":3,"
	                 "\"output_length\":1}\n"
	                 "{\"timestamp\":1000,\"input_length\":4,"
	                 "\"output_length\":1}\n",
	                 &t, err, sizeof(err)),
	           0);
	CHECK_EQ_U(t.n, 4);
	CHECK_EQ_U(t.req[0].input, 2);
	CHECK_EQ_U(t.req[1].input, 4);
	CHECK_EQ_U(t.req[2].input, 1);
	CHECK_EQ_U(t.req[3].input, 3);
	CHECK_NEAR(t.req[0].t, 0, 1e-12);
	CHECK_NEAR(t.req[3].t, 2, 1e-12);
	dbk_trace_free(&t);
}

static void test_azure(void)
{
	const char *s = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	                "2023-11-16 18:15:46.6805900,374,44\n"
	                "2023-11-16 18:15:50.9951690,396,109\r\n"
	                "\n"
	                "2023-11-16 23:59:59.9000000,1,7\n"
	                "2023-11-17 00:00:00.1000000,14000,1000";
	struct dbk_trace t;
	char err[256];

	CHECK_EQ_U(parse(DBK_TRACE_AZURE, s, &t, err, sizeof(err)), 0);
	CHECK_EQ_U(t.n, 4);
	CHECK_NEAR(t.req[0].t, 0, 1e-12);
	CHECK_NEAR(t.req[1].t, 4.314579, 1e-9);
	CHECK_EQ_U(t.req[1].input, 396);
	CHECK_EQ_U(t.req[1].output, 109);
	CHECK_EQ_U(t.req[1].line, 3);
	/* Across midnight: 0.2 s apart. */
	CHECK_NEAR(t.req[3].t - t.req[2].t, 0.2, 1e-9);
	CHECK_NEAR(t.req[2].t, 5 * 3600 + 44 * 60 + 13.21941, 1e-6);
	CHECK_EQ_U(t.req[3].n_hash, 0);
	dbk_trace_free(&t);

	/* Columns found by name, in any order and case; BOM, spaces. */
	CHECK_EQ_U(parse(DBK_TRACE_AZURE,
	                 "\xef\xbb\xbfgeneratedtokens, Extra ,TimeStamp,"
	                 "contexttokens\r\n"
	                 "5, x ,2024-02-29T10:00:00, 100\r\n"
	                 "6,y,2024-02-29 10:00:01Z,200\r\n",
	                 &t, err, sizeof(err)),
	           0);
	CHECK_EQ_U(t.n, 2);
	CHECK_EQ_U(t.req[0].input, 100);
	CHECK_EQ_U(t.req[0].output, 5);
	CHECK_NEAR(t.req[1].t, 1, 1e-12);
	dbk_trace_free(&t);
}

static void test_azure_malformed(void)
{
	const enum dbk_trace_format A = DBK_TRACE_AZURE;
	const char *h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
	char buf[256];

	CHECK(fails_with(A,
	                 "TIMESTAMP,ContextTokens\n"
	                 "2023-11-16 18:15:46,1\n",
	                 "line 1: CSV header"));
	CHECK(fails_with(A, "2023-11-16 18:15:46,1,1\n", "line 1: CSV header"));
	/* Rows after the header, and the error each gives. */
	static const struct {
		const char *rows, *want;
	} bad[] = {
		{ "2023-11-16 18:15:46,1\n", "line 2: expected 3 CSV fields" },
		{ "2023-11-16 18:15:46,1,2,3\n", "line 2: expected 3 CSV fields" },
		{ "\n2023-13-16 18:15:46,1,2\n", "line 3: TIMESTAMP" },
		{ "2023-11-16 18:15,1,2\n", "line 2: TIMESTAMP" },
		{ "1700158546.68,1,2\n", "line 2: TIMESTAMP" },
		{ "2023-02-29 00:00:00,1,2\n", "line 2: TIMESTAMP" },
		{ "2023-11-16 18:15:46.,1,2\n", "line 2: TIMESTAMP" },
		{ "2023-11-16 18:15:46,12a,2\n", "line 2: ContextTokens" },
		{ "2023-11-16 18:15:46,-5,2\n", "line 2: ContextTokens" },
		{ "2023-11-16 18:15:46,5,\n", "line 2: GeneratedTokens" },
		{ "2023-11-16 18:15:46,5,99999999\n", "line 2: GeneratedTokens" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s%s", h, bad[i].rows);
		if (!fails_with(A, buf, bad[i].want)) {
			fprintf(stderr, "  row %zu\n", i);
			CHECK(0);
		}
	}
	CHECK(fails_with(A, h, "no requests"));
}

static void test_wallclock(void)
{
	int64_t sec = -1;
	double frac = -1;
	const char *s;

	s = "1970-01-01 00:00:00";
	CHECK(dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	CHECK_EQ_U(sec, 0);
	CHECK_NEAR(frac, 0, 0);
	s = "2000-03-01 00:00:00.5";
	CHECK(dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	CHECK_EQ_U(sec, 951868800);
	CHECK_NEAR(frac, 0.5, 1e-15);
	s = "2023-11-16 18:15:46.6805900";
	CHECK(dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	CHECK_EQ_U(sec, 1700158546);
	CHECK_NEAR(frac, 0.68059, 1e-12);
	s = "2000-02-29 12:00:00";
	CHECK(dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	s = "1900-02-29 12:00:00";
	CHECK(!dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	s = "2023-11-16 24:00:00";
	CHECK(!dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	s = "2023-11-16 18:15:46.1234567890";
	CHECK(!dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	s = "2023-11-16 18:15:46 ";
	CHECK(!dbk_trace_parse_wallclock(s, strlen(s), &sec, &frac));
	/* Length-bounded: the NUL is not needed and not read. */
	CHECK(!dbk_trace_parse_wallclock("2023-11-16 18:15:4", 18, &sec, &frac));
}

static void test_detect(void)
{
	CHECK_EQ_U(dbk_trace_detect("a/b.JSONL", "", 0), DBK_TRACE_MOONCAKE);
	CHECK_EQ_U(dbk_trace_detect("x.json", "TIMESTAMP", 9), DBK_TRACE_MOONCAKE);
	CHECK_EQ_U(dbk_trace_detect("x.csv", "{", 1), DBK_TRACE_AZURE);
	CHECK_EQ_U(dbk_trace_detect("trace", " \n{\"timestamp\"", 14), DBK_TRACE_MOONCAKE);
	CHECK_EQ_U(dbk_trace_detect("trace", "\xef\xbb\xbfTIMESTAMP,", 13), DBK_TRACE_AZURE);
	CHECK_EQ_U(dbk_trace_detect("trace", "timestamp,x", 11), DBK_TRACE_AZURE);
	CHECK_EQ_U(dbk_trace_detect("trace", "hello", 5), DBK_TRACE_UNKNOWN);
	CHECK_EQ_U(dbk_trace_detect(NULL, "", 0), DBK_TRACE_UNKNOWN);
	CHECK(strcmp(dbk_trace_format_name(DBK_TRACE_AZURE), "azure") == 0);
}

static void test_clip(void)
{
	uint32_t in, out;

	in = 100, out = 50;
	CHECK(!dbk_trace_clip(&in, &out, 150));
	CHECK(in == 100 && out == 50);
	in = 100, out = 50;
	CHECK(dbk_trace_clip(&in, &out, 120));
	CHECK(in == 70 && out == 50);
	in = 87169, out = 300;
	CHECK(dbk_trace_clip(&in, &out, 32768));
	CHECK(in == 32468 && out == 300);
	/* Output longer than the context: output to max - 1, prompt 1. */
	in = 10, out = 500;
	CHECK(dbk_trace_clip(&in, &out, 100));
	CHECK(in == 1 && out == 99);
	in = 1, out = 1;
	CHECK(!dbk_trace_clip(&in, &out, 2));
}

static void make_trace(struct dbk_trace *t)
{
	static const uint32_t ins[] = { 100, 200, 40000, 300, 90000, 400 };
	size_t i;

	memset(t, 0, sizeof(*t));
	t->cap = t->n = 6;
	t->req = calloc(6, sizeof(*t->req));
	for (i = 0; i < 6; i++) {
		t->req[i].t = (double)i * 10;
		t->req[i].input = ins[i];
		t->req[i].output = 100;
		t->req[i].line = (uint32_t)i + 1;
	}
}

static void test_select(void)
{
	struct dbk_select sel;
	struct dbk_select_stats st;
	struct dbk_trace t;

	/* Slice [15, 45): rows at 20, 30, 40, re-based on 15. */
	make_trace(&t);
	memset(&sel, 0, sizeof(sel));
	sel.start_s = 15;
	sel.duration_s = 30;
	dbk_trace_select(&t, &sel, &st);
	CHECK_EQ_U(t.n, 3);
	CHECK_NEAR(t.req[0].t, 5, 1e-12);
	CHECK_EQ_U(t.req[0].input, 40000);
	CHECK_EQ_U(t.req[2].input, 90000);
	CHECK_EQ_U(st.clipped + st.skipped, 0);
	dbk_trace_free(&t);

	/* Skip what does not fit, then cap the count. */
	make_trace(&t);
	memset(&sel, 0, sizeof(sel));
	sel.max_model_len = 32768;
	sel.skip_overlong = true;
	sel.max_requests = 3;
	dbk_trace_select(&t, &sel, &st);
	CHECK_EQ_U(t.n, 3);
	CHECK_EQ_U(st.skipped, 1);
	CHECK_EQ_U(t.req[2].input, 300);
	CHECK_NEAR(t.req[2].t, 30, 1e-12);
	dbk_trace_free(&t);

	/* Clip. */
	make_trace(&t);
	memset(&sel, 0, sizeof(sel));
	sel.max_model_len = 32768;
	dbk_trace_select(&t, &sel, &st);
	CHECK_EQ_U(t.n, 6);
	CHECK_EQ_U(st.clipped, 2);
	CHECK_EQ_U(t.req[2].input, 32668);
	CHECK_EQ_U(t.req[4].input, 32668);
	CHECK_EQ_U(t.req[4].output, 100);
	dbk_trace_free(&t);

	/* A start beyond the end leaves nothing. */
	make_trace(&t);
	memset(&sel, 0, sizeof(sel));
	sel.start_s = 1000;
	dbk_trace_select(&t, &sel, &st);
	CHECK_EQ_U(t.n, 0);
	dbk_trace_free(&t);
}

static void make_ticks(struct dbk_trace *t, const double *ts, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->cap = t->n = n;
	t->req = calloc(n, sizeof(*t->req));
	for (size_t i = 0; i < n; i++) {
		t->req[i].t = ts[i];
		t->req[i].input = (uint32_t)i + 1; /* the order, checked below */
		t->req[i].output = 1;
	}
}

static void test_spread(void)
{
	/* Ticks of 3 s: four at 0, one alone at 3, three at 6 (the last
	 * run, spread over the gap before it, 3 s). */
	static const double ts[] = { 0, 0, 0, 0, 3, 6, 6, 6 };
	struct dbk_trace t, u;

	make_ticks(&t, ts, 8);
	CHECK_EQ_U(dbk_trace_spread(&t, 42), 7);
	for (size_t i = 0; i < 8; i++)
		CHECK_EQ_U(t.req[i].input, i + 1);
	for (size_t i = 0; i < 4; i++)
		CHECK(t.req[i].t >= 0 && t.req[i].t < 3);
	CHECK(t.req[4].t == 3);
	for (size_t i = 5; i < 8; i++)
		CHECK(t.req[i].t >= 6 && t.req[i].t < 9);
	for (size_t i = 1; i < 8; i++)
		CHECK(t.req[i].t >= t.req[i - 1].t);
	CHECK(t.req[1].t > t.req[0].t); /* a tick's requests now differ */
	/* Seeded: the same seed, the same times; another, others. */
	make_ticks(&u, ts, 8);
	dbk_trace_spread(&u, 42);
	for (size_t i = 0; i < 8; i++)
		CHECK(u.req[i].t == t.req[i].t);
	dbk_trace_free(&u);
	make_ticks(&u, ts, 8);
	dbk_trace_spread(&u, 43);
	CHECK(u.req[0].t != t.req[0].t);
	dbk_trace_free(&u);
	dbk_trace_free(&t);

	/* Uniform over the tick: 2000 requests in one tick of 1 s, then
	 * one at 1: the mean is near half a second. */
	double big[2001];
	for (size_t i = 0; i < 2000; i++)
		big[i] = 0;
	big[2000] = 1;
	make_ticks(&t, big, 2001);
	CHECK_EQ_U(dbk_trace_spread(&t, 7), 2000);
	double sum = 0;
	for (size_t i = 0; i < 2000; i++)
		sum += t.req[i].t;
	CHECK_NEAR(sum / 2000, 0.5, 0.03);
	dbk_trace_free(&t);

	/* Distinct arrivals, or one instant only: nothing moves. */
	static const double distinct[] = { 0, 1.5, 2, 7 }, one[] = { 4, 4, 4 };
	make_ticks(&t, distinct, 4);
	CHECK_EQ_U(dbk_trace_spread(&t, 1), 0);
	CHECK(t.req[1].t == 1.5 && t.req[3].t == 7);
	dbk_trace_free(&t);
	make_ticks(&t, one, 3);
	CHECK_EQ_U(dbk_trace_spread(&t, 1), 0);
	CHECK(t.req[2].t == 4);
	dbk_trace_free(&t);
}

int main(void)
{
	RUN(test_mooncake);
	RUN(test_mooncake_malformed);
	RUN(test_sessions);
	RUN(test_sessions_two_prompts);
	RUN(test_zero_lengths_raised);
	RUN(test_unsorted_is_sorted_stably);
	RUN(test_azure);
	RUN(test_azure_malformed);
	RUN(test_wallclock);
	RUN(test_detect);
	RUN(test_clip);
	RUN(test_select);
	RUN(test_spread);
	return CHECK_DONE();
}
