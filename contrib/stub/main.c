/* vllm-stub: an HTTP server that answers like vLLM's OpenAI API server
 * and paces its tokens with the engine model of engine.c.
 *
 * One libev loop owns everything. The engine steps on an ev_timer: a step
 * is scheduled (dbk_engine_begin_step) when there is work, its model
 * duration divided by --time-scale elapses, then its tokens are reported
 * (dbk_engine_end_step) and written to the clients. Consecutive steps are
 * chained on their deadlines rather than on "now", so timer latency does
 * not accumulate into a slower model clock. */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "lib/buf.h"
#include "engine.h"
#include "lib/http1.h"
#include "lib/numparse.h"
#include "prom.h"

#define STUB_VERSION "0.1.0"

/* h11 (uvicorn, which serves vLLM) refuses heads above 16 KiB. */
#define MAX_HEAD_BYTES (16 * 1024)
/* Enough for a prompt of max-model-len tokens at 4 bytes each, JSON
 * escaping included, with a floor for small models. */
#define MIN_BODY_BYTES (16u * 1024 * 1024)
/* A client that reads slower than this much buffered output is dropped. */
#define MAX_OUT_BYTES (64u * 1024 * 1024)
#define READ_CHUNK (64 * 1024)
/* Bounds on work per callback so one busy client cannot starve others. */
#define MAX_READS_PER_CB 16
#define MAX_ACCEPTS_PER_CB 64
#define MAX_REQUESTS_PER_PASS 64
/* Falling further behind than this (real seconds) restarts the chain of
 * step deadlines at "now" instead of bursting to catch up. */
#define MAX_STEP_LAG_S 0.1

struct opts {
	const char *host;
	unsigned port;
	const char *name;
	const char *model;
	const struct dbk_gpu_profile *gpu;
	long long max_model_len, max_num_batched_tokens, max_num_seqs;
	long long kv_capacity_tokens;
	double time_scale;
	double keep_alive_s;
	bool no_prefix_caching;
	bool verbose;
	/* For the agent's tests: /metrics never answers, or answers with
	 * what is not Prometheus text. */
	enum { FAULT_NONE, FAULT_HANG, FAULT_GARBAGE } metrics_fault;
};

struct conn;

struct choice {
	struct job *job;
	uint32_t index;
	uint64_t handle;
	uint32_t n_out;
	bool started;
	bool done;
};

/* One OpenAI request in flight on a connection. */
struct job {
	struct conn *c;
	struct dbk_api_request req;
	struct dbk_api_resp resp;
	char id[64];
	bool keep_alive;
	bool chunked;       /* HTTP/1.1: chunked stream; 1.0: close-delimited */
	uint32_t n_done;
	uint64_t prompt_total;
	double arrived;     /* ev_now when parsed: vLLM's arrival_time */
	bool first_seen;    /* TTFT observed */
	struct choice ch[];
};

struct conn {
	struct server *s;
	int fd;
	ev_io rw, ww;
	ev_timer idle_w;
	struct dbk_buf in, out;
	size_t out_off;
	struct job *job;
	bool close_after_write;
	bool continue_sent;
	bool reading;
	bool pending;
	struct conn *prev, *next, *pending_next;
	char peer[64];
};

struct server {
	struct ev_loop *loop;
	struct opts opt;
	struct dbk_engine *eng;
	struct dbk_api_config api;
	struct dbk_http_limits lim;
	int lfd;
	ev_io accept_w;
	bool accept_paused;
	ev_timer step_w;
	ev_timer resume_w;
	ev_signal sigint_w, sigterm_w;
	bool stepping, busy, in_delivery;
	double deadline;
	struct conn *conns;
	struct conn *pending;
	unsigned n_conns;
	uint64_t id_seed, id_counter;
	long long started;
	struct dbk_buf tmp;
	struct dbk_prom_histogram ttft;
	double created;     /* unix seconds, the counters' _created */
	uint64_t late_steps;
	double max_lag_s;
};

static void logmsg(const struct server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logmsg(const struct server *s, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vllm-stub[%s]: ", s->opt.name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 32 hex digits, like vLLM's random_uuid(). */
static void make_id(struct server *s, char *out, size_t n, const char *prefix)
{
	uint64_t x = s->id_seed ^ (s->id_counter++ * 0xd1342543de82ef95ULL);
	uint64_t a = splitmix64(&x), b = splitmix64(&x);

	snprintf(out, n, "%s%016llx%016llx", prefix, (unsigned long long)a,
	         (unsigned long long)b);
}

/* ---- Output. ---- */

static void conn_close(struct conn *c);
static void process_input(struct conn *c);
static void maybe_start_step(struct server *s);

static size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_off;
}

static void update_idle(struct conn *c)
{
	if (c->s->opt.keep_alive_s > 0 && !c->job && c->in.len == 0 &&
	    out_pending(c) == 0 && !c->close_after_write) {
		c->idle_w.repeat = c->s->opt.keep_alive_s;
		ev_timer_again(c->s->loop, &c->idle_w);
	} else {
		ev_timer_stop(c->s->loop, &c->idle_w);
	}
}

/* 0: all sent or waiting for POLLOUT; -1: the connection must close. */
static int conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off,
		                 c->out.len - c->out_off, MSG_NOSIGNAL);

		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (out_pending(c) > MAX_OUT_BYTES)
				return -1;
			ev_io_start(c->s->loop, &c->ww);
			return 0;
		}
		return -1;
	}
	dbk_buf_reset(&c->out);
	c->out_off = 0;
	ev_io_stop(c->s->loop, &c->ww);
	if (c->close_after_write)
		return -1;
	return 0;
}

