/* Unit tests of agent/runtime_client.[ch], the runtime API's sockets,
 * against fake stats sockets in the test's own event loop (answers from
 * tests/unit/fixtures/haproxy26-*). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "runtime.h"
#include "runtime_client.h"

/* ---- the client ---- */

static void test_addr_parse(void)
{
	struct dbk_rt_addr a;
	char err[256];

	CHECK(dbk_rt_addr_parse("unix:/run/haproxy/admin.sock", &a, err, sizeof(err)) == 0);
	CHECK(a.sa.ss_family == AF_UNIX);
	CHECK(dbk_rt_addr_parse("/run/haproxy/admin.sock", &a, err, sizeof(err)) == 0);
	CHECK(a.sa.ss_family == AF_UNIX);
	CHECK(strcmp(((struct sockaddr_un *)&a.sa)->sun_path, "/run/haproxy/admin.sock") == 0);
	CHECK(dbk_rt_addr_parse("127.0.0.1:9999", &a, err, sizeof(err)) == 0);
	CHECK(a.sa.ss_family == AF_INET);
	CHECK(ntohs(((struct sockaddr_in *)&a.sa)->sin_port) == 9999);
	CHECK(dbk_rt_addr_parse("[::1]:9999", &a, err, sizeof(err)) == 0);
	CHECK(a.sa.ss_family == AF_INET6);
	CHECK(dbk_rt_addr_parse("", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse(NULL, &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse("nocolon", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse(":99", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse("127.0.0.1:", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse("[::1]9999", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse("127.0.0.1:notaport", &a, err, sizeof(err)) == -1);
	CHECK(dbk_rt_addr_parse("unix:", &a, err, sizeof(err)) == -1);
	char longp[200] = "unix:/";
	memset(longp + 6, 'p', 150);
	longp[156] = '\0';
	CHECK(dbk_rt_addr_parse(longp, &a, err, sizeof(err)) == -1);
	CHECK(has(err, "too long"));
}

/* A fake stats socket inside the test's own event loop: accepts, reads
 * one command line, then answers resp in small writes and closes (or,
 * with answer false, keeps the connection open and silent). */
struct fake {
	struct ev_loop *loop;
	ev_io lio, cio;
	int lfd;
	char dir[40], path[96];
	char cmd[256];
	size_t cmd_len;
	const char *resp;
	size_t resp_len, resp_off;
	bool answer, writing;
	unsigned accepted;
};

static void fake_conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fake *f = w->data;

	(void)revents;
	if (!f->writing) {
		ssize_t r = read(w->fd, f->cmd + f->cmd_len, sizeof(f->cmd) - 1 - f->cmd_len);
		if (r <= 0) {
			ev_io_stop(loop, w);
			close(w->fd);
			w->fd = -1;
			return;
		}
		f->cmd_len += (size_t)r;
		f->cmd[f->cmd_len] = '\0';
		if (!memchr(f->cmd, '\n', f->cmd_len))
			return;
		ev_io_stop(loop, w);
		if (!f->answer)
			return; /* silent: the client must time out */
		f->writing = true;
		ev_io_set(w, w->fd, EV_WRITE);
		ev_io_start(loop, w);
		return;
	}
	/* Small writes, so the client reads in many pieces. */
	size_t k = f->resp_len - f->resp_off;
	if (k > 1000)
		k = 1000;
	ssize_t wr = k ? write(w->fd, f->resp + f->resp_off, k) : 0;
	if (wr > 0)
		f->resp_off += (size_t)wr;
	if (f->resp_off >= f->resp_len || (wr < 0 && errno != EAGAIN)) {
		ev_io_stop(loop, w);
		close(w->fd);
		w->fd = -1;
	}
}

static void fake_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fake *f = w->data;
	int fd = accept(w->fd, NULL, NULL);

	(void)revents;
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	f->accepted++;
	if (f->cio.fd >= 0) { /* one connection at a time in these tests */
		close(fd);
		return;
	}
	ev_io_init(&f->cio, fake_conn_cb, fd, EV_READ);
	f->cio.data = f;
	ev_io_start(loop, &f->cio);
}

/* Listens on a unix socket in a fresh temp dir (tcp false) or on an
 * ephemeral loopback port; spec gets the client's address. */
static bool fake_start(struct fake *f, struct ev_loop *loop, bool tcp, char *spec, size_t cap)
{
	memset(f, 0, sizeof(*f));
	f->loop = loop;
	f->cio.fd = -1;
	f->answer = true;
	if (tcp) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t sl = sizeof(sa);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(f->lfd, 8) < 0 || getsockname(f->lfd, (struct sockaddr *)&sa, &sl) < 0)
			return false;
		snprintf(spec, cap, "127.0.0.1:%u", ntohs(sa.sin_port));
	} else {
		struct sockaddr_un su = { .sun_family = AF_UNIX };
		snprintf(f->dir, sizeof(f->dir), "/tmp/dbk-rt-test.XXXXXX");
		if (!mkdtemp(f->dir))
			return false;
		snprintf(f->path, sizeof(f->path), "%s/haproxy.sock", f->dir);
		snprintf(su.sun_path, sizeof(su.sun_path), "%s", f->path);
		f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&su, sizeof(su)) < 0 ||
		    listen(f->lfd, 8) < 0)
			return false;
		snprintf(spec, cap, "unix:%s", f->path);
	}
	ev_io_init(&f->lio, fake_accept_cb, f->lfd, EV_READ);
	f->lio.data = f;
	ev_io_start(loop, &f->lio);
	return true;
}

