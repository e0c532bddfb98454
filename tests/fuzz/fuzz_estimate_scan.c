/* Fuzzes the estimate's fast reader (agent/estimate_scan.c) against cJSON,
 * which estimate.c used alone before and still uses when the reader is
 * not sure.
 *
 * Input: the whole body.
 *
 * Checked (estimate_scan.h):
 * - a sure answer is cJSON's: JSON exactly when cJSON reads an object
 *   followed by whitespace only, MALFORMED only when it does not, and on
 *   JSON the same max_tokens (the last top-level one, when a finite
 *   number) and ignore_eos (the last, when a boolean);
 * - an UNSURE or MALFORMED answer leaves the fields alone;
 * - the reader is sure of plain JSON: whatever cJSON read is printed back
 *   by cJSON (strict JSON) and read again, and that text must give JSON
 *   unless it holds what the reader leaves to cJSON on purpose (a
 *   top-level key with an escape, nesting past 64). */
#include <math.h>

#include <cjson/cJSON.h>

#include "estimate_model.h"
#include "estimate_scan.h"
#include "fuzz.h"

/* Compares the reader with cJSON on s; returns the reader's answer. */
static enum dbk_escan_result cross_check(const uint8_t *s, size_t n, cJSON **tree)
{
	double mt = 16.0, want_mt;
	bool eos = false, want_eos;
	enum dbk_escan_result r = dbk_estimate_scan(s, n, &mt, &eos);
	bool ok = fuzz_estimate_model(s, n, &want_mt, &want_eos, tree);

	if (r == DBK_ESCAN_JSON) {
		FUZZ_CHECK(ok);
		FUZZ_CHECK(mt == want_mt && eos == want_eos);
	} else {
		FUZZ_CHECK(mt == 16.0 && !eos);
		if (r == DBK_ESCAN_MALFORMED)
			FUZZ_CHECK(!ok);
	}
	return r;
}

static unsigned depth_of(const cJSON *v)
{
	unsigned d = 0;

	if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
		return 0;
	for (const cJSON *c = v->child; c; c = c->next) {
		unsigned k = depth_of(c);
		if (k > d)
			d = k;
	}
	return d + 1;
}

/* A key cJSON prints with an escape (the reader leaves those to cJSON). */
static bool plain_keys(const cJSON *root)
{
	for (const cJSON *c = root->child; c; c = c->next)
		for (const unsigned char *k = (const unsigned char *)c->string; k && *k; k++)
			if (*k == '"' || *k == '\\' || *k < 0x20)
				return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that ASan sees any read past the body. */
	uint8_t *body = malloc(size ? size : 1);
	cJSON *tree = NULL;

	FUZZ_CHECK(body);
	memcpy(body, data, size);
	cross_check(body, size, &tree);
	free(body);
	if (!tree)
		return 0;
	char *printed = cJSON_PrintUnformatted(tree);
	bool plain = depth_of(tree) <= 64 && plain_keys(tree);
	cJSON_Delete(tree);
	if (!printed)
		return 0;
	size_t n = strlen(printed);
	uint8_t *again = malloc(n ? n : 1);
	FUZZ_CHECK(again);
	memcpy(again, printed, n);
	free(printed);
	enum dbk_escan_result r = cross_check(again, n, NULL);
	if (plain)
		FUZZ_CHECK(r == DBK_ESCAN_JSON);
	free(again);
	return 0;
}
