/* Unit tests of the estimate's fast reader (agent/estimate_scan.c): what
 * it is sure of, and what it leaves to cJSON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "estimate_scan.h"

struct got {
	enum dbk_escan_result r;
	double mt;
	bool eos;
};

/* Reads a body given as a C string from an exact-size heap copy (ASan
 * catches any read past it), the fields starting at their defaults. */
static struct got scan(const char *body)
{
	size_t n = strlen(body);
	uint8_t *copy = malloc(n ? n : 1);
	struct got g = { .mt = 16, .eos = false };

	memcpy(copy, body, n);
	g.r = dbk_estimate_scan(copy, n, &g.mt, &g.eos);
	free(copy);
	return g;
}

/* Each body (a NULL-ended list) reads as want. */
static void expect(enum dbk_escan_result want, const char *const *bodies)
{
	for (; *bodies; bodies++) {
		enum dbk_escan_result r = scan(*bodies).r;

		CHECK_EQ_U(r, want);
		if (r != want)
			fprintf(stderr, "    body: %s\n", *bodies);
	}
}

static void plain_bodies(void)
{
	struct got g = scan("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	                    "\"hi\"}],\"max_tokens\":100,\"ignore_eos\":true}");

	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 100, 0);
	CHECK(g.eos);
	g = scan(" \r\n\t{ \"prompt\" : \"x\" , \"max_tokens\" : 7 } \n");
	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 7, 0);
	CHECK(!g.eos);
	g = scan("{}");
	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 16, 0);
}

static void numbers(void)
{
	CHECK_NEAR(scan("{\"max_tokens\":-12.5e-1}").mt, -1.25, 0);
	CHECK_NEAR(scan("{\"max_tokens\":0}").mt, 0, 0);
	CHECK_NEAR(scan("{\"max_tokens\":2E+3}").mt, 2000, 0);
	/* Integers: added up to 15 digits, strtod's past them. */
	CHECK(scan("{\"max_tokens\":123456789012345}").mt == 123456789012345.0);
	CHECK(scan("{\"max_tokens\":-99}").mt == -99.0);
	CHECK(scan("{\"max_tokens\":12345678901234567890123}").mt == 12345678901234567890123.0);
	CHECK(scan("{\"max_tokens\":9007199254740993}").mt == 9007199254740993.0);
	/* Not finite: the default stays, as estimate.c does with cJSON. */
	struct got g = scan("{\"max_tokens\":1e400}");
	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 16, 0);
	/* cJSON reads these more loosely than the grammar: its call. */
	expect(DBK_ESCAN_UNSURE,
	       (const char *const[]){ "{\"max_tokens\":01}", "{\"x\":[1.]}", "{\"x\":1e}",
	                              "{\"x\":-}", "{\"x\":+1}", NULL });
	/* 64 characters: cJSON would cut it at 63. */
	char b[128] = "{\"x\":";
	size_t n = strlen(b);
	memset(b + n, '1', 64);
	strcpy(b + n + 64, "}");
	CHECK_EQ_U(scan(b).r, DBK_ESCAN_UNSURE);
	b[n + 63] = '}';
	b[n + 64] = '\0';
	CHECK_EQ_U(scan(b).r, DBK_ESCAN_JSON);
}

static void last_duplicate_counts(void)
{
	struct got g = scan("{\"max_tokens\":8,\"ignore_eos\":true,\"max_tokens\":9,"
	                    "\"ignore_eos\":false}");

	CHECK_NEAR(g.mt, 9, 0);
	CHECK(!g.eos);
	/* The last is not a number / boolean: the defaults, not the first. */
	g = scan("{\"max_tokens\":8,\"max_tokens\":null,\"ignore_eos\":true,\"ignore_eos\":1}");
	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 16, 0);
	CHECK(!g.eos);
	g = scan("{\"max_tokens\":8,\"max_tokens\":[9],\"ignore_eos\":true,\"ignore_eos\":{}}");
	CHECK_NEAR(g.mt, 16, 0);
	CHECK(!g.eos);
	g = scan("{\"max_tokens\":\"9\"}");
	CHECK_NEAR(g.mt, 16, 0);
}

