/* A request's prefix identity from the body sample HAProxy sends: chained
 * keys of the prompt text's leading fixed-size blocks, and a session key.
 *
 * Pure, never fails, reads only the bytes it is given. The sample is the
 * first bytes of an OpenAI request body (HAProxy's req.body, up to one
 * buffer: ~15 KB), usually cut in the middle of the prompt, so this is a
 * scanner, not a JSON parser: it walks the top-level object's members in
 * any order, and takes
 *   - "prompt": a string (completions), or the first string of an array;
 *   - "messages": every message's "content", a string or the "text" of
 *     each content part, concatenated in order (chat);
 *   - "user": the session key (a client's conversation or user name).
 * Prompt text is hashed as it appears between the quotes, escapes
 * included (equal prompts from one client serialise equally), in blocks
 * of DBK_PKEY_BLOCK_BYTES; key i names the whole text up to the end of
 * block i (it mixes key i-1), so two requests share key i exactly when
 * they share their first (i+1) blocks of text, as vLLM's chained block
 * hashes do. A partial last block has no key. Text cut by the sample's
 * end gives keys for the full blocks seen.
 *
 * The keys are what agent/prefix_index.h stores and what the predictor
 * (agent/predict.h) matches; the simulator derives them from the very
 * body dbucket-bench sends, so live and simulated routing agree. */
#ifndef DBK_PREFIX_KEY_H
#define DBK_PREFIX_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64 tokens of 4 bytes: fine enough to price a hit, coarse enough that a
 * 15 KB sample is ~60 keys. */
#define DBK_PKEY_BLOCK_BYTES 256u
#define DBK_PKEY_BLOCK_TOKENS (DBK_PKEY_BLOCK_BYTES / 4u)
/* Keys derived at most (64 KB of prompt text). */
#define DBK_PKEY_MAX_KEYS 256u

enum dbk_pkey_source {
	DBK_PKEY_NONE = 0, /* no prompt text found (not JSON, no field) */
	DBK_PKEY_PROMPT,   /* "prompt" */
	DBK_PKEY_MESSAGES, /* "messages" contents */
};

struct dbk_pkey {
	size_t nkeys;      /* keys written */
	size_t text_bytes; /* prompt bytes hashed (escaped form) */
	enum dbk_pkey_source source;
	bool cut;         /* the sample ended inside the prompt text */
	uint64_t session; /* "user" value hashed; 0 when absent */
};

/* Writes at most max_keys (<= DBK_PKEY_MAX_KEYS is enough) keys of the
 * sample's prompt text to keys and describes them in out. sample may be
 * NULL with len 0. Returns out->nkeys. Keys are never 0. */
size_t dbk_pkey_derive(const uint8_t *sample, size_t len, uint64_t *keys, size_t max_keys,
                       struct dbk_pkey *out);

/* A session key from its text (a session header's value, or the "user"
 * string's bytes between the quotes): never 0 for len > 0; 0 for len 0.
 * The same bytes give the same key as dbk_pkey_derive's "user". */
uint64_t dbk_pkey_session(const char *s, size_t len);

/* The request's model (models.h routes by it): the first top-level
 * "model" member of the sample, wherever it lies (OpenAI's Python SDK
 * sends it after the messages). True with its bytes in [*id, *id +
 * *id_len), inside the sample, not empty. A sample cut before the
 * member's end, a value that is not a string, one with escapes, or bytes
 * that are not an object give none (the request then goes to any
 * server). Reading more of the body never changes a model found. */
bool dbk_pkey_model(const uint8_t *sample, size_t len, const uint8_t **id, size_t *id_len);

#endif
