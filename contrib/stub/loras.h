/* The stub's LoRA adapters, as vLLM's OpenAI server keeps them
 * (vllm/entrypoints/openai/serving_models.py at 0f1457b,
 * OpenAIServingModels): the adapters it serves by name, each with the
 * engine's id (vLLM's lora_int_id, from 1, never reused), its path and
 * its parent (the base model); --lora-modules's two forms; the bodies
 * of /v1/load_lora_adapter and /v1/unload_lora_adapter with vLLM's
 * answers; and the label sets of vllm:lora_requests_info.
 *
 * Pure: no I/O, no clock (times are passed in). Owns its strings. */
#ifndef DBK_STUB_LORAS_H
#define DBK_STUB_LORAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "lib/buf.h"
#include "prom.h"

/* Bounds the stub keeps (vLLM has none): adapters ever added, a name's
 * and a path's length, and the label sets /metrics remembers. */
#define DBK_STUB_LORA_MAX 1024u
#define DBK_STUB_LORA_NAME_MAX 256u
#define DBK_STUB_LORA_PATH_MAX 1024u
#define DBK_STUB_LORA_SERIES_MAX 64u

struct dbk_stub_lora {
	char *name, *path;
	uint32_t id;
	bool listed; /* false once unloaded: the name stays for the metric */
};

struct dbk_stub_loras {
	struct dbk_stub_lora *a;
	size_t n, cap;
	uint32_t next_id;
	struct dbk_prom_lora_set series[DBK_STUB_LORA_SERIES_MAX];
	size_t n_series;
};

void dbk_stub_loras_free(struct dbk_stub_loras *L);

/* One --lora-modules value: `name=path` or vLLM's JSON form
 * {"name":...,"path":...,"base_model_name":...} (the parent is the
 * served model whatever base_model_name says, as vLLM's is with one
 * base model). Adds it as dbk_stub_loras_load does. 0, or -1 and a
 * reason in err. */
int dbk_stub_loras_add_module(struct dbk_stub_loras *L, const char *spec, uint32_t *id, char *err,
                              size_t errlen);

/* POST /v1/load_lora_adapter's body ({"lora_name":...,"lora_path":...}):
 * 0 and the new adapter's id, or -1 and vLLM's error (400
 * InvalidUserInput for an empty field or a name already loaded; the
 * stub's 400 BadRequestError for a body that is not that object, where
 * FastAPI would answer 422). */
int dbk_stub_loras_load(struct dbk_stub_loras *L, const char *body, size_t len, uint32_t *id,
                        struct dbk_api_error *err);
/* POST /v1/unload_lora_adapter's body ({"lora_name":...}): 0, or -1
 * and vLLM's error (404 NotFoundError for a name not loaded). The
 * adapter is no longer served; the engine keeps its slot, as vLLM's
 * unload leaves the engine alone. name gets the adapter's name. */
int dbk_stub_loras_unload(struct dbk_stub_loras *L, const char *body, size_t len, char *name,
                          size_t namelen, struct dbk_api_error *err);

/* The served adapter of that name, or NULL. */
const struct dbk_stub_lora *dbk_stub_loras_find(const struct dbk_stub_loras *L, const char *name);
/* Any adapter's name by id (an unloaded one's too), or NULL. */
const char *dbk_stub_loras_name(const struct dbk_stub_loras *L, uint32_t id);

/* GET /v1/models: the base model's card, then one per served adapter
 * (parent: the base model, root: its path), vLLM's ModelCard. */
void dbk_stub_loras_models_json(const struct dbk_stub_loras *L, struct dbk_buf *b,
                                const char *model, uint32_t max_model_len, long long created,
                                const char *perm_id);

/* Records vllm:lora_requests_info's label set after an engine step, as
 * vLLM's logger does each iteration: running and waiting are the
 * comma-joined names of adapters with such requests. A label set seen
 * before gets the new time; a new one is added (prometheus_client keeps
 * every label set it was given; the stub keeps the latest
 * DBK_STUB_LORA_SERIES_MAX). -1 when memory is short. */
int dbk_stub_loras_record(struct dbk_stub_loras *L, const char *running, const char *waiting,
                          double now);

/* dbk_api_config.find_adapter over a struct dbk_stub_loras. */
int dbk_stub_loras_lookup(const void *ctx, const char *name, uint32_t *id);

#endif
