/* The scraper on a real loop against loopback servers written here: one
 * serves the stub's /metrics fixture, one garbage, one never answers.
 * Checked: good numbers and max_model_len reach the view; garbage,
 * numbers no engine reports and a hang mark a server down (its failures
 * counted, nothing invented); the loop keeps scraping the good server
 * while another hangs (event order, not timing); a server that heals
 * comes back up; a slot retargeted (the backend changed) forgets the
 * old server and scrapes the new one; an https:// server is scraped
 * through lib/curl_get, which is checked alone too (test_curl_get).
 * Bounded: each phase ends on its condition or after PHASE_MAX_S. */
#include <errno.h>
#include <ev.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/net.h"
#include "scrape.h"

#define PHASE_MAX_S 10.0
/* test_curl_get's cap on a body. */
#define CAP_BODY 1000
#define NSRV 3

enum mode { OK, GARBAGE, HANG, IMPLAUSIBLE };

struct srv {
	ev_io accept_w;
	enum mode mode;
	char url[80];
	unsigned requests, accepts;
	char last_metrics[256]; /* the request line of the last /metrics asked */
};

struct conn {
	ev_io w;
	struct srv *srv;
	char buf[4096];
	size_t len;
};

/* Every connection, to close at the end (a hung one never closes). */
#define MAX_CONNS 256
static struct conn *conns[MAX_CONNS];

static void close_conns(struct ev_loop *loop)
{
	for (unsigned i = 0; i < MAX_CONNS && conns[i]; i++) {
		if (conns[i]->w.fd >= 0) {
			ev_io_stop(loop, &conns[i]->w);
			close(conns[i]->w.fd);
		}
		free(conns[i]);
		conns[i] = NULL;
	}
}

static char metrics_body[1 << 17];
static size_t metrics_len;
static const char models[] =
        "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"max_model_len\":4096}]}";

static void reply(int fd, const char *body, size_t len)
{
	char head[128];
	int hl = snprintf(head, sizeof(head),
	                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
	                  "%zu\r\n\r\n",
	                  len);
	/* Loopback and small: a blocking write in the test server is fine. */
	if (write(fd, head, (size_t)hl) < 0 || write(fd, body, len) < 0)
		return;
}

static void say(int fd, const char *s, size_t len)
{
	if (write(fd, s, len) < 0)
		return;
}

/* test_curl_get's paths (/cap/...): a small body, one announced over its
 * cap, one chunked past it, a 404. */
