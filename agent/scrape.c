/* Two lean HTTP clients per server (lib/http_client: /metrics and
 * /v1/models, each its own keep-alive connection), started by one
 * interval timer (the tick) and ended, when a server does not answer in
 * time, by one deadline timer for all of them. An https:// server has two
 * libcurl fetchers instead (lib/curl_get, one multi handle for the
 * scraper, made at the first such server), which keep their own
 * timeouts and look names up themselves. A server named by a host
 * name is resolved with getaddrinfo_a, so the loop never waits on DNS:
 * once at start, again when scraping it fails (at most every
 * RESOLVE_EVERY_MS), the old address used until a new one comes. */
#define _GNU_SOURCE /* getaddrinfo_a */
#include "scrape.h"

#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/http_client.h"
#include "lib/log.h"
#include "lib/net.h"
#include "lib/url.h"

#define NAME_MAX_LEN 64
#define URL_MAX_LEN 512
/* dbk_scrape_fresh: numbers older than this many intervals (and never
 * less than FRESH_MIN_MS) are not routed on. */
#define FRESH_INTERVALS 5
#define FRESH_MIN_MS 500
/* /v1/models is retried this soon while no length is known. */
#define MODELS_RETRY_MS 1000
/* A host name is looked up again at most this often while its server
 * fails. */
#define RESOLVE_EVERY_MS 5000

enum req_kind { REQ_METRICS, REQ_MODELS };

struct target;

struct req {
	struct target *t;
	enum req_kind kind;
	struct dbk_hc hc;
	struct dbk_buf text;    /* the request's bytes, written once */
	struct dbk_curl_get cg; /* https only */
};

enum target_state { ST_UNKNOWN, ST_DOWN, ST_UP };

struct target {
	struct dbk_scrape *s;
	char name[NAME_MAX_LEN + 1];
	char base[URL_MAX_LEN + 1];
	char host[URL_MAX_LEN + 1], port[8];
	char addr[URL_MAX_LEN + 16]; /* HOST:PORT, for lib/net */
	struct req metrics, models;
	bool tls; /* https://: through cg, not hc */
	uint64_t models_due_ms;
	/* Host names only: the lookup in flight, and when the next may go. */
	bool named, resolving;
	struct addrinfo hints;
	struct gaicb gai;
	uint64_t resolve_due_ms;
	enum target_state state;
	enum dbk_scrape_cause logged_cause;
	uint64_t metrics_due_ms; /* backed off until then */
	struct dbk_scrape_view v;
};

struct dbk_scrape {
	struct ev_loop *loop;
	struct dbk_scrape_config cfg;
	struct dbk_vm_names names;
	ev_timer tick;     /* starts the scrapes */
	ev_timer deadline; /* ends the late ones */
	struct target *t;
	unsigned n;
	struct dbk_curl_ev *curl;    /* made at the first https:// target */
	struct dbk_vm_models models; /* the last /v1/models read, for the callback */
};

const char *dbk_scrape_cause_name(enum dbk_scrape_cause c)
{
	static const char *const names[DBK_SCRAPE_NCAUSES] = {
		"ok",        "transport",   "status", "body-too-large", "too-many-series",
		"malformed", "implausible", "tls",
	};

	return (unsigned)c < DBK_SCRAPE_NCAUSES ? names[c] : "?";
}

/* One log line per change of state (or of cause while down). */
static void set_state(struct target *t, bool ok, const char *why, enum dbk_scrape_cause cause)
{
	enum target_state st = ok ? ST_UP : ST_DOWN;
	char q[200];

	if (st == t->state && (ok || cause == t->logged_cause))
		return;
	t->state = st;
	t->logged_cause = cause;
	if (ok)
		dbk_log(DBK_LOG_INFO, "scrape-up", "server=%s url=%s/metrics", t->name, t->base);
	else
		dbk_log(DBK_LOG_WARN, "scrape-down",
		        "server=%s url=%s/metrics reason=\"%s\" cause=%s fallback=books", t->name,
		        t->base, dbk_log_quote(q, sizeof(q), why, strlen(why)),
		        dbk_scrape_cause_name(cause));
}

/* ---- host names ---- */

static void resolve_start(struct target *t, uint64_t now)
{
	struct gaicb *list[1] = { &t->gai };

	t->resolve_due_ms = now + RESOLVE_EVERY_MS;
	memset(&t->gai, 0, sizeof(t->gai));
	t->gai.ar_name = t->host;
	t->gai.ar_service = t->port;
	t->gai.ar_request = &t->hints;
	t->resolving = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) == 0;
}