static void fake_stop(struct fake *f)
{
	ev_io_stop(f->loop, &f->lio);
	ev_io_stop(f->loop, &f->cio);
	if (f->cio.fd >= 0)
		close(f->cio.fd);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->path[0])
		unlink(f->path);
	if (f->dir[0])
		rmdir(f->dir);
}

struct result {
	unsigned calls;
	enum dbk_rt_query_status st;
	char *buf;
	size_t len;
	bool nul_terminated;
	char err[256];
};

static void result_cb(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                      const char *err)
{
	struct result *r = arg;

	r->calls++;
	r->st = st;
	r->len = len;
	free(r->buf);
	r->buf = NULL;
	if (buf) {
		r->buf = malloc(len + 1);
		memcpy(r->buf, buf, len + 1);
		r->nul_terminated = buf[len] == '\0';
	}
	snprintf(r->err, sizeof(r->err), "%s", err ? err : "");
}

/* Runs the loop until the callback ran (bounded: about 5 s). */
static void run_until(struct ev_loop *loop, struct result *r)
{
	for (int i = 0; i < 5000 && r->calls == 0; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		if (r->calls == 0)
			usleep(1000);
	}
}

static struct dbk_rt_query *start(struct ev_loop *loop, const char *spec, const char *cmd,
                                  unsigned timeout_ms, size_t max, struct result *r)
{
	struct dbk_rt_addr a;
	char err[256];

	memset(r, 0, sizeof(*r));
	if (dbk_rt_addr_parse(spec, &a, err, sizeof(err)) < 0) {
		fprintf(stderr, "  %s\n", err);
		return NULL;
	}
	return dbk_rt_query_start(loop, &a, cmd, timeout_ms, max, result_cb, r, err, sizeof(err));
}

static void test_query_async(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct text resp = fixture("haproxy26-be2-stat.txt");
	struct fake f;
	struct result r;
	char spec[256];

	for (int tcp = 0; tcp < 2; tcp++) {
		CHECK(fake_start(&f, loop, tcp, spec, sizeof(spec)));
		f.resp = resp.s;
		f.resp_len = resp.len;
		CHECK(start(loop, spec, "show stat be2 4 -1", 2000, 0, &r) != NULL);
		CHECK(r.calls == 0); /* never called from inside start */
		run_until(loop, &r);
		CHECK_EQ_U(r.calls, 1);
		CHECK(r.st == DBK_RT_Q_OK);
		CHECK(strcmp(f.cmd, "show stat be2 4 -1\n") == 0);
		CHECK(r.len == resp.len && r.buf && memcmp(r.buf, resp.s, resp.len) == 0);
		CHECK(r.nul_terminated);

		/* And it parses. */
		struct dbk_rt_server s[1];
		char err[128];
		dbk_rt_server_init(&s[0], "u0");
		CHECK(dbk_rt_parse_stat(r.buf, r.len, "be2", s, 1, NULL, err, sizeof(err)) == 0);
		CHECK(s[0].scur == 3);
		free(r.buf);
		fake_stop(&f);
	}
	text_free(&resp);
	ev_loop_destroy(loop);
}

/* "show stat" from a fake that answers resp_len bytes, read with a limit
 * of max_bytes; the fake is gone when it returns. */
static void query_sized(struct ev_loop *loop, size_t resp_len, size_t max_bytes, struct result *r)
{
	static char big[10000];
	struct fake f;
	char spec[256];

	memset(big, 'x', sizeof(big));
	CHECK(fake_start(&f, loop, false, spec, sizeof(spec)));
	f.resp = big;
	f.resp_len = resp_len;
	CHECK(start(loop, spec, "show stat", 2000, max_bytes, r) != NULL);
	run_until(loop, r);
	fake_stop(&f);
}

