/* The run's phases (HELLO, the measured run, the drain, the hold and the
 * release of completion lines), their timers and signals, and the one
 * result line. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "load.h"

static double secs(uint64_t ns) { return (double)ns / 1e9; }

uint64_t dbk_load_error_count(const struct dbk_load_errors *e)
{
	return e->connect + e->hello + e->bad_frames + e->unmatched + e->no_server +
	       e->disconnects + e->closed + e->lost;
}

static void print_result(struct dbk_load *L)
{
	const struct dbk_load_errors *e = &L->err;
	uint64_t errors = dbk_load_error_count(e);
	double el = L->t_end > L->t_start ? secs(L->t_end - L->t_start) : 0;

	printf("result connections=%d depth=%d body_bytes=%lld release=%s seconds=%.3f "
	       "decisions=%" PRIu64 " rate=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f "
	       "max_us=%.1f mean_us=%.1f errors=%" PRIu64 " connect=%" PRIu64 " hello=%" PRIu64
	       " bad_frames=%" PRIu64 " unmatched=%" PRIu64 " no_server=%" PRIu64
	       " disconnects=%" PRIu64 " closed=%" PRIu64 " lost=%" PRIu64 " sent=%" PRIu64
	       " acked=%" PRIu64 "%s\n",
	       L->o.connections, L->o.depth, L->o.body_bytes,
	       !L->o.release ? "no"
	       : L->o.defer  ? "deferred"
	                     : "yes",
	       el, L->decided_window, el > 0 ? (double)L->decided_window / el : 0.0,
	       dbk_spb_lat_quantile(L->lat, 0.50) / 1e3, dbk_spb_lat_quantile(L->lat, 0.90) / 1e3,
	       dbk_spb_lat_quantile(L->lat, 0.99) / 1e3, (double)L->lat->max_ns / 1e3,
	       L->lat->count ? L->lat->sum_ns / (double)L->lat->count / 1e3 : 0.0, errors,
	       e->connect, e->hello, e->bad_frames, e->unmatched, e->no_server, e->disconnects,
	       e->closed, e->lost, L->sent, L->acked, L->timed_out ? " timed_out=1" : "");
	fflush(stdout);
}

void dbk_load_end_run(struct dbk_load *L)
{
	L->t_end = dbk_load_now_ns();
	L->phase = PH_DRAIN;
	ev_timer_stop(L->loop, &L->deadline);
	ev_timer_set(&L->drain, DBK_LOAD_DRAIN_TIMEOUT, 0);
	ev_timer_start(L->loop, &L->drain);
}

static void enter_release(struct dbk_load *L)
{
	L->phase = PH_RELEASE;
	ev_timer_stop(L->loop, &L->drain);
	ev_timer_set(&L->drain, DBK_LOAD_DRAIN_TIMEOUT, 0);
	ev_timer_start(L->loop, &L->drain);
	dbk_load_rel_settle(L);
}

/* The run starts once every connection said HELLO (or failed) and the
 * completion link, if any, is up; with nothing to run on, it ends. */
static void from_hello(struct dbk_load *L)
{
	if (L->nready + L->ndead < (unsigned)L->o.connections ||
	    (L->o.release && L->rel.open && !L->rel.connected))
		return;
	if (L->nready == 0 || (L->o.release && !L->rel.open)) {
		L->t_start = L->t_end = dbk_load_now_ns();
		print_result(L);
		L->phase = PH_END;
		ev_break(L->loop, EVBREAK_ALL);
		return;
	}
	L->phase = PH_RUN;
	L->t_start = dbk_load_now_ns();
	if (L->o.total == 0) {
		ev_timer_set(&L->deadline, L->o.seconds, 0);
		ev_timer_start(L->loop, &L->deadline);
	}
	for (int i = 0; i < L->o.connections; i++)
		dbk_load_conn_kick(&L->conns[i]);
}

/* Once the last ACK is in (or no connection is left): the result, then
 * the hold or the release of the completion lines. */
static void from_drain(struct dbk_load *L)
{
	if (dbk_load_inflight(L) != 0 && L->nready > 0)
		return;
	L->err.lost += dbk_load_inflight(L);
	print_result(L);
	if (L->o.defer && L->rel.open) {
		L->phase = PH_HOLD;
		ev_timer_stop(L->loop, &L->drain);
		printf("holding leases=%" PRIu64 " pid=%d (SIGUSR1 releases them, "
		       "SIGTERM exits without releasing)\n",
		       L->rel.lines, (int)getpid());
		fflush(stdout);
		return;
	}
	enter_release(L);
}

