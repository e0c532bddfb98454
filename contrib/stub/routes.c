/* The stub's routes, one table: the paths vLLM's OpenAI server answers
 * that a load balancer or its tests touch, each with the method FastAPI
 * would accept (a GET route also answers HEAD) and its handler. What no
 * route matches gets FastAPI's 404 or 405 shapes. */
#include <string.h>

#include "server.h"
#include "lib/version.h"

typedef void (*handler_fn)(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                           bool head_only);

struct route {
	const char *path;
	bool post; /* POST only; otherwise GET and HEAD */
	handler_fn serve;
	/* Only with runtime LoRA updating, as vLLM registers them. */
	bool lora_runtime;
};

static void respond_ok(struct dbk_stub_conn *c, const struct dbk_http_request *hr, bool head_only,
                       const char *ctype, const char *body, size_t n)
{
	dbk_stub_respond(c, 200, ctype, body, n, hr->keep_alive, hr->minor_version, head_only,
	                 NULL);
}

static void serve_health(struct dbk_stub_conn *c, const struct dbk_http_request *hr, bool head_only)
{
	respond_ok(c, hr, head_only, NULL, "", 0);
}

static void serve_version(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only)
{
	static const char v[] = "{\"version\":\"" DBK_VERSION "-stub\"}";

	respond_ok(c, hr, head_only, "application/json", v, sizeof(v) - 1);
}

static void serve_models(struct dbk_stub_conn *c, const struct dbk_http_request *hr, bool head_only)
{
	struct dbk_stub_server *s = c->s;
	char perm[64];

	dbk_stub_make_id(s, perm, sizeof(perm), "modelperm-");
	dbk_buf_reset(&s->tmp);
	if (s->opt.enable_lora)
		dbk_stub_loras_models_json(&s->loras, &s->tmp, s->opt.model,
		                           s->opt.engine.max_model_len, s->started, perm);
	else
		dbk_api_models_json(&s->tmp, s->opt.model, s->opt.engine.max_model_len, s->started,
		                    perm);
	respond_ok(c, hr, head_only, "application/json", s->tmp.p, s->tmp.len);
}

/* The hostile part of a body, made once: ~300k families of one short
 * line each, or ~14k label sets of vllm:num_requests_running. */
static void hostile_pad(struct dbk_stub_server *s)
{
	bool many = s->opt.metrics_fault == DBK_STUB_FAULT_MANY_SERIES;
	size_t size = many ? DBK_STUB_MANY_SERIES_BYTES : DBK_STUB_HUGE_BYTES;

	for (unsigned i = 0; s->pad.len < size && !s->pad.oom; i++)
		if (many)
			dbk_buf_printf(&s->pad,
			               "vllm:num_requests_running{engine=\"%u\",model_name=\"%s\"} "
			               "0.0\n",
			               i + 1, s->opt.model);
		else
			dbk_buf_printf(&s->pad, "unread_%u 1\n", i);
}

static void render_metrics(struct dbk_stub_server *s)
{
	struct dbk_engine_stats st;
	struct dbk_prom_stats m;

	dbk_engine_get_stats(s->eng, &st);
	memset(&m, 0, sizeof(m));
	m.model = s->opt.model;
	m.created = s->created;
	m.running = st.running;
	m.waiting = st.waiting;
	m.kv_usage = dbk_engine_kv_usage(s->eng);
	m.prefix_cache_queries = st.prefix_cache_queries;
	m.prefix_cache_hits = st.prefix_cache_hits;
	m.preemptions = st.preemptions_total;
	m.prompt_tokens = st.prompt_tokens_total;
	m.generation_tokens = st.generation_tokens_total;
	m.success_length = st.requests_finished;
	m.success_abort = st.requests_aborted;
	m.out = &s->out;
	m.block_size = DBK_KV_BLOCK_TOKENS;
	m.num_gpu_blocks = st.kv_blocks_total;
	m.enable_prefix_caching = dbk_engine_prefix_caching(s->eng);
	m.sleep_level = s->sleep_level;
	m.lora = s->opt.enable_lora;
	m.max_lora = s->opt.engine.max_loras;
	m.lora_sets = s->loras.series;
	m.n_lora_sets = s->loras.n_series;
	m.lora_loads = st.lora_loads;
	m.lora_activations = st.lora_activations;
	m.lora_slot_evictions = st.lora_slot_evictions;
	m.lora_cpu_evictions = st.lora_cpu_evictions;
	if (s->opt.metrics_fault == DBK_STUB_FAULT_IMPLAUSIBLE)
		m.kv_usage = 85;
	dbk_buf_reset(&s->tmp);
	if (s->opt.sglang_names)
		dbk_prom_render_sglang(&s->tmp, &m);
	else
		dbk_prom_render(&s->tmp, &m);
	if (s->opt.metrics_fault == DBK_STUB_FAULT_HUGE ||
	    s->opt.metrics_fault == DBK_STUB_FAULT_MANY_SERIES) {
		hostile_pad(s);
		dbk_buf_add(&s->tmp, s->pad.p, s->pad.len);
	}
}

