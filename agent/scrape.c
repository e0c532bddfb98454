/* libcurl's multi-socket API on libev: libcurl tells us which sockets to
 * watch (on_socket) and when to call it back (on_curl_timer); libev tells
 * libcurl which socket is ready (on_io) or that its time came
 * (on_curl_timeout); finished transfers are read from the multi handle
 * (drain). This is the pattern of libcurl's own ev example
 * (docs/examples/evhiperfifo.c), minus its FIFO. */
#include "scrape.h"

#include <curl/curl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/log.h"

#define NAME_MAX_LEN 64
#define URL_MAX_LEN 512
/* dbk_scrape_fresh: numbers older than this many intervals (and never
 * less than FRESH_MIN_MS) are not routed on. */
#define FRESH_INTERVALS 5
#define FRESH_MIN_MS 500
/* /v1/models is retried this soon while no length is known. */
#define MODELS_RETRY_MS 1000

enum req_kind { REQ_METRICS, REQ_MODELS };

struct target;

struct req {
	struct target *t;
	enum req_kind kind;
	CURL *easy;
	struct dbk_buf body;
	bool busy;
	bool too_big;
};

enum target_state { ST_UNKNOWN, ST_DOWN, ST_UP };

struct target {
	struct dbk_scrape *s;
	char name[NAME_MAX_LEN + 1];
	char base[URL_MAX_LEN + 1];
	struct req metrics, models;
	uint64_t models_due_ms;
	enum target_state state;
	struct dbk_scrape_view v;
};

struct dbk_scrape {
	struct ev_loop *loop;
	struct dbk_scrape_config cfg;
	CURLM *multi;
	ev_timer tick;       /* starts the scrapes */
	ev_timer curl_timer; /* libcurl's timeouts */
	struct target *t;
	unsigned n;
};

struct sock {
	ev_io io;
	struct dbk_scrape *s;
};

/* ---- libcurl <-> libev ---- */

static void drain(struct dbk_scrape *s);

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sock *k = (struct sock *)w;
	struct dbk_scrape *s = k->s;
	int fd = w->fd, running;
	int flags = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
	            ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);

	(void)loop;
	/* k may be freed inside (CURL_POLL_REMOVE): nothing of it is used after. */
	curl_multi_socket_action(s->multi, fd, flags, &running);
	drain(s);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct dbk_scrape *s = userp;
	struct sock *k = socketp;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (k) {
			ev_io_stop(s->loop, &k->io);
			free(k);
		}
		return 0;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -1;
		k->s = s;
		ev_init(&k->io, on_io);
		curl_multi_assign(s->multi, fd, k);
	} else {
		ev_io_stop(s->loop, &k->io);
	}
	ev_io_set(&k->io, fd,
	          ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0));
	ev_io_start(s->loop, &k->io);
	return 0;
}

static void on_curl_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_scrape *s = (struct dbk_scrape *)((char *)w -
	                                             offsetof(struct dbk_scrape, curl_timer));
	int running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	drain(s);
}

/* libcurl may not be called back from inside this callback, so even a
 * timeout of 0 goes through the loop. */
static int on_curl_timer(CURLM *m, long ms, void *userp)
{
	struct dbk_scrape *s = userp;

	(void)m;
	ev_timer_stop(s->loop, &s->curl_timer);
	if (ms >= 0) {
		ev_timer_set(&s->curl_timer, (double)ms / 1000.0, 0.0);
		ev_timer_start(s->loop, &s->curl_timer);
	}
	return 0;
}

/* ---- requests ---- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct req *r = arg;
	size_t n = size * nmemb;

	if (r->body.len + n > DBK_SCRAPE_MAX_BODY) {
		r->too_big = true;
		return 0; /* aborts the transfer */
	}
	dbk_buf_add(&r->body, p, n);
	return r->body.oom ? 0 : n;
}