static void test_query_async_limits(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	struct result r;
	char spec[256];

	/* Exactly at the limit: fine. */
	query_sized(loop, 4096, 4096, &r);
	CHECK(r.st == DBK_RT_Q_OK && r.len == 4096);
	free(r.buf);

	/* One byte over: too big. */
	query_sized(loop, 4097, 4096, &r);
	CHECK(r.st == DBK_RT_Q_TOO_BIG && r.buf == NULL && r.len == 0);
	CHECK(has(r.err, "larger than 4096"));

	/* An empty answer (HAProxy closing at once) is a response of 0
	 * bytes; the parser will refuse it. */
	query_sized(loop, 0, 0, &r);
	CHECK(r.st == DBK_RT_Q_OK && r.len == 0 && r.nul_terminated);
	free(r.buf);

	/* A silent peer: timeout, within reason. */
	CHECK(fake_start(&f, loop, false, spec, sizeof(spec)));
	f.answer = false;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(start(loop, spec, "show stat", 100, 0, &r) != NULL);
	run_until(loop, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(r.st == DBK_RT_Q_TIMEOUT);
	CHECK(ms >= 90 && ms < 2000);
	fake_stop(&f);

	ev_loop_destroy(loop);
}

static void test_query_async_errors(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct result r;
	struct dbk_rt_addr a;
	char err[256];

	/* No such socket: reported through the callback, from the loop. */
	CHECK(start(loop, "unix:/tmp/dbk-rt-no-such-dir/haproxy.sock", "show stat", 500, 0, &r) !=
	      NULL);
	CHECK(r.calls == 0);
	run_until(loop, &r);
	CHECK_EQ_U(r.calls, 1);
	CHECK(r.st == DBK_RT_Q_CONNECT);
	CHECK(has(r.err, "No such file"));

	/* A TCP port nobody listens on. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char spec[64];
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(s, (struct sockaddr *)&sa, &sl) == 0);
	close(s); /* bound, never listened: refused */
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", ntohs(sa.sin_port));
	CHECK(start(loop, spec, "show stat", 500, 0, &r) != NULL);
	run_until(loop, &r);
	CHECK(r.st == DBK_RT_Q_CONNECT);
	CHECK(has(r.err, "refused"));

	/* Not one command: refused at once, no callback. */
	CHECK(dbk_rt_addr_parse("unix:/tmp/x.sock", &a, err, sizeof(err)) == 0);
	memset(&r, 0, sizeof(r));
	CHECK(dbk_rt_query_start(loop, &a, "show stat\nshutdown sessions", 100, 0, result_cb, &r,
	                         err, sizeof(err)) == NULL);
	CHECK(has(err, "one command"));
	CHECK(dbk_rt_query_start(loop, &a, "show stat;show info", 100, 0, result_cb, &r, err,
	                         sizeof(err)) == NULL);
	CHECK(dbk_rt_query_start(loop, &a, "", 100, 0, result_cb, &r, err, sizeof(err)) == NULL);
	CHECK(dbk_rt_query_start(loop, &a, NULL, 100, 0, result_cb, &r, err, sizeof(err)) == NULL);
	char longcmd[DBK_RT_MAX_COMMAND + 2];
	memset(longcmd, 'a', sizeof(longcmd) - 1);
	longcmd[sizeof(longcmd) - 1] = '\0';
	CHECK(dbk_rt_query_start(loop, &a, longcmd, 100, 0, result_cb, &r, err, sizeof(err)) ==
	      NULL);
	CHECK(dbk_rt_query_start(loop, &a, "show stat", 100, 0, NULL, &r, err, sizeof(err)) ==
	      NULL);
	for (int i = 0; i < 20; i++)
		ev_run(loop, EVRUN_NOWAIT);
	CHECK_EQ_U(r.calls, 0);

	/* Cancelled: no callback, nothing left behind (ASan/LSan). */
	struct dbk_rt_query *q = start(loop, "unix:/tmp/dbk-rt-no-such-dir/s", "show stat", 500, 0,
	                               &r);
	CHECK(q != NULL);
	dbk_rt_query_cancel(q);
	struct fake f;
	CHECK(fake_start(&f, loop, false, spec, sizeof(spec)));
	f.answer = false;
	q = start(loop, spec, "show stat", 500, 0, &r);
	for (int i = 0; i < 20; i++)
		ev_run(loop, EVRUN_NOWAIT);
	dbk_rt_query_cancel(q);
	for (int i = 0; i < 20; i++)
		ev_run(loop, EVRUN_NOWAIT);
	CHECK_EQ_U(r.calls, 0);
	fake_stop(&f);
	dbk_rt_query_cancel(NULL);

	CHECK(strcmp(dbk_rt_query_status_str(DBK_RT_Q_TOO_BIG), "too_big") == 0);
	ev_loop_destroy(loop);
}

/* A forked child plays HAProxy for the blocking helper: accepts once,
 * reads the command line, answers resp (unless resp is NULL: then it
 * stays silent until killed) and exits. */
static pid_t serve_once(const char *path, const char *resp, size_t len)
{
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(su.sun_path, sizeof(su.sun_path), "%s", path);
	unlink(path);
	if (l < 0 || bind(l, (struct sockaddr *)&su, sizeof(su)) < 0 || listen(l, 4) < 0)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		close(l);
		return pid;
	}
	int c = accept(l, NULL, NULL);
	char cmd[256];
	size_t got = 0;
	while (c >= 0 && got < sizeof(cmd)) {
		ssize_t r = read(c, cmd + got, sizeof(cmd) - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memchr(cmd, '\n', got))
			break;
	}
	if (!resp) {
		pause();
		_exit(0);
	}
	size_t off = 0;
	while (c >= 0 && off < len) {
		ssize_t w = write(c, resp + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	_exit(0);
}

static void test_query_sync(void)
{
	char dir[] = "/tmp/dbk-rt-sync.XXXXXX";
	char path[128], spec[160], err[256];
	static char buf[FIX_MAX];
	struct text resp = fixture("haproxy26-be2-servers-state.txt");
	size_t len = 99;
	int status;
	pid_t pid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/haproxy.sock", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);

	pid = serve_once(path, resp.s, resp.len);
	CHECK(pid > 0);
	CHECK(dbk_rt_query_sync(spec, "show servers state be2", 2000, buf, sizeof(buf), &len, err,
	                        sizeof(err)) == DBK_RT_Q_OK);
	CHECK(len == resp.len && memcmp(buf, resp.s, len) == 0 && buf[len] == '\0');
	waitpid(pid, &status, 0);
	struct dbk_rt_server s[16];
	unsigned n;
	CHECK(dbk_rt_parse_servers_state(buf, len, "be2", s, 16, &n, err, sizeof(err)) == 0);
	CHECK_EQ_U(n, 10);

	/* The buffer holds cap - 1 bytes: one short is too big. */
	pid = serve_once(path, resp.s, resp.len);
	CHECK(dbk_rt_query_sync(path, "show servers state be2", 2000, buf, resp.len, &len, err,
	                        sizeof(err)) == DBK_RT_Q_TOO_BIG);
	CHECK(len == 0 && buf[0] == '\0');
	waitpid(pid, &status, 0);
	pid = serve_once(path, resp.s, resp.len);
	CHECK(dbk_rt_query_sync(path, "show servers state be2", 2000, buf, resp.len + 1, &len, err,
	                        sizeof(err)) == DBK_RT_Q_OK);
	CHECK(len == resp.len);
	waitpid(pid, &status, 0);

	/* Silent: the deadline holds. */
	pid = serve_once(path, NULL, 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(dbk_rt_query_sync(spec, "show stat", 150, buf, sizeof(buf), &len, err, sizeof(err)) ==
	      DBK_RT_Q_TIMEOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(ms >= 140 && ms < 2000);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);

	/* Nobody there; bad arguments. */
	unlink(path);
	CHECK(dbk_rt_query_sync(spec, "show stat", 150, buf, sizeof(buf), &len, err, sizeof(err)) ==
	      DBK_RT_Q_CONNECT);
	CHECK(has(err, "No such file"));
	CHECK(dbk_rt_query_sync("bogus", "show stat", 150, buf, sizeof(buf), &len, err,
	                        sizeof(err)) == DBK_RT_Q_CONNECT);
	CHECK(dbk_rt_query_sync(spec, "a;b", 150, buf, sizeof(buf), &len, err, sizeof(err)) !=
	      DBK_RT_Q_OK);
	CHECK(dbk_rt_query_sync(spec, "show stat", 150, buf, 0, &len, err, sizeof(err)) !=
	      DBK_RT_Q_OK);
	rmdir(dir);
	text_free(&resp);
}

int main(void)
{
	/* The fake servers write with plain write(): a client that hangs up
	 * early (too big, cancelled) must not kill the test binary. */
	signal(SIGPIPE, SIG_IGN);

	RUN(test_addr_parse);
	RUN(test_query_async);
	RUN(test_query_async_limits);
	RUN(test_query_async_errors);
	RUN(test_query_sync);
	return CHECK_DONE();
}
