/* lib/conn over socketpairs and loopback, on a real libev loop: output
 * larger than the socket takes goes out whole, reading stops while too
 * much output waits and resumes when it drains, a peer's close, the
 * timeouts, the close hook called once, an answer read after a failed
 * write, a listener's slot given back, a full set's idle connection
 * closed for a new one (and one doing useful work kept), an outbound
 * connect that works and one that is refused. The loop is driven
 * one iteration at a time under a wall-clock cap. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "lib/conn.h"
#include "lib/connset.h"
#include "lib/net.h"

struct user {
	struct dbk_conn c;
	unsigned closes;
	enum dbk_conn_why why;
	unsigned timeouts;
	size_t consumed; /* input bytes handled */
	size_t answer;   /* bytes queued per input byte */
	bool hold;       /* leave the input unconsumed */
	bool close_in_data;
	bool connected;
	bool closed;
};

static void u_data(struct dbk_conn *c)
{
	struct user *u = c->arg;

	if (u->close_in_data) {
		dbk_conn_close(c, DBK_CONN_LOCAL);
		dbk_conn_close(c, DBK_CONN_ERROR); /* the second is ignored */
		return;
	}
	if (u->hold)
		return;
	for (size_t i = 0; i < c->in.len; i++)
		for (size_t k = 0; k < u->answer; k++)
			dbk_buf_add(&c->out, &c->in.p[i], 1);
	u->consumed += c->in.len;
	dbk_buf_consume(&c->in, c->in.len);
}

static void u_timeout(struct dbk_conn *c)
{
	struct user *u = c->arg;

	u->timeouts++;
	dbk_conn_close(c, DBK_CONN_TIMEOUT);
}

static void u_connect(struct dbk_conn *c) { ((struct user *)c->arg)->connected = true; }

static void u_close(struct dbk_conn *c, enum dbk_conn_why why)
{
	struct user *u = c->arg;

	u->closes++;
	u->closed = true;
	u->why = why;
}

static const struct dbk_conn_ops ops = { .on_data = u_data, .on_close = u_close };
static const struct dbk_conn_ops ops_timeout = { .on_data = u_data,
	                                         .on_timeout = u_timeout,
	                                         .on_close = u_close };
static const struct dbk_conn_ops ops_connect = { .on_data = u_data,
	                                         .on_connect = u_connect,
	                                         .on_close = u_close };

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* Runs the loop until *flag or cap seconds; a ticking timer keeps
 * EVRUN_ONCE from blocking past the cap. Returns *flag. */
static bool run_until(struct ev_loop *loop, const bool *flag, double cap)
{
	ev_timer t;
	double end = wall() + cap;

	ev_timer_init(&t, tick, 0.01, 0.01);
	ev_timer_start(loop, &t);
	while (!*flag && wall() < end)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
	return *flag;
}

/* A few iterations that handle whatever is ready now. */
static void run_ready(struct ev_loop *loop)
{
	for (int i = 0; i < 8; i++)
		ev_run(loop, EVRUN_NOWAIT);
}

static void pair(int sv[2])
{
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(dbk_net_nonblock(sv[0]) == 0);
}

static void test_backpressure_and_partial_writes(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user u = { .answer = 4096 };
	int sv[2], small = 4096;
	static char got[1 << 20];
	size_t n = 0;
	bool done = false, stalled;

	pair(sv);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	CHECK(dbk_conn_accept(&u.c, loop, sv[0], NULL, &ops, &u, 1024) == 0);
	u.c.out_high = 8192;
	/* 64 bytes in, 256 KB owed: far more than the socket takes. */
	CHECK(write(sv[1], "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-+",
	            64) == 64);
	run_ready(loop);
	stalled = dbk_conn_pending(&u.c) > u.c.out_high;
	CHECK(stalled);
	CHECK(!(u.c.io.events & EV_READ));
	/* More input is not read while the peer does not read its answers. */
	size_t before = u.consumed;
	CHECK(write(sv[1], "!", 1) == 1);
	run_ready(loop);
	CHECK_EQ_U(u.consumed, before);
	/* The peer reads: everything owed arrives, in order, and the byte
	 * left waiting is answered too. */
	double end = wall() + 5;
	while (!done && wall() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		ssize_t r = read(sv[1], got + n, sizeof(got) - n);
		if (r > 0)
			n += (size_t)r;
		done = n >= 65 * 4096;
	}
	CHECK_EQ_U(n, 65 * 4096);
	CHECK_EQ_U(u.consumed, 65);
	CHECK(got[0] == 'a' && got[4095] == 'a' && got[4096] == 'b' && got[64 * 4096] == '!');
	CHECK(dbk_conn_pending(&u.c) == 0);
	CHECK(u.c.io.events & EV_READ);
	CHECK_EQ_U(u.closes, 0);
	dbk_conn_close(&u.c, DBK_CONN_LOCAL);
	CHECK_EQ_U(u.closes, 1);
	close(sv[1]);
	ev_loop_destroy(loop);
}