static int req_init(struct dbk_scrape *s, struct target *t, struct req *r, enum req_kind kind)
{
	char url[URL_MAX_LEN + 1024 + 16];

	r->t = t;
	r->kind = kind;
	dbk_buf_init(&r->body);
	r->easy = curl_easy_init();
	if (!r->easy)
		return -1;
	if (kind == REQ_METRICS) {
		char q[1024];

		dbk_vllm_metrics_query(q, sizeof(q));
		snprintf(url, sizeof(url), "%s/metrics?%s", t->base, q);
	} else {
		snprintf(url, sizeof(url), "%s/v1/models", t->base);
	}
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, s->cfg.timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, s->cfg.timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	/* The servers are the backend's, next to us: an http_proxy in the
	 * environment must not reroute the scrapes. */
	curl_easy_setopt(r->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(r->easy, CURLOPT_USERAGENT, "dbucket-spoa");
	return 0;
}

static void req_start(struct dbk_scrape *s, struct req *r)
{
	r->body.len = 0;
	r->body.oom = false;
	r->too_big = false;
	r->busy = curl_multi_add_handle(s->multi, r->easy) == CURLM_OK;
}

/* One log line per change of state. */
static void set_state(struct target *t, bool ok, const char *why)
{
	enum target_state st = ok ? ST_UP : ST_DOWN;
	char q[200];

	if (st == t->state)
		return;
	t->state = st;
	if (ok)
		dbk_log(DBK_LOG_INFO, "scrape-up", "server=%s url=%s/metrics", t->name, t->base);
	else
		dbk_log(DBK_LOG_WARN, "scrape-down",
		        "server=%s url=%s/metrics reason=\"%s\" fallback=books", t->name, t->base,
		        dbk_log_quote(q, sizeof(q), why, strlen(why)));
}

/* Why a finished transfer's body is not usable, or NULL when it is (and
 * then the view is updated). */
static const char *take_body(struct req *r, CURLcode rc, char *why, size_t whylen)
{
	struct target *t = r->t;
	long status = 0;
	char perr[128];

	if (rc != CURLE_OK)
		return r->too_big ? "body too large" : curl_easy_strerror(rc);
	if (r->body.oom)
		return "out of memory";
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(why, whylen, "HTTP status %ld", status);
		return why;
	}
	if (r->kind == REQ_METRICS) {
		struct dbk_vllm_metrics m;

		if (dbk_vllm_parse_metrics(r->body.p, r->body.len, &m, perr, sizeof(perr)) < 0) {
			snprintf(why, whylen, "bad /metrics: %s", perr);
			return why;
		}
		if (!(m.have & (DBK_VM_RUNNING | DBK_VM_WAITING)))
			return "no vllm:num_requests_running or _waiting: not vLLM's /metrics";
		t->v.m = m;
	} else {
		long len;

		if (dbk_vllm_parse_models(r->body.p, r->body.len, &len, perr, sizeof(perr)) < 0) {
			snprintf(why, whylen, "bad /v1/models: %s", perr);
			return why;
		}
		t->v.max_model_len = len;
	}
	return NULL;
}

static void finish(struct dbk_scrape *s, struct req *r, CURLcode rc)
{
	struct target *t = r->t;
	char buf[200];
	const char *why = take_body(r, rc, buf, sizeof(buf));
	uint64_t now = dbk_mono_ms();

	r->busy = false;
	if (r->kind == REQ_MODELS) {
		if (why) {
			t->v.models_failures++;
			dbk_log(DBK_LOG_DEBUG, "scrape-models-failed", "server=%s reason=\"%s\"",
			        t->name, why);
		}
		if (!t->v.max_model_len)
			t->models_due_ms = now + MODELS_RETRY_MS;
	} else {
		t->v.scrapes++;
		t->v.up = why == NULL;
		if (why)
			t->v.failures++;
		else
			t->v.ok_ms = now;
		set_state(t, why == NULL, why);
	}
	if (s->cfg.scraped)
		s->cfg.scraped(s->cfg.arg, (unsigned)(t - s->t), &t->v, r->kind == REQ_METRICS);
}

static void drain(struct dbk_scrape *s)
{
	CURLMsg *msg;
	int left;

	/* Each round takes one message off a finite queue. */
	while ((msg = curl_multi_info_read(s->multi, &left))) {
		struct req *r = NULL;
		CURL *e = msg->easy_handle;
		CURLcode rc = msg->data.result;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
		curl_multi_remove_handle(s->multi, e); /* msg is gone after this */
		if (r)
			finish(s, r, rc);
	}
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_scrape *s = (struct dbk_scrape *)((char *)w - offsetof(struct dbk_scrape, tick));
	uint64_t now = dbk_mono_ms();

	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < s->n; i++) {
		struct target *t = &s->t[i];

		if (!t->v.scraped)
			continue;
		/* Still in flight: the timeout will end it; never pile up. */
		if (!t->metrics.busy)
			req_start(s, &t->metrics);
		if (!t->models.busy && now >= t->models_due_ms) {
			t->models_due_ms = now + (uint64_t)s->cfg.models_every_ms;
			req_start(s, &t->models);
		}
	}
}

