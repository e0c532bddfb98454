/* lib/curl_get over lib/curl_ev on a real loop, against a loopback server
 * written here, over plain http (the module takes the URL's scheme only,
 * so the caps and the loop glue are checked without a TLS peer; TLS
 * itself is tests/e2e/https-scrape.bats'). Checked: a body arrives whole
 * and two requests share one connection (one with `once` does not); a
 * status is passed on; a body over the cap is refused by its
 * Content-Length and, chunked, as it passes the cap; a server that never
 * answers is ended by the timeout; done never comes from within start; a
 * second start while busy is refused; a free in flight calls no done.
 * Bounded: every wait ends on its condition or after WAIT_MAX_S. */
#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "lib/curl_get.h"
#include "lib/log.h"
#include "lib/net.h"

#define WAIT_MAX_S 10.0
#define MAX_BODY 1000
#define MAX_CONNS 32

/* ---- the server: answers by path ---- */

struct conn {
	ev_io w;
	char buf[2048];
	size_t len;
};

static struct conn *conns[MAX_CONNS];
static unsigned accepts;
static ev_io accept_w;
static int port;

static void say(int fd, const char *s)
{
	/* Loopback and small: a blocking write in the test server is fine. */
	if (write(fd, s, strlen(s)) < 0)
		return;
}

static void answer(int fd, const char *path)
{
	char big[MAX_BODY + 200];

	if (strncmp(path, "/ok ", 4) == 0) {
		say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	} else if (strncmp(path, "/missing ", 9) == 0) {
		say(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	} else if (strncmp(path, "/big ", 5) == 0) {
		/* Announced only: refused before any of it is sent. */
		say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n");
	} else if (strncmp(path, "/chunked ", 9) == 0) {
		say(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
		memset(big, 'x', sizeof(big));
		for (unsigned k = 0; k < 3; k++) {
			char head[16];

			snprintf(head, sizeof(head), "%x\r\n", (unsigned)(MAX_BODY / 2));
			say(fd, head);
			if (write(fd, big, MAX_BODY / 2) < 0)
				return;
			say(fd, "\r\n");
		}
		say(fd, "0\r\n\r\n");
	} /* /hang: nothing */
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
	while ((end = strstr(c->buf, "\r\n\r\n"))) {
		answer(w->fd, c->buf + 4); /* after "GET " */
		size_t used = (size_t)(end + 4 - c->buf);
		memmove(c->buf, end + 4, c->len - used + 1);
		c->len -= used;
	}
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	int fd = accept(w->fd, NULL, NULL);

	(void)revents;
	if (fd < 0)
		return;
	for (unsigned i = 0; i < MAX_CONNS; i++)
		if (!conns[i] && (conns[i] = calloc(1, sizeof(*conns[i])))) {
			accepts++;
			ev_io_init(&conns[i]->w, on_conn, fd, EV_READ);
			ev_io_start(loop, &conns[i]->w);
			return;
		}
	close(fd);
}

static bool server_start(struct ev_loop *loop)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char err[128];
	int fd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));

	if (fd < 0)
		return false;
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
	ev_io_init(&accept_w, on_accept, fd, EV_READ);
	ev_io_start(loop, &accept_w);
	return true;
}

static void server_stop(struct ev_loop *loop)
{
	for (unsigned i = 0; i < MAX_CONNS && conns[i]; i++) {
		if (conns[i]->w.fd >= 0) {
			ev_io_stop(loop, &conns[i]->w);
			close(conns[i]->w.fd);
		}
		free(conns[i]);
		conns[i] = NULL;
	}
	ev_io_stop(loop, &accept_w);
	close(accept_w.fd);
}

/* ---- the client's side ---- */

struct got {
	unsigned calls;
	bool in_start; /* set around dbk_curl_get_start */
	bool from_start;
	int status;
	bool too_large;
	char body[64];
	char error[256];
};

static void on_done(void *arg, const struct dbk_hc_result *r)
{
	struct got *g = arg;

	g->calls++;
	g->from_start |= g->in_start;
	g->status = r->status;
	g->too_large = r->too_large;
	snprintf(g->body, sizeof(g->body), "%.*s", (int)(r->body_len < 63 ? r->body_len : 63),
	         r->body ? r->body : "");
	snprintf(g->error, sizeof(g->error), "%s", r->error ? r->error : "");
}

