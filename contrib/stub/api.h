/* The OpenAI-compatible surface of vLLM's API server, as the stub speaks
 * it: request validation (with vLLM's error messages) and the exact JSON
 * of responses and SSE chunks. Pure: no I/O, no clock (times and ids are
 * passed in), so it is unit-tested byte for byte. */
#ifndef DBK_API_H
#define DBK_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

enum dbk_api_kind {
	DBK_API_COMPLETION, /* POST /v1/completions */
	DBK_API_CHAT,       /* POST /v1/chat/completions */
};

/* A completions request may carry a batch of prompts (a list of strings
 * or of token-id lists); vLLM answers with one choice per prompt. */
#define DBK_API_MAX_PROMPTS 256

/* Completions default when max_tokens is absent (vLLM's
 * CompletionRequest.max_tokens = 16). */
#define DBK_API_COMPLETION_DEFAULT_MAX_TOKENS 16u

/* The text of every generated token. */
#define DBK_API_TOKEN_TEXT " tok"

struct dbk_api_config {
	const char *model; /* served model name */
	uint32_t max_model_len;
	/* Compute each prompt's block keys (model/prefix_cache.h): the text's
	 * bytes (a chat request's message contents concatenated) 64 at a
	 * time, or token ids 16 at a time. */
	bool keys;
	/* With LoRA: a `model` other than the served one names an adapter
	 * if find_adapter(adapters, name, &id) returns 0 (vLLM's
	 * _check_model); NULL: none but the served model. */
	int (*find_adapter)(const void *ctx, const char *name, uint32_t *id);
	const void *adapters;
};

/* The longest model or adapter name the stub takes (--model's bound). */
#define DBK_API_MODEL_MAX 256u

struct dbk_api_request {
	enum dbk_api_kind kind;
	bool stream;
	bool include_usage;
	/* vLLM's extra `priority` (0 when absent or null): lower first
	 * under --scheduling-policy priority, ignored under FCFS, as vLLM
	 * V1 ignores it. */
	int32_t priority;
	/* The LoRA adapter the body's `model` names (its engine id, 0 for
	 * the served model) and that name, which responses carry. */
	uint32_t lora;
	char model[DBK_API_MODEL_MAX + 1];
	uint32_t n_prompts;
	uint32_t prompt_tokens[DBK_API_MAX_PROMPTS];
	uint32_t max_tokens[DBK_API_MAX_PROMPTS];
	/* With cfg.keys: prompt i's keys are keys[key_off[i]..+n_keys[i]).
	 * Owned: dbk_api_request_free. */
	uint64_t *keys;
	uint32_t key_off[DBK_API_MAX_PROMPTS], n_keys[DBK_API_MAX_PROMPTS];
};

struct dbk_api_error {
	int status;       /* 400, 404 */
	const char *type; /* "BadRequestError", "NotFoundError" */
	char message[512];
};

/* Prompt tokens of a text: its UTF-8 bytes / 4, at least 1. */
uint32_t dbk_api_text_tokens(size_t bytes);

/* 0 and *out filled, or -1 and *err filled; either way
 * dbk_api_request_free(out) afterwards. */
int dbk_api_parse_request(enum dbk_api_kind kind, const char *body, size_t len,
                          const struct dbk_api_config *cfg, struct dbk_api_request *out,
                          struct dbk_api_error *err);
void dbk_api_request_free(struct dbk_api_request *r);

/* What every response body of one request shares. */
struct dbk_api_resp {
	enum dbk_api_kind kind;
	const char *id;    /* "cmpl-..." or "chatcmpl-..." */
	long long created; /* unix seconds */
	const char *model;
};

/* SSE events, each "data: {json}\n\n". */
void dbk_api_sse_role(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t index);
void dbk_api_sse_token(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t index, bool last);
void dbk_api_sse_usage(struct dbk_buf *b, const struct dbk_api_resp *r, uint64_t prompt_tokens,
                       uint64_t completion_tokens);
void dbk_api_sse_done(struct dbk_buf *b);

/* Non-streaming body: n choices, choice i with completion[i] tokens. */
void dbk_api_full_response(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t n,
                           const uint32_t *completion, uint64_t prompt_tokens);

/* vLLM's ErrorResponse (vllm/entrypoints/openai/protocol.py at 0052bed):
 * {"error":{"message":...,"type":...,"param":null,"code":N}} */
void dbk_api_error_json(struct dbk_buf *b, int status, const char *type, const char *message);
/* FastAPI's shape for routing errors: {"detail":"Not Found"}. */
void dbk_api_detail_json(struct dbk_buf *b, const char *detail);

/* GET /v1/models with the served model alone. */
void dbk_api_models_json(struct dbk_buf *b, const char *model, uint32_t max_model_len,
                         long long created, const char *perm_id);
/* One ModelCard (vllm/entrypoints/openai/protocol.py): parent NULL is
 * null, max_model_len 0 is null (an adapter's card has none). */
void dbk_api_model_card(struct dbk_buf *b, const char *id, const char *root, const char *parent,
                        uint32_t max_model_len, long long created, const char *perm_id);

/* A JSON string literal (with quotes) for n bytes of s. */
void dbk_api_json_str(struct dbk_buf *b, const char *s, size_t n);

#endif
