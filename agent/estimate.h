/* Request estimate: turns what HAProxy sends about a request (its body
 * size and a sample of its body) into the balancer's inputs.
 *
 * Pure. Never fails: a truncated, malformed or odd body still yields a
 * length-based estimate with the reference's defaults. */
#ifndef DBK_ESTIMATE_H
#define DBK_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "balancer.h"

#define DBK_DEFAULT_MAX_TOKENS 16.0

/* What the estimate found, for logs and counters. */
enum dbk_estimate_source {
	DBK_EST_JSON = 0,  /* whole body parsed as JSON */
	DBK_EST_TRUNCATED, /* sample shorter than body: defaults used */
	DBK_EST_MALFORMED, /* whole body, not a JSON object: defaults */
	DBK_EST_NO_BODY,   /* no sample at all */
};

/* body_size: the Content-Length HAProxy reports (req.body_size), or a
 * negative value when unknown, in which case the sample's length is used.
 * sample/sample_len: the first bytes of the body (may be NULL/0).
 * The JSON is parsed only when the sample is the whole body. max_tokens
 * is taken when it is a number (null or absent: 16), ignore_eos when it
 * is a boolean (absent: false). */
enum dbk_estimate_source dbk_estimate(int64_t body_size, const uint8_t *sample, size_t sample_len,
                                      struct dbk_bal_request *out);

#endif
