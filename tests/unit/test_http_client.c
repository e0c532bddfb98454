/* lib/http_client against a loopback server written here, on the same
 * loop: the server answers each request as the test's `answer` says
 * (whole, in two writes, not at all, or by closing). Checked: one
 * connection carries many requests; Content-Length, chunked and
 * until-close bodies; an answer split across reads; a server that closes
 * mid-body, one that never answers (the caller's deadline), a body over
 * the cap, a garbage status line, a refused connect; a kept connection
 * the server dropped is retried once on a new one. Every wait ends on
 * its event or after WAIT_MAX_S. */
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "lib/clock.h"
#include "lib/http_client.h"
#include "lib/net.h"

#define WAIT_MAX_S 5.0
#define MAX_CONNS 16

/* How the server answers: `first` then, after a pause of SPLIT_S
 * (when split is set), `second`; close_after closes the connection once
 * that is written; silent leaves the request unanswered;
 * drop_second closes a connection at its second request unanswered. */
struct answer {
	const char *first, *second;
	bool close_after, silent, drop_second;
};
#define SPLIT_S 0.02

struct conn {
	ev_io w;
	ev_timer later;
	char buf[2048];
	size_t len;
	unsigned requests;
};

static struct ev_loop *loop;
static ev_io accept_w;
static struct conn *conns[MAX_CONNS];
static unsigned accepts;
static struct answer answer;
static struct sockaddr_in srv_addr;

static struct dbk_hc hc;
static struct dbk_hc_result got;
static char got_body[8192], got_error[160];
static unsigned dones;
/* The answer's bytes read while the second half of a split answer was still held. */
static size_t in_len_between;

static void conn_close(struct conn *c)
{
	ev_timer_stop(loop, &c->later);
	if (c->w.fd >= 0) {
		ev_io_stop(loop, &c->w);
		close(c->w.fd);
		c->w.fd = -1;
	}
}

static void put(struct conn *c, const char *s)
{
	/* Loopback and small: a blocking write in the test server is fine. */
	if (s && c->w.fd >= 0 && write(c->w.fd, s, strlen(s)) < 0)
		conn_close(c);
}

static void on_later(struct ev_loop *l, ev_timer *t, int revents)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, later));

	(void)l;
	(void)revents;
	in_len_between = dbk_hc_answer_len(&hc);
	put(c, answer.second);
	if (answer.close_after)
		conn_close(c);
}

static void on_conn(struct ev_loop *l, ev_io *w, int revents)
{
	struct conn *c = (struct conn *)w;
	ssize_t n = read(w->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	char *end;

	(void)l;
	(void)revents;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while (c->w.fd >= 0 && (end = strstr(c->buf, "\r\n\r\n"))) {
		size_t used = (size_t)(end + 4 - c->buf);

		memmove(c->buf, end + 4, c->len - used + 1);
		c->len -= used;
		if (++c->requests == 2 && answer.drop_second) {
			conn_close(c);
			return;
		}
		if (answer.silent)
			continue;
		put(c, answer.first);
		if (answer.second) {
			ev_timer_set(&c->later, SPLIT_S, 0);
			ev_timer_start(loop, &c->later);
		} else if (answer.close_after) {
			conn_close(c);
		}
	}
}

static void on_accept(struct ev_loop *l, ev_io *w, int revents)
{
	int fd = accept(w->fd, NULL, NULL);

	(void)l;
	(void)revents;
	if (fd < 0)
		return;
	for (unsigned i = 0; i < MAX_CONNS; i++)
		if (!conns[i]) {
			struct conn *c = calloc(1, sizeof(*c));

			if (!c)
				break;
			conns[i] = c;
			accepts++;
			ev_io_init(&c->w, on_conn, fd, EV_READ);
			ev_init(&c->later, on_later);
			ev_io_start(loop, &c->w);
			return;
		}
	close(fd);
}

static void on_done(void *arg, const struct dbk_hc_result *r)
{
	(void)arg;
	dones++;
	got = *r;
	got_body[0] = got_error[0] = '\0';
	if (r->status && r->body_len < sizeof(got_body)) {
		memcpy(got_body, r->body, r->body_len);
		got_body[r->body_len] = '\0';
	}
	if (r->error)
		snprintf(got_error, sizeof(got_error), "%s", r->error);
	ev_break(loop, EVBREAK_ALL);
}

static void on_give_up(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	fprintf(stderr, "  gave up after %.0f s\n", WAIT_MAX_S);
	ev_break(l, EVBREAK_ALL);
}

/* The caller's deadline timer, as the scraper has one. */
static void on_expire(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	dbk_hc_expire(&hc, dbk_mono_ms());
}

static const char request[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";

/* One request, run until done; whether done came. */
static bool get(uint64_t timeout_ms)
{
	ev_timer give_up, expire;
	unsigned before = dones;

	if (dbk_hc_get(&hc, request, sizeof(request) - 1, dbk_mono_ms() + timeout_ms) < 0) {
		snprintf(got_error, sizeof(got_error), "%s", hc.err);
		got.status = 0;
		return false;
	}
	ev_timer_init(&give_up, on_give_up, WAIT_MAX_S, 0);
	ev_timer_init(&expire, on_expire, 0.01, 0.01);
	ev_timer_start(loop, &give_up);
	ev_timer_start(loop, &expire);
	if (dones == before)
		ev_run(loop, 0);
	ev_timer_stop(loop, &give_up);
	ev_timer_stop(loop, &expire);
	return dones == before + 1;
}

static void setup(size_t max_body)
{
	char err[128];
	socklen_t sl = sizeof(srv_addr);
	int fd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));

	CHECK(fd >= 0);
	getsockname(fd, (struct sockaddr *)&srv_addr, &sl);
	loop = ev_loop_new(EVFLAG_AUTO);
	ev_io_init(&accept_w, on_accept, fd, EV_READ);
	ev_io_start(loop, &accept_w);
	accepts = 0;
	memset(&answer, 0, sizeof(answer));
	dbk_hc_init(&hc, loop, max_body, on_done, NULL);
	dbk_hc_set_addr(&hc, (const struct sockaddr *)&srv_addr, sl);
}

