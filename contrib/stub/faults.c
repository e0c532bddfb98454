/* What the stub does besides serving: vLLM's sleep mode (POST /sleep,
 * POST /wake_up, GET /is_sleeping, and a sleeping engine's 503 on the
 * endpoints that need the weights, as vLLM's docs/features/sleep_mode.md
 * says), and, for the agent's tests, completions that fail with an HTTP
 * 5xx while /health and /metrics stay fine (--completion-fault, switched
 * at run time by POST /stub/fault?completion=SPEC). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "lib/numparse.h"

int dbk_stub_parse_fault(const char *spec, int *status, double *ratio)
{
	char code[8];
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	long long v;

	if (strcmp(spec, "none") == 0) {
		*status = 0;
		*ratio = 0;
		return 0;
	}
	if (n == 0 || n >= sizeof(code))
		return -1;
	memcpy(code, spec, n);
	code[n] = '\0';
	if (!dbk_parse_ll(code, 500, 599, &v))
		return -1;
	*ratio = 1.0;
	if (colon && !dbk_parse_double(colon + 1, 1e-9, 1.0, ratio))
		return -1;
	*status = (int)v;
	return 0;
}

/* The value of key in query (after '?'), copied into out. */
static bool query_value(struct dbk_http_slice target, const char *key, char *out, size_t cap)
{
	const char *q = memchr(target.p, '?', target.n);
	const char *end = target.p + target.n;
	size_t kl = strlen(key);

	for (const char *p = q ? q + 1 : end; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;

		if ((size_t)(e - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t n = (size_t)(e - p) - kl - 1;

			if (n >= cap)
				return false;
			memcpy(out, p + kl + 1, n);
			out[n] = '\0';
			return true;
		}
		p = e + 1;
	}
	return false;
}

static void respond_json(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                         const char *body)
{
	dbk_stub_respond(c, 200, "application/json", body, strlen(body), hr->keep_alive,
	                 hr->minor_version, false, NULL);
}

void dbk_stub_serve_sleep(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only)
{
	char v[16];
	long long level = 1;

	(void)head_only;
	if (query_value(hr->target, "level", v, sizeof(v)) && !dbk_parse_ll(v, 1, 2, &level)) {
		dbk_stub_respond_error(c, 400, "BadRequestError", "level must be 1 or 2",
		                       hr->keep_alive, hr->minor_version);
		return;
	}
	c->s->sleep_level = (int)level;
	dbk_log(DBK_LOG_INFO, "stub-sleep", "stub=%s level=%lld", c->s->opt.name, level);
	dbk_stub_respond(c, 200, NULL, "", 0, hr->keep_alive, hr->minor_version, false, NULL);
}

void dbk_stub_serve_wake_up(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                            bool head_only)
{
	(void)head_only;
	c->s->sleep_level = 0;
	dbk_log(DBK_LOG_INFO, "stub-wake-up", "stub=%s", c->s->opt.name);
	dbk_stub_respond(c, 200, NULL, "", 0, hr->keep_alive, hr->minor_version, false, NULL);
}

void dbk_stub_serve_is_sleeping(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                                bool head_only)
{
	const char *body = c->s->sleep_level ? "{\"is_sleeping\":true}" : "{\"is_sleeping\":false}";

	dbk_stub_respond(c, 200, "application/json", body, strlen(body), hr->keep_alive,
	                 hr->minor_version, head_only, NULL);
}

void dbk_stub_serve_fault(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only)
{
	struct dbk_stub_server *s = c->s;
	char v[32], body[96];

	(void)head_only;
	if (!query_value(hr->target, "completion", v, sizeof(v)) ||
	    dbk_stub_parse_fault(v, &s->opt.completion_fault, &s->opt.completion_fault_ratio) < 0) {
		dbk_stub_respond_error(c, 400, "BadRequestError",
		                       "want ?completion=none or STATUS[:RATIO] (500-599, 0-1]",
		                       hr->keep_alive, hr->minor_version);
		return;
	}
	dbk_log(DBK_LOG_INFO, "stub-fault", "stub=%s completion=%d ratio=%g", s->opt.name,
	        s->opt.completion_fault, s->opt.completion_fault_ratio);
	snprintf(body, sizeof(body), "{\"completion_fault\":%d,\"ratio\":%g}",
	         s->opt.completion_fault, s->opt.completion_fault_ratio);
	respond_json(c, hr, body);
}

bool dbk_stub_refuse_completion(struct dbk_stub_conn *c, const struct dbk_http_request *hr)
{
	struct dbk_stub_server *s = c->s;

	if (s->sleep_level) {
		dbk_stub_log_refusal(s, c->peer, 503, "sleeping");
		dbk_stub_respond_error(c, 503, "ServiceUnavailableError",
		                       "The model is sleeping; POST /wake_up first", hr->keep_alive,
		                       hr->minor_version);
		return true;
	}
	if (!s->opt.completion_fault)
		return false;
	/* An even spread: the k-th request fails when floor(k * ratio) steps. */
	uint64_t k = s->fault_seen++;
	double r = s->opt.completion_fault_ratio;
	if ((uint64_t)((double)(k + 1) * r) == (uint64_t)((double)k * r))
		return false;
	dbk_stub_log_refusal(s, c->peer, s->opt.completion_fault, "completion-fault");
	dbk_stub_respond_error(c, s->opt.completion_fault, "InternalServerError",
	                       "stub --completion-fault", hr->keep_alive, hr->minor_version);
	return true;
}
