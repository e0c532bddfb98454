/* Fuzzes the vLLM stub's HTTP/1.1 request parser (agent/lib/http1.h)
 * and, for a complete POST to an OpenAI route, its request validation
 * (contrib/stub/api.h) and JSON string escaping.
 *
 * Input: one parameter byte b, then the bytes received on a connection.
 *   b & 3:        max_head_bytes {16384 (the stub's), 64, 256, 1024}
 *   (b >> 2) & 3: max_body_bytes {16 MiB (the stub's), 0, 16, 4096}
 *   (b >> 4) & 3: max_model_len {131072, 16, 2048, 4294967295}
 *   b & 0x40:     chunked bodies accepted (the stub's setting)
 *   b & 0x80:     a chunked body is also read a byte at a time (else in
 *                 reads of 1 + len % 61 bytes)
 *
 * Checked:
 * - COMPLETE: every slice inside the buffer and where it belongs (method,
 *   target and headers in the head, body right after it), head_len <=
 *   max_head_bytes, content_length <= max_body_bytes, total_len <= len,
 *   at most DBK_HTTP_MAX_HEADERS fields, minor version 0 or 1, names are
 *   tokens; dbk_http_header finds what a scan finds;
 * - ERROR: one of the statuses http.h lists, with a reason;
 * - a chunked request (lib/http1_chunked.c's in-place decoding, as the
 *   stub's conn.c drives it): decoded from the whole input and from the
 *   same bytes arriving in reads, the head re-parsed after each read
 *   over the rewritten buffer, both give the same result, body and end;
 *   the body is within max_body_bytes (else too_large), the bytes after
 *   the message are left as they came, and the decoded request passes
 *   the checks of a complete one;
 * - no result ever depends on bytes after the request: the request alone
 *   parses the same, and every strict prefix of a request (complete or
 *   incomplete) is INCOMPLETE, never an error;
 * - api: on success 1..256 prompts, each with prompt + max_tokens <=
 *   max_model_len and max_tokens >= 1; on failure status 400/404, a type
 *   and a message; the error body, and the escaped body, are valid JSON
 *   that cJSON reads back to the same text; with LoRA, a `model` naming
 *   the served adapter gets its id and name, any other name nothing;
 * - LoRA (contrib/stub/loras.h), for a POST to /v1/load_lora_adapter or
 *   /v1/unload_lora_adapter, and for any body as a --lora-modules value:
 *   on success the adapter is served (load, module) or not (unload)
 *   under a new id, on failure vLLM's statuses with a type and a
 *   message, and /v1/models stays JSON with one card per served
 *   adapter and the base's. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "stub/api.h"
#include "stub/loras.h"
#include "lib/buf.h"
#include "fuzz.h"
#include "lib/http1.h"

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool same_req(const struct dbk_http_request *a, const struct dbk_http_request *b)
{
	if (a->method.p != b->method.p || a->method.n != b->method.n ||
	    a->target.p != b->target.p || a->target.n != b->target.n ||
	    a->minor_version != b->minor_version || a->n_headers != b->n_headers ||
	    a->head_len != b->head_len || a->content_length != b->content_length ||
	    a->total_len != b->total_len || a->keep_alive != b->keep_alive ||
	    a->expect_continue != b->expect_continue)
		return false;
	for (size_t i = 0; i < a->n_headers; i++)
		if (a->headers[i].name.p != b->headers[i].name.p ||
		    a->headers[i].name.n != b->headers[i].name.n ||
		    a->headers[i].value.p != b->headers[i].value.p ||
		    a->headers[i].value.n != b->headers[i].value.n)
			return false;
	return true;
}

/* JSON string escaping: cJSON reads back the same bytes. */
static void check_json_str(const char *s, size_t n)
{
	struct dbk_buf b = { 0 };
	cJSON *j;

	if (memchr(s, '\0', n))
		return; /* cJSON's strings end at a NUL */
	dbk_api_json_str(&b, s, n);
	FUZZ_CHECK(!b.oom && b.p != NULL && b.len >= 2 + n);
	FUZZ_CHECK(b.p[0] == '"' && b.p[b.len - 1] == '"');
	for (size_t i = 0; i < b.len; i++)
		FUZZ_CHECK((unsigned char)b.p[i] >= 0x20);
	j = cJSON_ParseWithLength(b.p, b.len);
	FUZZ_CHECK(j && cJSON_IsString(j));
	FUZZ_CHECK(strlen(j->valuestring) == n && memcmp(j->valuestring, s, n) == 0);
	cJSON_Delete(j);
	dbk_buf_free(&b);
}

