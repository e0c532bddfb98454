/* The stub's server: one libev loop owns the engine, the listening socket
 * and every connection; these are the types its parts share.
 *
 *   conn.c    connections: accept, read, write, keep-alive, pipelining
 *   reply.c   HTTP responses and SSE framing into a connection's output
 *   routes.c  the route table: path and method to a handler
 *   jobs.c    an OpenAI request in the engine, and the engine's events
 *   pacer.c   the engine's clock: steps on an ev_timer, at model speed
 *
 * A connection is written to while the engine reports a step, but never
 * flushed or closed then: it is queued on `pending` and kicked once the
 * step is fully reported (dbk_stub_kick_pending), so an event never finds
 * its connection freed under it. */
#ifndef DBK_STUB_SERVER_H
#define DBK_STUB_SERVER_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/http1.h"
#include "lib/list.h"
#include "lib/conn.h"
#include "lib/listener.h"
#include "api.h"
#include "loras.h"
#include "model/engine.h"
#include "opts.h"
#include "prom.h"

struct dbk_stub_conn;

/* One choice (one prompt of a batch) of a job, named in the engine by
 * handle; the engine's events carry a pointer to it as their cookie. */
struct dbk_stub_choice {
	struct dbk_stub_job *job;
	uint32_t index;
	uint64_t handle;
	uint32_t n_out;
	double last_token_at; /* ev_now of its latest token */
	bool started;
	bool done;
};

/* One OpenAI request in flight on a connection. */
struct dbk_stub_job {
	struct dbk_stub_conn *c;
	struct dbk_api_request req;
	struct dbk_api_resp resp;
	char id[64];
	bool keep_alive;
	bool chunked; /* HTTP/1.1: chunked stream; 1.0: close-delimited */
	uint32_t n_done;
	uint64_t prompt_total;
	double arrived; /* ev_now when parsed: vLLM's arrival_time */
	struct dbk_stub_choice ch[];
};

struct dbk_stub_conn {
	struct dbk_conn conn;
	struct dbk_stub_server *s;
	/* Responses written while the engine reports a step (reply.c),
	 * handed to the conn when it is kicked. */
	struct dbk_buf out;
	struct dbk_stub_job *job;
	bool close_after_write;
	bool continue_sent;
	/* The chunked body of the next request, decoded in place in
	 * conn.in across reads (the parser re-reads only the head). */
	bool req_body_started;
	struct dbk_http_body req_body;
	struct dbk_list link;         /* in s->conns */
	struct dbk_list pending_link; /* in s->pending, or detached */
	char peer[64];
};

struct dbk_stub_server {
	struct ev_loop *loop;
	struct dbk_stub_opts opt;
	struct dbk_engine *eng;
	struct dbk_api_config api;
	struct dbk_http_limits lim;
	struct dbk_listener_set listeners;
	ev_timer step_w;
	bool stepping, busy;
	double deadline;
	struct dbk_list conns;
	struct dbk_list pending;
	uint64_t id_seed, id_counter;
	long long started;
	struct dbk_buf tmp;           /* scratch for one response body */
	struct dbk_buf pad;           /* --metrics-fault huge|many-series: made once */
	struct dbk_prom_outcomes out; /* the request histograms of /metrics */
	double created;               /* unix seconds, the counters' _created */
	uint64_t late_steps;
	double max_lag_s;
	int sleep_level;     /* vLLM's sleep mode: 0 awake, 1 or 2 */
	uint64_t fault_seen; /* completions met by --completion-fault */
	/* --enable-lora: the adapters served, and scratch for the metric's
	 * label values and the engine's counts. */
	struct dbk_stub_loras loras;
	struct dbk_buf lora_running, lora_waiting;
	/* Every adapter the engine knows came from the registry. */
	struct dbk_engine_lora_count lora_counts[DBK_STUB_LORA_MAX];
};

/* conn.c */
void dbk_stub_accept(void *arg, int fd);
void dbk_stub_conn_close(struct dbk_stub_conn *c);
/* Defers c's flush (and possible close) until the step is reported. */
void dbk_stub_mark_pending(struct dbk_stub_conn *c);
void dbk_stub_kick_pending(struct dbk_stub_server *s);
/* Resumes reading on c after its job ended, unless it is closing. */
void dbk_stub_conn_resume(struct dbk_stub_conn *c);

/* reply.c: each appends to c->out; a response without keep-alive marks
 * the connection to close once written. */
void dbk_stub_send_head(struct dbk_stub_conn *c, int status, const char *ctype,
                        long long content_length, bool keep_alive, int minor, const char *extra);
void dbk_stub_respond(struct dbk_stub_conn *c, int status, const char *ctype, const char *body,
                      size_t n, bool keep_alive, int minor, bool head_only, const char *extra);
void dbk_stub_respond_error(struct dbk_stub_conn *c, int status, const char *type, const char *msg,
                            bool keep_alive, int minor);
/* FastAPI's {"detail": ...} (404, 405), with extra header lines. */
void dbk_stub_respond_detail(struct dbk_stub_conn *c, int status, const char *detail,
                             bool keep_alive, int minor, const char *extra);
/* One SSE event: a chunk on HTTP/1.1, raw bytes on close-delimited 1.0. */
void dbk_stub_send_stream_data(struct dbk_stub_conn *c, bool chunked, const char *p, size_t n);

/* faults.c: sleep mode and --completion-fault. */
void dbk_stub_serve_sleep(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only);
void dbk_stub_serve_wake_up(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                            bool head_only);
void dbk_stub_serve_is_sleeping(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                                bool head_only);
void dbk_stub_serve_fault(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                          bool head_only);
/* Answers a completion the engine must not take (asleep: 503; a fault:
 * its status) and returns true, or returns false to serve it. */
bool dbk_stub_refuse_completion(struct dbk_stub_conn *c, const struct dbk_http_request *hr);

/* Logs (lib/log, at debug level: --verbose) a request answered with an
 * error status instead of being served. */
void dbk_stub_log_refusal(const struct dbk_stub_server *s, const char *peer, int status,
                          const char *why);

/* routes.c */
void dbk_stub_route(struct dbk_stub_conn *c, const struct dbk_http_request *hr);

/* jobs.c */
void dbk_stub_make_id(struct dbk_stub_server *s, char *out, size_t n, const char *prefix);
void dbk_stub_start_job(struct dbk_stub_conn *c, enum dbk_api_kind kind,
                        const struct dbk_http_request *hr);
/* Frees j; with abort_engine its unfinished choices leave the engine. */
void dbk_stub_job_free(struct dbk_stub_job *j, bool abort_engine);
void dbk_stub_on_engine_event(void *ctx, const struct dbk_engine_event *ev);

/* lora_serve.c */
/* --lora-modules into the engine, the API's adapter lookup; -1 (logged)
 * when a module is refused. */
int dbk_stub_lora_start(struct dbk_stub_server *s);
/* After an engine step: vllm:lora_requests_info's label set. */
void dbk_stub_lora_record(struct dbk_stub_server *s);
void dbk_stub_serve_load_lora(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                              bool head_only);
void dbk_stub_serve_unload_lora(struct dbk_stub_conn *c, const struct dbk_http_request *hr,
                                bool head_only);

/* pacer.c */
void dbk_stub_pacer_init(struct dbk_stub_server *s);
/* Schedules the next engine step if there is work and none is due. */
void dbk_stub_maybe_step(struct dbk_stub_server *s);

#endif
