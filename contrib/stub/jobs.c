/* An OpenAI request in the engine: validated by api_request.c, submitted as one
 * engine request per prompt (a "choice"), answered as the engine reports
 * tokens: SSE events as they come, or one JSON body when every choice has
 * finished. The engine's events find their job through the choice they
 * carry as cookie. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/hash.h"
#include "lib/log.h"
#include "server.h"

/* 32 hex digits, like vLLM's random_uuid(). */
void dbk_stub_make_id(struct dbk_stub_server *s, char *out, size_t n, const char *prefix)
{
	uint64_t x = s->id_seed ^ (s->id_counter++ * 0xd1342543de82ef95ULL);
	uint64_t a = dbk_hash_next(&x), b = dbk_hash_next(&x);

	snprintf(out, n, "%s%016llx%016llx", prefix, (unsigned long long)a, (unsigned long long)b);
}

void dbk_stub_job_free(struct dbk_stub_job *j, bool abort_engine)
{
	if (abort_engine)
		for (uint32_t i = 0; i < j->req.n_prompts; i++)
			if (!j->ch[i].done)
				dbk_engine_abort(j->c->s->eng, j->ch[i].handle);
	free(j);
}

static void finish_stream(struct dbk_stub_job *j, uint64_t comp_total)
{
	struct dbk_stub_conn *c = j->c;
	struct dbk_buf *t = &c->s->tmp;

	if (j->req.include_usage) {
		dbk_api_sse_usage(t, &j->resp, j->prompt_total, comp_total);
		dbk_stub_send_stream_data(c, j->chunked, t->p, t->len);
		dbk_buf_reset(t);
	}
	dbk_api_sse_done(t);
	dbk_stub_send_stream_data(c, j->chunked, t->p, t->len);
	if (j->chunked)
		dbk_buf_adds(&c->out, "0\r\n\r\n");
	if (!j->keep_alive)
		c->close_after_write = true;
}

static void job_finish(struct dbk_stub_job *j)
{
	struct dbk_stub_conn *c = j->c;
	struct dbk_stub_server *s = c->s;
	struct dbk_buf *t = &s->tmp;
	uint32_t comp[DBK_API_MAX_PROMPTS];
	uint64_t comp_total = 0;

	for (uint32_t i = 0; i < j->req.n_prompts; i++) {
		comp[i] = j->ch[i].n_out;
		comp_total += comp[i];
	}
	dbk_buf_reset(t);
	if (j->req.stream) {
		finish_stream(j, comp_total);
	} else {
		dbk_api_full_response(t, &j->resp, j->req.n_prompts, comp, j->prompt_total);
		dbk_stub_respond(c, 200, "application/json", t->p, t->len, j->keep_alive,
		                 j->chunked ? 1 : 0, false, NULL);
	}
	dbk_log(DBK_LOG_DEBUG, "request-done",
	        "stub=%s id=%s prompts=%u prompt_tokens=%llu output_tokens=%llu", s->opt.name,
	        j->id, j->req.n_prompts, (unsigned long long)j->prompt_total,
	        (unsigned long long)comp_total);
	c->job = NULL;
	dbk_stub_job_free(j, false);
	dbk_stub_conn_resume(c);
}

/* Model seconds since real time t, like every latency the stub shows. */
static double model_since(const struct dbk_stub_server *s, double t)
{
	return (ev_now(s->loop) - t) * s->opt.time_scale;
}

/* vLLM observes, per engine request (each prompt of a batch is one),
 * the first token at its first output, then every gap between two
 * outputs (the inter-token latency, fed to the deprecated time-per-
 * output-token family too), and at its end the whole request and its
 * token counts. A request the client abandons is not observed. */
static void observe_token(struct dbk_stub_server *s, struct dbk_stub_choice *ch)
{
	struct dbk_prom_outcomes *o = &s->out;

	if (!ch->started)
		dbk_prom_observe(&o->ttft, model_since(s, ch->job->arrived));
	else
		dbk_prom_observe(&o->itl, model_since(s, ch->last_token_at));
	ch->last_token_at = ev_now(s->loop);
}

static void observe_finished(struct dbk_stub_server *s, const struct dbk_stub_choice *ch,
                             const struct dbk_engine_event *ev)
{
	struct dbk_prom_outcomes *o = &s->out;

	dbk_prom_observe(&o->e2e, model_since(s, ch->job->arrived));
	dbk_prom_observe(&o->prompt_tokens, ev->prompt_tokens);
	dbk_prom_observe(&o->generation_tokens, ev->n_output);
}

static void on_token(struct dbk_stub_server *s, struct dbk_stub_choice *ch,
                     const struct dbk_engine_event *ev)
{
	struct dbk_stub_job *j = ch->job;
	struct dbk_buf *t = &s->tmp;

	ch->n_out = ev->n_output;
	observe_token(s, ch);
	if (j->req.stream) {
		dbk_buf_reset(t);
		/* vLLM sends the chat role with the first output. */
		if (j->req.kind == DBK_API_CHAT && !ch->started)
			dbk_api_sse_role(t, &j->resp, ch->index);
		dbk_api_sse_token(t, &j->resp, ch->index, ev->n_output >= ev->max_output_tokens);
		dbk_stub_send_stream_data(j->c, j->chunked, t->p, t->len);
	}
	ch->started = true;
}

