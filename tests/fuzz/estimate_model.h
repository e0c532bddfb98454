/* The cJSON model of the request estimate, shared by fuzz_estimate and
 * fuzz_estimate_scan. */
#ifndef DBK_FUZZ_ESTIMATE_MODEL_H
#define DBK_FUZZ_ESTIMATE_MODEL_H

#include <math.h>

#include <cjson/cJSON.h>

#include "fuzz.h"

/* An independent reading of the whole body, as estimate.c did with cJSON
 * alone before its fast reader: a JSON object with nothing but
 * whitespace after it; the last of duplicate keys counts, only a finite
 * number sets max_tokens and only a boolean ignore_eos. With tree, a
 * body read as JSON leaves its cJSON tree there for the caller to free.
 * (The JSON grammar is cJSON's either way: what is checked is the
 * agent's use of it.) */
static inline bool fuzz_estimate_model(const uint8_t *s, size_t n, double *mt, bool *eos,
                                       cJSON **tree)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts((const char *)s, n, &end, false);
	bool ok = root && cJSON_IsObject(root) && end;

	*mt = 16.0;
	*eos = false;
	if (ok) {
		FUZZ_CHECK(end >= (const char *)s && end <= (const char *)s + n);
		for (const char *p = end; p < (const char *)s + n; p++)
			if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
				ok = false;
	}
	if (ok) {
		const cJSON *it;

		cJSON_ArrayForEach(it, root)
		{
			if (it->string && strcmp(it->string, "max_tokens") == 0)
				*mt = cJSON_IsNumber(it) && isfinite(it->valuedouble)
				              ? it->valuedouble
				              : 16.0;
			if (it->string && strcmp(it->string, "ignore_eos") == 0)
				*eos = cJSON_IsBool(it) ? cJSON_IsTrue(it) : false;
		}
	}
	if (tree && ok)
		*tree = root;
	else
		cJSON_Delete(root);
	return ok;
}

#endif