static void serve_metrics(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only)
{
	static const char junk[] = "vllm:num_requests_running{engine=\"0\" 3\n<html>\n";
	struct dbk_stub_server *s = c->s;

	switch (s->opt.metrics_fault) {
	case DBK_STUB_FAULT_HANG: return; /* the client times out; the idle timer never runs */
	case DBK_STUB_FAULT_GARBAGE:
		respond_ok(c, hr, head_only, "text/plain", junk, sizeof(junk) - 1);
		return;
	default: break; /* none, or a body made by render_metrics */
	}
	render_metrics(s);
	respond_ok(c, hr, head_only, "text/plain; version=0.0.4; charset=utf-8", s->tmp.p,
	           s->tmp.len);
}

static void serve_completions(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                              bool head_only)
{
	(void)head_only;
	if (!dbk_stub_refuse_completion(c, hr))
		dbk_stub_start_job(c, DBK_API_COMPLETION, hr);
}

static void serve_chat(struct dbk_stub_conn *c, const struct dbk_http_request *hr, bool head_only)
{
	(void)head_only;
	if (!dbk_stub_refuse_completion(c, hr))
		dbk_stub_start_job(c, DBK_API_CHAT, hr);
}

static const struct route routes[] = {
	{ "/health", false, serve_health, false },
	{ "/v1/models", false, serve_models, false },
	{ "/metrics", false, serve_metrics, false },
	{ "/version", false, serve_version, false },
	{ "/v1/completions", true, serve_completions, false },
	{ "/v1/chat/completions", true, serve_chat, false },
	{ "/sleep", true, dbk_stub_serve_sleep, false },
	{ "/wake_up", true, dbk_stub_serve_wake_up, false },
	{ "/is_sleeping", false, dbk_stub_serve_is_sleeping, false },
	{ "/stub/fault", true, dbk_stub_serve_fault, false },
	{ "/v1/load_lora_adapter", true, dbk_stub_serve_load_lora, true },
	{ "/v1/unload_lora_adapter", true, dbk_stub_serve_unload_lora, true },
};

void dbk_stub_route(struct dbk_stub_conn *c, const struct dbk_http_request *hr)
{
	struct dbk_http_slice path = hr->target;
	const char *q = memchr(path.p, '?', path.n);
	bool head = dbk_http_slice_eq(hr->method, "HEAD");
	bool get = head || dbk_http_slice_eq(hr->method, "GET");
	bool post = dbk_http_slice_eq(hr->method, "POST");

	if (q)
		path.n = (size_t)(q - path.p);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *r = &routes[i];

		if (!dbk_http_slice_eq(path, r->path) ||
		    (r->lora_runtime && !c->s->opt.lora_runtime))
			continue;
		if (r->post ? post : get)
			r->serve(c, hr, head);
		else
			dbk_stub_respond_detail(c, 405, "Method Not Allowed", hr->keep_alive,
			                        hr->minor_version,
			                        r->post ? "Allow: POST\r\n" : "Allow: GET\r\n");
		return;
	}
	dbk_stub_respond_detail(c, 404, "Not Found", hr->keep_alive, hr->minor_version, NULL);
}