static void on_check(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	if (((struct got *)w->data)->calls)
		ev_break(loop, EVBREAK_ALL);
}

static void on_give_up(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	fprintf(stderr, "  gave up after %.0f s\n", WAIT_MAX_S);
	ev_break(loop, EVBREAK_ALL);
}

/* Fetches path through g (made for it) and runs the loop until done. */
static void fetch(struct ev_loop *loop, struct dbk_curl_get *g, struct got *got, long timeout_ms)
{
	ev_timer check, give_up;

	memset(got, 0, sizeof(*got));
	got->in_start = true;
	CHECK(dbk_curl_get_start(g, timeout_ms) == 0);
	got->in_start = false;
	ev_timer_init(&check, on_check, 0.002, 0.002);
	check.data = got;
	ev_timer_init(&give_up, on_give_up, WAIT_MAX_S, 0);
	ev_timer_start(loop, &check);
	ev_timer_start(loop, &give_up);
	ev_run(loop, 0);
	ev_timer_stop(loop, &check);
	ev_timer_stop(loop, &give_up);
	CHECK(!got->from_start);
	CHECK_EQ_U(got->calls, 1);
}

static bool init(struct dbk_curl_get *g, struct dbk_curl_ev *m, const char *path, bool once,
                 struct got *got)
{
	char url[128], err[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	if (dbk_curl_get_init(g, m, url, NULL, once, MAX_BODY, on_done, got, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "  %s\n", err);
		return false;
	}
	return true;
}

static void test_curl_get(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	char err[128];
	struct dbk_curl_ev *m = dbk_curl_ev_new(loop, 4, err, sizeof(err));
	struct dbk_curl_get g;
	struct got got;

	CHECK(m != NULL);
	CHECK(server_start(loop));
	if (!m || !port)
		return;

	/* Kept alive: two answers, one connection. */
	CHECK(init(&g, m, "/ok", false, &got));
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(got.status, 200);
	CHECK(strcmp(got.body, "hello") == 0);
	fetch(loop, &g, &got, 2000);
	CHECK(strcmp(got.body, "hello") == 0);
	CHECK_EQ_U(accepts, 1);
	dbk_curl_get_free(&g);

	/* once: a connection per request (on a multi handle of its own: a
	 * connection the multi handle keeps would be taken once more). */
	struct dbk_curl_ev *m1 = dbk_curl_ev_new(loop, 4, err, sizeof(err));
	unsigned before = accepts;
	CHECK(m1 && init(&g, m1, "/ok", true, &got));
	fetch(loop, &g, &got, 2000);
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(accepts - before, 2);
	dbk_curl_get_free(&g);
	dbk_curl_ev_free(m1);

	CHECK(init(&g, m, "/missing", false, &got));
	fetch(loop, &g, &got, 2000);
	CHECK_EQ_U(got.status, 404);
	CHECK(!got.error[0]);
	dbk_curl_get_free(&g);

	const char *caps[2] = { "/big", "/chunked" };
	for (unsigned k = 0; k < 2; k++) {
		CHECK(init(&g, m, caps[k], false, &got));
		fetch(loop, &g, &got, 2000);
		CHECK_EQ_U(got.status, 0);
		CHECK(got.too_large);
		CHECK(strcmp(got.error, "body too large (over 1000 bytes)") == 0);
		dbk_curl_get_free(&g);
	}

	/* A hang: ended by the timeout; a second start meanwhile refused. */
	CHECK(init(&g, m, "/hang", false, &got));
	CHECK(dbk_curl_get_start(&g, 100) == 0);
	CHECK(dbk_curl_get_busy(&g));
	CHECK(dbk_curl_get_start(&g, 100) < 0);
	dbk_curl_get_free(&g); /* in flight: no done, nothing left behind */
	CHECK(init(&g, m, "/hang", false, &got));
	fetch(loop, &g, &got, 100);
	CHECK_EQ_U(got.status, 0);
	CHECK(!got.too_large);
	CHECK(strstr(got.error, "timed out") != NULL);
	if (!strstr(got.error, "timed out"))
		fprintf(stderr, "  error: %s\n", got.error);
	dbk_curl_get_free(&g);

	dbk_curl_ev_free(m);
	server_stop(loop);
	ev_loop_destroy(loop);
}

int main(void)
{
	dbk_log_set_level(DBK_LOG_WARN);
	RUN(test_curl_get);
	return CHECK_DONE();
}
