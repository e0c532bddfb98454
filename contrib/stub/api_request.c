/* OpenAI/vLLM requests as vLLM's API server validates them (see api.h):
 * the same refusals with the same messages, prompt sizes in the stub's
 * tokens, and the prefix-cache keys of each prompt. */
#include "api.h"
#include "model/prefix_cache.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

uint32_t dbk_api_text_tokens(size_t bytes)
{
	size_t t = bytes / 4;

	if (t == 0)
		return 1;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static int bad(struct dbk_api_error *err, const char *msg)
{
	err->status = 400;
	err->type = "BadRequestError";
	dbk_errf(err->message, sizeof(err->message), "%s", msg);
	return -1;
}

/* An integral JSON number in [lo, hi]; pydantic's lax int also takes a
 * float without fractional part. */
static bool json_int(const cJSON *v, double lo, double hi, double *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < lo || d > hi)
		return false;
	*out = d;
	return true;
}

static bool is_null_or_absent(const cJSON *v) { return v == NULL || cJSON_IsNull(v); }

/* Prompt identity: one hasher per prompt while parsing (h is NULL when
 * keys are not wanted); its keys are appended to out->keys. */
static void keys_feed(struct dbk_prefix_cache_hasher *h, const char *p, size_t n)
{
	if (h)
		dbk_prefix_cache_hasher_feed(h, p, n);
}

static int keys_done(struct dbk_prefix_cache_hasher *h, struct dbk_api_request *out, uint32_t i,
                     struct dbk_api_error *err)
{
	uint64_t *k, *all;
	uint32_t n;

	if (!h)
		return 0;
	k = dbk_prefix_cache_hasher_take(h, &n);
	if (n) {
		all = realloc(out->keys, ((size_t)out->key_off[i] + n) * sizeof(*all));
		if (!all) {
			free(k);
			return bad(err, "out of memory");
		}
		memcpy(all + out->key_off[i], k, (size_t)n * sizeof(*k));
		out->keys = all;
	}
	free(k);
	out->n_keys[i] = n;
	if (i + 1 < DBK_API_MAX_PROMPTS)
		out->key_off[i + 1] = out->key_off[i] + n;
	return 0;
}

/* Token ids of one prompt: a non-empty list of integers, keyed as 4
 * little-endian bytes each. */
static bool token_list(const cJSON *a, uint32_t *n, struct dbk_prefix_cache_hasher *h)
{
	const cJSON *x;
	uint32_t c = 0;
	double d;

	if (!cJSON_IsArray(a))
		return false;
	cJSON_ArrayForEach(x, a)
	{
		uint32_t id;
		unsigned char le[4];

		if (!json_int(x, 0, 4294967295.0, &d))
			return false;
		id = (uint32_t)d;
		le[0] = (unsigned char)id;
		le[1] = (unsigned char)(id >> 8);
		le[2] = (unsigned char)(id >> 16);
		le[3] = (unsigned char)(id >> 24);
		keys_feed(h, (const char *)le, 4);
		c++;
	}
	if (c == 0)
		return false;
	*n = c;
	return true;
}

static struct dbk_prefix_cache_hasher *keys_begin(struct dbk_prefix_cache_hasher *h, bool want,
                                                  uint64_t root)
{
	if (!want)
		return NULL;
	dbk_prefix_cache_hasher_init(h, root, UINT32_MAX);
	return h;
}

/* A batch: a list of strings or a list of token-id lists, one prompt
 * (one choice) each. */
static int parse_batch(const cJSON *p, bool all_str, bool want_keys, struct dbk_api_request *out,
                       struct dbk_api_error *err)
{
	struct dbk_prefix_cache_hasher hs, *h;
	const cJSON *x;
	uint32_t n = 0;