/* Flushes, closes when due, and serves pipelined requests. Never called
 * while the engine is delivering events (see mark_pending). */
static void conn_kick(struct conn *c)
{
	if (c->out.oom || conn_flush(c) != 0) {
		conn_close(c);
		return;
	}
	if (!c->job && !c->close_after_write && c->in.len > 0)
		process_input(c);
	else
		update_idle(c);
}

/* During engine delivery connections are only written to; the flush and
 * anything that may close them waits until the step is fully reported. */
static void mark_pending(struct conn *c)
{
	if (c->pending)
		return;
	c->pending = true;
	c->pending_next = c->s->pending;
	c->s->pending = c;
}

static void process_pending(struct server *s)
{
	struct conn *c;

	while ((c = s->pending) != NULL) {
		s->pending = c->pending_next;
		c->pending = false;
		conn_kick(c);
	}
}

static void send_head(struct conn *c, int status, const char *ctype,
                      long long content_length, bool keep_alive,
                      int minor, const char *extra)
{
	dbk_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nX-Served-By: %s\r\n", status,
	               dbk_http_reason(status), c->s->opt.name);
	if (ctype)
		dbk_buf_printf(&c->out, "Content-Type: %s\r\n", ctype);
	if (content_length >= 0)
		dbk_buf_printf(&c->out, "Content-Length: %lld\r\n",
		               content_length);
	if (extra)
		dbk_buf_adds(&c->out, extra);
	if (!keep_alive)
		dbk_buf_adds(&c->out, "Connection: close\r\n");
	else if (minor == 0)
		dbk_buf_adds(&c->out, "Connection: keep-alive\r\n");
	dbk_buf_adds(&c->out, "\r\n");
}

static void respond(struct conn *c, int status, const char *ctype,
                    const char *body, size_t n, bool keep_alive, int minor,
                    bool head_only, const char *extra)
{
	send_head(c, status, ctype, (long long)n, keep_alive, minor, extra);
	if (!head_only)
		dbk_buf_add(&c->out, body, n);
	if (!keep_alive)
		c->close_after_write = true;
}

static void respond_error(struct conn *c, int status, const char *type,
                          const char *msg, bool keep_alive, int minor)
{
	struct dbk_buf *t = &c->s->tmp;

	dbk_buf_reset(t);
	dbk_api_error_json(t, status, type, msg);
	respond(c, status, "application/json", t->p, t->len, keep_alive, minor,
	        false, NULL);
}

static void respond_detail(struct conn *c, int status, const char *detail,
                           bool keep_alive, int minor, const char *extra)
{
	struct dbk_buf *t = &c->s->tmp;

	dbk_buf_reset(t);
	dbk_api_detail_json(t, detail);
	respond(c, status, "application/json", t->p, t->len, keep_alive, minor,
	        false, extra);
}

static void send_stream_data(struct conn *c, const struct job *j,
                             const char *p, size_t n)
{
	if (j->chunked)
		dbk_buf_printf(&c->out, "%zx\r\n", n);
	dbk_buf_add(&c->out, p, n);
	if (j->chunked)
		dbk_buf_add(&c->out, "\r\n", 2);
}

/* ---- Jobs. ---- */

static void job_free(struct job *j, bool abort_engine)
{
	uint32_t i;

	if (abort_engine)
		for (i = 0; i < j->req.n_prompts; i++)
			if (!j->ch[i].done)
				dbk_engine_abort(j->c->s->eng, j->ch[i].handle);
	free(j);
}

static void job_finish(struct job *j)
{
	struct conn *c = j->c;
	struct server *s = c->s;
	struct dbk_buf *t = &s->tmp;
	uint32_t comp[DBK_API_MAX_PROMPTS];
	uint64_t comp_total = 0;
	uint32_t i;

	for (i = 0; i < j->req.n_prompts; i++) {
		comp[i] = j->ch[i].n_out;
		comp_total += comp[i];
	}
	dbk_buf_reset(t);
	if (j->req.stream) {
		if (j->req.include_usage) {
			dbk_api_sse_usage(t, &j->resp, j->prompt_total,
			                  comp_total);
			send_stream_data(c, j, t->p, t->len);
			dbk_buf_reset(t);
		}
		dbk_api_sse_done(t);
		send_stream_data(c, j, t->p, t->len);
		if (j->chunked)
			dbk_buf_adds(&c->out, "0\r\n\r\n");
		if (!j->keep_alive)
			c->close_after_write = true;
	} else {
		dbk_api_full_response(t, &j->resp, j->req.n_prompts, comp,
		                      j->prompt_total);
		respond(c, 200, "application/json", t->p, t->len, j->keep_alive,
		        j->chunked ? 1 : 0, false, NULL);
	}
	if (s->opt.verbose)
		logmsg(s, "%s done: %u prompt(s), %llu prompt tokens, %llu "
		          "output tokens",
		       j->id, j->req.n_prompts,
		       (unsigned long long)j->prompt_total,
		       (unsigned long long)comp_total);
	c->job = NULL;
	job_free(j, false);
	if (!c->reading && !c->close_after_write) {
		c->reading = true;
		ev_io_start(s->loop, &c->rw);
	}
}