static void from_release(struct dbk_load *L)
{
	if (dbk_load_rel_pending(L))
		return;
	if (L->o.release && L->rel.open)
		printf("released lines=%" PRIu64 "\n", L->rel.lines);
	else if (L->o.release)
		printf("released lines=%" PRIu64 " (completion link lost, the last "
		       "%zu bytes of them unsent)\n",
		       L->rel.lines, L->rel.lost);
	fflush(stdout);
	L->phase = PH_END;
	ev_break(L->loop, EVBREAK_ALL);
}

void dbk_load_advance(struct dbk_load *L)
{
	/* At most one step per phase, so this loop is bounded. */
	for (int step = 0; step < PH_END; step++) {
		enum dbk_load_phase before = L->phase;

		switch (L->phase) {
		case PH_HELLO: from_hello(L); break;
		case PH_RUN:
			if (L->nready == 0 || (L->o.total && L->sent >= (uint64_t)L->o.total &&
			                       dbk_load_inflight(L) == 0))
				dbk_load_end_run(L);
			break;
		case PH_DRAIN: from_drain(L); break;
		case PH_RELEASE: from_release(L); break;
		case PH_HOLD:
		case PH_END: break;
		}
		if (L->phase == before || L->phase == PH_END)
			return;
	}
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_load *L = (struct dbk_load *)((char *)w - offsetof(struct dbk_load, deadline));

	(void)loop;
	(void)revents;
	if (L->phase == PH_RUN) {
		dbk_load_end_run(L);
		dbk_load_advance(L);
	}
}

/* Bounds the drain and the release: what is still owed then is lost. */
static void on_drain(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_load *L = (struct dbk_load *)((char *)w - offsetof(struct dbk_load, drain));

	(void)loop;
	(void)revents;
	if (L->phase == PH_DRAIN) {
		L->err.lost += dbk_load_inflight(L);
		for (int i = 0; i < L->o.connections; i++)
			L->conns[i].inflight = 0;
		dbk_load_advance(L);
	} else if (L->phase == PH_RELEASE) {
		fprintf(stderr, "dbucket-spop-load: %zu bytes of completion lines not written\n",
		        dbk_load_rel_pending(L));
		L->timed_out = true;
		L->phase = PH_END;
		ev_break(L->loop, EVBREAK_ALL);
	}
}

static void on_hard(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_load *L = (struct dbk_load *)((char *)w - offsetof(struct dbk_load, hard));

	(void)revents;
	fprintf(stderr, "dbucket-spop-load: --timeout reached\n");
	L->timed_out = true;
	if (L->phase <= PH_DRAIN) {
		if (L->phase < PH_DRAIN)
			L->t_end = dbk_load_now_ns();
		L->err.lost += dbk_load_inflight(L);
		print_result(L);
	}
	L->phase = PH_END;
	ev_break(loop, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct dbk_load *L = w->data;

	(void)revents;
	if (w->signum == SIGUSR1) {
		if (L->phase == PH_HOLD)
			enter_release(L);
		return;
	}
	/* First SIGINT/SIGTERM ends the run cleanly (and a hold without
	 * releasing); a second one ends everything now. */
	if (L->phase == PH_RUN) {
		dbk_load_end_run(L);
		dbk_load_advance(L);
		return;
	}
	if (L->phase == PH_HELLO || L->phase == PH_DRAIN) {
		L->t_end = L->t_end ? L->t_end : dbk_load_now_ns();
		print_result(L);
	}
	L->phase = PH_END;
	ev_break(loop, EVBREAK_ALL);
}

void dbk_load_phases_init(struct dbk_load *L)
{
	ev_timer_init(&L->deadline, on_deadline, L->o.seconds, 0);
	ev_timer_init(&L->drain, on_drain, DBK_LOAD_DRAIN_TIMEOUT, 0);
	ev_timer_init(&L->hard, on_hard, L->o.timeout, 0);
	ev_timer_start(L->loop, &L->hard);
	ev_signal_init(&L->sigint, on_signal, SIGINT);
	ev_signal_init(&L->sigterm, on_signal, SIGTERM);
	ev_signal_init(&L->sigusr1, on_signal, SIGUSR1);
	L->sigint.data = L->sigterm.data = L->sigusr1.data = L;
	ev_signal_start(L->loop, &L->sigint);
	ev_signal_start(L->loop, &L->sigterm);
	ev_signal_start(L->loop, &L->sigusr1);
}
