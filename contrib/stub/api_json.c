/* OpenAI/vLLM response JSON; see api.h. Field order and null fields
 * follow what vLLM's pydantic models serialise, so clients that parse
 * vLLM parse the stub the same way. */
#include "api.h"

#include <stdio.h>
#include <string.h>

void dbk_api_json_str(struct dbk_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	dbk_buf_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		const char *e = NULL;
		size_t elen = 2;

		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default:
			if (c < 0x20) {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				esc[6] = 0;
				e = esc;
				elen = 6;
			}
		}
		if (e) {
			dbk_buf_add(b, s + i - run, run);
			run = 0;
			dbk_buf_add(b, e, elen);
		} else {
			run++;
		}
	}
	dbk_buf_add(b, s + n - run, run);
	dbk_buf_add(b, "\"", 1);
}

static void jstr(struct dbk_buf *b, const char *s) { dbk_api_json_str(b, s, strlen(s)); }

static const char *object_of(enum dbk_api_kind k, bool chunk)
{
	if (k == DBK_API_COMPLETION)
		return "text_completion";
	return chunk ? "chat.completion.chunk" : "chat.completion";
}

static void head(struct dbk_buf *b, const struct dbk_api_resp *r, bool chunk)
{
	dbk_buf_adds(b, "{\"id\":");
	jstr(b, r->id);
	dbk_buf_printf(b,
	               ",\"object\":\"%s\",\"created\":%lld,\"model\":", object_of(r->kind, chunk),
	               r->created);
	jstr(b, r->model);
}

void dbk_api_sse_role(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t index)
{
	dbk_buf_adds(b, "data: ");
	head(b, r, true);
	dbk_buf_printf(b,
	               ",\"choices\":[{\"index\":%u,\"delta\":{\"role\":"
	               "\"assistant\",\"content\":\"\"},\"logprobs\":null,"
	               "\"finish_reason\":null}]}\n\n",
	               index);
}

void dbk_api_sse_token(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t index, bool last)
{
	const char *fin = last ? "\"length\"" : "null";

	dbk_buf_adds(b, "data: ");
	head(b, r, true);
	if (r->kind == DBK_API_COMPLETION) {
		/* CompletionStreamResponse is dumped with exclude_unset=False:
		 * stop_reason and usage appear as nulls. */
		dbk_buf_printf(b,
		               ",\"choices\":[{\"index\":%u,\"text\":\"%s\","
		               "\"logprobs\":null,\"finish_reason\":%s,"
		               "\"stop_reason\":null}],\"usage\":null}\n\n",
		               index, DBK_API_TOKEN_TEXT, fin);
	} else if (last) {
		dbk_buf_printf(b,
		               ",\"choices\":[{\"index\":%u,\"delta\":"
		               "{\"content\":\"%s\"},\"logprobs\":null,"
		               "\"finish_reason\":%s,\"stop_reason\":null}]}"
		               "\n\n",
		               index, DBK_API_TOKEN_TEXT, fin);
	} else {
		/* Chat chunks use exclude_unset=True: no stop_reason until the
		 * final one, no usage. */
		dbk_buf_printf(b,
		               ",\"choices\":[{\"index\":%u,\"delta\":"
		               "{\"content\":\"%s\"},\"logprobs\":null,"
		               "\"finish_reason\":null}]}\n\n",
		               index, DBK_API_TOKEN_TEXT);
	}
}

/* `,"usage":{...` without its closing brace: the full response adds a
 * field the stream's usage chunk does not have. */
static void usage_json(struct dbk_buf *b, uint64_t prompt_tokens, uint64_t completion_tokens)
{
	dbk_buf_printf(b,
	               ",\"usage\":{\"prompt_tokens\":%llu,\"total_tokens\":%llu,"
	               "\"completion_tokens\":%llu",
	               (unsigned long long)prompt_tokens,
	               (unsigned long long)(prompt_tokens + completion_tokens),
	               (unsigned long long)completion_tokens);
}

void dbk_api_sse_usage(struct dbk_buf *b, const struct dbk_api_resp *r, uint64_t prompt_tokens,
                       uint64_t completion_tokens)
{
	dbk_buf_adds(b, "data: ");
	head(b, r, true);
	dbk_buf_adds(b, ",\"choices\":[]");
	usage_json(b, prompt_tokens, completion_tokens);
	dbk_buf_adds(b, "}}\n\n");
}

void dbk_api_sse_done(struct dbk_buf *b) { dbk_buf_adds(b, "data: [DONE]\n\n"); }