static void on_engine_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct server *s = ctx;
	struct choice *ch = ev->cookie;
	struct job *j = ch->job;
	struct conn *c = j->c;
	struct dbk_buf *t = &s->tmp;

	switch (ev->type) {
	case DBK_ENGINE_EV_TOKEN:
		ch->n_out = ev->n_output;
		if (!j->first_seen) {
			/* In model seconds, like every latency the stub
			 * shows (vLLM observes it at the first output of
			 * the request). */
			j->first_seen = true;
			dbk_prom_observe(&s->ttft, (ev_now(s->loop) - j->arrived) *
			                           s->opt.time_scale);
		}
		if (j->req.stream) {
			dbk_buf_reset(t);
			/* vLLM sends the chat role with the first output. */
			if (j->req.kind == DBK_API_CHAT && !ch->started)
				dbk_api_sse_role(t, &j->resp, ch->index);
			dbk_api_sse_token(t, &j->resp, ch->index,
			                  ev->n_output >= ev->max_output_tokens);
			send_stream_data(c, j, t->p, t->len);
		}
		ch->started = true;
		break;
	case DBK_ENGINE_EV_FINISHED:
		ch->done = true;
		if (++j->n_done == j->req.n_prompts)
			job_finish(j);
		break;
	case DBK_ENGINE_EV_PREEMPTED:
		if (s->opt.verbose)
			logmsg(s, "%s choice %u preempted after %u tokens",
			       j->id, ch->index, ev->n_output);
		break;
	}
	mark_pending(c);
}

static void start_job(struct conn *c, enum dbk_api_kind kind,
                      const struct dbk_http_request *hr)
{
	struct server *s = c->s;
	struct dbk_api_request ar;
	struct dbk_api_error err;
	struct job *j;
	uint32_t i;

	if (dbk_api_parse_request(kind, hr->body.p, hr->body.n, &s->api, &ar,
	                          &err) != 0) {
		dbk_api_request_free(&ar);
		respond_error(c, err.status, err.type, err.message,
		              hr->keep_alive, hr->minor_version);
		if (s->opt.verbose)
			logmsg(s, "%s: %d %s", c->peer, err.status, err.message);
		return;
	}
	j = calloc(1, sizeof(*j) + ar.n_prompts * sizeof(j->ch[0]));
	if (!j) {
		dbk_api_request_free(&ar);
		respond_error(c, 500, "InternalServerError", "out of memory",
		              false, hr->minor_version);
		return;
	}
	j->c = c;
	j->req = ar;
	j->req.keys = NULL; /* the engine copies what it needs */
	j->arrived = ev_now(s->loop);
	j->keep_alive = hr->keep_alive;
	j->chunked = hr->minor_version == 1;
	if (ar.stream && !j->chunked)
		j->keep_alive = false; /* the close marks the end */
	make_id(s, j->id, sizeof(j->id),
	        kind == DBK_API_CHAT ? "chatcmpl-" : "cmpl-");
	j->resp.kind = kind;
	j->resp.id = j->id;
	j->resp.created = (long long)time(NULL);
	j->resp.model = s->opt.model;
	for (i = 0; i < ar.n_prompts; i++) {
		int rc;

		j->ch[i].job = j;
		j->ch[i].index = i;
		rc = dbk_engine_submit_keys(s->eng, ar.prompt_tokens[i],
		                            ar.keys ? ar.keys + ar.key_off[i]
		                                    : NULL,
		                            ar.n_keys[i], ar.max_tokens[i],
		                            &j->ch[i], &j->ch[i].handle);
		if (rc != DBK_ENGINE_OK) {
			uint32_t k;

			for (k = 0; k < i; k++)
				dbk_engine_abort(s->eng, j->ch[k].handle);
			free(j);
			dbk_api_request_free(&ar);
			/* The API check mirrors the engine's, so only memory
			 * can fail here. */
			respond_error(c, 500, "InternalServerError",
			              "engine refused the request", false,
			              hr->minor_version);
			return;
		}
		j->prompt_total += ar.prompt_tokens[i];
	}
	dbk_api_request_free(&ar);
	c->job = j;
	if (ar.stream)
		send_head(c, 200, "text/event-stream; charset=utf-8", -1,
		          j->keep_alive, hr->minor_version,
		          j->chunked ? "Transfer-Encoding: chunked\r\n" : NULL);
	if (s->opt.verbose)
		logmsg(s, "%s %s: %u prompt(s), prompt tokens %u, max_tokens %u%s",
		       c->peer, j->id, ar.n_prompts, ar.prompt_tokens[0],
		       ar.max_tokens[0], ar.stream ? ", stream" : "");
	maybe_start_step(s);
}

