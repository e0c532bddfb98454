/* The stub's LoRA adapters; see loras.h. vLLM's wording is from
 * vllm/entrypoints/openai/serving_models.py at 0f1457b (the checks of
 * load and unload) and vllm/entrypoints/openai/api_server.py (the
 * routes answer the success string as the body, with no media type). */
#include "loras.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/log.h"

static int fail(struct dbk_api_error *err, int status, const char *type, const char *fmt,
                const char *arg)
{
	err->status = status;
	err->type = type;
	dbk_errf(err->message, sizeof(err->message), fmt, arg);
	return -1;
}

void dbk_stub_loras_free(struct dbk_stub_loras *L)
{
	for (size_t i = 0; i < L->n; i++) {
		free(L->a[i].name);
		free(L->a[i].path);
	}
	for (size_t i = 0; i < L->n_series; i++) {
		free(L->series[i].running);
		free(L->series[i].waiting);
	}
	free(L->a);
	memset(L, 0, sizeof(*L));
}

const struct dbk_stub_lora *dbk_stub_loras_find(const struct dbk_stub_loras *L, const char *name)
{
	for (size_t i = 0; i < L->n; i++)
		if (L->a[i].listed && strcmp(L->a[i].name, name) == 0)
			return &L->a[i];
	return NULL;
}

const char *dbk_stub_loras_name(const struct dbk_stub_loras *L, uint32_t id)
{
	for (size_t i = 0; i < L->n; i++)
		if (L->a[i].id == id)
			return L->a[i].name;
	return NULL;
}

int dbk_stub_loras_lookup(const void *ctx, const char *name, uint32_t *id)
{
	const struct dbk_stub_lora *a = dbk_stub_loras_find(ctx, name);

	if (!a)
		return -1;
	*id = a->id;
	return 0;
}

/* Text the stub echoes into JSON, /metrics labels and logs: within its
 * bound, no control bytes. */