static void repeated_text(struct dbk_buf *b, uint32_t n)
{
	static const char tok[] = DBK_API_TOKEN_TEXT;
	uint32_t i;

	if (!dbk_buf_reserve(b, (size_t)n * (sizeof(tok) - 1) + 2))
		return;
	dbk_buf_add(b, "\"", 1);
	for (i = 0; i < n; i++)
		dbk_buf_add(b, tok, sizeof(tok) - 1);
	dbk_buf_add(b, "\"", 1);
}

void dbk_api_full_response(struct dbk_buf *b, const struct dbk_api_resp *r, uint32_t n,
                           const uint32_t *completion, uint64_t prompt_tokens)
{
	uint64_t total = 0;
	uint32_t i;

	head(b, r, false);
	dbk_buf_adds(b, ",\"choices\":[");
	for (i = 0; i < n; i++) {
		total += completion[i];
		if (i)
			dbk_buf_add(b, ",", 1);
		if (r->kind == DBK_API_COMPLETION) {
			dbk_buf_printf(b, "{\"index\":%u,\"text\":", i);
			repeated_text(b, completion[i]);
			dbk_buf_adds(b, ",\"logprobs\":null,\"finish_reason\":"
			                "\"length\",\"stop_reason\":null,"
			                "\"prompt_logprobs\":null}");
		} else {
			dbk_buf_printf(b,
			               "{\"index\":%u,\"message\":{\"role\":"
			               "\"assistant\",\"reasoning_content\":"
			               "null,\"content\":",
			               i);
			repeated_text(b, completion[i]);
			dbk_buf_adds(b, ",\"tool_calls\":[]},\"logprobs\":null,"
			                "\"finish_reason\":\"length\","
			                "\"stop_reason\":null}");
		}
	}
	dbk_buf_adds(b, "]");
	usage_json(b, prompt_tokens, total);
	dbk_buf_adds(b, ",\"prompt_tokens_details\":null}");
	if (r->kind == DBK_API_CHAT)
		dbk_buf_adds(b, ",\"prompt_logprobs\":null");
	dbk_buf_adds(b, "}");
}

void dbk_api_error_json(struct dbk_buf *b, int status, const char *type, const char *message)
{
	dbk_buf_adds(b, "{\"error\":{\"message\":");
	jstr(b, message);
	dbk_buf_adds(b, ",\"type\":");
	jstr(b, type);
	dbk_buf_printf(b, ",\"param\":null,\"code\":%d}}", status);
}

void dbk_api_detail_json(struct dbk_buf *b, const char *detail)
{
	dbk_buf_adds(b, "{\"detail\":");
	jstr(b, detail);
	dbk_buf_adds(b, "}");
}

void dbk_api_model_card(struct dbk_buf *b, const char *id, const char *root, const char *parent,
                        uint32_t max_model_len, long long created, const char *perm_id)
{
	dbk_buf_adds(b, "{\"id\":");
	jstr(b, id);
	dbk_buf_printf(b,
	               ",\"object\":\"model\",\"created\":%lld,"
	               "\"owned_by\":\"vllm\",\"root\":",
	               created);
	jstr(b, root);
	dbk_buf_adds(b, ",\"parent\":");
	if (parent)
		jstr(b, parent);
	else
		dbk_buf_adds(b, "null");
	if (max_model_len)
		dbk_buf_printf(b, ",\"max_model_len\":%u", max_model_len);
	else
		dbk_buf_adds(b, ",\"max_model_len\":null");
	dbk_buf_adds(b, ",\"permission\":[{\"id\":");
	jstr(b, perm_id);
	dbk_buf_printf(b,
	               ",\"object\":\"model_permission\",\"created\":%lld,"
	               "\"allow_create_engine\":false,\"allow_sampling\":true,"
	               "\"allow_logprobs\":true,\"allow_search_indices\":false,"
	               "\"allow_view\":true,\"allow_fine_tuning\":false,"
	               "\"organization\":\"*\",\"group\":null,"
	               "\"is_blocking\":false}]}",
	               created);
}

void dbk_api_models_json(struct dbk_buf *b, const char *model, uint32_t max_model_len,
                         long long created, const char *perm_id)
{
	dbk_buf_adds(b, "{\"object\":\"list\",\"data\":[");
	dbk_api_model_card(b, model, model, NULL, max_model_len, created, perm_id);
	dbk_buf_adds(b, "]}");
}