/* ---- life cycle ---- */

struct dbk_scrape *dbk_scrape_new(struct ev_loop *loop, const struct dbk_scrape_config *c,
                                  const char *const *names, const char *const *base_urls,
                                  unsigned n)
{
	struct dbk_scrape *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(s);
		return NULL;
	}
	s->loop = loop;
	s->cfg = *c;
	s->n = n;
	s->t = calloc(n ? n : 1, sizeof(*s->t));
	s->multi = curl_multi_init();
	if (!s->t || !s->multi) {
		dbk_scrape_free(s);
		return NULL;
	}
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
	/* Room to keep every server's connections alive between scrapes: by
	 * default the cache holds 4 per easy handle *added*, and ours are
	 * added only while they scrape, so connections were closed and
	 * reopened (measured: one scrape in six paid a TCP handshake). */
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, (long)(2 * n + 4));
	ev_timer_init(&s->curl_timer, on_curl_timeout, 0.0, 0.0);
	for (unsigned i = 0; i < n; i++) {
		struct target *t = &s->t[i];

		t->s = s;
		snprintf(t->name, sizeof(t->name), "%s", names[i]);
		if (!base_urls[i] || !base_urls[i][0])
			continue;
		/* A trailing slash would double the one of "/metrics". */
		size_t bl = strlen(base_urls[i]);
		while (bl > 0 && base_urls[i][bl - 1] == '/')
			bl--;
		snprintf(t->base, sizeof(t->base), "%.*s", (int)bl, base_urls[i]);
		t->v.scraped = true;
		if (req_init(s, t, &t->metrics, REQ_METRICS) < 0 ||
		    req_init(s, t, &t->models, REQ_MODELS) < 0) {
			dbk_scrape_free(s);
			return NULL;
		}
	}
	/* The first scrape at once, then every interval. */
	ev_timer_init(&s->tick, on_tick, 0.0, (double)c->interval_ms / 1000.0);
	ev_timer_start(loop, &s->tick);
	return s;
}

static void req_free(struct dbk_scrape *s, struct req *r)
{
	if (r->easy) {
		if (r->busy)
			curl_multi_remove_handle(s->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	dbk_buf_free(&r->body);
}

void dbk_scrape_free(struct dbk_scrape *s)
{
	if (!s)
		return;
	ev_timer_stop(s->loop, &s->tick);
	for (unsigned i = 0; s->t && i < s->n; i++) {
		req_free(s, &s->t[i].metrics);
		req_free(s, &s->t[i].models);
	}
	/* Closes the kept-alive connections, through on_socket. */
	if (s->multi)
		curl_multi_cleanup(s->multi);
	ev_timer_stop(s->loop, &s->curl_timer);
	free(s->t);
	free(s);
	curl_global_cleanup();
}

unsigned dbk_scrape_count(const struct dbk_scrape *s) { return s->n; }

const struct dbk_scrape_view *dbk_scrape_view(const struct dbk_scrape *s, unsigned i)
{
	return &s->t[i].v;
}

const char *dbk_scrape_name(const struct dbk_scrape *s, unsigned i) { return s->t[i].name; }

const char *dbk_scrape_url(const struct dbk_scrape *s, unsigned i) { return s->t[i].base; }

const struct dbk_scrape_config *dbk_scrape_config(const struct dbk_scrape *s) { return &s->cfg; }

bool dbk_scrape_fresh(const struct dbk_scrape *s, unsigned i, uint64_t now_ms)
{
	const struct dbk_scrape_view *v = &s->t[i].v;
	uint64_t limit = (uint64_t)s->cfg.interval_ms * FRESH_INTERVALS;

	if (limit < FRESH_MIN_MS)
		limit = FRESH_MIN_MS;
	return v->scraped && v->up && v->ok_ms && now_ms - v->ok_ms <= limit;
}
