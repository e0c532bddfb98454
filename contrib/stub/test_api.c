/* Unit tests of the OpenAI/vLLM JSON surface (api_request.c, api_json.c). */
#include "api.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "check.h"

static const struct dbk_api_config CFG = { .model = "stub-model", .max_model_len = 1000 };

static int parse(enum dbk_api_kind k, const char *body, struct dbk_api_request *r,
                 struct dbk_api_error *e)
{
	return dbk_api_parse_request(k, body, strlen(body), &CFG, r, e);
}

static void test_text_tokens(void)
{
	CHECK_EQ_U(dbk_api_text_tokens(0), 1);
	CHECK_EQ_U(dbk_api_text_tokens(3), 1);
	CHECK_EQ_U(dbk_api_text_tokens(4), 1);
	CHECK_EQ_U(dbk_api_text_tokens(7), 1);
	CHECK_EQ_U(dbk_api_text_tokens(8), 2);
	CHECK_EQ_U(dbk_api_text_tokens(4096), 1024);
}

/* Requests that parse: how many prompts, their token counts and
 * max_tokens, and the stream flags. */
static const struct parse_case {
	enum dbk_api_kind kind;
	const char *body;
	uint32_t n, tokens[2], max_tokens[2];
	bool stream, include_usage;
} parse_cases[] = {
	/* vLLM's completions default max_tokens: 16. */
	{ DBK_API_COMPLETION, "{\"prompt\":\"abcdefgh\"}", 1, { 2 }, { 16 }, false, false },
	{ DBK_API_COMPLETION,
	  "{\"model\":\"stub-model\",\"prompt\":[\"aaaa\",\"bbbbbbbbbbbb\"],\"max_tokens\":5,"
	  "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true}",
	  2,
	  { 1, 3 },
	  { 5, 5 },
	  true,
	  true },
	/* Token ids: one prompt of that many tokens, or a batch. */
	{ DBK_API_COMPLETION, "{\"prompt\":[1,2,3,4,5]}", 1, { 5 }, { 16 }, false, false },
	{ DBK_API_COMPLETION,
	  "{\"prompt\":[[1,2],[3]],\"max_tokens\":2.0}",
	  2,
	  { 2, 1 },
	  { 2, 2 },
	  false,
	  false },
	{ DBK_API_COMPLETION,
	  "{\"prompt\":\"x\",\"max_tokens\":null,\"n\":1}",
	  1,
	  { 1 },
	  { 16 },
	  false,
	  false },
	/* Chat: every text part counts; the default max_tokens is what is
	 * left of the context. */
	{ DBK_API_CHAT,
	  "{\"messages\":[{\"role\":\"system\",\"content\":\"abcd\"},{\"role\":\"user\","
	  "\"content\":"
	  "[{\"type\":\"text\",\"text\":\"efgh\"},{\"type\":\"image_url\"}]},{\"role\":"
	  "\"assistant\","
	  "\"content\":null}]}",
	  1,
	  { 2 },
	  { 998 },
	  false,
	  false },
	{ DBK_API_CHAT,
	  "{\"messages\":[{\"content\":\"abcd\"}],\"max_tokens\":9,\"max_completion_tokens\":7}",
	  1,
	  { 1 },
	  { 7 },
	  false,
	  false },
};

static void test_parse(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct dbk_api_request r;
		struct dbk_api_error e;

		CHECK_EQ_U(parse(c->kind, c->body, &r, &e), 0);
		CHECK_EQ_U(r.n_prompts, c->n);
		for (uint32_t k = 0; k < c->n && k < 2; k++) {
			CHECK_EQ_U(r.prompt_tokens[k], c->tokens[k]);
			CHECK_EQ_U(r.max_tokens[k], c->max_tokens[k]);
		}
		CHECK_EQ_U(r.stream, c->stream);
		CHECK_EQ_U(r.include_usage, c->include_usage);
		dbk_api_request_free(&r);
	}
}

static void expect_err(enum dbk_api_kind k, const char *body, int status, const char *msg_part)
{
	struct dbk_api_request r;
	struct dbk_api_error e;

	CHECK(parse(k, body, &r, &e) == -1);
	CHECK_EQ_U(e.status, status);
	if (!strstr(e.message, msg_part)) {
		dbk_check_cur_failed++;
		fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", e.message, msg_part);
	}
}

/* A body of `head`, n bytes of 'a', then `tail`: a prompt of a chosen
 * size for the context-length errors. */