static void teardown(void)
{
	dbk_hc_free(&hc);
	for (unsigned i = 0; i < MAX_CONNS; i++)
		if (conns[i]) {
			conn_close(conns[i]);
			free(conns[i]);
			conns[i] = NULL;
		}
	ev_io_stop(loop, &accept_w);
	close(accept_w.fd);
	ev_loop_destroy(loop);
}

static bool ok(const char *body)
{
	if (got.status != 200 || strcmp(got_body, body) != 0) {
		fprintf(stderr, "  status %d body '%s' error '%s', want 200 '%s'\n", got.status,
		        got_body, got_error, body);
		return false;
	}
	return true;
}

static void test_keep_alive_content_length(void)
{
	setup(1024);
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	for (int i = 0; i < 20; i++) {
		CHECK(get(2000));
		CHECK(ok("hello"));
	}
	CHECK_EQ_U(hc.connects, 1);
	CHECK_EQ_U(accepts, 1);
	CHECK_EQ_U(conns[0]->requests, 20);
	teardown();
}

/* once: a new connection for every request, each closed after its
 * answer, even where the server would keep it. */
static void test_once_closes_after_each_answer(void)
{
	setup(1024);
	hc.once = true;
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	for (int i = 0; i < 3; i++) {
		CHECK(get(2000));
		CHECK(ok("hello"));
		CHECK(!hc.link);
	}
	CHECK_EQ_U(hc.connects, 3);
	CHECK_EQ_U(accepts, 3);
	teardown();
}

static void test_chunked_kept_alive(void)
{
	setup(1024);
	answer.first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	               "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
	CHECK(get(2000));
	CHECK(ok("hello world"));
	CHECK(get(2000));
	CHECK(ok("hello world"));
	CHECK_EQ_U(accepts, 1);
	teardown();
}

static void test_split_reads(void)
{
	setup(1024);
	/* Split inside a chunk's size line, after the head. */
	answer.first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel";
	answer.second = "lo\r\n1";
	CHECK(get(300)); /* not complete: the rest never comes this time */
	CHECK(strstr(got_error, "timed out") != NULL);
	answer.second = "lo\r\n1\r\n!\r\n0\r\n\r\n";
	in_len_between = 0;
	CHECK(get(2000));
	CHECK(ok("hello!"));
	/* The client had read the first half, and waited, before the rest. */
	CHECK(in_len_between > 0);
	/* And a head cut in two. */
	answer.first = "HTTP/1.1 200 OK\r\nContent-Le";
	answer.second = "ngth: 3\r\n\r\nabc";
	in_len_between = 0;
	CHECK(get(2000));
	CHECK(ok("abc"));
	CHECK_EQ_U(in_len_between, strlen(answer.first));
	/* And a body short of its last byte. */
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab";
	answer.second = "c";
	in_len_between = 0;
	CHECK(get(2000));
	CHECK(ok("abc"));
	CHECK_EQ_U(in_len_between, strlen(answer.first));
	CHECK_EQ_U(hc.connects, 2); /* the timed-out one was closed, and only it */
	teardown();
}

static void test_close_framed_body(void)
{
	setup(1024);
	answer.first = "HTTP/1.0 200 OK\r\n\r\nuntil the end";
	answer.close_after = true;
	CHECK(get(2000));
	CHECK(ok("until the end"));
	CHECK(get(2000));
	CHECK(ok("until the end"));
	CHECK_EQ_U(hc.connects, 2);
	teardown();
}