/* Whether the lookup in flight is over; NULL when it worked (and the
 * clients have the address), else why not. */
static const char *resolve_poll(struct target *t, char *why, size_t whylen)
{
	int rc = gai_error(&t->gai);
	struct addrinfo *ai = t->gai.ar_result;

	if (rc == EAI_INPROGRESS)
		return "";
	t->resolving = false;
	if (rc == 0 && ai) {
		dbk_hc_set_addr(&t->metrics.hc, ai->ai_addr, ai->ai_addrlen);
		dbk_hc_set_addr(&t->models.hc, ai->ai_addr, ai->ai_addrlen);
	}
	if (ai)
		freeaddrinfo(ai);
	if (rc == 0 && ai)
		return NULL;
	snprintf(why, whylen, "cannot resolve %.120s: %s", t->host,
	         gai_strerror(rc ? rc : EAI_NONAME));
	return why;
}

static void resolve_cancel(struct target *t)
{
	struct gaicb *list[1] = { &t->gai };

	if (!t->resolving)
		return;
	/* The resolver's thread writes into t->gai: wait for it when it
	 * cannot be stopped (shutdown only). */
	if (gai_cancel(&t->gai) == EAI_NOTCANCELED)
		while (gai_error(&t->gai) == EAI_INPROGRESS)
			gai_suspend((const struct gaicb *const *)list, 1, NULL);
	if (gai_error(&t->gai) != EAI_CANCELED && t->gai.ar_result)
		freeaddrinfo(t->gai.ar_result);
	t->resolving = false;
}

/* ---- scrapes ---- */

/* Why a finished request's answer is not usable, or NULL when it is (and
 * then the view is updated); *cause says which kind of failure. */
static const char *take_body(struct req *r, const struct dbk_hc_result *res, char *why,
                             size_t whylen, enum dbk_scrape_cause *cause)
{
	struct target *t = r->t;
	char perr[128];

	*cause = DBK_SCRAPE_TRANSPORT;
	if (!res->status) {
		if (res->too_large)
			*cause = DBK_SCRAPE_BODY_TOO_LARGE;
		return res->error;
	}
	*cause = DBK_SCRAPE_STATUS;
	if (res->status != 200) {
		snprintf(why, whylen, "HTTP status %d", res->status);
		return why;
	}
	if (r->kind == REQ_METRICS) {
		struct dbk_vllm_metrics m;
		int rc = dbk_vm_parse_metrics(&t->s->names, res->body, res->body_len, &m, perr,
		                              sizeof(perr));

		if (rc < 0) {
			*cause = rc == -2 ? DBK_SCRAPE_TOO_MANY_SERIES : DBK_SCRAPE_MALFORMED;
			snprintf(why, whylen, "bad /metrics: %s", perr);
			return why;
		}
		const char *bad = dbk_vllm_metrics_implausible(&m, perr, sizeof(perr));
		if (bad) {
			*cause = DBK_SCRAPE_IMPLAUSIBLE;
			snprintf(why, whylen, "implausible /metrics: %s", bad);
			return why;
		}
		t->v.m = m;
	} else {
		if (dbk_vllm_parse_models(res->body, res->body_len, &t->s->models, perr,
		                          sizeof(perr)) < 0) {
			snprintf(why, whylen, "bad /v1/models: %s", perr);
			return why;
		}
		t->v.max_model_len = t->s->models.max_len;
		t->v.models_known = true;
	}
	*cause = DBK_SCRAPE_OK;
	return NULL;
}

/* A hostile body (too large, too many series) holds its server off,
 * doubling, and so does a failed TLS handshake or certificate (a
 * setting that will not heal by itself, and a handshake costs the loop
 * more than a refused body); a good scrape ends that. */
static void backoff(struct target *t, enum dbk_scrape_cause cause, uint64_t now)
{
	if (cause == DBK_SCRAPE_OK) {
		t->v.backoff_ms = 0;
		return;
	}
	if (cause != DBK_SCRAPE_BODY_TOO_LARGE && cause != DBK_SCRAPE_TOO_MANY_SERIES &&
	    cause != DBK_SCRAPE_TLS)
		return;
	t->v.backoff_ms = t->v.backoff_ms ? 2 * t->v.backoff_ms : DBK_SCRAPE_BACKOFF_MS;
	if (t->v.backoff_ms > DBK_SCRAPE_BACKOFF_MAX_MS)
		t->v.backoff_ms = DBK_SCRAPE_BACKOFF_MAX_MS;
	t->metrics_due_ms = now + t->v.backoff_ms;
}