static void test_peer_close(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user u = { .answer = 0 }; /* an answer would fail first, EPIPE */
	int sv[2];

	pair(sv);
	CHECK(dbk_conn_accept(&u.c, loop, sv[0], NULL, &ops, &u, 64) == 0);
	CHECK(write(sv[1], "hi", 2) == 2);
	close(sv[1]);
	run_until(loop, &u.closed, 2);
	CHECK_EQ_U(u.closes, 1);
	CHECK(u.why == DBK_CONN_EOF);
	CHECK_EQ_U(u.consumed, 2);
	/* The conn closed its descriptor. */
	CHECK(fcntl(sv[0], F_GETFD) < 0 && errno == EBADF);
	ev_loop_destroy(loop);
}

static void test_idle_and_frame_timeouts(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user idle = { .answer = 1 }, frame = { .hold = true };
	int a[2], b[2];
	double t0 = wall();

	pair(a);
	pair(b);
	CHECK(dbk_conn_accept(&idle.c, loop, a[0], NULL, &ops, &idle, 64) == 0);
	dbk_conn_timeouts(&idle.c, 10, 0.05);
	CHECK(dbk_conn_accept(&frame.c, loop, b[0], NULL, &ops_timeout, &frame, 64) == 0);
	dbk_conn_timeouts(&frame.c, 0.1, 10);
	/* Half a frame: the frame timeout runs, not the idle one. */
	CHECK(write(b[1], "half", 4) == 4);
	double end = wall() + 3;
	while ((!idle.closed || !frame.closed) && wall() < end)
		ev_run(loop, EVRUN_ONCE);
	CHECK_EQ_U(idle.closes, 1);
	CHECK(idle.why == DBK_CONN_TIMEOUT);
	CHECK_EQ_U(frame.closes, 1);
	CHECK_EQ_U(frame.timeouts, 1);
	CHECK(frame.why == DBK_CONN_TIMEOUT);
	CHECK(wall() - t0 >= 0.05);
	close(a[1]);
	close(b[1]);
	ev_loop_destroy(loop);
}

/* A close from inside on_data, twice, and a drain: one on_close each. */
static void test_close_once(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user u = { .close_in_data = true }, d = { .answer = 1 };
	int a[2], b[2];
	char buf[8];

	pair(a);
	pair(b);
	CHECK(dbk_conn_accept(&u.c, loop, a[0], NULL, &ops, &u, 64) == 0);
	CHECK(write(a[1], "x", 1) == 1);
	run_until(loop, &u.closed, 2);
	CHECK_EQ_U(u.closes, 1);
	CHECK(u.why == DBK_CONN_LOCAL);
	CHECK(dbk_conn_accept(&d.c, loop, b[0], NULL, &ops, &d, 64) == 0);
	dbk_conn_send(&d.c, "bye", 3);
	dbk_conn_drain(&d.c, 1.0);
	CHECK_EQ_U(d.closes, 1);
	CHECK(d.why == DBK_CONN_LOCAL);
	CHECK(read(b[1], buf, sizeof(buf)) == 3 && memcmp(buf, "bye", 3) == 0);
	run_ready(loop);
	CHECK_EQ_U(u.closes, 1);
	CHECK_EQ_U(d.closes, 1);
	close(a[1]);
	close(b[1]);
	ev_loop_destroy(loop);
}

