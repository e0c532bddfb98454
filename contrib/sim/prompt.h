/* A request's prompt as a router sees its text, without the text: the
 * trace's hash ids name 512-token segments (DBK_TRACE_BLOCK_TOKENS) of
 * prompt text, the last cut to the prompt's length; two prompts share
 * their text up to the first segment where their ids differ. A chain key
 * names a whole prefix (segments 0..i), as a radix tree path or a
 * chained block hash would. A request without hash ids (Azure) gets
 * segments of its own, shared with no other request.
 *
 * Text is 4 bytes a token, the estimate the agent and the stub use. */
#ifndef DBK_SIM_PROMPT_H
#define DBK_SIM_PROMPT_H

#include <stdint.h>

#include "model/prompt.h" /* DBK_BYTES_PER_TOKEN */
#include "model/trace.h"  /* DBK_TRACE_BLOCK_TOKENS */
#include "sim.h"

/* Segments of r's prompt (at least 1). */
uint32_t dbk_sim_prompt_nseg(const struct dbk_sim_req *r);
/* Tokens of segment i (512 but for the last). */
uint32_t dbk_sim_prompt_seg_tokens(const struct dbk_sim_req *r, uint32_t i);
/* Chain key of segments 0..i, given that of 0..i-1 (prev; 0 for i = 0). */
uint64_t dbk_sim_prompt_chain(const struct dbk_sim_req *r, uint32_t i, uint64_t prev);

#endif