/* One served adapter, "sql", and its id. */
static struct dbk_stub_loras *one_adapter(uint32_t *id)
{
	static struct dbk_stub_loras L;
	static uint32_t sql;
	char err[256];

	if (!sql)
		FUZZ_CHECK(dbk_stub_loras_add_module(&L, "sql=/lora/sql", &sql, err, sizeof(err)) ==
		           0);
	*id = sql;
	return &L;
}

static void check_api(enum dbk_api_kind kind, const char *body, size_t n, uint32_t mml)
{
	uint32_t sql;
	struct dbk_api_config cfg = { .model = "stub-model",
		                      .max_model_len = mml,
		                      .keys = true,
		                      .find_adapter = dbk_stub_loras_lookup,
		                      .adapters = one_adapter(&sql) };
	static struct dbk_api_request out;
	struct dbk_api_error err;
	int rc = dbk_api_parse_request(kind, body, n, &cfg, &out, &err);

	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == 0) {
		FUZZ_CHECK(out.lora == 0 || (out.lora == sql && strcmp(out.model, "sql") == 0));
		FUZZ_CHECK(out.kind == kind);
		FUZZ_CHECK(out.n_prompts >= 1 && out.n_prompts <= DBK_API_MAX_PROMPTS);
		FUZZ_CHECK(kind == DBK_API_COMPLETION || out.n_prompts == 1);
		FUZZ_CHECK(!out.include_usage || out.stream);
		for (uint32_t i = 0; i < out.n_prompts; i++) {
			FUZZ_CHECK(out.prompt_tokens[i] >= 1 && out.max_tokens[i] >= 1);
			FUZZ_CHECK((uint64_t)out.prompt_tokens[i] + out.max_tokens[i] <= mml);
			/* One key per full 16-token block, whatever the form. */
			FUZZ_CHECK(out.n_keys[i] == out.prompt_tokens[i] / 16);
		}
		dbk_api_request_free(&out);
		return;
	}
	dbk_api_request_free(&out);
	FUZZ_CHECK(err.status == 400 || err.status == 404);
	FUZZ_CHECK(err.type != NULL);
	FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) != NULL && err.message[0]);

	/* The error body is JSON carrying the message. */
	struct dbk_buf b = { 0 };
	dbk_api_error_json(&b, err.status, err.type, err.message);
	FUZZ_CHECK(!b.oom && b.p);
	cJSON *j = cJSON_ParseWithLength(b.p, b.len);
	FUZZ_CHECK(j && cJSON_IsObject(j));
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	FUZZ_CHECK(cJSON_IsString(m) && strcmp(m->valuestring, err.message) == 0);
	FUZZ_CHECK(cJSON_IsNumber(c) && c->valuedouble == err.status);
	cJSON_Delete(j);
	dbk_buf_free(&b);
}

static void check_error(const struct dbk_api_error *err)
{
	FUZZ_CHECK(err->status == 400 || err->status == 404 || err->status == 500);
	FUZZ_CHECK(err->type != NULL && err->message[0]);
	FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
}

/* /v1/models is JSON: the base's card and one per served adapter. */
static void check_models(const struct dbk_stub_loras *L)
{
	struct dbk_buf b = { 0 };
	size_t served = 0;
	cJSON *j;

	for (size_t i = 0; i < L->n; i++)
		served += L->a[i].listed;
	dbk_stub_loras_models_json(L, &b, "stub-model", 4096, 1, "modelperm-1");
	FUZZ_CHECK(!b.oom && b.p);
	j = cJSON_ParseWithLength(b.p, b.len);
	FUZZ_CHECK(j && (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(j, "data")) == served + 1);
	cJSON_Delete(j);
	dbk_buf_free(&b);
}