/* A /metrics or /v1/models scrape is over, why says how (NULL: it
 * worked). */
static void finish(struct dbk_scrape *s, struct target *t, enum req_kind kind, const char *why,
                   enum dbk_scrape_cause cause)
{
	uint64_t now = dbk_mono_ms();

	if (kind == REQ_MODELS) {
		if (why) {
			t->v.models_failures++;
			dbk_log(DBK_LOG_DEBUG, "scrape-models-failed", "server=%s reason=\"%s\"",
			        t->name, why);
		}
		/* Retried soon, unless the server is held off. */
		if (!t->v.max_model_len || !t->v.models_known)
			t->models_due_ms = now + (t->v.backoff_ms > MODELS_RETRY_MS
			                                  ? t->v.backoff_ms
			                                  : MODELS_RETRY_MS);
	} else {
		t->v.scrapes++;
		t->v.up = why == NULL;
		if (why)
			t->v.failures++;
		else
			t->v.ok_ms = now;
		t->v.cause = cause;
		backoff(t, cause, now);
		set_state(t, why == NULL, why, cause);
		/* The name may point elsewhere now. */
		if (why && t->named && !t->resolving && now >= t->resolve_due_ms)
			resolve_start(t, now);
	}
	if (s->cfg.scraped) {
		if (kind == REQ_MODELS && !why)
			t->v.models = &s->models;
		s->cfg.scraped(s->cfg.arg, (unsigned)(t - s->t), &t->v, kind == REQ_METRICS);
		t->v.models = NULL;
	}
}

static void on_done(void *arg, const struct dbk_hc_result *res)
{
	struct req *r = arg;
	char buf[200];
	enum dbk_scrape_cause cause;
	const char *why = take_body(r, res, buf, sizeof(buf), &cause);

	if (r->t->tls && r->cg.tls_failed)
		cause = DBK_SCRAPE_TLS;
	finish(r->t->s, r->t, r->kind, why, cause);
}

/* r is about to go out. */
static void req_sent(struct dbk_scrape *s, const struct req *r, uint64_t now)
{
	if (r->kind != REQ_METRICS)
		return;
	r->t->v.sent_ms = now;
	if (s->cfg.sent)
		s->cfg.sent(s->cfg.arg, (unsigned)(r->t - s->t));
}

static void req_start(struct dbk_scrape *s, struct req *r, uint64_t now)
{
	if (r->t->tls) {
		if (dbk_curl_get_busy(&r->cg))
			return; /* libcurl's timeout will end it */
		req_sent(s, r, now);
		if (dbk_curl_get_start(&r->cg, s->cfg.timeout_ms) < 0)
			finish(s, r->t, r->kind, r->cg.err, DBK_SCRAPE_TRANSPORT);
		return;
	}
	if (r->hc.busy)
		return; /* still in flight: the deadline will end it; never pile up */
	req_sent(s, r, now);
	if (dbk_hc_get(&r->hc, r->text.p, r->text.len, now + (uint64_t)s->cfg.timeout_ms) < 0)
		finish(s, r->t, r->kind, r->hc.err, DBK_SCRAPE_TRANSPORT);
}

/* The earliest deadline of a request in flight, or 0. */
static uint64_t next_deadline(const struct dbk_scrape *s)
{
	uint64_t d = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct dbk_hc *h[2] = { &s->t[i].metrics.hc, &s->t[i].models.hc };

		for (unsigned k = 0; k < 2; k++)
			if (h[k]->busy && (!d || h[k]->deadline_ms < d))
				d = h[k]->deadline_ms;
	}
	return d;
}