static void nested_fields_ignored(void)
{
	struct got g = scan("{\"a\":{\"max_tokens\":5,\"ignore_eos\":true},"
	                    "\"b\":[{\"max_tokens\":6}],\"max_tokens\":3}");

	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 3, 0);
	CHECK(!g.eos);
}

static void strings(void)
{
	struct got g = scan(
	        "{\"prompt\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/\\b\\f\\n\\r\\t\","
	        "\"max_tokens\":4}");

	CHECK_EQ_U(g.r, DBK_ESCAN_JSON);
	CHECK_NEAR(g.mt, 4, 0);
	/* A quote after an escaped backslash closes the string. */
	CHECK_EQ_U(scan("{\"p\":\"a\\\\\",\"max_tokens\":2}").r, DBK_ESCAN_JSON);
	/* Raw control bytes and any other byte stand for themselves. */
	CHECK_EQ_U(scan("{\"p\":\"a\x01\tb\xff\"}").r, DBK_ESCAN_JSON);
	/* What cJSON refuses or reads oddly is its call. */
	expect(DBK_ESCAN_UNSURE,
	       (const char *const[]){
	               "{\"p\":\"\\x\"}", "{\"p\":\"\\uZZZZ\"}", "{\"p\":\"\\ud800 lone\"}",
	               "{\"p\":\"\\udc00\"}", "{\"p\":\"\\u12\"}", "{\"p\":\"unterminated}",
	               /* A top-level key with an escape could decode to max_tokens. */
	               "{\"max\\u005ftokens\":9}", NULL });
	/* Deeper, it does not matter. */
	CHECK_EQ_U(scan("{\"a\":{\"k\\n\":1}}").r, DBK_ESCAN_JSON);
}

static void not_sure_or_malformed(void)
{
	/* Followed by more than whitespace: malformed, as with cJSON. */
	struct got g = scan("{\"max_tokens\":3} x");
	CHECK_EQ_U(g.r, DBK_ESCAN_MALFORMED);
	CHECK_NEAR(g.mt, 16, 0);
	CHECK_EQ_U(scan("{}{}").r, DBK_ESCAN_MALFORMED);
	/* Not an object, bytes cJSON skips as whitespace, a UTF-8 BOM,
	 * syntax errors, cut: cJSON's call. */
	expect(DBK_ESCAN_UNSURE,
	       (const char *const[]){ "[1]", "\x01{}", "\xef\xbb\xbf{}", "{\"a\" 1}", "{\"a\":1,}",
	                              "{\"a\":[1,]}", "{\"a\":[1}", "{\"a\":nul}", "{\"a\":truex}",
	                              "{\"a\":{", "", NULL });
	double mt = 16;
	bool eos = false;
	CHECK_EQ_U(dbk_estimate_scan(NULL, 0, &mt, &eos), DBK_ESCAN_UNSURE);
}

static void depth(void)
{
	/* 64 levels are read; the 65th is cJSON's. */
	char b[512];
	size_t n = 0;

	for (int i = 0; i < 64; i++) {
		if (i % 2) {
			b[n++] = '[';
		} else {
			memcpy(b + n, "{\"k\":", 5);
			n += 5;
		}
	}
	for (int i = 63; i >= 0; i--)
		b[n++] = i % 2 ? ']' : '}';
	b[n] = '\0';
	CHECK_EQ_U(scan(b).r, DBK_ESCAN_JSON);
	memmove(b + 5, b, n + 1);
	memcpy(b, "{\"k\":", 5);
	strcat(b, "}");
	CHECK_EQ_U(scan(b).r, DBK_ESCAN_UNSURE);
}

int main(void)
{
	RUN(plain_bodies);
	RUN(numbers);
	RUN(last_duplicate_counts);
	RUN(nested_fields_ignored);
	RUN(strings);
	RUN(not_sure_or_malformed);
	RUN(depth);
	return CHECK_DONE();
}