static bool fits(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* vLLM's load: both fields non-empty, the name not served yet; then a
 * new id (vLLM's lora_id_counter). */
static int add(struct dbk_stub_loras *L, const char *name, const char *path, uint32_t *id,
               struct dbk_api_error *err)
{
	struct dbk_stub_lora *a;

	if (!*name || !*path)
		return fail(err, 400, "InvalidUserInput", "%s",
		            "Both 'lora_name' and 'lora_path' must be provided.");
	if (dbk_stub_loras_find(L, name))
		return fail(err, 400, "InvalidUserInput",
		            "The lora adapter '%s' has already been loaded.", name);
	if (!fits(name, DBK_STUB_LORA_NAME_MAX) || !fits(path, DBK_STUB_LORA_PATH_MAX))
		return fail(err, 400, "BadRequestError", "%s",
		            "the stub takes adapter names of at most 256 bytes and paths of at "
		            "most 1024, without control characters");
	if (L->n == DBK_STUB_LORA_MAX)
		return fail(err, 400, "BadRequestError", "%s",
		            "the stub loads at most 1024 adapters in its lifetime");
	a = dbk_array_room(L->a, &L->cap, L->n, sizeof(*a), 8);
	if (!a)
		return fail(err, 500, "InternalServerError", "%s", "out of memory");
	L->a = a;
	a = &L->a[L->n];
	a->name = strdup(name);
	a->path = strdup(path);
	if (!a->name || !a->path) {
		free(a->name);
		free(a->path);
		return fail(err, 500, "InternalServerError", "%s", "out of memory");
	}
	a->id = ++L->next_id;
	a->listed = true;
	L->n++;
	*id = a->id;
	return 0;
}

static const char *str_field(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int dbk_stub_loras_add_module(struct dbk_stub_loras *L, const char *spec, uint32_t *id, char *err,
                              size_t errlen)
{
	struct dbk_api_error e = { 0 };
	const char *eq = strchr(spec, '=');
	cJSON *j = NULL;
	char *name = NULL;
	int rc = -1;

	if (spec[0] == '{') {
		const cJSON *base;

		j = cJSON_Parse(spec);
		base = cJSON_GetObjectItemCaseSensitive(j, "base_model_name");
		if (!cJSON_IsObject(j) || !str_field(j, "name") || !str_field(j, "path") ||
		    (base && !cJSON_IsString(base) && !cJSON_IsNull(base))) {
			dbk_errf(err, errlen,
			         "--lora-modules: a JSON module is {\"name\": ..., \"path\": ..., "
			         "\"base_model_name\": ...}, got '%s'",
			         spec);
			goto out;
		}
		rc = add(L, str_field(j, "name"), str_field(j, "path"), id, &e);
	} else if (eq && !strchr(eq + 1, '=')) {
		name = strndup(spec, (size_t)(eq - spec));
		rc = name ? add(L, name, eq + 1, id, &e) : -1;
	} else {
		dbk_errf(err, errlen, "--lora-modules wants name=path or a JSON object, got '%s'",
		         spec);
		goto out;
	}
	if (rc != 0)
		dbk_errf(err, errlen, "--lora-modules '%s': %s", spec,
		         e.message[0] ? e.message : "out of memory");
out:
	free(name);
	cJSON_Delete(j);
	return rc;
}

/* The body, a JSON object, or the stub's 400 (FastAPI: 422). */
static cJSON *body_object(const char *body, size_t len, struct dbk_api_error *err)
{
	cJSON *j = cJSON_ParseWithLength(body, len);

	if (cJSON_IsObject(j))
		return j;
	cJSON_Delete(j);
	fail(err, 400, "BadRequestError", "%s", "Invalid request body: expected a JSON object");
	return NULL;
}

int dbk_stub_loras_load(struct dbk_stub_loras *L, const char *body, size_t len, uint32_t *id,
                        struct dbk_api_error *err)
{
	const char *name, *path;
	cJSON *j;
	int rc;

	memset(err, 0, sizeof(*err));
	j = body_object(body, len, err);
	if (!j)
		return -1;
	name = str_field(j, "lora_name");
	path = str_field(j, "lora_path");
	if (!name || !path)
		rc = fail(err, 400, "BadRequestError", "%s",
		          "lora_name and lora_path: field required (strings)");
	else
		rc = add(L, name, path, id, err);
	cJSON_Delete(j);
	return rc;
}

int dbk_stub_loras_unload(struct dbk_stub_loras *L, const char *body, size_t len, char *name,
                          size_t namelen, struct dbk_api_error *err)
{
	cJSON *j;
	const cJSON *v, *int_id;
	const char *n;

	memset(err, 0, sizeof(*err));
	j = body_object(body, len, err);
	if (!j)
		return -1;
	v = cJSON_GetObjectItemCaseSensitive(j, "lora_name");
	int_id = cJSON_GetObjectItemCaseSensitive(j, "lora_int_id");
	if ((v && !cJSON_IsString(v) && !cJSON_IsNull(v)) ||
	    (int_id && !cJSON_IsNumber(int_id) && !cJSON_IsNull(int_id))) {
		cJSON_Delete(j);
		return fail(err, 400, "BadRequestError", "%s",
		            "lora_name must be a string and lora_int_id an integer");
	}
	n = cJSON_IsString(v) ? v->valuestring : NULL;
	if ((!n || !*n) && !cJSON_IsNumber(int_id)) {
		cJSON_Delete(j);
		return fail(err, 400, "InvalidUserInput", "%s",
		            "either 'lora_name' and 'lora_int_id' needs to be provided.");
	}
	/* vLLM looks the name up only (Python prints a missing one as None). */
	for (size_t i = 0; n && i < L->n; i++)
		if (L->a[i].listed && strcmp(L->a[i].name, n) == 0) {
			L->a[i].listed = false;
			snprintf(name, namelen, "%s", n);
			cJSON_Delete(j);
			return 0;
		}
	fail(err, 404, "NotFoundError", "The lora adapter '%s' cannot be found.", n ? n : "None");
	cJSON_Delete(j);
	return -1;
}

void dbk_stub_loras_models_json(const struct dbk_stub_loras *L, struct dbk_buf *b,
                                const char *model, uint32_t max_model_len, long long created,
                                const char *perm_id)
{
	dbk_buf_adds(b, "{\"object\":\"list\",\"data\":[");
	dbk_api_model_card(b, model, model, NULL, max_model_len, created, perm_id);
	for (size_t i = 0; i < L->n; i++) {
		if (!L->a[i].listed)
			continue;
		dbk_buf_adds(b, ",");
		dbk_api_model_card(b, L->a[i].name, L->a[i].path, model, 0, created, perm_id);
	}
	dbk_buf_adds(b, "]}");
}

int dbk_stub_loras_record(struct dbk_stub_loras *L, const char *running, const char *waiting,
                          double now)
{
	struct dbk_prom_lora_set *s;

	for (size_t i = 0; i < L->n_series; i++) {
		s = &L->series[i];
		if (strcmp(s->running, running) == 0 && strcmp(s->waiting, waiting) == 0) {
			s->ts = now;
			return 0;
		}
	}
	if (L->n_series == DBK_STUB_LORA_SERIES_MAX) {
		/* The one set longest ago goes; the rest keep their order. */
		size_t o = 0;

		for (size_t i = 1; i < L->n_series; i++)
			if (L->series[i].ts < L->series[o].ts)
				o = i;
		free(L->series[o].running);
		free(L->series[o].waiting);
		memmove(&L->series[o], &L->series[o + 1],
		        (L->n_series - o - 1) * sizeof(L->series[0]));
		L->n_series--;
	}
	s = &L->series[L->n_series];
	s->running = strdup(running);
	s->waiting = strdup(waiting);
	if (!s->running || !s->waiting) {
		free(s->running);
		free(s->waiting);
		return -1;
	}
	s->ts = now;
	L->n_series++;
	return 0;
}
