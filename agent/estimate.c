/* Request estimate: see estimate.h.
 *
 * Choices beyond the reference, which always had the whole body:
 * - a sample longer than body_size is cut to body_size bytes (HAProxy
 *   never sends more body than Content-Length; if it did, the bytes
 *   beyond it are not part of the request);
 * - text after the JSON value (other than whitespace) makes the body
 *   malformed, as it does for Python's json.loads;
 * - a key that appears twice counts by its last value, as in Python.
 *
 * The body is read by estimate_scan.c's one strict pass; cJSON reads only
 * what that pass is not sure of, so the answer is always cJSON's.
 */
#include "estimate.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "estimate_scan.h"

/* The last member named name (Python's json keeps the last duplicate). */
static const cJSON *last_member(const cJSON *obj, const char *name)
{
	const cJSON *found = NULL;

	for (const cJSON *it = obj->child; it; it = it->next)
		if (it->string && strcmp(it->string, name) == 0)
			found = it;
	return found;
}

static bool only_space(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
			return false;
	return true;
}

enum dbk_estimate_source dbk_estimate(int64_t body_size, const uint8_t *sample, size_t sample_len,
                                      struct dbk_bal_request *out)
{
	const char *text = (const char *)sample;
	const char *end = NULL;
	const cJSON *item;
	cJSON *root;

	if (!sample)
		sample_len = 0;
	if (body_size >= 0 && (uint64_t)sample_len > (uint64_t)body_size)
		sample_len = (size_t)body_size;
	out->body_bytes = body_size >= 0 ? (double)body_size : (double)sample_len;
	out->max_tokens = DBK_DEFAULT_MAX_TOKENS;
	out->ignore_eos = false;

	if (sample_len == 0)
		return DBK_EST_NO_BODY;
	if (body_size >= 0 && (uint64_t)sample_len < (uint64_t)body_size)
		return DBK_EST_TRUNCATED;

	switch (dbk_estimate_scan(sample, sample_len, &out->max_tokens, &out->ignore_eos)) {
	case DBK_ESCAN_JSON: return DBK_EST_JSON;
	case DBK_ESCAN_MALFORMED: return DBK_EST_MALFORMED;
	case DBK_ESCAN_UNSURE: break;
	}
	root = cJSON_ParseWithLengthOpts(text, sample_len, &end, false);
	if (!root)
		return DBK_EST_MALFORMED;
	if (!cJSON_IsObject(root) || !end || !only_space(end, text + sample_len)) {
		cJSON_Delete(root);
		return DBK_EST_MALFORMED;
	}
	item = last_member(root, "max_tokens");
	if (item && cJSON_IsNumber(item) && isfinite(item->valuedouble))
		out->max_tokens = item->valuedouble;
	item = last_member(root, "ignore_eos");
	if (item && cJSON_IsBool(item))
		out->ignore_eos = cJSON_IsTrue(item);
	cJSON_Delete(root);
	return DBK_EST_JSON;
}