/* ---- Routing. ---- */

static void serve_metrics(struct conn *c, const struct dbk_http_request *hr,
                          bool head_only)
{
	struct server *s = c->s;
	struct dbk_engine_stats st;
	struct dbk_prom_stats m;

	if (s->opt.metrics_fault == FAULT_HANG)
		return; /* the client times out; the idle timer never runs */
	if (s->opt.metrics_fault == FAULT_GARBAGE) {
		static const char junk[] = "vllm:num_requests_running{engine=\"0\" 3\n<html>\n";

		respond(c, 200, "text/plain", junk, sizeof(junk) - 1, hr->keep_alive,
		        hr->minor_version, head_only, NULL);
		return;
	}
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
	m.ttft = &s->ttft;
	m.block_size = DBK_KV_BLOCK_TOKENS;
	m.num_gpu_blocks = st.kv_blocks_total;
	m.enable_prefix_caching = dbk_engine_prefix_caching(s->eng);
	dbk_buf_reset(&s->tmp);
	dbk_prom_render(&s->tmp, &m);
	respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", s->tmp.p,
	        s->tmp.len, hr->keep_alive, hr->minor_version, head_only, NULL);
}

static void handle_request(struct conn *c, const struct dbk_http_request *hr)
{
	struct server *s = c->s;
	struct dbk_http_slice path = hr->target;
	const char *q = memchr(path.p, '?', path.n);
	bool get = dbk_http_slice_eq(hr->method, "GET");
	bool head = dbk_http_slice_eq(hr->method, "HEAD");
	bool post = dbk_http_slice_eq(hr->method, "POST");
	bool ka = hr->keep_alive;
	int minor = hr->minor_version;

	if (q)
		path.n = (size_t)(q - path.p);

	if (dbk_http_slice_eq(path, "/health")) {
		if (!get && !head)
			goto not_allowed_get;
		respond(c, 200, NULL, "", 0, ka, minor, head, NULL);
	} else if (dbk_http_slice_eq(path, "/v1/models")) {
		char perm[64];

		if (!get && !head)
			goto not_allowed_get;
		make_id(s, perm, sizeof(perm), "modelperm-");
		dbk_buf_reset(&s->tmp);
		dbk_api_models_json(&s->tmp, s->opt.model,
		                    (uint32_t)s->opt.max_model_len, s->started,
		                    perm);
		respond(c, 200, "application/json", s->tmp.p, s->tmp.len, ka,
		        minor, head, NULL);
	} else if (dbk_http_slice_eq(path, "/metrics")) {
		if (!get && !head)
			goto not_allowed_get;
		serve_metrics(c, hr, head);
	} else if (dbk_http_slice_eq(path, "/version")) {
		static const char v[] = "{\"version\":\"" STUB_VERSION
		                        "-stub\"}";

		if (!get && !head)
			goto not_allowed_get;
		respond(c, 200, "application/json", v, sizeof(v) - 1, ka, minor,
		        head, NULL);
	} else if (dbk_http_slice_eq(path, "/v1/completions") ||
	           dbk_http_slice_eq(path, "/v1/chat/completions")) {
		if (!post) {
			respond_detail(c, 405, "Method Not Allowed", ka, minor,
			               "Allow: POST\r\n");
			return;
		}
		start_job(c,
		          path.n == strlen("/v1/completions")
		                  ? DBK_API_COMPLETION
		                  : DBK_API_CHAT,
		          hr);
	} else {
		respond_detail(c, 404, "Not Found", ka, minor, NULL);
	}
	return;

not_allowed_get:
	respond_detail(c, 405, "Method Not Allowed", ka, minor,
	               "Allow: GET\r\n");
}

/* Serves the complete requests buffered on c, one at a time: a request
 * in the engine holds the connection until its response is written. */
static void process_input(struct conn *c)
{
	struct server *s = c->s;
	int served = 0;

	while (!c->job && !c->close_after_write && c->in.len > 0 &&
	       served < MAX_REQUESTS_PER_PASS) {
		struct dbk_http_request hr;
		enum dbk_http_result r;

		r = dbk_http_parse(c->in.p, c->in.len, &s->lim, &hr);
		if (r == DBK_HTTP_INCOMPLETE) {
			if (hr.head_len && hr.expect_continue &&
			    !c->continue_sent) {
				dbk_buf_adds(&c->out,
				             "HTTP/1.1 100 Continue\r\n\r\n");
				c->continue_sent = true;
			}
			break;
		}
		if (r == DBK_HTTP_ERROR) {
			if (s->opt.verbose)
				logmsg(s, "%s: bad request: %d %s", c->peer,
				       hr.status, hr.error);
			respond_error(c, hr.status, "BadRequestError", hr.error,
			              false, 1);
			break;
		}
		c->continue_sent = false;
		handle_request(c, &hr);
		dbk_buf_consume(&c->in, hr.total_len);
		served++;
	}
	if (c->close_after_write && c->reading) {
		/* Nothing more will be read on a closing connection. */
		c->reading = false;
		ev_io_stop(s->loop, &c->rw);
	}
	if (c->out.oom || conn_flush(c) != 0) {
		conn_close(c);
		return;
	}
	if (served == MAX_REQUESTS_PER_PASS && !c->job && c->in.len > 0)
		mark_pending(c); /* more pipelined requests: next pass */
	update_idle(c);
}

