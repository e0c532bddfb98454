/* The prompt text and JSON body of one trace row, as dbucket-bench sends
 * it and the simulator derives its keys from it: prompt text of exactly
 * 4 bytes per token, max_tokens, ignore_eos, streaming with usage. Pure.
 * One generator, so that live and simulated prefix hits agree. */
#ifndef DBK_MODEL_PROMPT_H
#define DBK_MODEL_PROMPT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/buf.h"

enum dbk_endpoint { DBK_EP_COMPLETIONS = 0, DBK_EP_CHAT };

/* Bytes per token of the generated prompts: the stub and the balancer
 * both count length as bytes / 4. */
#define DBK_BYTES_PER_TOKEN 4u

struct dbk_req_spec {
	enum dbk_endpoint ep;
	const char *model_json; /* the model name as a JSON string */
	uint32_t input, output;
	const uint64_t *hash; /* prefix block ids, may be NULL */
	uint32_t n_hash;
	uint64_t index; /* request number, makes prompts unique */
	/* Sent as the OpenAI "user" field and an X-Session-Id header,
	 * "conv-<session>", as a chat client names its conversation. */
	uint64_t session;
	bool has_session;
};

/* Writes input * 4 bytes of prompt: 2048-byte blocks (512 tokens), each
 * "h<hash id> " (or "r<index>.<block> " past the trace's ids) then "abc "
 * repeated, the last cut to length. Requests sharing their first k hash
 * ids share their first k * 2048 bytes, so a server with prefix caching
 * sees the trace's sharing (the stub keys every 64 bytes, 16 tokens,
 * chained: prefix_cache.h), and nothing else is shared. The same text is
 * the completions prompt or the chat request's one user message; the
 * stub keys the prompt string, or the concatenated message contents, so
 * both endpoints give the same keys. The simulator keys this very text
 * (dbk_sim_req.hash_ids), so live and simulated hits agree. */
void dbk_prompt_write(struct dbk_buf *b, const struct dbk_req_spec *s);

/* The request's JSON body into body (reset first): small fields first, so
 * that a proxy sampling the head of the body (dbucket's SPOE agent gets
 * 15 KB) sees them, then the prompt. */
void dbk_prompt_body(struct dbk_buf *body, const struct dbk_req_spec *s);

#endif
