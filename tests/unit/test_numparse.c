/* Whole-string numbers: what the command lines and settings accept, and
 * that a rejected value leaves the caller's variable alone. */
#include <float.h>
#include <limits.h>

#include "check.h"
#include "lib/numparse.h"

/* Not one whole number, for either parser. */
static const char *const not_a_number[] = {
	"", " ", "-", ".", "abc", "12abc", "12 ", "1,5", "1e", "--1",
};

static void test_rejects_what_is_not_one_number(void)
{
	long long v = 99;
	double d = 99;

	CHECK(!dbk_parse_ll(NULL, LLONG_MIN, LLONG_MAX, &v));
	CHECK(!dbk_parse_double(NULL, -DBL_MAX, DBL_MAX, &d));
	for (size_t i = 0; i < sizeof(not_a_number) / sizeof(not_a_number[0]); i++) {
		const char *s = not_a_number[i];
		bool ll = dbk_parse_ll(s, LLONG_MIN, LLONG_MAX, &v);
		bool dbl = dbk_parse_double(s, -DBL_MAX, DBL_MAX, &d);

		if (ll || dbl)
			fprintf(stderr, "  '%s' was taken for a number\n", s);
		CHECK(!ll && !dbl);
	}
	CHECK_EQ_U(v, 99);
	CHECK_NEAR(d, 99, 0);
}

static void test_ll_accepts_whole_numbers_in_range(void)
{
	long long v = 0;

	CHECK(dbk_parse_ll("42", 0, 100, &v));
	CHECK_EQ_U(v, 42);
	CHECK(dbk_parse_ll("-7", -10, 10, &v));
	CHECK(v == -7);
	CHECK(dbk_parse_ll("+3", 0, 10, &v));
	CHECK_EQ_U(v, 3);
	/* Both bounds are inclusive. */
	CHECK(dbk_parse_ll("1", 1, 65535, &v));
	CHECK_EQ_U(v, 1);
	CHECK(dbk_parse_ll("65535", 1, 65535, &v));
	CHECK_EQ_U(v, 65535);
	CHECK(dbk_parse_ll("9223372036854775807", 0, LLONG_MAX, &v));
	CHECK(v == LLONG_MAX);
	CHECK(dbk_parse_ll("-9223372036854775808", LLONG_MIN, 0, &v));
	CHECK(v == LLONG_MIN);
}

static void test_ll_rejects(void)
{
	long long v = 99;

	CHECK(!dbk_parse_ll("1.5", 0, 100, &v));
	CHECK(!dbk_parse_ll("0x10", 0, 100, &v));
	CHECK(!dbk_parse_ll("-1", 0, 100, &v));
	CHECK(!dbk_parse_ll("0", 1, 100, &v));
	CHECK(!dbk_parse_ll("101", 0, 100, &v));
	/* Past long long: strtoll saturates with ERANGE, which must not
	 * pass for LLONG_MAX even when that is in range. */
	CHECK(!dbk_parse_ll("9223372036854775808", 0, LLONG_MAX, &v));
	CHECK(!dbk_parse_ll("-9223372036854775809", LLONG_MIN, 0, &v));
	CHECK(!dbk_parse_ll("99999999999999999999999", 0, LLONG_MAX, &v));
	CHECK_EQ_U(v, 99);
}

static void test_double_accepts_finite_numbers_in_range(void)
{
	double d = 0;

	CHECK(dbk_parse_double("1.5", 0, 10, &d));
	CHECK_NEAR(d, 1.5, 0);
	CHECK(dbk_parse_double("1e3", 0, 1e9, &d));
	CHECK_NEAR(d, 1000, 0);
	CHECK(dbk_parse_double("-0.25", -1, 1, &d));
	CHECK_NEAR(d, -0.25, 0);
	CHECK(dbk_parse_double(".5", 0, 1, &d));
	CHECK_NEAR(d, 0.5, 0);
	/* Both bounds are inclusive. */
	CHECK(dbk_parse_double("0.001", 1e-3, 1e6, &d));
	CHECK_NEAR(d, 1e-3, 0);
	CHECK(dbk_parse_double("86400", 0, 86400, &d));
	CHECK_NEAR(d, 86400, 0);
	CHECK(dbk_parse_double("1.7976931348623157e308", -DBL_MAX, DBL_MAX, &d));
	CHECK(d == DBL_MAX);
}

static void test_double_rejects(void)
{
	double d = 99;

	CHECK(!dbk_parse_double("2.5x", 0, 100, &d));
	CHECK(!dbk_parse_double("-1", 0, 100, &d));
	CHECK(!dbk_parse_double("0.5", 1, 100, &d));
	CHECK(!dbk_parse_double("100.5", 0, 100, &d));
	/* Not numbers, whatever the bounds: a NaN fails no comparison, so
	 * the range check alone would let it through. */
	CHECK(!dbk_parse_double("nan", -DBL_MAX, DBL_MAX, &d));
	CHECK(!dbk_parse_double("NAN", -DBL_MAX, DBL_MAX, &d));
	CHECK(!dbk_parse_double("inf", -DBL_MAX, DBL_MAX, &d));
	CHECK(!dbk_parse_double("-infinity", -DBL_MAX, DBL_MAX, &d));
	/* Overflow (strtod's HUGE_VAL) and underflow (ERANGE) too. */
	CHECK(!dbk_parse_double("1e400", -DBL_MAX, DBL_MAX, &d));
	CHECK(!dbk_parse_double("-1e400", -DBL_MAX, DBL_MAX, &d));
	CHECK(!dbk_parse_double("1e-400", -DBL_MAX, DBL_MAX, &d));
	CHECK_NEAR(d, 99, 0);
}