/* ---- Connections. ---- */

static void conn_close(struct conn *c)
{
	struct server *s = c->s;

	if (c->job) {
		job_free(c->job, true);
		c->job = NULL;
	}
	if (c->pending) {
		struct conn **pp = &s->pending;

		while (*pp && *pp != c)
			pp = &(*pp)->pending_next;
		if (*pp)
			*pp = c->pending_next;
	}
	ev_io_stop(s->loop, &c->rw);
	ev_io_stop(s->loop, &c->ww);
	ev_timer_stop(s->loop, &c->idle_w);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	dbk_buf_free(&c->in);
	dbk_buf_free(&c->out);
	free(c);
	if (s->accept_paused) {
		s->accept_paused = false;
		ev_timer_stop(s->loop, &s->resume_w);
		ev_io_start(s->loop, &s->accept_w);
	}
}

static size_t in_limit(const struct server *s)
{
	return s->lim.max_head_bytes + s->lim.max_body_bytes;
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;
	struct server *s = c->s;
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < MAX_READS_PER_CB; i++) {
		size_t room;
		ssize_t n;

		/* One byte past the limit is enough for the parser to refuse
		 * the request. */
		if (c->in.len > in_limit(s))
			break;
		room = in_limit(s) + 1 - c->in.len;
		if (room > READ_CHUNK)
			room = READ_CHUNK;
		if (!dbk_buf_reserve(&c->in, room)) {
			conn_close(c);
			return;
		}
		n = recv(c->fd, c->in.p + c->in.len, room, 0);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->in.p[c->in.len] = 0;
			if ((size_t)n < room)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		/* EOF or error: the client is gone, and so is its request
		 * (vLLM aborts on disconnect too). */
		if (s->opt.verbose && c->job)
			logmsg(s, "%s: client disconnected, aborting %s",
			       c->peer, c->job->id);
		conn_close(c);
		maybe_start_step(s);
		return;
	}
	if (!c->job) {
		process_input(c);
	} else if (c->in.len > in_limit(s)) {
		/* Pipelined data piles up behind a running request. */
		c->reading = false;
		ev_io_stop(s->loop, &c->rw);
	}
	process_pending(s);
	maybe_start_step(s);
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;
	struct server *s = c->s;

	(void)loop;
	(void)revents;
	conn_kick(c);
	process_pending(s);
	maybe_start_step(s);
}

static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;

	(void)loop;
	(void)revents;
	if (!c->job && c->in.len == 0 && out_pending(c) == 0)
		conn_close(c); /* uvicorn's keep-alive timeout */
}

static void resume_accept_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct server *s = w->data;

	(void)revents;
	if (s->accept_paused) {
		s->accept_paused = false;
		ev_io_start(loop, &s->accept_w);
	}
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct server *s = w->data;
	int i;

	(void)revents;
	for (i = 0; i < MAX_ACCEPTS_PER_CB; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct conn *c;
		int fd, one = 1;

		fd = accept(s->lfd, (struct sockaddr *)&ss, &sl);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: wait for a close (or a
				 * second) rather than spin on a ready socket. */
				logmsg(s, "accept: %s; pausing", strerror(errno));
				s->accept_paused = true;
				ev_io_stop(loop, &s->accept_w);
				ev_timer_set(&s->resume_w, 1.0, 0);
				ev_timer_start(loop, &s->resume_w);
			}
			return;
		}
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
		    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
			close(fd);
			continue;
		}
		/* Each SSE event must leave when produced, not wait for
		 * Nagle. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->s = s;
		c->fd = fd;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
			snprintf(c->peer, sizeof(c->peer), "%s:%u", ip,
			         ntohs(a->sin_port));
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			char ip[INET6_ADDRSTRLEN];

			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			snprintf(c->peer, sizeof(c->peer), "[%s]:%u", ip,
			         ntohs(a->sin6_port));
		}
		ev_io_init(&c->rw, read_cb, fd, EV_READ);
		ev_io_init(&c->ww, write_cb, fd, EV_WRITE);
		ev_init(&c->idle_w, idle_cb);
		c->rw.data = c->ww.data = c->idle_w.data = c;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
		c->reading = true;
		ev_io_start(loop, &c->rw);
		update_idle(c);
	}
}

/* ---- Engine clock. ---- */

static void maybe_start_step(struct server *s)
{
	double d, now, start;

	if (s->stepping)
		return;
	d = dbk_engine_begin_step(s->eng);
	if (d <= 0) {
		s->busy = false;
		return;
	}
	now = ev_now(s->loop);
	start = now;
	if (s->busy) {
		double lag = now - s->deadline;

		if (lag > s->max_lag_s)
			s->max_lag_s = lag;
		if (lag <= MAX_STEP_LAG_S)
			start = s->deadline;
		else
			s->late_steps++;
	}
	s->deadline = start + d / s->opt.time_scale;
	ev_timer_set(&s->step_w, fmax(0.0, s->deadline - now), 0.0);
	ev_timer_start(s->loop, &s->step_w);
	s->stepping = true;
	s->busy = true;
}

