/* Unit tests of the request estimate (agent/estimate.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate.h"

/* Estimates a whole body given as a C string, from an exact-size heap
 * copy so that ASan catches any read past the sample. */
static enum dbk_estimate_source est_whole(const char *body, struct dbk_bal_request *r)
{
	size_t n = strlen(body);
	uint8_t *copy = malloc(n ? n : 1);
	enum dbk_estimate_source s;

	memcpy(copy, body, n);
	s = dbk_estimate((int64_t)n, copy, n, r);
	free(copy);
	return s;
}

/* body reads as JSON with these max_tokens and ignore_eos. */
static void expect_json(const char *body, double max_tokens, bool ignore_eos)
{
	struct dbk_bal_request r;
	int failed = dbk_check_cur_failed;

	CHECK_EQ_U(est_whole(body, &r), DBK_EST_JSON);
	CHECK_NEAR(r.max_tokens, max_tokens, 0);
	CHECK_EQ_U(r.ignore_eos, ignore_eos);
	if (dbk_check_cur_failed != failed)
		fprintf(stderr, "    body: %s\n", body);
}

/* The estimate of a sample of len bytes (NULL: none) from a body of
 * body_size: its verdict and body_bytes, into *r for more checks. */
static void expect_est(int64_t body_size, const char *sample, size_t len,
                       enum dbk_estimate_source want, double body_bytes, struct dbk_bal_request *r)
{
	int failed = dbk_check_cur_failed;

	CHECK_EQ_U(dbk_estimate(body_size, (const uint8_t *)sample, len, r), want);
	CHECK_NEAR(r->body_bytes, body_bytes, 0);
	if (dbk_check_cur_failed != failed)
		fprintf(stderr, "    body_size %lld, sample %.*s\n", (long long)body_size,
		        sample ? (int)len : 6, sample ? sample : "(none)");
}

static void chat_body(void)
{
	const char *b = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	                "\"content\":\"hello\"}],\"max_tokens\":100,\"ignore_eos\":true}";
	struct dbk_bal_request r;

	CHECK_EQ_U(est_whole(b, &r), DBK_EST_JSON);
	CHECK_NEAR(r.body_bytes, (double)strlen(b), 0);
	CHECK_NEAR(r.max_tokens, 100, 0);
	CHECK(r.ignore_eos);
}

static void completions_body(void)
{
	const char *b = "{\"model\":\"m\",\"prompt\":\"once upon a time\","
	                "\"max_tokens\":7,\"ignore_eos\":false,\"stream\":true}";
	struct dbk_bal_request r;

	CHECK_EQ_U(est_whole(b, &r), DBK_EST_JSON);
	CHECK_NEAR(r.max_tokens, 7, 0);
	CHECK(!r.ignore_eos);
}

static void max_tokens_null_or_absent(void)
{
	expect_json("{\"max_tokens\":null,\"ignore_eos\":true}", DBK_DEFAULT_MAX_TOKENS, true);
	expect_json("{\"prompt\":\"x\"}", 16, false);
	expect_json("{}", 16, false);
}

static void odd_types_default(void)
{
	expect_json("{\"max_tokens\":\"100\",\"ignore_eos\":\"true\"}", 16, false);
	expect_json("{\"max_tokens\":[1],\"ignore_eos\":1}", 16, false);
	expect_json("{\"max_tokens\":true}", 16, false);
	/* Keys are case-sensitive, as in Python. */
	expect_json("{\"MAX_TOKENS\":5,\"Ignore_Eos\":true}", 16, false);
	/* Nested keys do not count. */
	expect_json("{\"o\":{\"max_tokens\":5}}", 16, false);
}

static void odd_numbers(void)
{
	struct dbk_bal_request r;

	CHECK_EQ_U(est_whole("{\"max_tokens\":1e308}", &r), DBK_EST_JSON);
	CHECK_NEAR(r.max_tokens, 1e308, 1e-15);
	/* strtod overflows to infinity: not a usable number. */
	expect_json("{\"max_tokens\":1e400}", 16, false);
	expect_json("{\"max_tokens\":-1e400}", 16, false);
	expect_json("{\"max_tokens\":-5}", -5, false);
	expect_json("{\"max_tokens\":0}", 0, false);
	expect_json("{\"max_tokens\":12.5}", 12.5, false);
	/* Python's json has no NaN in strict JSON either; cJSON rejects it. */
	CHECK_EQ_U(est_whole("{\"max_tokens\":NaN}", &r), DBK_EST_MALFORMED);
	CHECK_NEAR(r.max_tokens, 16, 0);
}

static void duplicate_keys_last_wins(void)
{
	struct dbk_bal_request r;

	CHECK_EQ_U(est_whole("{\"max_tokens\":5,\"ignore_eos\":true,"
	                     "\"max_tokens\":9,\"ignore_eos\":false}",
	                     &r),
	           DBK_EST_JSON);
	CHECK_NEAR(r.max_tokens, 9, 0);
	CHECK(!r.ignore_eos);
}