/* A peer that answered and closed before reading what we sent: with
 * read_after_epipe its answer is still read; without, the failed write
 * closes the conn at once, and dbk_conn_send says so. */
static void test_answer_after_epipe(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user r = { .answer = 0 }, w = { .answer = 0 };
	int a[2], b[2];

	pair(a);
	pair(b);
	CHECK(write(a[1], "answer", 6) == 6 && write(b[1], "answer", 6) == 6);
	close(a[1]);
	close(b[1]);
	CHECK(dbk_conn_accept(&r.c, loop, a[0], NULL, &ops, &r, 64) == 0);
	r.c.read_after_epipe = true;
	CHECK(dbk_conn_send(&r.c, "request", 7));
	CHECK_EQ_U(r.closes, 0);
	run_until(loop, &r.closed, 2);
	CHECK_EQ_U(r.consumed, 6);
	CHECK(r.why == DBK_CONN_EOF);
	CHECK(dbk_conn_accept(&w.c, loop, b[0], NULL, &ops, &w, 64) == 0);
	CHECK(!dbk_conn_send(&w.c, "request", 7));
	CHECK_EQ_U(w.closes, 1);
	CHECK(w.why == DBK_CONN_ERROR && w.c.err_no == EPIPE);
	CHECK(w.c.err_op && strcmp(w.c.err_op, "write") == 0);
	CHECK_EQ_U(w.consumed, 0);
	ev_loop_destroy(loop);
}

#define SRV_USERS 4

struct srv {
	struct dbk_connset set;
	struct user u[SRV_USERS];
	unsigned n;
};

static void on_accept(void *arg, int fd)
{
	struct srv *s = arg;

	if (s->n >= SRV_USERS) {
		dbk_listener_release(&s->set.ls, fd);
		close(fd);
		return;
	}
	struct user *u = &s->u[s->n++];
	u->answer = 1;
	CHECK(dbk_conn_accept(&u->c, s->set.ls.loop, fd, &s->set, &ops, u, 64) == 0);
}

static int client(int lfd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &len) == 0);
	return dbk_net_connect(&sa, len);
}

/* A server of at most max connections (per_peer from one peer) on a
 * loopback port; returns the listening fd. */
static int srv_open(struct srv *s, struct ev_loop *loop, unsigned max, unsigned per_peer,
                    uint64_t *evicted)
{
	struct dbk_connset_limits lim = { .max_conns = max,
		                          .max_per_peer = per_peer,
		                          .evicted = evicted };
	char err[128];
	int lfd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));

	memset(s, 0, sizeof(*s));
	CHECK(lfd >= 0);
	CHECK(dbk_connset_open(&s->set, loop, "test", on_accept, s, &lim) == 0);
	CHECK(dbk_connset_add_listener(&s->set, lfd) == 0);
	return lfd;
}

/* Runs the loop until s has accepted n in all (bounded, 2 s). */
static void srv_wait(struct ev_loop *loop, struct srv *s, unsigned n)
{
	double end = wall() + 2;

	while (s->n < n && wall() < end)
		ev_run(loop, EVRUN_NOWAIT);
}

static void test_listener_slot_given_back(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	static struct srv s;
	int lfd = srv_open(&s, loop, 4, 1, NULL), c1, c2;
	bool two;

	c1 = client(lfd);
	srv_wait(loop, &s, 1);
	CHECK_EQ_U(s.set.ls.open, 1);
	close(c1);
	double end = wall() + 2;
	while (!s.u[0].closed && wall() < end)
		ev_run(loop, EVRUN_NOWAIT);
	CHECK_EQ_U(s.u[0].closes, 1);
	CHECK_EQ_U(s.set.ls.open, 0);
	/* One per peer: the slot given back lets the same peer in again. */
	c2 = client(lfd);
	srv_wait(loop, &s, 2);
	two = s.n == 2 && s.u[1].closes == 0;
	CHECK(two);
	CHECK_EQ_U(s.set.ls.open, 1);
	dbk_conn_close(&s.u[1].c, DBK_CONN_LOCAL);
	CHECK_EQ_U(s.set.ls.open, 0);
	close(c2);
	dbk_connset_close(&s.set, NULL);
	ev_loop_destroy(loop);
}