	cJSON_ArrayForEach(x, p)
	{
		h = keys_begin(&hs, want_keys, all_str ? DBK_BLOCK_ROOT_TEXT : DBK_BLOCK_ROOT_IDS);
		if (all_str) {
			size_t len = strlen(x->valuestring);

			out->prompt_tokens[n] = dbk_api_text_tokens(len);
			keys_feed(h, x->valuestring, len);
		} else if (!token_list(x, &out->prompt_tokens[n], h)) {
			if (h)
				dbk_prefix_cache_hasher_free(h);
			return bad(err, "prompt token ids must be non-empty lists of non-negative "
			                "integers");
		}
		if (keys_done(h, out, n, err) != 0)
			return -1;
		n++;
	}
	out->n_prompts = n;
	return 0;
}

static int parse_prompts(const cJSON *p, bool want_keys, struct dbk_api_request *out,
                         struct dbk_api_error *err)
{
	struct dbk_prefix_cache_hasher hs, *h;
	const cJSON *x;
	bool all_str = true, all_int = true, all_list = true;
	size_t count = 0;

	if (is_null_or_absent(p))
		return bad(err, "Either prompt or prompt_embeds must be "
		                "provided and non-empty.");
	if (cJSON_IsString(p)) {
		size_t len = strlen(p->valuestring);

		out->n_prompts = 1;
		out->prompt_tokens[0] = dbk_api_text_tokens(len);
		h = keys_begin(&hs, want_keys, DBK_BLOCK_ROOT_TEXT);
		keys_feed(h, p->valuestring, len);
		return keys_done(h, out, 0, err);
	}
	if (!cJSON_IsArray(p))
		return bad(err, "prompt must be a string, a list of strings, "
		                "a list of token ids or a list of such lists");
	cJSON_ArrayForEach(x, p)
	{
		count++;
		if (!cJSON_IsString(x))
			all_str = false;
		if (!cJSON_IsNumber(x))
			all_int = false;
		if (!cJSON_IsArray(x))
			all_list = false;
	}
	if (count == 0)
		return bad(err, "Either prompt or prompt_embeds must be "
		                "provided and non-empty.");
	if (all_int) {
		h = keys_begin(&hs, want_keys, DBK_BLOCK_ROOT_IDS);
		if (!token_list(p, &out->prompt_tokens[0], h)) {
			if (h)
				dbk_prefix_cache_hasher_free(h);
			return bad(err, "prompt token ids must be non-negative "
			                "integers");
		}
		out->n_prompts = 1;
		return keys_done(h, out, 0, err);
	}
	if (!all_str && !all_list)
		return bad(err, "prompt must be a string, a list of strings, "
		                "a list of token ids or a list of such lists");
	if (count > DBK_API_MAX_PROMPTS)
		return bad(err, "too many prompts in one request (the stub "
		                "takes at most 256)");
	return parse_batch(p, all_str, want_keys, out, err);
}

/* Concatenated text content of all messages, counted in bytes and keyed
 * as one text (vLLM would apply the chat template first; the stub has
 * none, so the keys are the contents' own). */
static int parse_messages(const cJSON *msgs, bool want_keys, struct dbk_api_request *out,
                          struct dbk_api_error *err)
{
	struct dbk_prefix_cache_hasher hs, *h = keys_begin(&hs, want_keys, DBK_BLOCK_ROOT_TEXT);
	const cJSON *m, *part;
	size_t bytes = 0;
	int rc = -1;