static void check_lora(bool load, const char *body, size_t n)
{
	struct dbk_stub_loras L = { 0 };
	struct dbk_api_error err;
	char name[DBK_STUB_LORA_NAME_MAX + 1], e[600];
	uint32_t id, sql;

	FUZZ_CHECK(dbk_stub_loras_add_module(&L, "sql=/lora/sql", &sql, e, sizeof(e)) == 0);
	if (load) {
		if (dbk_stub_loras_load(&L, body, n, &id, &err) == 0) {
			FUZZ_CHECK(id == sql + 1 && L.n == 2);
			FUZZ_CHECK(dbk_stub_loras_find(&L, L.a[1].name) == &L.a[1]);
		} else {
			check_error(&err);
			FUZZ_CHECK(L.n == 1);
		}
	} else if (dbk_stub_loras_unload(&L, body, n, name, sizeof(name), &err) == 0) {
		FUZZ_CHECK(strcmp(name, "sql") == 0 && !dbk_stub_loras_find(&L, "sql"));
	} else {
		check_error(&err);
		FUZZ_CHECK(err.status != 404 || dbk_stub_loras_find(&L, "sql"));
	}
	check_models(&L);
	/* The same bytes as a --lora-modules value. */
	if (n < 4096 && !memchr(body, '\0', n)) {
		char spec[4096];
		size_t before = L.n;

		memcpy(spec, body, n);
		spec[n] = '\0';
		if (dbk_stub_loras_add_module(&L, spec, &id, e, sizeof(e)) == 0)
			FUZZ_CHECK(L.n == before + 1 && L.a[before].id == id);
		else
			FUZZ_CHECK(L.n == before && e[0]);
		check_models(&L);
	}
	dbk_stub_loras_free(&L);
}

static void check_complete(const char *buf, size_t len, const struct dbk_http_limits *lim,
                           const struct dbk_http_request *r, uint32_t mml)
{
	FUZZ_CHECK(r->head_len > 0 && r->head_len <= lim->max_head_bytes);
	FUZZ_CHECK(r->content_length <= lim->max_body_bytes);
	FUZZ_CHECK(r->total_len == r->head_len + r->content_length && r->total_len <= len);
	FUZZ_CHECK(r->body.p == buf + r->head_len && r->body.n == r->content_length);
	FUZZ_CHECK(r->minor_version == 0 || r->minor_version == 1);
	FUZZ_CHECK(!r->expect_continue || r->minor_version == 1);
	FUZZ_CHECK(r->n_headers <= DBK_HTTP_MAX_HEADERS);
	FUZZ_CHECK(r->method.n > 0 && fuzz_inside(r->method.p, r->method.n, buf, r->head_len));
	for (size_t i = 0; i < r->method.n; i++)
		FUZZ_CHECK(is_tchar((unsigned char)r->method.p[i]));
	FUZZ_CHECK(r->target.n > 0 && fuzz_inside(r->target.p, r->target.n, buf, r->head_len));
	for (size_t i = 0; i < r->target.n; i++)
		FUZZ_CHECK((unsigned char)r->target.p[i] > 0x20 &&
		           (unsigned char)r->target.p[i] < 0x7f);
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct dbk_http_header *h = &r->headers[i];

		FUZZ_CHECK(h->name.n > 0 && fuzz_inside(h->name.p, h->name.n, buf, r->head_len));
		FUZZ_CHECK(fuzz_inside(h->value.p, h->value.n, buf, r->head_len));
		FUZZ_CHECK(h->name.p[h->name.n] == ':');
		for (size_t k = 0; k < h->name.n; k++)
			FUZZ_CHECK(is_tchar((unsigned char)h->name.p[k]));
		for (size_t k = 0; k < h->value.n; k++) {
			unsigned char c = (unsigned char)h->value.p[k];

			FUZZ_CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
		}
		if (h->value.n) {
			FUZZ_CHECK(h->value.p[0] != ' ' && h->value.p[0] != '\t');
			FUZZ_CHECK(h->value.p[h->value.n - 1] != ' ' &&
			           h->value.p[h->value.n - 1] != '\t');
		}
		/* dbk_http_header returns the first field of that name. */
		char name[64];
		if (h->name.n < sizeof(name)) {
			memcpy(name, h->name.p, h->name.n);
			name[h->name.n] = '\0';
			const struct dbk_http_slice *v = dbk_http_header(r, name);
			FUZZ_CHECK(v != NULL && v->p <= h->value.p);
		}
	}
	const struct dbk_http_slice *cl = dbk_http_header(r, "content-length");
	const struct dbk_http_slice *te = dbk_http_header(r, "transfer-encoding");
	if (r->chunked)
		FUZZ_CHECK(lim->chunked && te && !cl);
	else
		FUZZ_CHECK(!te && (cl || r->content_length == 0));

	check_json_str(r->target.p, r->target.n);
	if (dbk_http_slice_eq(r->method, "POST")) {
		if (dbk_http_slice_eq(r->target, "/v1/completions"))
			check_api(DBK_API_COMPLETION, r->body.p, r->body.n, mml);
		else if (dbk_http_slice_eq(r->target, "/v1/chat/completions"))
			check_api(DBK_API_CHAT, r->body.p, r->body.n, mml);
		else if (dbk_http_slice_eq(r->target, "/v1/load_lora_adapter"))
			check_lora(true, r->body.p, r->body.n);
		else if (dbk_http_slice_eq(r->target, "/v1/unload_lora_adapter"))
			check_lora(false, r->body.p, r->body.n);
		if (r->body.n <= 4096)
			check_json_str(r->body.p, r->body.n);
	}
}