static void expect_err_sized(enum dbk_api_kind k, const char *head, size_t n, const char *tail,
                             const char *msg)
{
	char big[8000];
	size_t h = strlen(head);

	CHECK(h + n + strlen(tail) < sizeof(big));
	memcpy(big, head, h);
	memset(big + h, 'a', n);
	strcpy(big + h + n, tail);
	expect_err(k, big, 400, msg);
}

static void test_errors(void)
{
	expect_err(DBK_API_COMPLETION, "{\"prompt\":", 400, "Invalid JSON");
	expect_err(DBK_API_COMPLETION, "[1]", 400, "JSON object");
	expect_err(DBK_API_COMPLETION, "{}", 400, "prompt");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":[]}", 400, "prompt");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":[\"a\",1]}", 400, "prompt");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":[-1]}", 400, "token ids");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"max_tokens\":0}", 400,
	           "max_tokens must be at least 1, got 0.");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"max_tokens\":1.5}", 400, "max_tokens");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"stream\":\"yes\"}", 400, "stream");
	expect_err(DBK_API_COMPLETION,
	           "{\"prompt\":\"a\",\"stream_options\":{\"include_usage\":"
	           "true}}",
	           400, "Stream options can only be defined when `stream=True`.");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"n\":2}", 400, "n");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"model\":\"gpt-4\"}", 404,
	           "The model `gpt-4` does not exist.");
	expect_err(DBK_API_CHAT, "{\"prompt\":\"a\"}", 400, "messages");
	expect_err(DBK_API_CHAT, "{\"messages\":[1]}", 400, "messages");
	/* Context length, vLLM's wording: 3988 bytes = 997 tokens. */
	expect_err_sized(DBK_API_COMPLETION, "{\"prompt\":\"", 3988, "\",\"max_tokens\":100}",
	                 "This model's maximum context length is 1000 tokens. "
	                 "However, you requested 1097 tokens (997 in the messages, "
	                 "100 in the completion). Please reduce the length of the "
	                 "messages or completion.");
	/* Chat without max_tokens: the prompt alone must leave room. */
	expect_err_sized(DBK_API_CHAT, "{\"messages\":[{\"content\":\"", 4000, "\"}]}",
	                 "This model's maximum context length is 1000 tokens. "
	                 "However, you requested 1000 tokens in the messages, Please "
	                 "reduce the length of the messages.");
}

static const struct dbk_api_resp CMPL = { DBK_API_COMPLETION, "cmpl-1", 42, "m\"x" };
static const struct dbk_api_resp CHAT = { DBK_API_CHAT, "chatcmpl-1", 42, "m" };

static void check_buf(struct dbk_buf *b, const char *want)
{
	CHECK(!b->oom);
	if (strcmp(b->p ? b->p : "", want) != 0) {
		dbk_check_cur_failed++;
		fprintf(stderr, "  got:  %s\n  want: %s\n", b->p, want);
	}
	dbk_buf_reset(b);
}

/* What every chat stream chunk of CHAT starts with. */
#define CHUNK_HEAD                                                                          \
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":42," \
	"\"model\":\"m\","

static void test_sse_frames(void)
{
	struct dbk_buf b = { 0 };

	dbk_api_sse_token(&b, &CMPL, 0, false);
	check_buf(&b, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","
	              "\"created\":42,\"model\":\"m\\\"x\",\"choices\":[{\"index\":"
	              "0,\"text\":\" tok\",\"logprobs\":null,\"finish_reason\":"
	              "null,\"stop_reason\":null}],\"usage\":null}\n\n");
	dbk_api_sse_token(&b, &CMPL, 1, true);
	CHECK(strstr(b.p, "\"index\":1,") && strstr(b.p, "\"finish_reason\":"
	                                                 "\"length\""));
	dbk_buf_reset(&b);
	dbk_api_sse_role(&b, &CHAT, 0);
	check_buf(&b, CHUNK_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"role\":"
	                         "\"assistant\",\"content\":\"\"},\"logprobs\":null,"
	                         "\"finish_reason\":null}]}\n\n");
	dbk_api_sse_token(&b, &CHAT, 0, false);
	check_buf(&b, CHUNK_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},"
	                         "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
	dbk_api_sse_token(&b, &CHAT, 0, true);
	check_buf(&b, CHUNK_HEAD "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},"
	                         "\"logprobs\":null,\"finish_reason\":\"length\","
	                         "\"stop_reason\":null}]}\n\n");
	dbk_api_sse_usage(&b, &CHAT, 10, 3);
	check_buf(&b, CHUNK_HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
	                         "\"total_tokens\":13,\"completion_tokens\":3}}\n\n");
	dbk_api_sse_done(&b);
	check_buf(&b, "data: [DONE]\n\n");
	dbk_buf_free(&b);
}