static void step_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct server *s = w->data;

	(void)loop;
	(void)revents;
	s->stepping = false;
	s->in_delivery = true;
	dbk_engine_end_step(s->eng, on_engine_event, s);
	s->in_delivery = false;
	process_pending(s);
	maybe_start_step(s);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct server *s = w->data;

	(void)revents;
	logmsg(s, "signal %d, shutting down", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* ---- Start-up. ---- */

static void usage(FILE *f)
{
	fprintf(f,
	"Usage: vllm-stub [options]\n"
	"A stand-in for one vLLM OpenAI API server: the same endpoints and\n"
	"JSON, tokens paced by a model of vLLM's V1 scheduler on one GPU.\n"
	"\n"
	"  --host ADDR                  address to bind (default 127.0.0.1)\n"
	"  --port N                     TCP port, 0 = any free one (default 8000)\n"
	"  --name NAME                  X-Served-By header and log tag\n"
	"                               (default vllm-stub)\n"
	"  --model NAME                 served model name (default stub-model)\n"
	"  --max-model-len N            context length (default 131072)\n"
	"  --max-num-batched-tokens N   token budget per step (default: 8192\n"
	"                               on h100, 2048 on a100)\n"
	"  --max-num-seqs N             running requests at most (default:\n"
	"                               1024 on h100, 256 on a100)\n"
	"  --kv-capacity-tokens N       KV cache size in tokens (default 430000)\n"
	"  --gpu h100|a100              performance profile (default h100)\n"
	"  --time-scale F               model clock speed-up: 10 = ten times\n"
	"                               faster than real time (default 1)\n"
	"  --keep-alive-timeout S       close idle connections after S seconds,\n"
	"                               0 = never (default 5, as uvicorn)\n"
	"  --no-prefix-caching          as vLLM's flag: no prefix cache (on by\n"
	"                               default, as in vLLM V1)\n"
	"  --metrics-fault hang|garbage for tests: /metrics never answers, or\n"
	"                               answers with what is not Prometheus\n"
	"  --verbose                    log every request\n"
	"  --help, --version\n"
	"\n"
	"Prints \"vllm-stub NAME listening on HOST:PORT ...\" on stdout once\n"
	"ready. SIGTERM or SIGINT stops it (exit 0).\n");
}

static int bad_flag(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "vllm-stub: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\nTry 'vllm-stub --help'.\n");
	return 2;
}

static bool printable(const char *s, size_t max, bool allow_space)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch > 0x7e || ch < 0x20 || (ch == ' ' && !allow_space))
			return false;
	}
	return true;
}

enum {
	OPT_HOST = 256, OPT_PORT, OPT_NAME, OPT_MODEL, OPT_MAX_MODEL_LEN,
	OPT_MAX_BATCHED, OPT_MAX_SEQS, OPT_KV, OPT_GPU, OPT_TIME_SCALE,
	OPT_KEEP_ALIVE, OPT_NO_PC, OPT_VERBOSE, OPT_HELP, OPT_VERSION,
	OPT_METRICS_FAULT,
};

