/* The request's model: the top-level "model" member of the body sample,
 * wherever it lies in the sample (an OpenAI SDK sends it after the
 * messages), found by one pass that skips strings with memchr and
 * tracks nesting, without checking the grammar or building a tree.
 *
 * HAProxy's json_query('$.model') on the same sample gives up when the
 * sample is cut before the body's end, unless model precedes the cut
 * prompt; this reads any prefix. A sample cut before the member, an id
 * with escapes, a value that is not a string, or bytes that are not an
 * object all give no model: the request then goes to any server, as
 * before model routing. The first member named model wins.
 *
 * Pure, no allocation; reads only [s, s + n). */
#ifndef DBK_MODEL_FIELD_H
#define DBK_MODEL_FIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True with the id's bytes in [*id, *id + *len) (inside s, not empty). */
bool dbk_model_field(const uint8_t *s, size_t n, const uint8_t **id, size_t *len);

#endif
