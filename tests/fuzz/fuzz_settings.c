/* Fuzzes the settings grammar: the admin endpoint's /config query
 * (dbk_settings_query), the --config file format (dbk_settings_parse) and the
 * number parsers under them (numparse.h).
 *
 * Input: one selector byte, then the text.
 *   0: a query string; 1: a settings file; 2: one number.
 *
 * Checked:
 * - dbk_parse_uint takes exactly DIGITS (no leading zero, at most 19) in
 *   range, with strtoull's value; dbk_parse_decimal exactly DIGITS or
 *   DIGITS.DIGITS in range, with strtod's value;
 * - a query or file that is taken leaves every setting within its
 *   grammar's bounds (finite, non-negative, counts whole), and what
 *   dbk_settings_describe writes of it reads back to the same settings
 *   (decimals to within rounding in the last printed place). */
#include <math.h>

#include "fuzz.h"
#include "lib/numparse.h"
#include "settings.h"
#include "lib/bounds.h"

static bool plain_digits(const char *s, size_t *n)
{
	size_t i = 0;

	while (s[i] >= '0' && s[i] <= '9')
		i++;
	*n = i;
	return i > 0 && !(i > 1 && s[0] == '0');
}

static void check_numbers(const char *s)
{
	unsigned long long u = 0;
	double d = 0;
	size_t n, f = 0;
	bool digits = plain_digits(s, &n);

	bool want_u = digits && n <= 19 && s[n] == '\0';
	FUZZ_CHECK(dbk_parse_uint(s, 0, ~0ULL, &u) == want_u);
	if (want_u)
		FUZZ_CHECK(u == strtoull(s, NULL, 10));

	bool want_d = digits && n <= 19;
	if (want_d && s[n] == '.') {
		while (s[n + 1 + f] >= '0' && s[n + 1 + f] <= '9')
			f++;
		want_d = f > 0 && f <= 30 && s[n + 1 + f] == '\0';
	} else {
		want_d = want_d && s[n] == '\0';
	}
	FUZZ_CHECK(dbk_parse_decimal(s, 0, 1e300, &d) == want_d);
	if (want_d)
		FUZZ_CHECK(d == strtod(s, NULL));
}

/* As the agent starts: its --max-leases default is set. */
static void defaults(struct dbk_bal_config *c)
{
	dbk_bal_config_default(c, 4, true, 32768, 131072);
	c->max_leases = 1000000;
}

static void check_taken(const struct dbk_bal_config *c)
{
	const double w[] = { c->sensitivity, c->affinity_strength, c->redirect_threshold };

	for (unsigned i = 0; i < 3; i++)
		FUZZ_CHECK(isfinite(w[i]) && w[i] >= 0 && w[i] <= 1e6);
	for (unsigned i = 1; i <= c->nbuckets; i++)
		FUZZ_CHECK(c->bounds[i] >= 1 && c->bounds[i] <= DBK_MAX_TOKENS &&
		           c->bounds[i] == floor(c->bounds[i]));
	FUZZ_CHECK(c->max_leases >= 1 && c->max_leases <= (size_t)DBK_MAX_LEASES);

	struct dbk_buf sb;
	struct dbk_bal_config d;
	char err[256];

	dbk_buf_init(&sb);
	dbk_settings_describe(c, false, &sb);
	FUZZ_CHECK(!sb.oom);
	defaults(&d);
	FUZZ_CHECK(dbk_settings_parse(&d, sb.p, sb.len, err, sizeof(err)) == 0);
	dbk_buf_free(&sb);
	FUZZ_CHECK(memcmp(d.bounds, c->bounds, sizeof(c->bounds)) == 0);
	/* 0 is "the even split", which describe writes out. */
	for (unsigned g = 0; g < c->nbuckets; g++)
		FUZZ_CHECK(dbk_bal_group_size(&d, g) == dbk_bal_group_size(c, g));
	FUZZ_CHECK(d.max_leases == c->max_leases);
	/* Below 1e-5, %.17g has an exponent and 20 decimal places are written. */
	FUZZ_CHECK(fabs(d.sensitivity - c->sensitivity) <= 1e-20);
	FUZZ_CHECK(fabs(d.affinity_strength - c->affinity_strength) <= 1e-20);
	FUZZ_CHECK(fabs(d.redirect_threshold - c->redirect_threshold) <= 1e-20);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dbk_bal_config c;
	char err[256];

	if (size < 1 || size > 4096)
		return 0;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	defaults(&c);
	switch (data[0] % 3) {
	case 0:
		if (dbk_settings_query(&c, s, err, sizeof(err)) == 0)
			check_taken(&c);
		break;
	case 1:
		if (dbk_settings_parse(&c, s, size - 1, err, sizeof(err)) == 0)
			check_taken(&c);
		break;
	default: check_numbers(s); break;
	}
	free(s);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}