static void test_full_response(void)
{
	struct dbk_buf b = { 0 };
	uint32_t comp[2] = { 3, 1 };
	cJSON *j, *ch, *u;

	dbk_api_full_response(&b, &CMPL, 2, comp, 7);
	j = cJSON_Parse(b.p);
	CHECK(j != NULL);
	if (j) {
		ch = cJSON_GetObjectItem(j, "choices");
		u = cJSON_GetObjectItem(j, "usage");
		CHECK_EQ_U(cJSON_GetArraySize(ch), 2);
		CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(ch, 0), "text")->valuestring,
		             " tok tok tok") == 0);
		CHECK(strcmp(cJSON_GetObjectItem(j, "model")->valuestring, "m\"x") == 0);
		CHECK_EQ_U(cJSON_GetObjectItem(u, "prompt_tokens")->valueint, 7);
		CHECK_EQ_U(cJSON_GetObjectItem(u, "completion_tokens")->valueint, 4);
		CHECK_EQ_U(cJSON_GetObjectItem(u, "total_tokens")->valueint, 11);
		cJSON_Delete(j);
	}
	dbk_buf_reset(&b);
	dbk_api_full_response(&b, &CHAT, 1, comp, 7);
	j = cJSON_Parse(b.p);
	CHECK(j != NULL);
	if (j) {
		cJSON *m = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"),
		                                                  0),
		                               "message");

		CHECK(strcmp(cJSON_GetObjectItem(j, "object")->valuestring, "chat.completion") ==
		      0);
		CHECK(strcmp(cJSON_GetObjectItem(m, "role")->valuestring, "assistant") == 0);
		CHECK(strcmp(cJSON_GetObjectItem(m, "content")->valuestring, " tok tok tok") == 0);
		cJSON_Delete(j);
	}
	dbk_buf_free(&b);
}

static void test_error_and_models_json(void)
{
	struct dbk_buf b = { 0 };
	cJSON *j;

	dbk_api_error_json(&b, 400, "BadRequestError", "bad \"x\"\n");
	check_buf(&b, "{\"error\":{\"message\":\"bad \\\"x\\\"\\n\","
	              "\"type\":\"BadRequestError\",\"param\":null,"
	              "\"code\":400}}");
	dbk_api_detail_json(&b, "Not Found");
	check_buf(&b, "{\"detail\":\"Not Found\"}");
	dbk_api_models_json(&b, "stub-model", 4096, 5, "modelperm-1");
	j = cJSON_Parse(b.p);
	CHECK(j != NULL);
	if (j) {
		cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "data"), 0);

		CHECK(strcmp(cJSON_GetObjectItem(j, "object")->valuestring, "list") == 0);
		CHECK(strcmp(cJSON_GetObjectItem(d, "id")->valuestring, "stub-model") == 0);
		CHECK_EQ_U(cJSON_GetObjectItem(d, "max_model_len")->valueint, 4096);
		cJSON_Delete(j);
	}
	dbk_buf_free(&b);
}

/* Prompt identity: every 64 bytes of text (16 tokens) a chained key;
 * the completions prompt and a chat request's contents key alike, and a
 * token-id prompt keys 16 ids a block. */
