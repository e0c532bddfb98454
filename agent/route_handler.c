#include "route_handler.h"

#include <string.h>
#include <time.h>

#include "lib/log.h"

static const double notify_bounds[] = {
	1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3, 1e-2,
};

static void log_refused(struct dbk_route_handler *h, const struct dbk_route_event *e)
{
	char idq[DBK_BAL_MAX_ID_LEN + 1];

	if (e->now_ms - h->refused_logged_ms < 1000 && h->refused_logged_ms != 0) {
		h->refused_unlogged++;
		return;
	}
	dbk_log(DBK_LOG_WARN, "route-refused",
	        "id=\"%s\" reason=\"%s\" effect=\"HAProxy balances it alone\" "
	        "unlogged_since_last=%llu",
	        dbk_log_quote(idq, sizeof(idq), (const char *)e->id, e->id_len),
	        dbk_bal_result_str(e->res), (unsigned long long)h->refused_unlogged);
	h->refused_logged_ms = e->now_ms;
	h->refused_unlogged = 0;
}

static void on_decision(void *arg, const struct dbk_route_event *e)
{
	struct dbk_route_handler *h = arg;
	char idq[DBK_BAL_MAX_ID_LEN + 1];

	if (e->res == DBK_BAL_ENDED)
		return; /* its client left before we decided: normal */
	if (e->shed) {
		/* Sheds come in floods too: /metrics counts them by class and
		 * reason; one line each only at debug. */
		if (dbk_log_get_level() <= DBK_LOG_DEBUG)
			dbk_log(DBK_LOG_DEBUG, "route-shed",
			        "id=\"%s\" class=%s reason=%s retry_after_s=%d",
			        dbk_log_quote(idq, sizeof(idq), (const char *)e->id, e->id_len),
			        dbk_class_name(e->cls), dbk_shed_reason_name(e->admit->why),
			        e->admit->retry_after_s);
		return;
	}
	if (e->res != DBK_BAL_OK) {
		log_refused(h, e);
		return;
	}
	if (e->model)
		dbk_model_counts_add(&h->models, e->model, e->model_len);
	if (dbk_log_get_level() > DBK_LOG_DEBUG)
		return;
	/* %.10g spells the score as the txn variable does. */
	dbk_log(DBK_LOG_DEBUG, "route",
	        "id=\"%s\" bytes=%.0f max_tokens=%g bucket=%u group=%u server=%s score=%.10g "
	        "p=%.6f",
	        dbk_log_quote(idq, sizeof(idq), (const char *)e->id, e->id_len), e->req->body_bytes,
	        e->req->max_tokens, e->d->std_bucket, e->d->group, e->route->names[e->d->server],
	        e->d->score, e->d->p);
}

static enum dbk_spop_status on_notify(void *arg, const struct dbk_spop_frame *f,
                                      struct dbk_spop_writer *w)
{
	struct dbk_route_handler *h = arg;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	enum dbk_spop_status st = dbk_route_notify(h->route, f,
	                                           (uint64_t)t0.tv_sec * 1000 +
	                                                   (uint64_t)t0.tv_nsec / 1000000,
	                                           w);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dbk_histo_add(&h->notify_seconds,
	              (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
	return st;
}

struct dbk_spop_handler dbk_route_handler_init(struct dbk_route_handler *h, struct dbk_route *r)
{
	h->route = r;
	h->refused_logged_ms = 0;
	h->refused_unlogged = 0;
	memset(&h->models, 0, sizeof(h->models));
	dbk_histo_init(&h->notify_seconds, notify_bounds,
	               sizeof(notify_bounds) / sizeof(notify_bounds[0]));
	dbk_route_handler_watch(h, r);
	return (struct dbk_spop_handler){ .notify = on_notify, .arg = h };
}

void dbk_route_handler_watch(struct dbk_route_handler *h, struct dbk_route *r)
{
	r->on_decision = on_decision;
	r->decision_arg = h;
}