void dbk_stub_on_engine_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct dbk_stub_server *s = ctx;
	struct dbk_stub_choice *ch = ev->cookie;
	struct dbk_stub_job *j = ch->job;
	struct dbk_stub_conn *c = j->c;

	switch (ev->type) {
	case DBK_ENGINE_EV_TOKEN: on_token(s, ch, ev); break;
	case DBK_ENGINE_EV_FINISHED:
		observe_finished(s, ch, ev);
		ch->done = true;
		if (++j->n_done == j->req.n_prompts)
			job_finish(j);
		break;
	case DBK_ENGINE_EV_PREEMPTED:
		dbk_log(DBK_LOG_DEBUG, "preempted", "stub=%s id=%s choice=%u output_tokens=%u",
		        s->opt.name, j->id, ch->index, ev->n_output);
		break;
	}
	dbk_stub_mark_pending(c);
}

/* Submits every prompt of ar; on failure the ones already in are
 * aborted. The API check mirrors the engine's, so only memory can fail. */
static int submit_choices(struct dbk_stub_server *s, struct dbk_stub_job *j,
                          const struct dbk_api_request *ar)
{
	for (uint32_t i = 0; i < ar->n_prompts; i++) {
		const struct dbk_engine_submission sub = {
			.prompt_tokens = ar->prompt_tokens[i],
			.keys = ar->keys ? ar->keys + ar->key_off[i] : NULL,
			.n_keys = ar->n_keys[i],
			.max_output_tokens = ar->max_tokens[i],
			.priority = ar->priority,
			.lora = ar->lora,
			.cookie = &j->ch[i],
		};

		j->ch[i].job = j;
		j->ch[i].index = i;
		if (dbk_engine_submit_req(s->eng, &sub, &j->ch[i].handle) != DBK_ENGINE_OK) {
			for (uint32_t k = 0; k < i; k++)
				dbk_engine_abort(s->eng, j->ch[k].handle);
			return -1;
		}
		j->prompt_total += ar->prompt_tokens[i];
	}
	return 0;
}

static struct dbk_stub_job *job_new(struct dbk_stub_conn *c, enum dbk_api_kind kind,
                                    const struct dbk_http_request *hr,
                                    const struct dbk_api_request *ar)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_stub_job *j = calloc(1, sizeof(*j) + ar->n_prompts * sizeof(j->ch[0]));

	if (!j)
		return NULL;
	j->c = c;
	j->req = *ar;
	j->req.keys = NULL; /* the engine copies what it needs */
	j->arrived = ev_now(s->loop);
	j->keep_alive = hr->keep_alive;
	j->chunked = hr->minor_version == 1;
	if (ar->stream && !j->chunked)
		j->keep_alive = false; /* the close marks the end */
	dbk_stub_make_id(s, j->id, sizeof(j->id), kind == DBK_API_CHAT ? "chatcmpl-" : "cmpl-");
	j->resp.kind = kind;
	j->resp.id = j->id;
	j->resp.created = (long long)time(NULL);
	/* vLLM answers under the adapter's name when one is asked for. */
	j->resp.model = ar->lora ? j->req.model : s->opt.model;
	return j;
}

void dbk_stub_start_job(struct dbk_stub_conn *c, enum dbk_api_kind kind,
                        const struct dbk_http_request *hr)
{
	struct dbk_stub_server *s = c->s;
	struct dbk_api_request ar;
	struct dbk_api_error err;
	struct dbk_stub_job *j;

	if (dbk_api_parse_request(kind, hr->body.p, hr->body.n, &s->api, &ar, &err) != 0) {
		dbk_api_request_free(&ar);
		dbk_stub_respond_error(c, err.status, err.type, err.message, hr->keep_alive,
		                       hr->minor_version);
		dbk_stub_log_refusal(s, c->peer, err.status, err.message);
		return;
	}
	j = job_new(c, kind, hr, &ar);
	if (!j || submit_choices(s, j, &ar) != 0) {
		const char *why = j ? "engine refused the request" : "out of memory";

		free(j);
		dbk_api_request_free(&ar);
		dbk_stub_respond_error(c, 500, "InternalServerError", why, false,
		                       hr->minor_version);
		return;
	}
	dbk_api_request_free(&ar);
	c->job = j;
	if (ar.stream)
		dbk_stub_send_head(c, 200, "text/event-stream; charset=utf-8", -1, j->keep_alive,
		                   hr->minor_version,
		                   j->chunked ? "Transfer-Encoding: chunked\r\n" : NULL);
	dbk_log(DBK_LOG_DEBUG, "request",
	        "stub=%s peer=%s id=%s prompts=%u prompt_tokens=%u max_tokens=%u stream=%s "
	        "priority=%d",
	        s->opt.name, c->peer, j->id, ar.n_prompts, ar.prompt_tokens[0], ar.max_tokens[0],
	        ar.stream ? "true" : "false", (int)ar.priority);
	dbk_stub_maybe_step(s);
}