/* The settings grammar: plain digits, an optional fraction for decimals. */
static void test_strict_grammar(void)
{
	static const char *const bad[] = {
		"",
		"+1",
		"-0",
		"-1",
		" 1",
		"1 ",
		"0x8000",
		"1e3",
		"1E3",
		"01",
		"00",
		".5",
		"1.",
		"1..5",
		"nan",
		"inf",
		"1,5",
		"12abc",
		"99999999999999999999",
	};
	unsigned long long u = 99;
	double d = 99;

	CHECK(!dbk_parse_uint(NULL, 0, 100, &u));
	CHECK(!dbk_parse_decimal(NULL, 0, 100, &d));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool a = dbk_parse_uint(bad[i], 0, ~0ULL, &u);
		bool b = dbk_parse_decimal(bad[i], 0, 1e30, &d);
		if (a || b)
			fprintf(stderr, "  '%s' was taken\n", bad[i]);
		CHECK(!a && !b);
	}
	CHECK(!dbk_parse_uint("1.5", 0, 100, &u));
	CHECK(!dbk_parse_uint("101", 0, 100, &u));
	CHECK(!dbk_parse_decimal("100.5", 0, 100, &d));
	CHECK_EQ_U(u, 99);
	CHECK_NEAR(d, 99, 0);
	CHECK(dbk_parse_uint("0", 0, 100, &u) && u == 0);
	CHECK(dbk_parse_uint("1099511627776", 1, 1ULL << 40, &u) && u == 1ULL << 40);
	CHECK(dbk_parse_uint("9999999999999999999", 0, ~0ULL, &u) && u == 9999999999999999999ULL);
	CHECK(dbk_parse_decimal("0.125", 0, 1, &d));
	CHECK_NEAR(d, 0.125, 0);
	CHECK(dbk_parse_decimal("32768", 0, 1e6, &d));
	CHECK_NEAR(d, 32768, 0);
	/* What the agent writes back (%.17g) must read again: up to 21
	 * decimal places (fuzz_settings found this 20-place one refused). */
	char buf[64];
	snprintf(buf, sizeof(buf), "%.17g", 0.00031007);
	CHECK(dbk_parse_decimal(buf, 0, 1, &d));
	CHECK_NEAR(d, 0.00031007, 0);
	CHECK(!dbk_parse_decimal("0.0000000000000000000000000000001", 0, 1, &d));
}

/* Durations: a unit suffix or a bare number in the option's own unit. */
static void test_duration(void)
{
	long long v = 99;

	CHECK(dbk_parse_duration("250", 1, 10, 3600000, &v));
	CHECK_EQ_U(v, 250);
	CHECK(dbk_parse_duration("250ms", 1, 10, 3600000, &v));
	CHECK_EQ_U(v, 250);
	CHECK(dbk_parse_duration("2s", 1, 10, 3600000, &v));
	CHECK_EQ_U(v, 2000);
	CHECK(dbk_parse_duration("1m", 1, 10, 3600000, &v));
	CHECK_EQ_U(v, 60000);
	/* An option in seconds: a bare number is seconds. */
	CHECK(dbk_parse_duration("30", 1000, 1, 604800, &v));
	CHECK_EQ_U(v, 30);
	CHECK(dbk_parse_duration("2m", 1000, 1, 604800, &v));
	CHECK_EQ_U(v, 120);
	CHECK(dbk_parse_duration("3000ms", 1000, 1, 604800, &v));
	CHECK_EQ_U(v, 3);
	v = 99;
	/* Not a whole number of seconds: refused, not rounded. */
	CHECK(!dbk_parse_duration("1500ms", 1000, 1, 604800, &v));
	/* Bounds are in the option's unit, after the conversion. */
	CHECK(!dbk_parse_duration("5", 1, 10, 3600000, &v));
	CHECK(!dbk_parse_duration("2h", 1, 10, 3600000, &v));
	CHECK(!dbk_parse_duration("61m", 1, 10, 3600000, &v));
	static const char *const bad[] = {
		"",     "ms",   "s",   "-1s", "1.5s", "1 s", "1S",
		"1sec", "1mss", "01s", "1e3", " 1s",  "1s ", "9999999999999999999m"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (dbk_parse_duration(bad[i], 1, 0, LLONG_MAX, &v))
			fprintf(stderr, "  '%s' was taken for a duration\n", bad[i]);
		CHECK(!dbk_parse_duration(bad[i], 1, 0, LLONG_MAX, &v));
	}
	CHECK(!dbk_parse_duration(NULL, 1, 0, 10, &v));
	CHECK(!dbk_parse_duration("1", 0, 0, 10, &v));
	CHECK_EQ_U(v, 99);
}

int main(void)
{
	RUN(test_rejects_what_is_not_one_number);
	RUN(test_ll_accepts_whole_numbers_in_range);
	RUN(test_ll_rejects);
	RUN(test_double_accepts_finite_numbers_in_range);
	RUN(test_double_rejects);
	RUN(test_strict_grammar);
	RUN(test_duration);
	return CHECK_DONE();
}
