/* The supervisor's start-up, with this binary re-run as the children
 * ("--fake MODE PATH"): a unix listener that accepts, one that never
 * accepts and whose queue is full, one that stops the launcher once it
 * has been probed. Bounded by alarm(): a hang fails the run. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "supervise.h"

static char self[PATH_MAX];
static char dir[] = "/tmp/dbk-test-supervise.XXXXXX";
static char agent_sock[PATH_MAX], haproxy_sock[PATH_MAX], out_path[PATH_MAX];

static int listen_at(const char *path, int backlog)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, backlog) < 0)
		_exit(3);
	return fd;
}

/* A child's life; it ends by a signal. */
static int fake(const char *mode, const char *path)
{
	if (strcmp(mode, "stuck") == 0) {
		/* Queue of one, filled by our own connection: a connect
		 * from anyone else finds it full. */
		struct sockaddr_un sun;
		int l = listen_at(path, 0);
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
		if (l < 0 || c < 0 || connect(c, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			_exit(3);
		for (int i = 0; i < 600; i++)
			pause();
		_exit(0);
	}
	int l = listen_at(path, 16);
	bool stop = strcmp(mode, "serve-then-stop") == 0;
	for (int i = 0; i < 100000; i++) {
		int c = accept(l, NULL, NULL);
		if (c >= 0)
			close(c);
		if (stop && c >= 0) {
			kill(getppid(), SIGTERM);
			stop = false;
		}
	}
	_exit(0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs the supervisor with these children, stderr into out_path (read
 * back into out); its status. */
static int run(struct dbk_supervisor *s, char **agent, char **haproxy, char *out, size_t outlen,
               double *took)
{
	int saved = dup(STDERR_FILENO);
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	unlink(agent_sock);
	unlink(haproxy_sock);
	dbk_supervise_init(s);
	s->agent.argv = agent;
	s->haproxy.argv = haproxy;
	s->agent_ready = agent_sock;
	s->haproxy_ready = haproxy_sock;
	s->listen = "http://127.0.0.1:1";
	s->start_timeout = 1.0;
	s->stop_timeout = 2.0;
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	close(fd);
	double t0 = now();
	int rc = dbk_supervise_run(s);
	*took = now() - t0;
	dup2(saved, STDERR_FILENO);
	close(saved);
	FILE *f = fopen(out_path, "r");
	size_t n = f ? fread(out, 1, outlen - 1, f) : 0;
	out[n] = '\0';
	if (f)
		fclose(f);
	return rc;
}

static void test_ready_then_stop_signal(void)
{
	struct dbk_supervisor s;
	char out[8192];
	double took;
	char *agent[] = { self, "--fake", "serve", agent_sock, NULL };
	char *haproxy[] = { self, "--fake", "serve-then-stop", haproxy_sock, NULL };

	int rc = run(&s, agent, haproxy, out, sizeof(out), &took);
	CHECK_EQ_U(rc, 0);
	CHECK_EQ_U(s.stop_signal, SIGTERM);
	CHECK(s.agent.pid == 0 && s.haproxy.pid == 0);
	CHECK(strstr(out, "\ndbucket: ready: clients on http://127.0.0.1:1, agent pid "));
	CHECK(strstr(out, "\ndbucket: Terminated: stopping\n"));
	/* HAProxy stops first. */
	const char *h = strstr(out, "dbucket: haproxy (pid");
	const char *a = strstr(out, "dbucket: dbucket-spoa (pid");
	CHECK(h && a && h < a);
}

/* An agent whose admin socket listens but never accepts, its queue full:
 * the start-up times out instead of hanging in connect. */
static void test_stuck_agent_times_out(void)
{
	struct dbk_supervisor s;
	char out[8192];
	double took;
	char *agent[] = { self, "--fake", "stuck", agent_sock, NULL };
	char *haproxy[] = { self, "--fake", "serve", haproxy_sock, NULL };

	int rc = run(&s, agent, haproxy, out, sizeof(out), &took);
	CHECK_EQ_U(rc, 1);
	CHECK(strstr(out, "dbucket: dbucket-spoa did not come up within 1 s\n"));
	CHECK(!strstr(out, "started haproxy"));
	CHECK(took < 5.0);
	CHECK(s.agent.pid == 0);
}

static void test_agent_exits_during_start_up(void)
{
	struct dbk_supervisor s;
	char out[8192];
	double took;
	char *agent[] = { "/bin/false", NULL };
	char *haproxy[] = { self, "--fake", "serve", haproxy_sock, NULL };

	int rc = run(&s, agent, haproxy, out, sizeof(out), &took);
	CHECK_EQ_U(rc, 1);
	CHECK(strstr(out, "dbucket: dbucket-spoa exited with status 1 during start-up\n"));
	CHECK(!strstr(out, "started haproxy"));
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--fake") == 0)
		return fake(argv[2], argv[3]);
	/* A hang (a blocking probe) fails the run rather than stalling it. */
	alarm(30);
	if (!realpath("/proc/self/exe", self) || !mkdtemp(dir)) {
		perror("test_supervise");
		return 1;
	}
	snprintf(agent_sock, sizeof(agent_sock), "%s/admin.sock", dir);
	snprintf(haproxy_sock, sizeof(haproxy_sock), "%s/haproxy.sock", dir);
	snprintf(out_path, sizeof(out_path), "%s/stderr", dir);
	dbk_supervise_block();
	RUN(test_ready_then_stop_signal);
	RUN(test_stuck_agent_times_out);
	RUN(test_agent_exits_during_start_up);
	unlink(agent_sock);
	unlink(haproxy_sock);
	unlink(out_path);
	rmdir(dir);
	return CHECK_DONE();
}