/* The chunked body after r's head decoded in place in buf[0..*len),
 * the input arriving in reads of `step` bytes after the head (all at
 * once when step >= len); the head is parsed again after every read, as
 * the stub does. */
static enum dbk_http_result dechunk(const char *in, size_t len, const struct dbk_http_limits *lim,
                                    const struct dbk_http_request *r, size_t step, char *buf,
                                    size_t *n, struct dbk_http_body *b)
{
	static struct dbk_http_request r2;
	enum dbk_http_result res = DBK_HTTP_INCOMPLETE;
	size_t fed = r->head_len;

	memcpy(buf, in, fed);
	*n = fed;
	dbk_http_body_init(b, r->head_len, lim->max_body_bytes);
	while (fed < len && res == DBK_HTTP_INCOMPLETE) {
		size_t k = len - fed < step ? len - fed : step;

		memcpy(buf + *n, in + fed, k);
		*n += k;
		fed += k;
		FUZZ_CHECK(dbk_http_parse(buf, *n, lim, &r2) == DBK_HTTP_INCOMPLETE);
		FUZZ_CHECK(r2.chunked && r2.head_len == r->head_len);
		res = dbk_http_body_dechunk(b, buf, n);
		FUZZ_CHECK(buf[*n] == '\0' && b->len <= lim->max_body_bytes);
	}
	/* What was not read yet joins the rest, as later reads would. */
	memcpy(buf + *n, in + fed, len - fed);
	*n += len - fed;
	return res;
}

/* A chunked request, read whole and in pieces: how many input bytes it
 * took when it is complete and keeps the connection, else 0. */
