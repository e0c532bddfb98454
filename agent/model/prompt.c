/* The bench's prompt text and request body; see prompt.h. */
#include "model/prompt.h"

#include <stdio.h>

#include "model/trace.h"

/* One block of text a hash id of the trace names. */
#define BLOCK_BYTES (DBK_TRACE_BLOCK_TOKENS * DBK_BYTES_PER_TOKEN)

void dbk_prompt_write(struct dbk_buf *b, const struct dbk_req_spec *s)
{
	/* "abc " repeated: 4 bytes, about one token for a real tokenizer. */
	char fill[BLOCK_BYTES];
	uint64_t total = (uint64_t)s->input * DBK_BYTES_PER_TOKEN, done = 0;
	uint32_t k;
	size_t i;

	if (!dbk_buf_reserve(b, (size_t)total))
		return;
	for (i = 0; i < sizeof(fill); i++)
		fill[i] = "abc "[i % 4];
	for (k = 0; done < total; k++) {
		char key[48];
		size_t kl, n;

		if (s->hash && k < s->n_hash)
			kl = (size_t)snprintf(key, sizeof(key), "h%llu ",
			                      (unsigned long long)s->hash[k]);
		else
			kl = (size_t)snprintf(key, sizeof(key), "r%llu.%u ",
			                      (unsigned long long)s->index, k);
		n = total - done < BLOCK_BYTES ? (size_t)(total - done) : BLOCK_BYTES;
		if (kl > n)
			kl = n;
		dbk_buf_add(b, key, kl);
		dbk_buf_add(b, fill + kl, n - kl);
		done += n;
	}
}

void dbk_prompt_body(struct dbk_buf *body, const struct dbk_req_spec *s)
{
	dbk_buf_reset(body);
	dbk_buf_adds(body, "{\"model\":");
	dbk_buf_adds(body, s->model_json);
	dbk_buf_printf(body,
	               ",\"max_tokens\":%u,\"ignore_eos\":true,"
	               "\"stream\":true,\"stream_options\":"
	               "{\"include_usage\":true},",
	               s->output);
	if (s->has_session)
		dbk_buf_printf(body, "\"user\":\"conv-%llu\",", (unsigned long long)s->session);
	if (s->ep == DBK_EP_CHAT)
		dbk_buf_adds(body, "\"messages\":[{\"role\":\"user\","
		                   "\"content\":\"");
	else
		dbk_buf_adds(body, "\"prompt\":\"");
	dbk_prompt_write(body, s);
	dbk_buf_adds(body, s->ep == DBK_EP_CHAT ? "\"}]}" : "\"}");
}
