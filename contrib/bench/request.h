/* What the benchmark sends and where: the target URL, the loopback rule,
 * and the HTTP request of one trace row (prompt text of exactly 4 bytes
 * per token, max_tokens, ignore_eos, streaming with usage). Pure. */
#ifndef DBK_BENCH_REQUEST_H
#define DBK_BENCH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "lib/url.h"

enum dbk_endpoint { DBK_EP_COMPLETIONS = 0, DBK_EP_CHAT };

/* "http://HOST[:PORT][/BASE]" (lib/url) with the endpoint path
 * (/v1/completions or /v1/chat/completions) appended to BASE, without
 * doubling a trailing "/v1". */
int dbk_url_parse(const char *url, enum dbk_endpoint ep, struct dbk_url *u, char *err, size_t errn);

/* s as a JSON string literal, quotes included (malloc'd; NULL when out
 * of memory). Control characters become \u escapes. */
char *dbk_json_quote(const char *s);

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

/* The whole HTTP/1.1 request (head and JSON body) into out; body is
 * scratch space. One request per connection: "Connection: close". */
void dbk_request_build(struct dbk_buf *out, struct dbk_buf *body, const struct dbk_url *u,
                       const struct dbk_req_spec *s);

#endif