static void test_closed_mid_body(void)
{
	setup(1024);
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this";
	answer.close_after = true;
	CHECK(get(2000));
	CHECK_EQ_U(got.status, 0);
	CHECK(strstr(got_error, "closed mid-response") != NULL);
	CHECK(!hc.link);
	teardown();
}

static void test_never_answers(void)
{
	setup(1024);
	answer.silent = true;
	uint64_t t0 = dbk_mono_ms();
	CHECK(get(100));
	CHECK_EQ_U(got.status, 0);
	CHECK(strstr(got_error, "response timed out") != NULL);
	CHECK(dbk_mono_ms() - t0 >= 100);
	CHECK(!hc.busy && !hc.link);
	teardown();
}

static void test_body_over_cap(void)
{
	setup(8);
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789";
	CHECK(get(2000));
	CHECK(strstr(got_error, "body too large") != NULL);
	answer.first = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	               "5\r\n12345\r\n4\r\n6789\r\n0\r\n\r\n";
	CHECK(get(2000));
	CHECK(strstr(got_error, "body too large") != NULL);
	answer.first = "HTTP/1.0 200 OK\r\n\r\n123456789";
	CHECK(get(2000));
	CHECK(strstr(got_error, "body too large") != NULL);
	/* At the cap is fine. */
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678";
	CHECK(get(2000));
	CHECK(ok("12345678"));
	teardown();
}

static void test_garbage_and_status(void)
{
	setup(1024);
	answer.first = "this is { not http\r\n\r\n";
	CHECK(get(2000));
	CHECK_EQ_U(got.status, 0);
	CHECK(strstr(got_error, "bad response") != NULL);
	/* A status is the caller's to judge; an interim one is read past. */
	answer.first =
	        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 2\r\n\r\nno";
	CHECK(get(2000));
	CHECK_EQ_U(got.status, 503);
	CHECK(strcmp(got_body, "no") == 0);
	teardown();
}

static void test_dropped_kept_connection_retried(void)
{
	setup(1024);
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	answer.drop_second = true;
	CHECK(get(2000));
	CHECK(ok("ok"));
	/* The second request finds its connection closed unanswered: it is
	 * sent again on a new one, which answers. */
	CHECK(get(2000));
	CHECK(ok("ok"));
	CHECK_EQ_U(hc.connects, 2);
	CHECK_EQ_U(accepts, 2);
	teardown();
}

/* A new address closes the kept connection: the next request goes
 * there. The same address keeps it. */
static void test_new_address(void)
{
	char err[128];
	struct sockaddr_in b;
	socklen_t bl = sizeof(b);
	int fd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));
	ev_io w;

	setup(1024);
	CHECK(fd >= 0);
	getsockname(fd, (struct sockaddr *)&b, &bl);
	ev_io_init(&w, on_accept, fd, EV_READ);
	ev_io_start(loop, &w);
	answer.first = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	CHECK(get(2000));
	dbk_hc_set_addr(&hc, (const struct sockaddr *)&srv_addr, sizeof(srv_addr));
	CHECK(get(2000));
	CHECK_EQ_U(hc.connects, 1);
	dbk_hc_set_addr(&hc, (const struct sockaddr *)&b, bl);
	CHECK(!hc.link);
	CHECK(get(2000));
	CHECK(ok("ok"));
	CHECK_EQ_U(hc.connects, 2);
	CHECK_EQ_U(conns[1] ? conns[1]->requests : 0, 1); /* the second listener's */
	ev_io_stop(loop, &w);
	close(fd);
	teardown();
}

static void test_refused(void)
{
	setup(1024);
	/* A port nobody listens on: the server's, once closed. */
	ev_io_stop(loop, &accept_w);
	close(accept_w.fd);
	accept_w.fd = socket(AF_INET, SOCK_STREAM, 0);
	bool came = get(2000);
	CHECK(!came || got.status == 0);
	CHECK(strstr(got_error, "connect") != NULL);
	CHECK(!hc.busy);
	/* Busy and no address are refused at once. */
	struct dbk_hc other;
	dbk_hc_init(&other, loop, 10, on_done, NULL);
	CHECK(dbk_hc_get(&other, request, 3, 0) < 0 && strstr(other.err, "no address"));
	dbk_hc_free(&other);
	teardown();
}

int main(void)
{
	RUN(test_keep_alive_content_length);
	RUN(test_once_closes_after_each_answer);
	RUN(test_chunked_kept_alive);
	RUN(test_split_reads);
	RUN(test_close_framed_body);
	RUN(test_closed_mid_body);
	RUN(test_never_answers);
	RUN(test_body_over_cap);
	RUN(test_garbage_and_status);
	RUN(test_dropped_kept_connection_retried);
	RUN(test_new_address);
	RUN(test_refused);
	return CHECK_DONE();
}
