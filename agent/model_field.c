/* The request's model (model_field.h). */
#include "model_field.h"

#include <string.h>

/* Deepest nesting skipped; a body deeper than this gives no model. */
#define MAX_DEPTH 256u

struct walk {
	const uint8_t *p, *end;
};

static void ws(struct walk *w)
{
	while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r'))
		w->p++;
}

/* At an opening quote: past the closing one (a quote after an odd run
 * of backslashes is escaped), the contents in [*s, *s + *len). False:
 * the sample ends first. */
static bool string(struct walk *w, const uint8_t **s, size_t *len)
{
	const uint8_t *start = w->p + 1, *p = start;

	for (;;) {
		const uint8_t *q = memchr(p, '"', (size_t)(w->end - p));
		if (!q)
			return false;
		size_t run = 0;
		while (q - run > start && q[-1 - (ptrdiff_t)run] == '\\')
			run++;
		if (run % 2 == 0) {
			*s = start;
			*len = (size_t)(q - start);
			w->p = q + 1;
			return true;
		}
		p = q + 1;
	}
}

/* Past one member's value of any kind (strings inside skipped whole,
 * brackets counted; a scalar runs to the next comma or closing
 * bracket). False when the sample ends first or nesting is too deep. */
static bool value(struct walk *w)
{
	const uint8_t *s;
	size_t len;
	unsigned depth = 0;

	while (w->p < w->end) {
		uint8_t c = *w->p;

		if (c == '"') {
			if (!string(w, &s, &len))
				return false;
			if (depth == 0)
				return true;
			continue;
		}
		if (c == '{' || c == '[') {
			if (++depth > MAX_DEPTH)
				return false;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return true;
			if (--depth == 0) {
				w->p++;
				return true;
			}
		} else if (c == ',' && depth == 0) {
			return true;
		}
		w->p++;
	}
	return false;
}

bool dbk_model_field(const uint8_t *text, size_t n, const uint8_t **id, size_t *len)
{
	if (!text)
		return false;
	struct walk w = { text, text + n };
	const uint8_t *k;
	size_t klen;

	ws(&w);
	if (w.p >= w.end || *w.p != '{')
		return false;
	w.p++;
	for (;;) {
		ws(&w);
		if (w.p >= w.end || *w.p != '"' || !string(&w, &k, &klen))
			return false;
		ws(&w);
		if (w.p >= w.end || *w.p != ':')
			return false;
		w.p++;
		ws(&w);
		/* An escaped key is longer than 5 bytes: never "model". */
		if (klen == 5 && memcmp(k, "model", 5) == 0) {
			if (w.p >= w.end || *w.p != '"' || !string(&w, id, len))
				return false;
			return *len > 0 && !memchr(*id, '\\', *len);
		}
		if (!value(&w))
			return false;
		ws(&w);
		if (w.p >= w.end || *w.p != ',')
			return false;
		w.p++;
	}
}