static size_t check_chunked(const char *in, size_t len, const struct dbk_http_limits *lim,
                            const struct dbk_http_request *r, uint32_t mml, size_t step)
{
	struct dbk_http_body whole, parts;
	char *a = malloc(len + 1), *p = malloc(len + 1);
	size_t na, np, took = 0;
	enum dbk_http_result ra, rp;

	FUZZ_CHECK(a && p);
	ra = dechunk(in, len, lim, r, len, a, &na, &whole);
	rp = dechunk(in, len, lim, r, step, p, &np, &parts);
	FUZZ_CHECK(ra == rp);
	if (ra == DBK_HTTP_ERROR)
		FUZZ_CHECK(whole.too_large == parts.too_large && whole.chunked.error &&
		           parts.chunked.error);
	if (ra == DBK_HTTP_COMPLETE) {
		/* Both end the message at the same input byte, with the same
		 * body, and leave what follows as it came. */
		took = len - (na - whole.raw_off);
		FUZZ_CHECK(took == len - (np - parts.raw_off));
		FUZZ_CHECK(whole.len == parts.len &&
		           !memcmp(a + whole.start, p + parts.start, whole.len));
		FUZZ_CHECK(!memcmp(a + whole.raw_off, in + took, len - took));
		/* The request as the stub serves it, its slices into a. */
		static struct dbk_http_request rd;
		FUZZ_CHECK(dbk_http_parse(a, na, lim, &rd) == DBK_HTTP_INCOMPLETE && rd.chunked);
		rd.body = (struct dbk_http_slice){ a + whole.start, whole.len };
		rd.content_length = whole.len;
		rd.total_len = whole.raw_off;
		check_complete(a, na, lim, &rd, mml);
		if (!r->keep_alive)
			took = 0;
	}
	free(a);
	free(p);
	return took;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t heads[4] = { 16 * 1024, 64, 256, 1024 };
	static const size_t bodies[4] = { 16u * 1024 * 1024, 0, 16, 4096 };
	static const uint32_t mmls[4] = { 131072, 16, 2048, 4294967295u };
	static struct dbk_http_request r, r2;
	struct fuzz_in in = { data, size };
	uint8_t b = fuzz_u8(&in);
	struct dbk_http_limits lim = { heads[b & 3], bodies[(b >> 2) & 3], (b & 0x40) != 0 };
	uint32_t mml = mmls[(b >> 4) & 3];
	const char *buf = (const char *)in.p;
	size_t len = in.n;
	enum dbk_http_result res;

	/* Pipelined requests, one after the other, as the stub reads them. */
	for (int round = 0; round < 8; round++) {
		res = dbk_http_parse(buf, len, &lim, &r);
		FUZZ_CHECK(res == DBK_HTTP_COMPLETE || res == DBK_HTTP_INCOMPLETE ||
		           res == DBK_HTTP_ERROR);
		if (res == DBK_HTTP_ERROR) {
			static const int ok[] = { 400, 411, 413, 414, 431, 501, 505 };
			bool listed = false;

			for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
				listed |= r.status == ok[i];
			FUZZ_CHECK(listed && r.error != NULL && r.error[0]);
			FUZZ_CHECK(strcmp(dbk_http_reason(r.status), "Unknown") != 0);
			return 0;
		}
		/* Strict prefixes never fail; before total_len never complete. */
		size_t known = res == DBK_HTTP_COMPLETE ? r.total_len : len;
		size_t cuts[3] = { known ? known - 1 : 0, known / 2,
			           len ? (size_t)(unsigned char)buf[0] * known / 256 : 0 };
		for (int k = 0; k < 3; k++) {
			if (cuts[k] >= known)
				continue;
			FUZZ_CHECK(dbk_http_parse(buf, cuts[k], &lim, &r2) == DBK_HTTP_INCOMPLETE);
		}
		if (res == DBK_HTTP_INCOMPLETE && r.chunked) {
			FUZZ_CHECK(lim.chunked && r.head_len && r.total_len == 0);
			size_t took = check_chunked(buf, len, &lim, &r, mml,
			                            (b & 0x80) ? 1 : 1 + len % 61);
			if (!took)
				return 0;
			buf += took;
			len -= took;
			continue;
		}
		if (res == DBK_HTTP_INCOMPLETE) {
			if (r.head_len) {
				FUZZ_CHECK(r.head_len <= len && r.total_len > len);
				FUZZ_CHECK(r.total_len == r.head_len + r.content_length);
			}
			return 0;
		}
		check_complete(buf, len, &lim, &r, mml);
		/* The request alone parses the same. */
		FUZZ_CHECK(dbk_http_parse(buf, r.total_len, &lim, &r2) == DBK_HTTP_COMPLETE);
		FUZZ_CHECK(same_req(&r, &r2));
		if (!r.keep_alive)
			return 0;
		buf += r.total_len;
		len -= r.total_len;
	}
	return 0;
}