/* 0 run, 1 exit 0 (help/version), 2 bad usage. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"host", required_argument, NULL, OPT_HOST},
		{"port", required_argument, NULL, OPT_PORT},
		{"name", required_argument, NULL, OPT_NAME},
		{"model", required_argument, NULL, OPT_MODEL},
		{"max-model-len", required_argument, NULL, OPT_MAX_MODEL_LEN},
		{"max-num-batched-tokens", required_argument, NULL,
		 OPT_MAX_BATCHED},
		{"max-num-seqs", required_argument, NULL, OPT_MAX_SEQS},
		{"kv-capacity-tokens", required_argument, NULL, OPT_KV},
		{"gpu", required_argument, NULL, OPT_GPU},
		{"time-scale", required_argument, NULL, OPT_TIME_SCALE},
		{"keep-alive-timeout", required_argument, NULL, OPT_KEEP_ALIVE},
		{"no-prefix-caching", no_argument, NULL, OPT_NO_PC},
		{"metrics-fault", required_argument, NULL, OPT_METRICS_FAULT},
		{"verbose", no_argument, NULL, OPT_VERBOSE},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	struct dbk_engine_config ec;
	char err[200];
	long long v;
	int ch;

	o->host = "127.0.0.1";
	o->port = 8000;
	o->name = "vllm-stub";
	o->model = "stub-model";
	o->gpu = dbk_gpu_profile_find("h100");
	o->max_model_len = 131072;
	o->max_num_batched_tokens = -1;
	o->max_num_seqs = -1;
	o->kv_capacity_tokens = -1;
	o->time_scale = 1.0;
	o->keep_alive_s = 5.0;
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (ch) {
		case OPT_HOST:
			if (!printable(optarg, 255, false))
				return bad_flag("bad --host '%s'%s", optarg, "");
			o->host = optarg;
			break;
		case OPT_PORT:
			if (!dbk_parse_ll(optarg, 0, 65535, &v))
				return bad_flag("--port wants 0..65535, not "
				                "'%s'%s", optarg, "");
			o->port = (unsigned)v;
			break;
		case OPT_NAME:
			if (!printable(optarg, 128, false))
				return bad_flag("--name wants 1..128 visible ASCII "
				                "characters, not '%s'%s", optarg,
				                "");
			o->name = optarg;
			break;
		case OPT_MODEL:
			if (!printable(optarg, 256, true))
				return bad_flag("--model wants 1..256 printable "
				                "ASCII characters, not '%s'%s",
				                optarg, "");
			o->model = optarg;
			break;
		case OPT_MAX_MODEL_LEN:
			if (!dbk_parse_ll(optarg, 2, DBK_ENGINE_MAX_MODEL_LEN_LIMIT,
			                  &o->max_model_len))
				return bad_flag("--max-model-len wants an integer "
				                ">= 2, not '%s'%s", optarg, "");
			break;
		case OPT_MAX_BATCHED:
			if (!dbk_parse_ll(optarg, 1, DBK_ENGINE_MAX_MODEL_LEN_LIMIT,
			                  &o->max_num_batched_tokens))
				return bad_flag("--max-num-batched-tokens wants a "
				                "positive integer, not '%s'%s",
				                optarg, "");
			break;
		case OPT_MAX_SEQS:
			if (!dbk_parse_ll(optarg, 1, DBK_ENGINE_MAX_SEQS_LIMIT,
			                  &o->max_num_seqs))
				return bad_flag("--max-num-seqs wants a positive "
				                "integer, not '%s'%s", optarg, "");
			break;
		case OPT_KV:
			if (!dbk_parse_ll(optarg, 16, (long long)1 << 40,
			                  &o->kv_capacity_tokens))
				return bad_flag("--kv-capacity-tokens wants an "
				                "integer >= 16, not '%s'%s", optarg,
				                "");
			break;
		case OPT_GPU:
			o->gpu = dbk_gpu_profile_find(optarg);
			if (!o->gpu)
				return bad_flag("--gpu wants h100 or a100, not "
				                "'%s'%s", optarg, "");
			break;
		case OPT_TIME_SCALE:
			if (!dbk_parse_double(optarg, 1e-3, 1e6, &o->time_scale))
				return bad_flag("--time-scale wants a number in "
				                "0.001..1e6, not '%s'%s", optarg, "");
			break;
		case OPT_KEEP_ALIVE:
			if (!dbk_parse_double(optarg, 0, 86400, &o->keep_alive_s))
				return bad_flag("--keep-alive-timeout wants "
				                "seconds in 0..86400, not '%s'%s",
				                optarg, "");
			break;
		case OPT_NO_PC:
			o->no_prefix_caching = true;
			break;
		case OPT_METRICS_FAULT:
			if (strcmp(optarg, "hang") == 0)
				o->metrics_fault = FAULT_HANG;
			else if (strcmp(optarg, "garbage") == 0)
				o->metrics_fault = FAULT_GARBAGE;
			else
				return bad_flag("--metrics-fault wants hang or garbage, "
				                "not '%s'%s", optarg, "");
			break;
		case OPT_VERBOSE:
			o->verbose = true;
			break;
		case OPT_HELP:
			usage(stdout);
			return 1;
		case OPT_VERSION:
			printf("vllm-stub %s\n", STUB_VERSION);
			return 1;
		case ':':
			return bad_flag("option '%s' needs a value%s",
			                argv[optind - 1], "");
		default:
			return bad_flag("unknown option '%s'%s",
			                argv[optind - 1], "");
		}
	}
	if (optind < argc)
		return bad_flag("unexpected argument '%s'%s", argv[optind], "");
	if (o->max_num_batched_tokens < 0)
		o->max_num_batched_tokens = o->gpu->default_max_num_batched_tokens;
	if (o->max_num_seqs < 0)
		o->max_num_seqs = o->gpu->default_max_num_seqs;
	if (o->kv_capacity_tokens < 0)
		o->kv_capacity_tokens =
			(long long)o->gpu->default_kv_capacity_tokens;
	ec.gpu = o->gpu;
	ec.max_model_len = (uint32_t)o->max_model_len;
	ec.max_num_batched_tokens = (uint32_t)o->max_num_batched_tokens;
	ec.max_num_seqs = (uint32_t)o->max_num_seqs;
	ec.kv_capacity_tokens = (uint64_t)o->kv_capacity_tokens;
	ec.enable_prefix_caching = !o->no_prefix_caching;
	if (dbk_engine_config_check(&ec, err, sizeof(err)) != 0)
		return bad_flag("%s%s", err, "");
	return 0;
}

static int listen_on(struct server *s, unsigned *bound_port)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[16];
	int fd = -1, rc, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", s->opt.port);
	rc = getaddrinfo(s->opt.host, port, &hints, &res);
	if (rc != 0) {
		logmsg(s, "cannot resolve --host %s: %s", s->opt.host,
		       gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, SOMAXCONN) == 0)
			break;
		logmsg(s, "cannot listen on %s:%s: %s", s->opt.host, port,
		       strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return -1;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		close(fd);
		return -1;
	}
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		*bound_port = s->opt.port;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
			if (ss.ss_family == AF_INET)
				*bound_port = ntohs(
					((struct sockaddr_in *)&ss)->sin_port);
			else if (ss.ss_family == AF_INET6)
				*bound_port = ntohs(
					((struct sockaddr_in6 *)&ss)->sin6_port);
		}
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct server s;
	struct dbk_engine_config ec;
	struct dbk_engine_stats st;
	sigset_t stop_sigs;
	unsigned port = 0;
	int rc;

	/* Hold SIGTERM/SIGINT until the loop's watchers exist, so that a
	 * supervisor stopping us right after start still gets a clean exit;
	 * they are unblocked once the watchers are installed. */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &stop_sigs, NULL);
	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &s.opt);
	if (rc != 0)
		return rc == 1 ? 0 : 2;

	signal(SIGPIPE, SIG_IGN);
	ec.gpu = s.opt.gpu;
	ec.max_model_len = (uint32_t)s.opt.max_model_len;
	ec.max_num_batched_tokens = (uint32_t)s.opt.max_num_batched_tokens;
	ec.max_num_seqs = (uint32_t)s.opt.max_num_seqs;
	ec.kv_capacity_tokens = (uint64_t)s.opt.kv_capacity_tokens;
	ec.enable_prefix_caching = !s.opt.no_prefix_caching;
	s.eng = dbk_engine_new(&ec);
	if (!s.eng) {
		logmsg(&s, "cannot create the engine (out of memory?)");
		return 1;
	}
	s.api.model = s.opt.model;
	s.api.max_model_len = ec.max_model_len;
	s.api.keys = ec.enable_prefix_caching;
	s.lim.max_head_bytes = MAX_HEAD_BYTES;
	s.lim.max_body_bytes = (size_t)ec.max_model_len * 8;
	if (s.lim.max_body_bytes < MIN_BODY_BYTES)
		s.lim.max_body_bytes = MIN_BODY_BYTES;
	s.started = (long long)time(NULL);
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		s.created = (double)now.tv_sec + now.tv_nsec * 1e-9;
	}
	s.id_seed = ((uint64_t)s.started << 20) ^ (uint64_t)getpid() ^
	            ((uint64_t)(uintptr_t)&s);

	s.loop = ev_default_loop(EVFLAG_AUTO);
	if (!s.loop) {
		logmsg(&s, "cannot initialise libev");
		dbk_engine_free(s.eng);
		return 1;
	}
	s.lfd = listen_on(&s, &port);
	if (s.lfd < 0) {
		dbk_engine_free(s.eng);
		return 1;
	}
	ev_io_init(&s.accept_w, accept_cb, s.lfd, EV_READ);
	s.accept_w.data = &s;
	ev_io_start(s.loop, &s.accept_w);
	ev_init(&s.step_w, step_cb);
	s.step_w.data = &s;
	ev_init(&s.resume_w, resume_accept_cb);
	s.resume_w.data = &s;
	ev_signal_init(&s.sigint_w, signal_cb, SIGINT);
	ev_signal_init(&s.sigterm_w, signal_cb, SIGTERM);
	s.sigint_w.data = s.sigterm_w.data = &s;
	ev_signal_start(s.loop, &s.sigint_w);
	ev_signal_start(s.loop, &s.sigterm_w);
	sigprocmask(SIG_UNBLOCK, &stop_sigs, NULL);

	printf("vllm-stub %s listening on %s:%u (model %s, gpu %s, "
	       "time-scale %g, max-model-len %u, max-num-batched-tokens %u, "
	       "max-num-seqs %u, kv-capacity-tokens %llu, prefix caching "
	       "%s)\n",
	       s.opt.name, s.opt.host, port, s.opt.model, s.opt.gpu->name,
	       s.opt.time_scale, ec.max_model_len, ec.max_num_batched_tokens,
	       ec.max_num_seqs, (unsigned long long)ec.kv_capacity_tokens,
	       ec.enable_prefix_caching ? "on" : "off");
	fflush(stdout);

	ev_run(s.loop, 0);

	while (s.conns)
		conn_close(s.conns);
	dbk_engine_get_stats(s.eng, &st);
	logmsg(&s, "served %llu requests (%llu aborted), %llu steps, model "
	           "busy %.3f s, %llu preemptions, %llu late steps (max lag "
	           "%.1f ms)",
	       (unsigned long long)st.requests_finished,
	       (unsigned long long)st.requests_aborted,
	       (unsigned long long)st.steps_total, st.busy_time_s,
	       (unsigned long long)st.preemptions_total,
	       (unsigned long long)s.late_steps, s.max_lag_s * 1e3);
	ev_io_stop(s.loop, &s.accept_w);
	ev_timer_stop(s.loop, &s.step_w);
	ev_timer_stop(s.loop, &s.resume_w);
	ev_signal_stop(s.loop, &s.sigint_w);
	ev_signal_stop(s.loop, &s.sigterm_w);
	close(s.lfd);
	dbk_buf_free(&s.tmp);
	dbk_engine_free(s.eng);
	ev_loop_destroy(s.loop);
	return 0;
}
