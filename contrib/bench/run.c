/* dbucket-bench's run: one libev loop owns everything. An ev_timer
 * releases requests at their (scaled) arrival times, the client module
 * runs one connection per request, and each completion lands in the
 * request's result slot; the numbers are computed after the run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Messages a stream may carry beyond max_tokens: chat's role chunk, a
 * final empty chunk; generous so a server's framing never trips it. */
#define STREAM_MSG_SLACK 16

double dbk_bench_arrival_wall(const struct dbk_bench *b, size_t i)
{
	return b->tr.req[i].t / (b->o.slice.rate_factor * b->o.time_scale);
}

static void check_end(struct dbk_bench *b)
{
	if (b->n_done == b->n && !b->stopping) {
		b->t_end = dbk_client_now();
		ev_break(b->loop, EVBREAK_ALL);
	}
}

static void record_failure(struct dbk_bench *b, size_t i, const char *what, int err)
{
	struct dbk_result *r = &b->res[i];

	r->done = true;
	r->ok = false;
	snprintf(r->error, sizeof(r->error), "%s: %s", what, strerror(err));
	b->n_done++;
	b->n_failed++;
}

static void pump(struct dbk_bench *b);

static void on_done(void *ctx, const struct dbk_call_result *cr)
{
	struct dbk_bench_slot *s = ctx;
	struct dbk_bench *b = s->b;
	struct dbk_result *r = &b->res[s->i];
	double F = b->o.time_scale;
	size_t k;

	if (b->stopping) {
		/* Interrupted: neither completed nor failed. */
		free(cr->itl);
		return;
	}
	r->done = true;
	r->status = cr->status;
	r->ok = cr->ok;
	snprintf(r->served_by, sizeof(r->served_by), "%s", cr->served_by);
	if (cr->ok) {
		/* Model time: the server's clock ran F times faster. */
		r->ttft = cr->ttft * F;
		r->e2e = cr->e2e * F;
		r->output_tokens = cr->tokens;
		r->itl = cr->itl;
		r->n_itl = cr->n_itl;
		for (k = 0; k < r->n_itl; k++)
			r->itl[k] *= F;
	} else {
		if (cr->timed_out)
			snprintf(r->error, sizeof(r->error),
			         "timeout after "
			         "%g s",
			         b->o.timeout);
		else
			snprintf(r->error, sizeof(r->error), "%s",
			         cr->error ? cr->error : "failed");
		free(cr->itl);
		b->n_failed++;
	}
	b->n_done++;
	/* A descriptor is free again, maybe a concurrency slot too. */
	b->fd_starved = false;
	pump(b);
	check_end(b);
}

static void pump(struct dbk_bench *b)
{
	while (!b->stopping && !b->fd_starved && b->next_send < b->next_due &&
	       (!b->o.concurrency || b->client.n_calls < (size_t)b->o.concurrency)) {
		size_t i = b->next_send;
		const struct dbk_trace_req *q = &b->tr.req[i];
		struct dbk_req_spec spec;
		int rc;

		memset(&spec, 0, sizeof(spec));
		spec.ep = b->o.endpoint;
		spec.model_json = b->model_json;
		spec.input = q->input;
		spec.output = q->output;
		spec.hash = q->n_hash ? b->tr.hash + q->hash_off : NULL;
		spec.n_hash = q->n_hash;
		spec.index = i;
		spec.session = q->session;
		spec.has_session = q->has_session;
		dbk_request_build(&b->req, &b->body, &b->url, &spec,
		                  b->res[i].prio == DBK_PRIO_NONE ? NULL
		                                                  : b->o.prio.name[b->res[i].prio]);
		if (b->req.oom) {
			dbk_buf_free(&b->req);
			record_failure(b, i, "building the request", ENOMEM);
			b->next_send++;
			continue;
		}
		b->res[i].started = true;
		b->res[i].sent = (dbk_client_now() - b->t_start) * b->o.time_scale;
		rc = dbk_client_start(&b->client, &b->req, (size_t)q->output + STREAM_MSG_SLACK,
		                      on_done, &b->slots[i]);
		if ((rc == -EMFILE || rc == -ENFILE) && b->client.n_calls) {
			/* Out of descriptors: this one goes when a call
			 * ends (its wait shows up as late send). */
			b->res[i].started = false;
			b->fd_starved = true;
			break;
		}
		b->next_send++;
		if (rc != 0)
			record_failure(b, i, "connect", -rc);
	}
}

static void arm_arrivals(struct dbk_bench *b)
{
	double delay;

	if (b->next_due >= b->n || b->stopping)
		return;
	delay = dbk_bench_arrival_wall(b, b->next_due) - (dbk_client_now() - b->t_start);
	ev_timer_set(&b->arrival_w, delay > 0 ? delay : 0, 0);
	ev_timer_start(b->loop, &b->arrival_w);
}

static void arrival_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_bench *b = w->data;
	double now = dbk_client_now() - b->t_start;

	(void)loop;
	(void)revents;
	/* libev may wake a little early; 1 ms of slack avoids a spin of
	 * zero-length timers. */
	while (b->next_due < b->n && dbk_bench_arrival_wall(b, b->next_due) <= now + 1e-3)
		b->next_due++;
	pump(b);
	arm_arrivals(b);
	check_end(b);
}

static void print_progress(const struct dbk_bench *b)
{
	double el = dbk_client_now() - b->t_start;

	fprintf(stderr,
	        "dbucket-bench: %.0f s (model %.0f s): sent %zu/%zu, "
	        "done %zu, failed %zu, in flight %zu\n",
	        el, el * b->o.time_scale, b->next_send, b->n, b->n_done - b->n_failed, b->n_failed,
	        b->client.n_calls);
}

static void progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	print_progress(w->data);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct dbk_bench *b = w->data;

	(void)revents;
	if (b->stopping)
		return;
	fprintf(stderr, "dbucket-bench: signal %d, stopping\n", w->signum);
	b->t_end = dbk_client_now();
	b->stopping = true;
	dbk_client_abort_all(&b->client, "interrupted");
	ev_break(loop, EVBREAK_ALL);
}

void dbk_bench_run(struct dbk_bench *b)
{
	ev_init(&b->arrival_w, arrival_cb);
	b->arrival_w.data = b;
	ev_timer_init(&b->progress_w, progress_cb, 1.0, 1.0);
	b->progress_w.data = b;
	ev_signal_init(&b->sigint_w, signal_cb, SIGINT);
	ev_signal_init(&b->sigterm_w, signal_cb, SIGTERM);
	b->sigint_w.data = b->sigterm_w.data = b;
	ev_signal_start(b->loop, &b->sigint_w);
	ev_signal_start(b->loop, &b->sigterm_w);
	if (b->o.progress)
		ev_timer_start(b->loop, &b->progress_w);

	ev_now_update(b->loop);
	b->t_start = dbk_client_now();
	arrival_cb(b->loop, &b->arrival_w, 0);
	if (b->n_done < b->n)
		ev_run(b->loop, 0);
	if (b->o.progress)
		print_progress(b);
}