static void test_prompt_keys(void)
{
	static const struct dbk_api_config kc = { .model = "stub-model",
		                                  .max_model_len = 1000,
		                                  .keys = true };
	struct dbk_api_request a, c, t;
	struct dbk_api_error e;
	char body[1024], text[300], orig[300];
	int i;

	for (i = 0; i < 290; i++)
		text[i] = (char)('a' + i % 26);
	text[290] = 0;
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\",\"max_tokens\":2}", text);
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_COMPLETION, body, strlen(body), &kc, &a, &e), 0);
	CHECK_EQ_U(a.n_keys[0], 4); /* 290 bytes: 4 full blocks */
	/* The same text split over two chat messages. */
	snprintf(body, sizeof(body),
	         "{\"messages\":[{\"role\":\"system\",\"content\":\"%.100s\"},"
	         "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	         "\"text\":\"%s\"}]}],\"max_tokens\":2}",
	         text, text + 100);
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_CHAT, body, strlen(body), &kc, &c, &e), 0);
	CHECK_EQ_U(c.n_keys[0], 4);
	CHECK(a.keys && c.keys && memcmp(a.keys, c.keys, 4 * sizeof(*a.keys)) == 0);
	/* Two prompts in a batch, the second sharing the first's text up
	 * to byte 150: keys 0 and 1 equal, then different. */
	memcpy(orig, text, sizeof(orig));
	text[150] = '#';
	snprintf(body, sizeof(body), "{\"prompt\":[\"%s\",\"%s\"]}", orig, text);
	dbk_api_request_free(&c);
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_COMPLETION, body, strlen(body), &kc, &c, &e), 0);
	CHECK_EQ_U(c.n_prompts, 2);
	CHECK_EQ_U(c.n_keys[1], 4);
	CHECK_EQ_U(c.key_off[1], c.n_keys[0]);
	if (c.keys && a.keys) {
		CHECK(c.keys[c.key_off[1] + 1] == a.keys[1]);
		CHECK(c.keys[c.key_off[1] + 2] != a.keys[2]);
	}
	/* 33 token ids: 2 keys, not those of any text. */
	snprintf(body, sizeof(body), "{\"prompt\":[");
	for (i = 0; i < 33; i++)
		snprintf(body + strlen(body), sizeof(body) - strlen(body), "%s%d", i ? "," : "", i);
	strcat(body, "]}");
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_COMPLETION, body, strlen(body), &kc, &t, &e), 0);
	CHECK_EQ_U(t.n_keys[0], 2);
	/* Without cfg.keys nothing is computed. */
	dbk_api_request_free(&a);
	CHECK_EQ_U(parse(DBK_API_COMPLETION,
	                 "{\"prompt\":\""
	                 "0123456789"
	                 "0123456789012345678901234567890123456789012345678901"
	                 "234567890\"}",
	                 &a, &e),
	           0);
	CHECK(a.keys == NULL && a.n_keys[0] == 0);
	dbk_api_request_free(&a);
	dbk_api_request_free(&c);
	dbk_api_request_free(&t);
}

/* vLLM's extra `priority`: an integer (a float without fraction, as
 * pydantic's lax int), 0 when absent or null, kept to 32 bits. */
static void test_priority(void)
{
	static const struct {
		const char *body;
		int32_t want;
	} ok[] = {
		{ "{\"prompt\":\"a\"}", 0 },
		{ "{\"prompt\":\"a\",\"priority\":null}", 0 },
		{ "{\"prompt\":\"a\",\"priority\":-5}", -5 },
		{ "{\"prompt\":\"a\",\"priority\":10.0}", 10 },
		{ "{\"prompt\":\"a\",\"priority\":2147483647}", 2147483647 },
		{ "{\"prompt\":\"a\",\"priority\":-2147483648}", INT32_MIN },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct dbk_api_request r;
		struct dbk_api_error e;

		CHECK_EQ_U(parse(DBK_API_COMPLETION, ok[i].body, &r, &e), 0);
		CHECK(r.priority == ok[i].want);
		dbk_api_request_free(&r);
	}
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"priority\":1.5}", 400, "priority");
	expect_err(DBK_API_COMPLETION, "{\"prompt\":\"a\",\"priority\":\"1\"}", 400, "priority");
	expect_err(DBK_API_CHAT, "{\"messages\":[],\"priority\":2147483648}", 400, "priority");
}

static void test_buf(void)
{
	struct dbk_buf b = { 0 };
	int i;

	for (i = 0; i < 1000; i++)
		dbk_buf_printf(&b, "%04d", i);
	CHECK_EQ_U(b.len, 4000);
	CHECK(memcmp(b.p + 3996, "0999", 4) == 0);
	dbk_buf_consume(&b, 3996);
	CHECK(strcmp(b.p, "0999") == 0);
	dbk_buf_consume(&b, 100);
	CHECK_EQ_U(b.len, 0);
	CHECK(!b.oom);
	dbk_buf_free(&b);
}

int main(void)
{
	RUN(test_text_tokens);
	RUN(test_parse);
	RUN(test_errors);
	RUN(test_sse_frames);
	RUN(test_full_response);
	RUN(test_error_and_models_json);
	RUN(test_prompt_keys);
	RUN(test_priority);
	RUN(test_buf);
	return CHECK_DONE();
}
