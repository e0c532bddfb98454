/* The stub's LoRA adapters on the wire (loras.h holds them): vLLM's
 * /v1/load_lora_adapter and /v1/unload_lora_adapter, the adapters added
 * at start (--lora-modules, as vLLM's init_static_loras: each loaded
 * into the engine), and vllm:lora_requests_info's label set recorded
 * after every engine step, as vLLM's logger records it each iteration. */
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "server.h"

int dbk_stub_lora_start(struct dbk_stub_server *s)
{
	char err[512];
	uint32_t id;

	if (!s->opt.enable_lora)
		return 0;
	s->api.find_adapter = dbk_stub_loras_lookup;
	s->api.adapters = &s->loras;
	for (unsigned i = 0; i < s->opt.n_lora_modules; i++) {
		if (dbk_stub_loras_add_module(&s->loras, s->opt.lora_modules[i], &id, err,
		                              sizeof(err)) != 0) {
			dbk_log(DBK_LOG_ERROR, "start-failed", "stub=%s error=\"%s\"", s->opt.name,
			        err);
			return -1;
		}
		dbk_engine_lora_add(s->eng, id);
	}
	return 0;
}

/* Adapter names, comma-joined, of the counts with running (or waiting)
 * requests, as loggers.py joins the dict's keys. */
static void join(const struct dbk_stub_server *s, struct dbk_buf *b,
                 const struct dbk_engine_lora_count *c, size_t n, bool running)
{
	bool first = true;

	dbk_buf_reset(b);
	for (size_t i = 0; i < n; i++) {
		const char *name = dbk_stub_loras_name(&s->loras, c[i].id);

		if (!name || (running ? c[i].running : c[i].waiting) == 0)
			continue;
		if (!first)
			dbk_buf_adds(b, ",");
		dbk_buf_adds(b, name);
		first = false;
	}
	dbk_buf_add(b, "", 1); /* NUL-terminated */
}

void dbk_stub_lora_record(struct dbk_stub_server *s)
{
	struct dbk_engine_lora_count *c = s->lora_counts;
	size_t n;

	if (!s->opt.enable_lora)
		return;
	n = dbk_engine_lora_counts(s->eng, c, DBK_STUB_LORA_MAX);
	if (n > DBK_STUB_LORA_MAX)
		n = DBK_STUB_LORA_MAX;
	join(s, &s->lora_running, c, n, true);
	join(s, &s->lora_waiting, c, n, false);
	if (s->lora_running.oom || s->lora_waiting.oom ||
	    dbk_stub_loras_record(&s->loras, s->lora_running.p, s->lora_waiting.p,
	                          ev_now(s->loop)) != 0)
		dbk_log(DBK_LOG_DEBUG, "lora-metric", "stub=%s error=\"out of memory\"",
		        s->opt.name);
}

static void answer(struct dbk_stub_conn *c, const struct dbk_http_request *hr, const char *msg)
{
	/* FastAPI's Response(content=...): the text, no media type. */
	dbk_stub_respond(c, 200, NULL, msg, strlen(msg), hr->keep_alive, hr->minor_version, false,
	                 NULL);
}

static bool lora_off(struct dbk_stub_conn *c, const struct dbk_http_request *hr)
{
	if (c->s->opt.enable_lora)
		return false;
	/* The engine's add_lora without a LoRA config. */
	dbk_stub_respond_error(c, 400, "BadRequestError",
	                       "LoRA is not enabled. Use --enable-lora to enable LoRA.",
	                       hr->keep_alive, hr->minor_version);
	return true;
}

void dbk_stub_serve_load_lora(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                              bool head_only)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_api_error err;
	char msg[400];
	uint32_t id;

	(void)head_only;
	if (lora_off(c, hr))
		return;
	if (dbk_stub_loras_load(&s->loras, hr->body.p, hr->body.n, &id, &err) != 0) {
		dbk_stub_respond_error(c, err.status, err.type, err.message, hr->keep_alive,
		                       hr->minor_version);
		dbk_stub_log_refusal(s, c->peer, err.status, err.message);
		return;
	}
	dbk_engine_lora_add(s->eng, id);
	snprintf(msg, sizeof(msg), "Success: LoRA adapter '%s' added successfully.",
	         dbk_stub_loras_name(&s->loras, id));
	dbk_log(DBK_LOG_INFO, "lora-loaded", "stub=%s id=%u", s->opt.name, id);
	answer(c, hr, msg);
}

void dbk_stub_serve_unload_lora(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                                bool head_only)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_api_error err;
	char name[DBK_STUB_LORA_NAME_MAX + 1], msg[400];

	(void)head_only;
	if (lora_off(c, hr))
		return;
	if (dbk_stub_loras_unload(&s->loras, hr->body.p, hr->body.n, name, sizeof(name), &err) !=
	    0) {
		dbk_stub_respond_error(c, err.status, err.type, err.message, hr->keep_alive,
		                       hr->minor_version);
		dbk_stub_log_refusal(s, c->peer, err.status, err.message);
		return;
	}
	snprintf(msg, sizeof(msg), "Success: LoRA adapter '%s' removed successfully.", name);
	answer(c, hr, msg);
}