	if (!cJSON_IsArray(msgs)) {
		bad(err, "messages: field required (a list of messages)");
		goto out;
	}
	cJSON_ArrayForEach(m, msgs)
	{
		const cJSON *c;

		if (!cJSON_IsObject(m)) {
			bad(err, "messages: each message must be an object");
			goto out;
		}
		c = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (is_null_or_absent(c))
			continue;
		if (cJSON_IsString(c)) {
			bytes += strlen(c->valuestring);
			keys_feed(h, c->valuestring, strlen(c->valuestring));
			continue;
		}
		if (!cJSON_IsArray(c)) {
			bad(err, "messages: content must be a string or a list "
			         "of content parts");
			goto out;
		}
		cJSON_ArrayForEach(part, c)
		{
			const cJSON *t;

			if (!cJSON_IsObject(part)) {
				bad(err, "messages: content parts must be "
				         "objects");
				goto out;
			}
			t = cJSON_GetObjectItemCaseSensitive(part, "text");
			if (cJSON_IsString(t)) {
				bytes += strlen(t->valuestring);
				keys_feed(h, t->valuestring, strlen(t->valuestring));
			}
		}
	}
	out->n_prompts = 1;
	out->prompt_tokens[0] = dbk_api_text_tokens(bytes);
	rc = keys_done(h, out, 0, err);
	h = NULL;
out:
	if (h)
		dbk_prefix_cache_hasher_free(h);
	return rc;
}

static int check_lengths(bool has_mt, double max_tokens, const struct dbk_api_config *cfg,
                         struct dbk_api_request *out, struct dbk_api_error *err)
{
	uint32_t i;

	for (i = 0; i < out->n_prompts; i++) {
		uint64_t p = out->prompt_tokens[i];

		err->status = 400;
		err->type = "BadRequestError";
		/* vLLM serving_engine._validate_input, word for word. */
		if (!has_mt) {
			if (p >= cfg->max_model_len) {
				dbk_errf(err->message, sizeof(err->message),
				         "This model's maximum context length is "
				         "%u tokens. However, you requested %llu "
				         "tokens in the messages, Please reduce "
				         "the length of the messages.",
				         cfg->max_model_len, (unsigned long long)p);
				return -1;
			}
			out->max_tokens[i] = (uint32_t)(cfg->max_model_len - p);
		} else if ((double)p + max_tokens > cfg->max_model_len) {
			dbk_errf(err->message, sizeof(err->message),
			         "This model's maximum context length is %u "
			         "tokens. However, you requested %.0f tokens "
			         "(%llu in the messages, %.0f in the "
			         "completion). Please reduce the length of the "
			         "messages or completion.",
			         cfg->max_model_len, (double)p + max_tokens, (unsigned long long)p,
			         max_tokens);
			return -1;
		} else {
			out->max_tokens[i] = (uint32_t)max_tokens;
		}
	}
	return 0;
}

/* `model`, if given, must be the served one or, with LoRA, a served
 * adapter (vLLM's _check_model: 404). */
static int check_model(const cJSON *root, const struct dbk_api_config *cfg,
                       struct dbk_api_request *out, struct dbk_api_error *err)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");

	if (is_null_or_absent(model))
		return 0;
	if (!cJSON_IsString(model))
		return bad(err, "model must be a string");
	if (strcmp(model->valuestring, cfg->model) == 0)
		return 0;
	if (cfg->find_adapter && strlen(model->valuestring) <= DBK_API_MODEL_MAX &&
	    cfg->find_adapter(cfg->adapters, model->valuestring, &out->lora) == 0) {
		memcpy(out->model, model->valuestring, strlen(model->valuestring) + 1);
		return 0;
	}
	err->status = 404;
	err->type = "NotFoundError";
	dbk_errf(err->message, sizeof(err->message), "The model `%s` does not exist.",
	         model->valuestring);
	return -1;
}

static int parse_stream(const cJSON *root, struct dbk_api_request *out, struct dbk_api_error *err)
{
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	const cJSON *iu;

	if (!is_null_or_absent(stream) && !cJSON_IsBool(stream))
		return bad(err, "stream must be a boolean");
	out->stream = cJSON_IsTrue(stream);
	if (is_null_or_absent(so))
		return 0;
	if (!out->stream)
		return bad(err, "Stream options can only be defined when `stream=True`.");
	if (!cJSON_IsObject(so))
		return bad(err, "stream_options must be an object");
	iu = cJSON_GetObjectItemCaseSensitive(so, "include_usage");
	if (!is_null_or_absent(iu) && !cJSON_IsBool(iu))
		return bad(err, "stream_options.include_usage must be a boolean");
	out->include_usage = cJSON_IsTrue(iu);
	return 0;
}