static void truncated(void)
{
	const char *b = "{\"max_tokens\":100,\"ignore_eos\":true}";
	struct dbk_bal_request r;

	expect_est(100000, b, strlen(b), DBK_EST_TRUNCATED, 100000, &r);
	CHECK_NEAR(r.max_tokens, 16, 0);
	CHECK(!r.ignore_eos);
	/* A cut that happens to leave valid JSON is still not the body. */
	CHECK_EQ_U(dbk_estimate((int64_t)strlen(b) + 1, (const uint8_t *)b, strlen(b), &r),
	           DBK_EST_TRUNCATED);
}

static void malformed(void)
{
	struct dbk_bal_request r;

	CHECK_EQ_U(est_whole("{\"max_tokens\":100", &r), DBK_EST_MALFORMED);
	CHECK_NEAR(r.max_tokens, 16, 0);
	CHECK_NEAR(r.body_bytes, 17, 0);
	CHECK_EQ_U(est_whole("[1,2,3]", &r), DBK_EST_MALFORMED);
	CHECK_EQ_U(est_whole("100", &r), DBK_EST_MALFORMED);
	CHECK_EQ_U(est_whole("null", &r), DBK_EST_MALFORMED);
	CHECK_EQ_U(est_whole("not json", &r), DBK_EST_MALFORMED);
	CHECK_EQ_U(est_whole("   ", &r), DBK_EST_MALFORMED);
	/* Trailing data: json.loads says "Extra data". */
	CHECK_EQ_U(est_whole("{\"max_tokens\":5} {}", &r), DBK_EST_MALFORMED);
	CHECK_NEAR(r.max_tokens, 16, 0);
	/* Trailing whitespace is fine. */
	expect_json("{\"max_tokens\":5}\r\n ", 5, false);
	/* An embedded NUL ends nothing: the bytes after it are trailing data. */
	CHECK_EQ_U(dbk_estimate(18, (const uint8_t *)"{\"max_tokens\":5}\0x", 18, &r),
	           DBK_EST_MALFORMED);
}

static void empty(void)
{
	struct dbk_bal_request r;

	expect_est(0, NULL, 0, DBK_EST_NO_BODY, 0, &r);
	CHECK_NEAR(r.max_tokens, 16, 0);
	CHECK(!r.ignore_eos);
	expect_est(-1, NULL, 0, DBK_EST_NO_BODY, 0, &r);
	/* A known length without a sample keeps the length. */
	expect_est(5000, NULL, 0, DBK_EST_NO_BODY, 5000, &r);
	/* A NULL sample with a length is no sample. */
	expect_est(-1, NULL, 10, DBK_EST_NO_BODY, 0, &r);
}

static void unknown_body_size(void)
{
	const char *b = "{\"max_tokens\":42,\"ignore_eos\":true}";
	struct dbk_bal_request r;

	expect_est(-1, b, strlen(b), DBK_EST_JSON, (double)strlen(b), &r);
	CHECK_NEAR(r.max_tokens, 42, 0);
	CHECK(r.ignore_eos);
}

static void sample_longer_than_body(void)
{
	/* Only the first body_size bytes are the body. */
	const char *b = "{\"max_tokens\":42}garbage";
	struct dbk_bal_request r;

	expect_est(17, b, strlen(b), DBK_EST_JSON, 17, &r);
	CHECK_NEAR(r.max_tokens, 42, 0);
	expect_est(10, b, strlen(b), DBK_EST_MALFORMED, 10, &r);
	expect_est(0, b, strlen(b), DBK_EST_NO_BODY, 0, &r);
}

static void deep_nesting(void)
{
	/* Deeper than cJSON's nesting limit: refused, not a crash. */
	enum { DEPTH = 5000 };
	char *b = malloc(2 * DEPTH + 16);
	size_t n = 0;
	struct dbk_bal_request r;

	b[n++] = '{';
	memcpy(b + n, "\"a\":", 4);
	n += 4;
	for (int i = 0; i < DEPTH; i++)
		b[n++] = '[';
	for (int i = 0; i < DEPTH; i++)
		b[n++] = ']';
	b[n++] = '}';
	CHECK_EQ_U(dbk_estimate((int64_t)n, (const uint8_t *)b, n, &r), DBK_EST_MALFORMED);
	CHECK_NEAR(r.max_tokens, 16, 0);
	free(b);
}

int main(void)
{
	RUN(chat_body);
	RUN(completions_body);
	RUN(max_tokens_null_or_absent);
	RUN(odd_types_default);
	RUN(odd_numbers);
	RUN(duplicate_keys_last_wins);
	RUN(truncated);
	RUN(malformed);
	RUN(empty);
	RUN(unknown_body_size);
	RUN(sample_longer_than_body);
	RUN(deep_nesting);
	return CHECK_DONE();
}