static void arm_deadline(struct dbk_scrape *s, uint64_t now)
{
	uint64_t d = next_deadline(s);

	if (!d)
		return;
	/* libev's clock may lag ours by a little: never less than 1 ms. */
	ev_timer_set(&s->deadline, (double)(d > now ? d - now : 1) / 1000.0, 0.0);
	ev_timer_start(s->loop, &s->deadline);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_scrape *s = (struct dbk_scrape *)((char *)w -
	                                             offsetof(struct dbk_scrape, deadline));
	uint64_t now = dbk_mono_ms();

	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < s->n; i++) {
		dbk_hc_expire(&s->t[i].metrics.hc, now);
		dbk_hc_expire(&s->t[i].models.hc, now);
	}
	arm_deadline(s, now);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_scrape *s = (struct dbk_scrape *)((char *)w - offsetof(struct dbk_scrape, tick));
	uint64_t now = dbk_mono_ms();
	char why[200];

	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < s->n; i++) {
		struct target *t = &s->t[i];
		const char *rw;

		if (!t->v.scraped)
			continue;
		if (t->resolving && (rw = resolve_poll(t, why, sizeof(why))) && *rw)
			finish(s, t, REQ_METRICS, rw, DBK_SCRAPE_TRANSPORT);
		else if (t->named && !t->resolving && !dbk_hc_has_addr(&t->metrics.hc) &&
		         now >= t->resolve_due_ms)
			resolve_start(t, now);
		if (!t->tls && !dbk_hc_has_addr(&t->metrics.hc))
			continue; /* first lookup still in flight, or failed */
		if (now >= t->metrics_due_ms)
			req_start(s, &t->metrics, now);
		if (now >= t->models_due_ms) {
			t->models_due_ms = now + (uint64_t)s->cfg.models_every_ms;
			req_start(s, &t->models, now);
		}
	}
	/* One timer for every deadline: they are all this tick's or
	 * earlier ones', so the earliest is already armed while it runs. */
	if (!ev_is_active(&s->deadline))
		arm_deadline(s, now);
}

/* ---- life cycle ---- */

/* https://: the two URLs, each fetched by its own libcurl handle on the
 * scraper's multi handle (made now if it is the first). */