/* `n` (only 1) and the output length: *has_mt false leaves max_tokens to
 * what the context has left (chat without one). */
static int parse_max_tokens(enum dbk_api_kind kind, const cJSON *root, bool *has_mt,
                            double *max_tokens, struct dbk_api_error *err)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "n");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens"), *mct;
	double d;

	if (!is_null_or_absent(n) && !(json_int(n, 1, 1, &d)))
		return bad(err, "n must be 1: the stub generates one choice per prompt");
	/* Chat prefers max_completion_tokens, like vLLM. */
	if (kind == DBK_API_CHAT) {
		mct = cJSON_GetObjectItemCaseSensitive(root, "max_completion_tokens");
		if (!is_null_or_absent(mct))
			mt = mct;
	}
	*has_mt = true;
	if (is_null_or_absent(mt)) {
		*max_tokens = DBK_API_COMPLETION_DEFAULT_MAX_TOKENS;
		*has_mt = kind == DBK_API_COMPLETION;
		return 0;
	}
	if (!json_int(mt, -1e18, 1e18, max_tokens))
		return bad(err, "max_tokens must be an integer");
	if (*max_tokens < 1) {
		err->status = 400;
		err->type = "BadRequestError";
		dbk_errf(err->message, sizeof(err->message),
		         "max_tokens must be at least 1, got %.0f.", *max_tokens);
		return -1;
	}
	return 0;
}

/* vLLM's `priority` (an int in its protocol; the stub keeps it to 32
 * bits). vLLM V1 takes any value under either policy: the FCFS queue
 * never reads it (V0 refused a non-zero one under FCFS; V1 has no such
 * check), so neither does the stub refuse it. */
static int parse_priority(const cJSON *root, struct dbk_api_request *out, struct dbk_api_error *err)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "priority");
	double d;

	if (is_null_or_absent(p))
		return 0;
	if (!json_int(p, -2147483648.0, 2147483647.0, &d))
		return bad(err, "priority must be an integer in -2147483648..2147483647");
	out->priority = (int32_t)d;
	return 0;
}

static int parse_fields(enum dbk_api_kind kind, const cJSON *root, const struct dbk_api_config *cfg,
                        struct dbk_api_request *out, struct dbk_api_error *err)
{
	bool has_mt = false;
	double max_tokens = 0;
	int rc;

	if (check_model(root, cfg, out, err) != 0 || parse_stream(root, out, err) != 0 ||
	    parse_max_tokens(kind, root, &has_mt, &max_tokens, err) != 0 ||
	    parse_priority(root, out, err) != 0)
		return -1;
	if (kind == DBK_API_COMPLETION)
		rc = parse_prompts(cJSON_GetObjectItemCaseSensitive(root, "prompt"), cfg->keys, out,
		                   err);
	else
		rc = parse_messages(cJSON_GetObjectItemCaseSensitive(root, "messages"), cfg->keys,
		                    out, err);
	return rc != 0 ? -1 : check_lengths(has_mt, max_tokens, cfg, out, err);
}

int dbk_api_parse_request(enum dbk_api_kind kind, const char *body, size_t len,
                          const struct dbk_api_config *cfg, struct dbk_api_request *out,
                          struct dbk_api_error *err)
{
	cJSON *root;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	out->kind = kind;
	root = cJSON_ParseWithLength(body, len);
	if (!root)
		return bad(err, "Invalid JSON body: expected a JSON object");
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return bad(err, "Invalid request body: expected a JSON "
		                "object");
	}
	rc = parse_fields(kind, root, cfg, out, err);
	cJSON_Delete(root);
	return rc;
}

void dbk_api_request_free(struct dbk_api_request *r)
{
	free(r->keys);
	r->keys = NULL;
}