/* Full: a new connection takes the place of the oldest one that never
 * did useful work; once every one has, the newcomer is refused. */
static void test_connset_evicts_idle(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	static struct srv s;
	uint64_t evicted = 0;
	int lfd = srv_open(&s, loop, 2, 0, &evicted), c[4];

	c[0] = client(lfd);
	srv_wait(loop, &s, 1);
	c[1] = client(lfd);
	srv_wait(loop, &s, 2);
	CHECK_EQ_U(s.set.ls.open, 2);
	dbk_connset_useful(&s.u[1].c);
	c[2] = client(lfd);
	srv_wait(loop, &s, 3);
	/* u[0] (idle, oldest) made way; u[1] (useful) stays. */
	CHECK_EQ_U(s.n, 3);
	CHECK_EQ_U(s.u[0].closes, 1);
	CHECK_EQ_U(s.u[1].closes, 0);
	CHECK_EQ_U(evicted, 1);
	CHECK_EQ_U(s.set.ls.open, 2);
	dbk_connset_useful(&s.u[2].c);
	/* Both useful: the next one is refused, none closed. */
	c[3] = client(lfd);
	char b;
	double end = wall() + 2;
	bool ended = false;
	while (!ended && wall() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		ssize_t got = recv(c[3], &b, 1, MSG_DONTWAIT);
		ended = got == 0 ||
		        (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN);
	}
	CHECK(ended);
	CHECK_EQ_U(s.n, 3);
	CHECK_EQ_U(s.u[1].closes + s.u[2].closes, 0);
	CHECK_EQ_U(evicted, 1);
	dbk_connset_close(&s.set, NULL);
	CHECK_EQ_U(s.u[1].closes + s.u[2].closes, 2);
	CHECK_EQ_U(s.set.ls.open, 0);
	for (int i = 0; i < 4; i++)
		close(c[i]);
	ev_loop_destroy(loop);
}

static void test_connect(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct user u = { .answer = 0 }, r = { .answer = 0 };
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char err[128], buf[8];
	int lfd = dbk_net_listen("127.0.0.1:0", err, sizeof(err)), sfd = -1;

	CHECK(lfd >= 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &len) == 0);
	CHECK(dbk_conn_connect(&u.c, loop, &sa, len, &ops_connect, &u, 64) == 0);
	/* Queued before the connect is done: sent once it is. */
	dbk_conn_send(&u.c, "ping", 4);
	run_until(loop, &u.connected, 2);
	CHECK(u.connected);
	double end = wall() + 2;
	while (sfd < 0 && wall() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		sfd = accept(lfd, NULL, NULL);
	}
	CHECK(sfd >= 0);
	end = wall() + 2;
	ssize_t n = -1;
	while (n < 4 && wall() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		n = recv(sfd, buf, sizeof(buf), MSG_DONTWAIT);
	}
	CHECK(n == 4 && memcmp(buf, "ping", 4) == 0);
	dbk_conn_close(&u.c, DBK_CONN_LOCAL);
	CHECK_EQ_U(u.closes, 1);
	close(sfd);
	/* Nobody listens there any more: refused, said once. */
	close(lfd);
	if (dbk_conn_connect(&r.c, loop, &sa, len, &ops_connect, &r, 64) == 0) {
		run_until(loop, &r.closed, 2);
		CHECK_EQ_U(r.closes, 1);
		CHECK(r.why == DBK_CONN_ERROR);
		CHECK(r.c.err_no == ECONNREFUSED);
		CHECK(r.c.err_op && strcmp(r.c.err_op, "connect") == 0);
		CHECK(!r.connected);
	} else {
		CHECK(errno == ECONNREFUSED);
	}
	ev_loop_destroy(loop);
}

int main(void)
{
	RUN(test_backpressure_and_partial_writes);
	RUN(test_peer_close);
	RUN(test_idle_and_frame_timeouts);
	RUN(test_close_once);
	RUN(test_answer_after_epipe);
	RUN(test_listener_slot_given_back);
	RUN(test_connset_evicts_idle);
	RUN(test_connect);
	return CHECK_DONE();
}