static int target_init_tls(struct target *t, const char *q, size_t ql, char *err, size_t errlen)
{
	struct dbk_scrape *s = t->s;
	struct req *r[2] = { &t->metrics, &t->models };

	/* Room for every server's two connections. */
	if (!s->curl && !(s->curl = dbk_curl_ev_new(s->loop, 2 * (long)s->n, err, errlen)))
		return -1;
	t->tls = true;
	for (unsigned k = 0; k < 2; k++) {
		dbk_buf_printf(&r[k]->text, "%s%s%s%.*s", t->base, k ? "/v1/models" : "/metrics",
		               ql && !k ? "?" : "", k ? 0 : (int)ql, q);
		if (r[k]->text.oom) {
			dbk_errf(err, errlen, "out of memory");
			return -1;
		}
		/* once: see hc.once in target_set. */
		if (dbk_curl_get_init(&r[k]->cg, s->curl, r[k]->text.p, &s->cfg.tls, k == 1,
		                      DBK_SCRAPE_MAX_BODY, on_done, r[k], err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* Takes the host and port of "http[s]://HOST[:PORT][/PATH]" (lib/url)
 * and writes the two requests (their URLs for https). */
static int target_init(struct target *t, const char *url, char *err, size_t errlen)
{
	struct dbk_url u;
	char why[128];

	if (dbk_url_split(url, &u, why, sizeof(why)) < 0) {
		dbk_errf(err, errlen, "%s: want http[s]://HOST[:PORT][/PATH]", url);
		return -1;
	}
	snprintf(t->host, sizeof(t->host), "%s", u.host);
	snprintf(t->port, sizeof(t->port), "%s", u.port);
	snprintf(t->addr, sizeof(t->addr), "%s", u.addr);

	char q[2048];
	size_t ql = dbk_vm_names_query(&t->s->names, q, sizeof(q));
	struct req *r[2] = { &t->metrics, &t->models };

	if (u.https)
		return target_init_tls(t, q, ql, err, errlen);
	for (unsigned k = 0; k < 2; k++) {
		dbk_buf_printf(&r[k]->text,
		               "GET %s%s%s%.*s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
		               "dbucket-spoa\r\n"
		               "Accept: */*\r\n%s\r\n", /* see hc.once */
		               u.path, k ? "/v1/models" : "/metrics", ql && !k ? "?" : "",
		               k ? 0 : (int)ql, q, u.authority, k ? "Connection: close\r\n" : "");
		if (r[k]->text.oom) {
			dbk_errf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

/* Numbers are used at once; a name is looked up in the background. */
static void target_addr(struct target *t)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char err[160];

	if (dbk_net_resolve_numeric(t->addr, &sa, &len, err, sizeof(err)) == 0) {
		dbk_hc_set_addr(&t->metrics.hc, (const struct sockaddr *)&sa, len);
		dbk_hc_set_addr(&t->models.hc, (const struct sockaddr *)&sa, len);
		return;
	}
	t->hints.ai_family = AF_UNSPEC;
	t->hints.ai_socktype = SOCK_STREAM;
	t->hints.ai_flags = AI_NUMERICSERV;
	t->named = true;
	resolve_start(t, dbk_mono_ms());
}

/* Points t at base_url for server name (NULL or "": not scraped).
 * Returns 0, or -1 when the URL is not of a shape scraped (logged). */
static int target_set(struct dbk_scrape *s, struct target *t, const char *name,
                      const char *base_url)
{
	char err[URL_MAX_LEN + 64];
	struct req *r[2] = { &t->metrics, &t->models };

	t->s = s;
	for (unsigned k = 0; k < 2; k++) {
		r[k]->t = t;
		r[k]->kind = k ? REQ_MODELS : REQ_METRICS;
		dbk_hc_init(&r[k]->hc, s->loop, DBK_SCRAPE_MAX_BODY, on_done, r[k]);
	}
	/* /v1/models comes every 10 s by default, past the idle timeout of
	 * vLLM's server (uvicorn: 5 s): a kept connection would only be
	 * found closed at the next fetch, so that one is not kept. */
	t->models.hc.once = true;
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (!base_url || !base_url[0])
		return 0;
	/* A trailing slash would double the one of "/metrics". */
	size_t bl = strlen(base_url);
	while (bl > 0 && base_url[bl - 1] == '/')
		bl--;
	snprintf(t->base, sizeof(t->base), "%.*s", (int)bl, base_url);
	if (target_init(t, t->base, err, sizeof(err)) < 0) {
		dbk_log(DBK_LOG_ERROR, "scrape-url", "server=%s reason=\"%s\"", t->name, err);
		return -1;
	}
	t->v.scraped = true;
	if (!t->tls)
		target_addr(t);
	return 0;
}

/* Stops t's lookups and clients and forgets it. */
static void target_clear(struct target *t)
{
	resolve_cancel(t);
	dbk_hc_free(&t->metrics.hc);
	dbk_hc_free(&t->models.hc);
	dbk_curl_get_free(&t->metrics.cg);
	dbk_curl_get_free(&t->models.cg);
	dbk_buf_free(&t->metrics.text);
	dbk_buf_free(&t->models.text);
	memset(t, 0, sizeof(*t));
}

struct dbk_scrape *dbk_scrape_new(struct ev_loop *loop, const struct dbk_scrape_config *c,
                                  const char *const *names, const char *const *base_urls,
                                  unsigned n)
{
	struct dbk_scrape *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = loop;
	s->cfg = *c;
	s->names = c->names ? *c->names : *dbk_vm_names_default();
	s->cfg.names = &s->names;
	s->n = n;
	s->t = calloc(n ? n : 1, sizeof(*s->t));
	if (!s->t) {
		free(s);
		return NULL;
	}
	ev_timer_init(&s->deadline, on_deadline, 0.0, 0.0);
	if (c->tls.insecure)
		dbk_log(DBK_LOG_WARN, "scrape-insecure",
		        "reason=\"--scrape-insecure: https servers' certificates and names are "
		        "not checked\"");
	for (unsigned i = 0; i < n; i++)
		if (target_set(s, &s->t[i], names[i], base_urls[i]) < 0) {
			dbk_scrape_free(s);
			return NULL;
		}
	/* The first scrape at once, then every interval. */
	ev_timer_init(&s->tick, on_tick, 0.0, (double)c->interval_ms / 1000.0);
	ev_timer_start(loop, &s->tick);
	return s;
}

int dbk_scrape_set(struct dbk_scrape *s, unsigned i, const char *name, const char *base_url)
{
	if (i >= s->n)
		return -1;
	target_clear(&s->t[i]);
	if (target_set(s, &s->t[i], name, base_url) == 0)
		return 0;
	target_clear(&s->t[i]);
	return target_set(s, &s->t[i], name, NULL);
}

void dbk_scrape_free(struct dbk_scrape *s)
{
	if (!s)
		return;
	ev_timer_stop(s->loop, &s->tick);
	ev_timer_stop(s->loop, &s->deadline);
	for (unsigned i = 0; i < s->n; i++)
		target_clear(&s->t[i]);
	dbk_curl_ev_free(s->curl);
	free(s->t);
	free(s);
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
