/* The estimate's fast reader: one strict pass over a whole request body
 * that checks it is a JSON object and finds its top-level max_tokens and
 * ignore_eos, without building a tree.
 *
 * cJSON (which estimate.c used alone before) copies every string and
 * allocates every value: at 6 KB of prompt that was 80% of a ttft
 * decision. This reader gives cJSON's answer or says it is not sure:
 * whatever is not plain, strict JSON (a number cJSON reads more loosely
 * than the grammar, "\u" escapes it reads oddly, bytes it skips as
 * whitespace, a top-level key with escapes, nesting past 64, a body that
 * is not an object, any syntax error inside the object) is left to cJSON,
 * which then decides as before. Real bodies are plain JSON, so cJSON only
 * runs for the odd ones. tests/fuzz/fuzz_estimate_scan.c checks every sure
 * answer against cJSON's.
 *
 * Pure, no allocation; reads only [s, s + n). */
#ifndef DBK_ESTIMATE_SCAN_H
#define DBK_ESTIMATE_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dbk_escan_result {
	DBK_ESCAN_JSON = 0,  /* an object, then only whitespace: fields set */
	DBK_ESCAN_MALFORMED, /* an object, then more than whitespace */
	DBK_ESCAN_UNSURE,    /* ask cJSON (fields untouched) */
};

/* On DBK_ESCAN_JSON: *max_tokens is the last top-level "max_tokens" when
 * it is a finite number, else left alone; *ignore_eos the last
 * "ignore_eos" when it is a boolean, else left alone. (estimate.c sets
 * both to their defaults first.) */
enum dbk_escan_result dbk_estimate_scan(const uint8_t *s, size_t n, double *max_tokens,
                                        bool *ignore_eos);

#endif
