/* A server's /v1/models list (vllm_metrics.h): its models, base models
 * and LoRA adapters, and the smallest max_model_len. */
#include "vllm_metrics.h"
#include "lib/log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A string member copied into dst (DBK_VM_MODEL_ID_MAX + 1 bytes):
 * false when it is longer or holds a NUL. */
static bool copy_id(const char *v, char *dst)
{
	size_t n = strlen(v);

	if (n > DBK_VM_MODEL_ID_MAX)
		return false;
	memcpy(dst, v, n + 1);
	return true;
}

/* One entry of the list into out's next model; NULL, or why not. */
static const char *parse_model(const cJSON *m, struct dbk_vm_models *out)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "max_model_len");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *parent = cJSON_GetObjectItemCaseSensitive(m, "parent");

	if (!cJSON_IsObject(m))
		return "a model is not an object";
	if (out->n == DBK_VM_MAX_MODELS)
		return "more models than the agent keeps (64)";
	struct dbk_vm_model *e = &out->m[out->n];
	if (!cJSON_IsString(id) || !id->valuestring[0] || !copy_id(id->valuestring, e->id))
		return "a model has no usable id (a string of 1 to 255 bytes)";
	e->parent[0] = '\0';
	if (parent && !cJSON_IsNull(parent) &&
	    (!cJSON_IsString(parent) || !copy_id(parent->valuestring, e->parent)))
		return "a model's parent is not an id";
	out->n++;
	if (!l || cJSON_IsNull(l))
		return NULL;
	double d = cJSON_IsNumber(l) ? l->valuedouble : -1;
	if (!(d >= 1 && d <= 1e12) || d != floor(d))
		return "max_model_len is not a positive integer";
	if (out->max_len == 0 || (long)d < out->max_len)
		out->max_len = (long)d;
	return NULL;
}

int dbk_vllm_parse_models(const char *buf, size_t len, struct dbk_vm_models *out, char *err,
                          size_t errlen)
{
	cJSON *root = buf ? cJSON_ParseWithLength(buf, len) : NULL;
	const cJSON *data, *m;
	const char *why = NULL;

	out->max_len = 0;
	out->n = 0;
	data = cJSON_GetObjectItemCaseSensitive(root, "data");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(data))
		why = "not a model list (no \"data\" array)";
	else
		cJSON_ArrayForEach(m, data)
		{
			if ((why = parse_model(m, out)) != NULL)
				break;
		}
	cJSON_Delete(root);
	if (!why)
		return 0;
	dbk_errf(err, errlen, "%s", why);
	out->max_len = 0;
	out->n = 0;
	return -1;
}