static void answer_cap(int fd, const char *path)
{
	static const char big[] = "HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n";
	static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	static const char missing[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	char chunk[CAP_BODY / 2 + 16];

	if (strncmp(path, "ok ", 3) == 0) {
		reply(fd, "hello", 5);
	} else if (strncmp(path, "big ", 4) == 0) {
		say(fd, big, sizeof(big) - 1); /* refused before any of it is sent */
	} else if (strncmp(path, "chunked ", 8) == 0) {
		int hl = snprintf(chunk, sizeof(chunk), "%x\r\n", (unsigned)(CAP_BODY / 2));

		memset(chunk + hl, 'x', CAP_BODY / 2);
		memcpy(chunk + hl + CAP_BODY / 2, "\r\n", 2);
		say(fd, chunked, sizeof(chunked) - 1);
		for (unsigned k = 0; k < 3; k++)
			say(fd, chunk, (size_t)hl + CAP_BODY / 2 + 2);
		say(fd, "0\r\n\r\n", 5);
	} else {
		say(fd, missing, sizeof(missing) - 1);
	}
}

static void on_conn(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = (struct conn *)w;
	ssize_t n = read(w->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	char *end;

	(void)revents;
	if (n <= 0) {
		ev_io_stop(loop, w);
		close(w->fd);
		w->fd = -1;
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	/* Not HTTP (a TLS hello): refused as an HTTP server does. */
	if (c->len >= 4 && strncmp(c->buf, "GET ", 4) != 0) {
		static const char bad[] = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";

		if (write(w->fd, bad, sizeof(bad) - 1) < 0)
			return;
		ev_io_stop(loop, w);
		close(w->fd);
		w->fd = -1;
		return;
	}
	/* One request at a time per connection: the scraper does not pipeline. */
	while ((end = strstr(c->buf, "\r\n\r\n"))) {
		bool is_models = strstr(c->buf, "/v1/models ") != NULL &&
		                 strstr(c->buf, "/v1/models ") < end;

		c->srv->requests++;
		if (!is_models)
			snprintf(c->srv->last_metrics, sizeof(c->srv->last_metrics), "%.*s",
			         (int)strcspn(c->buf, "\r"), c->buf);
		if (strncmp(c->buf, "GET /cap/", 9) == 0)
			answer_cap(w->fd, c->buf + 9);
		else if (c->srv->mode == OK)
			reply(w->fd, is_models ? models : metrics_body,
			      is_models ? strlen(models) : metrics_len);
		else if (c->srv->mode == GARBAGE)
			reply(w->fd, "this is { not prometheus\n", 25);
		else if (c->srv->mode == IMPLAUSIBLE && is_models)
			reply(w->fd, models, strlen(models));
		else if (c->srv->mode == IMPLAUSIBLE)
			reply(w->fd, "vllm:num_requests_running 1e308\n", 32);
		size_t used = (size_t)(end + 4 - c->buf);
		memmove(c->buf, end + 4, c->len - used + 1);
		c->len -= used;
	}
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct srv *s = (struct srv *)w;
	int fd = accept(w->fd, NULL, NULL);
	struct conn *c = NULL;

	(void)revents;
	if (fd < 0)
		return;
	for (unsigned i = 0; i < MAX_CONNS && fd >= 0; i++)
		if (!conns[i]) {
			conns[i] = c = calloc(1, sizeof(*c));
			break;
		}
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	s->accepts++;
	ev_io_init(&c->w, on_conn, fd, EV_READ);
	ev_io_start(loop, &c->w);
}

static struct srv srv[NSRV];

/* What one of test_curl_get's fetches came to. */
struct got {
	unsigned calls;
	bool in_start, from_start; /* done called from within start */
	int status;
	bool too_large;
	size_t body_len;
	char error[256];
};
static struct got *fetching; /* the fetch phase 7 waits for */
static struct dbk_scrape *sc;
static int phase;
/* The good server's successful scrapes when the hung one first failed. */
static uint64_t ok_scrapes_at_hang_failure;
/* The garbage server's failures when it turned implausible. */
static uint64_t bad_failures_before;

static bool phase_done(void)
{
	if (phase == 2) /* test_named_host_and_path */
		return dbk_scrape_view(sc, 0)->scrapes >= 5;
	if (phase == 3)
		return dbk_scrape_view(sc, GARBAGE)->failures >= bad_failures_before + 2;
	if (phase == 4) /* a slot retargeted (dbk_scrape_set) */
		return dbk_scrape_view(sc, HANG)->scrapes >= 2;
	if (phase == 5) /* test_https_plain_server: TLS refused */
		return dbk_scrape_view(sc, 0)->failures >= 2;
	if (phase == 6) /* ... then the same server at http:// */
		return dbk_scrape_view(sc, 0)->up;
	if (phase == 7) /* test_curl_get: one fetch */
		return fetching->calls > 0;

	const struct dbk_scrape_view *ok = dbk_scrape_view(sc, OK);
	const struct dbk_scrape_view *bad = dbk_scrape_view(sc, GARBAGE);
	const struct dbk_scrape_view *hang = dbk_scrape_view(sc, HANG);

	if (phase == 0) {
		if (hang->failures && !ok_scrapes_at_hang_failure)
			ok_scrapes_at_hang_failure = ok->scrapes - ok->failures;
		return ok->max_model_len && ok->scrapes >= 3 && bad->failures >= 2 &&
		       hang->failures >= 1;
	}
	return bad->up && bad->max_model_len;
}

static void on_check(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	if (phase_done())
		ev_break(loop, EVBREAK_ALL);
}

static void on_give_up(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	fprintf(stderr, "  phase %d: gave up after %.0f s\n", phase, PHASE_MAX_S);
	ev_break(loop, EVBREAK_ALL);
}

static void run_phase(struct ev_loop *loop)
{
	ev_timer check, give_up;

	ev_timer_init(&check, on_check, 0.005, 0.005);
	ev_timer_init(&give_up, on_give_up, PHASE_MAX_S, 0);
	ev_timer_start(loop, &check);
	ev_timer_start(loop, &give_up);
	ev_run(loop, 0);
	ev_timer_stop(loop, &check);
	ev_timer_stop(loop, &give_up);
}

static void on_sent(void *arg, unsigned server)
{
	if (server < NSRV)
		((unsigned *)arg)[server]++;
}

/* Good /metrics answers, and those whose send time (what the policy
 * is given with them) was not set or came after the answer. */
static unsigned answers_ok, answers_unsent;

static void on_scraped(void *arg, unsigned server, const struct dbk_scrape_view *v, bool metrics)
{
	(void)arg;
	(void)server;
	if (!metrics || !v->up)
		return;
	answers_ok++;
	answers_unsent += !(v->sent_ms > 0 && v->sent_ms <= v->ok_ms);
}

static void test_scrape_ok_garbage_hang(void)
{
	unsigned sent[NSRV] = { 0 };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	const char *names[NSRV] = { "ok", "garbage", "hang" };
	const char *urls[NSRV];
	char err[128];
	struct text f = repo_file("contrib/stub/fixtures/vllm-metrics.prom");

	CHECK(f.len > 0 && f.len <= sizeof(metrics_body));
	metrics_len = f.len <= sizeof(metrics_body) ? f.len : 0;
	memcpy(metrics_body, f.s, metrics_len);
	text_free(&f);
	if (!metrics_len)
		return;
	for (unsigned i = 0; i < NSRV; i++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));

		CHECK(fd >= 0);
		if (fd < 0)
			return;
		getsockname(fd, (struct sockaddr *)&sa, &sl);
		snprintf(srv[i].url, sizeof(srv[i].url), "http://127.0.0.1:%u/",
		         (unsigned)ntohs(((struct sockaddr_in *)&sa)->sin_port));
		srv[i].mode = (enum mode)i;
		urls[i] = srv[i].url;
		ev_io_init(&srv[i].accept_w, on_accept, fd, EV_READ);
		ev_io_start(loop, &srv[i].accept_w);
	}
	struct dbk_scrape_config c = { .interval_ms = 20,
		                       .timeout_ms = 300,
		                       .models_every_ms = 10000,
		                       .sent = on_sent,
		                       .scraped = on_scraped,
		                       .arg = sent };
	sc = dbk_scrape_new(loop, &c, names, urls, NSRV);
	CHECK(sc != NULL);
	if (!sc)
		return;

	phase = 0;
	run_phase(loop);
	const struct dbk_scrape_view *v = dbk_scrape_view(sc, OK);
	CHECK(phase_done());
	CHECK(v->up && dbk_scrape_fresh(sc, OK, dbk_mono_ms()));
	/* Each answer's numbers are of a moment after its request went out.
	 * Read at the answer, as the policy reads it: by now the next
	 * request may have gone out. */
	CHECK(answers_ok > 0 && answers_unsent == 0);
	CHECK_NEAR(v->m.running, 3, 0);
	CHECK_NEAR(v->m.gpu_blocks, 26875, 0);
	CHECK_EQ_U(v->max_model_len, 4096);
	v = dbk_scrape_view(sc, GARBAGE);
	CHECK(!v->up && !dbk_scrape_fresh(sc, GARBAGE, dbk_mono_ms()));
	CHECK_EQ_U(v->m.have, 0);
	CHECK_EQ_U(v->max_model_len, 0);
	CHECK(v->models_failures >= 1);
	v = dbk_scrape_view(sc, HANG);
	CHECK(!v->up && v->ok_ms == 0);
	/* A hung request is never stacked: one at a time per server and
	 * kind, so at most (failures + 1) /metrics and as many /v1/models. */
	CHECK(srv[HANG].requests <= 2 * (v->failures + 1));
	/* While the hung request waited out its 300 ms, the good server was
	 * scraped every 20 ms. */
	CHECK(ok_scrapes_at_hang_failure >= 3);
	/* ... over two kept connections, /metrics' and /v1/models'. */
	CHECK_EQ_U(srv[OK].accepts, 2);
	CHECK(srv[OK].requests >= dbk_scrape_view(sc, OK)->scrapes);
	/* Each /metrics answer had its send told first (the hold's window
	 * for completion lines), one at a time. */
	for (unsigned i = 0; i < NSRV; i++) {
		unsigned done = (unsigned)dbk_scrape_view(sc, i)->scrapes;

		CHECK(sent[i] >= done && sent[i] <= done + 1);
	}
	/* The name[] filter of the families read, URL-encoded. */
	CHECK(strncmp(srv[OK].last_metrics, "GET /metrics?name%5B%5D=vllm:num_requests_running&",
	              50) == 0);

	/* The garbage server heals: it comes back up with its numbers. */
	srv[GARBAGE].mode = OK;
	phase = 1;
	run_phase(loop);
	v = dbk_scrape_view(sc, GARBAGE);
	CHECK(v->up && v->m.have == 0x3e7ff && v->max_model_len == 4096);

	struct dbk_buf o;
	dbk_buf_init(&o);
	dbk_scrape_report_metrics(sc, dbk_mono_ms(), &o);
	CHECK(o.p && strstr(o.p, "dbucket_scrape_up{server=\"hang\"} 0\n"));
	CHECK(o.p && strstr(o.p, "dbucket_scrape_up{server=\"ok\"} 1\n"));
	CHECK(o.p && strstr(o.p, "dbucket_vllm_requests_waiting{server=\"ok\"} 4\n"));
	CHECK(o.p && strstr(o.p, "dbucket_vllm_max_model_len{server=\"garbage\"} 4096\n"));
	CHECK(o.p && !strstr(o.p, "dbucket_vllm_requests_waiting{server=\"hang\"}"));
	o.len = 0;
	dbk_scrape_report_state(sc, dbk_mono_ms(), &o);
	CHECK(o.p && strstr(o.p, "\"name\": \"ok\", \"url\": \"http://127.0.0.1:"));
	dbk_buf_free(&o);

	/* Well-formed numbers no engine reports fail the scrape too; the last
	 * good ones stay in the view. */
	srv[GARBAGE].mode = IMPLAUSIBLE;
	bad_failures_before = dbk_scrape_view(sc, GARBAGE)->failures;
	phase = 3;
	run_phase(loop);
	v = dbk_scrape_view(sc, GARBAGE);
	CHECK(v->failures >= bad_failures_before + 2);
	CHECK(!v->up);
	CHECK_NEAR(v->m.running, 3, 0);

	/* The backend changed: the hung server's slot now holds another
	 * server at the good address, garbage's slot is free. The old
	 * numbers and counts go; the new target is scraped. */
	CHECK(dbk_scrape_set(sc, HANG, "moved", srv[OK].url) == 0);
	CHECK(dbk_scrape_set(sc, GARBAGE, "", NULL) == 0);
	v = dbk_scrape_view(sc, GARBAGE);
	CHECK(!v->scraped && v->failures == 0 && v->m.have == 0 && !v->max_model_len);
	phase = 4;
	run_phase(loop);
	v = dbk_scrape_view(sc, HANG);
	CHECK(v->up && v->failures == 0 && v->scrapes >= 2);
	CHECK(strcmp(dbk_scrape_name(sc, HANG), "moved") == 0);
	dbk_buf_init(&o);
	dbk_scrape_report_state(sc, dbk_mono_ms(), &o);
	CHECK(o.p && strstr(o.p, "\"name\": \"moved\"") && !strstr(o.p, "garbage") &&
	      !strstr(o.p, "\"name\": \"\""));
	dbk_buf_free(&o);
	CHECK(dbk_scrape_set(sc, 7, "x", NULL) == -1);

	dbk_scrape_free(sc);
	close_conns(loop);
	for (unsigned i = 0; i < NSRV; i++) {
		ev_io_stop(loop, &srv[i].accept_w);
		close(srv[i].accept_w.fd);
	}
	ev_loop_destroy(loop);
}

/* One server at listen, scraped at url_fmt (its %d: the port) until 5
 * scrapes are done; its /metrics request line must start with want.
 * Returns false, checking nothing, when listen is not available here. */
/* srv[0] (mode OK) listening at listen, on a new loop, its URL
 * url_fmt with its port; NULL when listen is not available here. */
static struct ev_loop *serve_one(const char *listen, const char *url_fmt)
{
	struct ev_loop *loop;
	char err[128], addr[64];
	int fd = dbk_net_listen(listen, err, sizeof(err));
	int port = fd >= 0 ? dbk_net_sockname(fd, false, addr, sizeof(addr)) : -1;

	if (port <= 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	loop = ev_loop_new(EVFLAG_AUTO);
	memset(&srv[0], 0, sizeof(srv[0]));
	snprintf(srv[0].url, sizeof(srv[0].url), url_fmt, port);
	ev_io_init(&srv[0].accept_w, on_accept, fd, EV_READ);
	ev_io_start(loop, &srv[0].accept_w);
	return loop;
}

static void serve_one_end(struct ev_loop *loop)
{
	close_conns(loop);
	ev_io_stop(loop, &srv[0].accept_w);
	close(srv[0].accept_w.fd);
	ev_loop_destroy(loop);
}

static bool scrape_one(const char *listen, const char *url_fmt, const char *want)
{
	struct ev_loop *loop = serve_one(listen, url_fmt);
	const char *names[1] = { "one" };
	const char *urls[1] = { srv[0].url };

	if (!loop)
		return false;
	struct dbk_scrape_config c = { .interval_ms = 20,
		                       .timeout_ms = 300,
		                       .models_every_ms = 10000 };
	sc = dbk_scrape_new(loop, &c, names, urls, 1);
	CHECK(sc != NULL);
	if (sc) {
		phase = 2;
		run_phase(loop);
		const struct dbk_scrape_view *v = dbk_scrape_view(sc, 0);
		CHECK(v->scrapes >= 5 && v->up && v->failures == 0);
		CHECK_EQ_U(v->max_model_len, 4096);
		CHECK(strncmp(srv[0].last_metrics, want, strlen(want)) == 0);
		CHECK_EQ_U(srv[0].accepts, 2);
		dbk_scrape_free(sc);
	}
	serve_one_end(loop);
	return true;
}

/* The loop never waits on a name: it is looked up in the background,
 * and scraping starts when the address comes. A path in the URL
 * prefixes /metrics; a trailing slash is dropped. */
static void test_named_host_and_path(void)
{
	CHECK(scrape_one("localhost:0", "http://localhost:%d/v0/", "GET /v0/metrics?name%5B%5D="));
}

/* An IPv6 literal, as the runtime API's addresses are written. */
static void test_ipv6_literal(void)
{
	if (!scrape_one("[::1]:0", "http://[::1]:%d", "GET /metrics?name%5B%5D="))
		fprintf(stderr, "  no IPv6 loopback here: not checked\n");
}

/* An https:// server (lib/curl_get) that speaks plain HTTP: the handshake
 * fails, the server is down with cause tls (counted, reported, its numbers
 * none); retargeted at http://, the same slot goes to lib/http_client and
 * comes up. What TLS itself does is tests/e2e/https-scrape.bats'. */
static void test_https_plain_server(void)
{
	struct ev_loop *loop = serve_one("127.0.0.1:0", "http://127.0.0.1:%d");
	const char *names[1] = { "tls" };
	const char *urls[1];
	char https[96];

	CHECK(loop != NULL);
	if (!loop)
		return;
	snprintf(https, sizeof(https), "https%.80s", srv[0].url + 4);
	urls[0] = https;
	struct dbk_scrape_config c = { .interval_ms = 20,
		                       .timeout_ms = 3000, /* the first loads the system's CAs */
		                       .models_every_ms = 10000 };
	sc = dbk_scrape_new(loop, &c, names, urls, 1);
	CHECK(sc != NULL);
	if (sc) {
		phase = 5;
		run_phase(loop);
		const struct dbk_scrape_view *v = dbk_scrape_view(sc, 0);
		CHECK(v->failures >= 2 && v->failures == v->scrapes && !v->up);
		CHECK_EQ_U(v->cause, DBK_SCRAPE_TLS);
		CHECK(v->backoff_ms >= DBK_SCRAPE_BACKOFF_MS); /* 1 s, then 2 s */
		CHECK(v->m.have == 0 && v->max_model_len == 0);
		CHECK(strcmp(dbk_scrape_url(sc, 0), https) == 0);
		struct dbk_buf o;
		dbk_buf_init(&o);
		dbk_scrape_report_metrics(sc, dbk_mono_ms(), &o);
		CHECK(o.p && strstr(o.p, "dbucket_scrape_down{server=\"tls\",reason=\"tls\"} 1\n"));
		dbk_buf_free(&o);

		CHECK(dbk_scrape_set(sc, 0, "tls", srv[0].url) == 0);
		phase = 6;
		run_phase(loop);
		CHECK(v->up && v->failures == 0 && v->m.have);
		dbk_scrape_free(sc);
	}
	serve_one_end(loop);
}

/* ---- lib/curl_get over lib/curl_ev, alone ---- */

static void got_done(void *arg, const struct dbk_hc_result *r)
{
	struct got *g = arg;

	g->calls++;
	g->from_start |= g->in_start;
	g->status = r->status;
	g->too_large = r->too_large;
	g->body_len = r->body_len;
	snprintf(g->error, sizeof(g->error), "%s", r->error ? r->error : "");
}

/* Starts g and runs the loop until it is done (bounded: PHASE_MAX_S). */
static void fetch(struct ev_loop *loop, struct dbk_curl_get *g, struct got *got, long timeout_ms)
{
	memset(got, 0, sizeof(*got));
	got->in_start = true;
	CHECK(dbk_curl_get_start(g, timeout_ms) == 0);
	got->in_start = false;
	fetching = got;
	phase = 7;
	run_phase(loop);
	CHECK(!got->from_start);
	CHECK_EQ_U(got->calls, 1);
}

static bool get_init(struct dbk_curl_get *g, struct dbk_curl_ev *m, const char *path, bool once,
                     struct got *got)
{
	char url[128], err[256];

	snprintf(url, sizeof(url), "%s%s", srv[0].url, path);
	if (dbk_curl_get_init(g, m, url, NULL, once, CAP_BODY, got_done, got, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "  %s\n", err);
		return false;
	}
	return true;
}

/* The fetcher alone, over plain http (it takes the URL's scheme, so the
 * caps and the loop glue are checked without a TLS peer): a body arrives
 * whole and two requests share one connection (with once, one each); a
 * status is passed on; a body over the cap is refused by its
 * Content-Length and, chunked, as it passes the cap; a server that never
 * answers is ended by the timeout; done never comes from within start;
 * a second start while busy is refused; a free in flight calls no done. */
static void test_curl_get(void)
{
	struct ev_loop *loop = serve_one("127.0.0.1:0", "http://127.0.0.1:%d");
	char err[128];
	struct dbk_curl_ev *m = loop ? dbk_curl_ev_new(loop, 4, err, sizeof(err)) : NULL;
	struct dbk_curl_get g;
	struct got got;

	CHECK(loop && m);
	if (!m)
		return;
	CHECK(get_init(&g, m, "/cap/ok", false, &got));
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(got.status, 200);
	CHECK_EQ_U(got.body_len, 5);
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(got.body_len, 5);
	CHECK_EQ_U(srv[0].accepts, 1);
	dbk_curl_get_free(&g);

	/* once (on a multi handle of its own: one the multi handle keeps
	 * would be taken once more). */
	struct dbk_curl_ev *m1 = dbk_curl_ev_new(loop, 4, err, sizeof(err));
	unsigned before = srv[0].accepts;
	CHECK(m1 && get_init(&g, m1, "/cap/ok", true, &got));
	fetch(loop, &g, &got, 2000);
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(srv[0].accepts - before, 2);
	dbk_curl_get_free(&g);
	dbk_curl_ev_free(m1);

	CHECK(get_init(&g, m, "/cap/missing", false, &got));
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(got.status, 404);
	CHECK(!got.error[0]);
	dbk_curl_get_free(&g);

	const char *caps[2] = { "/cap/big", "/cap/chunked" };
	for (unsigned k = 0; k < 2; k++) {
		CHECK(get_init(&g, m, caps[k], false, &got));
		fetch(loop, &g, &got, 2000);
		CHECK_EQ_U(got.status, 0);
		CHECK(got.too_large);
		CHECK(strcmp(got.error, "body too large (over 1000 bytes)") == 0);
		dbk_curl_get_free(&g);
	}

	/* A hang: ended by the timeout; a second start meanwhile refused. */
	srv[0].mode = HANG;
	CHECK(get_init(&g, m, "/metrics", false, &got));
	CHECK(dbk_curl_get_start(&g, 100) == 0);
	CHECK(dbk_curl_get_busy(&g));
	CHECK(dbk_curl_get_start(&g, 100) < 0);
	dbk_curl_get_free(&g); /* in flight: no done, nothing left behind */
	CHECK(get_init(&g, m, "/metrics", false, &got));
	fetch(loop, &g, &got, 100);
	CHECK_EQ_U(got.status, 0);
	CHECK(!got.too_large);
	CHECK(strstr(got.error, "timed out") != NULL);
	dbk_curl_get_free(&g);

	dbk_curl_ev_free(m);
	serve_one_end(loop);
}

int main(void)
{
	dbk_log_set_level(DBK_LOG_WARN);
	RUN(test_scrape_ok_garbage_hang);
	RUN(test_named_host_and_path);
	RUN(test_ipv6_literal);
	RUN(test_https_plain_server);
	RUN(test_curl_get);
	return CHECK_DONE();
}
