#include "stream.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

void dbk_stream_init(struct dbk_stream *s, double t0, size_t max_msgs)
{
	memset(s, 0, sizeof(*s));
	s->t0 = t0;
	s->max_msgs = max_msgs;
	s->usage_tokens = -1;
}

void dbk_stream_free(struct dbk_stream *s)
{
	free(s->itl);
	s->itl = NULL;
	s->n_itl = s->cap_itl = 0;
}

double *dbk_stream_take_itl(struct dbk_stream *s, size_t *n)
{
	double *p = s->itl;

	*n = s->n_itl;
	s->itl = NULL;
	s->n_itl = s->cap_itl = 0;
	return p;
}

static int stream_fail(struct dbk_stream *s, const char *what, const char *detail)
{
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s%s%s", what, detail ? ": " : "",
		         detail ? detail : "");
	return -1;
}

static bool is_done(const char *p, size_t n)
{
	while (n && isspace((unsigned char)*p)) {
		p++;
		n--;
	}
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	return n == 6 && memcmp(p, "[DONE]", 6) == 0;
}

/* Whether a choice carries generated text: "text" (completions) or
 * "delta.content" (chat). The chat role chunk carries "" and does not
 * count as a token. */
static bool has_text(const cJSON *choice)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(choice, "text");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(choice, "delta");

	if (cJSON_IsString(t) && t->valuestring[0])
		return true;
	if (cJSON_IsObject(d)) {
		t = cJSON_GetObjectItemCaseSensitive(d, "content");
		if (cJSON_IsString(t) && t->valuestring[0])
			return true;
	}
	return false;
}

static int push_itl(struct dbk_stream *s, double gap)
{
	if (s->n_itl == s->cap_itl) {
		size_t nc = s->cap_itl ? s->cap_itl * 2 : 64;
		double *np;

		if (nc > s->max_msgs)
			nc = s->max_msgs;
		np = realloc(s->itl, nc * sizeof(*np));
		if (!np)
			return stream_fail(s, "out of memory", NULL);
		s->itl = np;
		s->cap_itl = nc;
	}
	s->itl[s->n_itl++] = gap;
	return 0;
}

static int server_error(struct dbk_stream *s, const cJSON *root)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "object");
	const cJSON *msg = NULL;

	/* vLLM streams {"error": {...}} (newer) or {"object": "error",
	 * "message": ...} (older) when a request fails mid-stream. */
	if (cJSON_IsObject(e))
		msg = cJSON_GetObjectItemCaseSensitive(e, "message");
	else if (cJSON_IsString(e))
		msg = e;
	else if (cJSON_IsString(obj) && strcmp(obj->valuestring, "error") == 0)
		msg = cJSON_GetObjectItemCaseSensitive(root, "message");
	else
		return 0;
	return stream_fail(s, "error in stream", cJSON_IsString(msg) ? msg->valuestring : "?");
}

int dbk_stream_event(struct dbk_stream *s, const char *data, size_t n, double t)
{
	const cJSON *choices, *usage, *ct, *c;
	cJSON *root;
	int rc = 0;

	if (s->error[0])
		return -1;
	if (is_done(data, n)) {
		s->done = true;
		return 0;
	}
	if (s->done)
		return stream_fail(s, "data after [DONE]", NULL);
	root = cJSON_ParseWithLength(data, n);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return stream_fail(s, "stream chunk is not a JSON object", NULL);
	}
	if (server_error(s, root) != 0) {
		cJSON_Delete(root);
		return -1;
	}
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (cJSON_IsArray(choices) && cJSON_GetArraySize(choices) > 0) {
		if (++s->n_msgs > s->max_msgs) {
			rc = stream_fail(s,
			                 "more messages than max_tokens "
			                 "allows",
			                 NULL);
			goto out;
		}
		if (s->n_msgs == 1)
			s->first = t;
		else if ((rc = push_itl(s, t - s->last)) != 0)
			goto out;
		s->last = t;
		cJSON_ArrayForEach(c, choices)
		{
			if (has_text(c)) {
				s->n_text++;
				break;
			}
		}
	}
	usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	if (cJSON_IsObject(usage)) {
		ct = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
		if (cJSON_IsNumber(ct) && ct->valuedouble >= 0 && ct->valuedouble <= 4294967295.0)
			s->usage_tokens = (int64_t)ct->valuedouble;
	}
out:
	cJSON_Delete(root);
	return rc;
}

bool dbk_stream_result(const struct dbk_stream *s, double *ttft, double *e2e, uint32_t *tokens,
                       char *err, size_t errn)
{
	const char *why = NULL;

	if (s->error[0])
		why = s->error;
	else if (s->n_msgs == 0)
		why = "no choices in the stream";
	else if (!s->done)
		why = "stream ended without [DONE]";
	if (why) {
		dbk_errf(err, errn, "%s", why);
		return false;
	}
	*ttft = s->first - s->t0;
	*e2e = s->last - s->t0;
	*tokens = (uint32_t)(s->usage_tokens >= 0 ? (uint64_t)s->usage_tokens : s->n_text);
	return true;
}

void dbk_stream_error_summary(int status, const char *body, size_t n, char *out, size_t outn)
{
	const cJSON *m = NULL, *e;
	cJSON *root = n ? cJSON_ParseWithLength(body, n) : NULL;
	const char *text = body;
	size_t tl = n, len, i;

	if (cJSON_IsObject(root)) {
		e = cJSON_GetObjectItemCaseSensitive(root, "error");
		m = cJSON_GetObjectItemCaseSensitive(root, "message");
		if (!cJSON_IsString(m) && cJSON_IsObject(e))
			m = cJSON_GetObjectItemCaseSensitive(e, "message");
		if (!cJSON_IsString(m))
			m = cJSON_GetObjectItemCaseSensitive(root, "detail");
		if (cJSON_IsString(m)) {
			text = m->valuestring;
			tl = strlen(text);
		}
	}
	snprintf(out, outn, "HTTP %d%s", status, tl ? ": " : "");
	len = strlen(out);
	for (i = 0; i < tl && len + 1 < outn; i++) {
		unsigned char c = (unsigned char)text[i];

		/* Goes to the terminal and CSV (quoted there): one line of
		 * printable ASCII. */
		out[len++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	out[len] = 0;
	cJSON_Delete(root);
}
