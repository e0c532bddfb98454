/* Fuzzes the request's model reader (agent/prefix_key.c, dbk_pkey_model).
 *
 * Input: the body sample.
 *
 * Checked (prefix_key.h):
 * - a model found lies inside the sample, is not empty and holds neither
 *   a quote nor a backslash;
 * - a longer sample finds the same: the model found in every prefix that
 *   finds one is the whole sample's, at the same place (reading more of
 *   the body never changes the answer, so a cut sample is safe);
 * - where cJSON reads the whole sample, with no escape anywhere, as an
 *   object whose first "model" member is a string, a model found is that
 *   string (an escaped key cJSON decodes to "model" is not read here). */
#include <cjson/cJSON.h>

#include "fuzz.h"
#include "prefix_key.h"

#define MAX_BODY 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *id, *id2;
	size_t len, len2;

	if (size > MAX_BODY)
		return 0;
	bool found = dbk_pkey_model(data, size, &id, &len);
	if (found) {
		FUZZ_CHECK(fuzz_inside(id, len, data, size));
		FUZZ_CHECK(len > 0 && !memchr(id, '"', len) && !memchr(id, '\\', len));
	}
	/* Half the sample: found there means found alike in the whole. */
	if (dbk_pkey_model(data, size / 2, &id2, &len2))
		FUZZ_CHECK(found && id2 == id && len2 == len);
	if (!found || memchr(data, '\\', size))
		return 0;
	cJSON *root = cJSON_ParseWithLength((const char *)data, size);
	if (cJSON_IsObject(root)) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
		if (cJSON_IsString(m) && strlen(m->valuestring) == len)
			FUZZ_CHECK(memcmp(m->valuestring, id, len) == 0);
	}
	cJSON_Delete(root);
	return 0;
}
