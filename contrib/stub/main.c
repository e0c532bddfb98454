/* vllm-stub: an HTTP server that answers like vLLM's OpenAI API server
 * and paces its tokens with the engine model of engine.c. This file
 * starts and stops it: the command line (opts.c), the engine, the
 * listening socket and the signals; server.h maps the rest. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/net.h"
#include "server.h"

/* h11 (uvicorn, which serves vLLM) refuses heads above 16 KiB. */
#define MAX_HEAD_BYTES (16 * 1024)
/* Enough for a prompt of max-model-len tokens at 4 bytes each, JSON
 * escaping included, with a floor for small models. */
#define MIN_BODY_BYTES (16u * 1024 * 1024)

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	const struct dbk_stub_server *s = w->data;

	(void)revents;
	dbk_log(DBK_LOG_INFO, "stopping", "stub=%s signal=%d", s->opt.name, w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* What the engine's configuration implies for the API and the parser. */
static void derive_limits(struct dbk_stub_server *s)
{
	const struct dbk_engine_config *ec = &s->opt.engine;
	struct timespec now;

	s->api.model = s->opt.model;
	s->api.max_model_len = ec->max_model_len;
	s->api.keys = ec->enable_prefix_caching;
	s->lim.max_head_bytes = MAX_HEAD_BYTES;
	s->lim.chunked = true; /* uvicorn takes chunked bodies */
	s->lim.max_body_bytes = (size_t)ec->max_model_len * 8;
	if (s->lim.max_body_bytes < MIN_BODY_BYTES)
		s->lim.max_body_bytes = MIN_BODY_BYTES;
	s->started = (long long)time(NULL);
	clock_gettime(CLOCK_REALTIME, &now);
	s->created = (double)now.tv_sec + now.tv_nsec * 1e-9;
	dbk_prom_outcomes_init(&s->out, ec->max_model_len);
	s->id_seed = ((uint64_t)s->started << 20) ^ (uint64_t)getpid() ^ ((uint64_t)(uintptr_t)s);
}

/* Binds --host:--port and starts accepting. Returns the bound port (what
 * --port 0 got), or -1 with the reason logged. */
static int start_listening(struct dbk_stub_server *s)
{
	char spec[300], err[256], name[80];
	int fd, port;

	snprintf(spec, sizeof(spec), strchr(s->opt.host, ':') ? "[%s]:%u" : "%s:%u", s->opt.host,
	         s->opt.port);
	fd = dbk_net_listen(spec, err, sizeof(err));
	if (fd < 0) {
		dbk_log(DBK_LOG_ERROR, "listen-failed", "stub=%s error=\"%s\"", s->opt.name, err);
		return -1;
	}
	port = dbk_net_sockname(fd, false, name, sizeof(name));
	dbk_listener_init(&s->listeners, s->loop, "http", dbk_stub_accept, s);
	if (port < 0 || dbk_listener_add(&s->listeners, fd) != 0) {
		dbk_log(DBK_LOG_ERROR, "listen-failed", "stub=%s error=\"%s: not a TCP socket\"",
		        s->opt.name, spec);
		close(fd);
		dbk_listener_close(&s->listeners);
		return -1;
	}
	return port;
}

static void print_ready(const struct dbk_stub_server *s, int port)
{
	const struct dbk_engine_config *ec = &s->opt.engine;

	printf("vllm-stub %s listening on %s:%d (model %s, gpu %s, time-scale %g, max-model-len "
	       "%u, max-num-batched-tokens %u, max-num-seqs %u, kv-capacity-tokens %llu, prefix "
	       "caching %s, scheduling-policy %s%s)\n",
	       s->opt.name, s->opt.host, port, s->opt.model, ec->gpu->name, s->opt.time_scale,
	       ec->max_model_len, ec->max_num_batched_tokens, ec->max_num_seqs,
	       (unsigned long long)ec->kv_capacity_tokens, ec->enable_prefix_caching ? "on" : "off",
	       ec->policy == DBK_ENGINE_PRIORITY ? "priority" : "fcfs",
	       s->opt.enable_lora ? ", lora on" : "");
	fflush(stdout);
}

static void shutdown_server(struct dbk_stub_server *s)
{
	struct dbk_engine_stats st;
	struct dbk_stub_conn *c;

	while ((c = dbk_list_first(&s->conns, struct dbk_stub_conn, link)) != NULL)
		dbk_stub_conn_close(c);
	dbk_engine_get_stats(s->eng, &st);
	/* Late steps: the timer lagged the model clock by more than
	 * MAX_STEP_LAG_S (pacer.c), so the chain restarted at "now". */
	dbk_log(DBK_LOG_INFO, "served",
	        "stub=%s served=%llu aborted=%llu steps=%llu busy_s=%.3f preemptions=%llu "
	        "late_steps=%llu max_lag_ms=%.1f lora_loads=%llu lora_activations=%llu",
	        s->opt.name, (unsigned long long)st.requests_finished,
	        (unsigned long long)st.requests_aborted, (unsigned long long)st.steps_total,
	        st.busy_time_s, (unsigned long long)st.preemptions_total,
	        (unsigned long long)s->late_steps, s->max_lag_s * 1e3,
	        (unsigned long long)st.lora_loads, (unsigned long long)st.lora_activations);
	ev_timer_stop(s->loop, &s->step_w);
	dbk_listener_close(&s->listeners);
	dbk_buf_free(&s->tmp);
	dbk_buf_free(&s->pad);
	dbk_buf_free(&s->lora_running);
	dbk_buf_free(&s->lora_waiting);
	dbk_stub_loras_free(&s->loras);
	dbk_engine_free(s->eng);
}

int main(int argc, char **argv)
{
	static struct dbk_stub_server s;
	ev_signal sigint_w, sigterm_w;
	sigset_t stop_sigs;
	int rc, port;

	/* Hold SIGTERM/SIGINT until the loop's watchers exist, so that a
	 * supervisor stopping us right after start still gets a clean exit. */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &stop_sigs, NULL);
	rc = dbk_stub_parse_args(argc, argv, &s.opt);
	if (rc != 0)
		return rc == 1 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	dbk_log_set_level(s.opt.verbose ? DBK_LOG_DEBUG : DBK_LOG_INFO);
	dbk_list_init(&s.conns);
	dbk_list_init(&s.pending);
	derive_limits(&s);
	s.eng = dbk_engine_new(&s.opt.engine);
	s.loop = ev_default_loop(EVFLAG_AUTO);
	if (!s.eng || !s.loop) {
		dbk_log(DBK_LOG_ERROR, "start-failed", "stub=%s error=\"cannot create the %s\"",
		        s.opt.name, s.eng ? "event loop" : "engine");
		dbk_engine_free(s.eng);
		return 1;
	}
	port = dbk_stub_lora_start(&s) == 0 ? start_listening(&s) : -1;
	if (port < 0) {
		dbk_engine_free(s.eng);
		dbk_stub_loras_free(&s.loras);
		return 1;
	}
	dbk_stub_pacer_init(&s);
	ev_signal_init(&sigint_w, signal_cb, SIGINT);
	ev_signal_init(&sigterm_w, signal_cb, SIGTERM);
	sigint_w.data = sigterm_w.data = &s;
	ev_signal_start(s.loop, &sigint_w);
	ev_signal_start(s.loop, &sigterm_w);
	sigprocmask(SIG_UNBLOCK, &stop_sigs, NULL);
	print_ready(&s, port);

	ev_run(s.loop, 0);

	ev_signal_stop(s.loop, &sigint_w);
	ev_signal_stop(s.loop, &sigterm_w);
	shutdown_server(&s);
	ev_loop_destroy(s.loop);
	return 0;
}
