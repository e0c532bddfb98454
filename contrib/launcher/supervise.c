/* See supervise.h for the policy. */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "say.h"

extern char **environ;

/* How often start-up readiness is probed. */
#define PROBE_INTERVAL 0.02
/* Bounds each reaping pass (two children, and anything reparented). */
#define MAX_REAPS 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void signal_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

void dbk_supervise_block(void)
{
	sigset_t set;
	struct sigaction sa;

	/* An inherited SIG_IGN for SIGCHLD would make the kernel reap the
	 * children itself and never tell us. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	signal_set(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

void dbk_supervise_init(struct dbk_supervisor *s)
{
	memset(s, 0, sizeof(*s));
	s->agent.name = "dbucket-spoa";
	s->haproxy.name = "haproxy";
	/* Generous: sanitizer builds on a loaded machine start slowly. */
	s->start_timeout = 30.0;
	s->stop_timeout = 5.0;
	s->backoff_min = 0.25;
	s->backoff_max = 8.0;
	s->stable_after = 60.0;
	s->max_quick_deaths = 5;
}

static void describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "stopped (status 0x%x)", (unsigned)status);
}

static int spawn(struct dbk_child *c)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid < 0) {
		dbk_launch_say("cannot start %s: fork: %s", c->name, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		sigset_t none;
		char msg[512];

		/* Own process group: a terminal's ^C goes to the launcher
		 * only, which stops HAProxy before the agent. */
		setpgid(0, 0);
		/* The launcher dying (even SIGKILL) must not leave these. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		/* The blocked mask survives execve: give the child a clean one. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (unsigned i = 0; i < c->ninherit; i++)
			if (fcntl(c->inherit[i], F_SETFD, 0) < 0)
				_exit(127);
		execve(c->argv[0], c->argv, environ);
		int n = snprintf(msg, sizeof(msg), "dbucket: cannot run %s: %s\n", c->argv[0],
		                 strerror(errno));
		if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
			_exit(127);
		_exit(127);
	}
	c->pid = pid;
	c->started = now();
	return 0;
}

/* Whether something accepts on the unix socket at path. Non-blocking: a
 * listener whose queue is full (a child stuck before its first accept)
 * would otherwise hold the launcher in connect, past start_timeout; a
 * unix connect never answers EINPROGRESS, only yes or no. */
static bool accepts(const char *path)
{
	struct sockaddr_un sun;
	bool ok;

	if (strlen(path) >= sizeof(sun.sun_path))
		return false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	return ok;
}

/* Waits for one of our signals for at most timeout seconds (< 0: no
 * limit). Returns the signal, or 0 on timeout. */
static int wait_signal(double timeout)
{
	sigset_t set;
	siginfo_t info;

	signal_set(&set);
	for (int tries = 0; tries < 1000; tries++) {
		int sig;
		if (timeout < 0) {
			sig = sigwaitinfo(&set, &info);
		} else {
			struct timespec ts;
			ts.tv_sec = (time_t)timeout;
			ts.tv_nsec = (long)((timeout - (double)ts.tv_sec) * 1e9);
			sig = sigtimedwait(&set, &info, &ts);
		}
		if (sig > 0)
			return sig;
		if (errno == EAGAIN)
			return 0;
		/* EINTR (a stop/continue): wait again. */
	}
	return 0;
}

enum reaped { REAPED_NONE = 0, REAPED_AGENT = 1, REAPED_HAPROXY = 2 };

/* Reaps every child that has ended; returns which of ours did. */
static int reap(struct dbk_supervisor *s, int *agent_status, int *haproxy_status)
{
	int which = REAPED_NONE;

	for (int i = 0; i < MAX_REAPS; i++) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			break;
		if (pid == s->agent.pid) {
			s->agent.pid = 0;
			*agent_status = status;
			which |= REAPED_AGENT;
		} else if (pid == s->haproxy.pid) {
			s->haproxy.pid = 0;
			*haproxy_status = status;
			which |= REAPED_HAPROXY;
		}
	}
	return which;
}

/* SIGTERM, wait up to stop_timeout, SIGKILL, wait. A stop signal while
 * waiting skips to SIGKILL. */
static void stop_child(struct dbk_supervisor *s, struct dbk_child *c)
{
	int as = 0, hs = 0;
	char how[96];

	if (!c->pid)
		return;
	pid_t pid = c->pid;
	kill(pid, SIGTERM);
	double deadline = now() + s->stop_timeout;
	bool killed = false;
	/* Bounded: each pass waits until the deadline or a signal. */
	for (int pass = 0; pass < 1000 && c->pid; pass++) {
		reap(s, &as, &hs);
		if (!c->pid)
			break;
		double left = deadline - now();
		if (left <= 0 || killed) {
			if (!killed) {
				dbk_launch_say("%s (pid %d) did not stop in %.0f s: SIGKILL",
				               c->name, (int)pid, s->stop_timeout);
				kill(pid, SIGKILL);
				killed = true;
				deadline = now() + s->stop_timeout;
				continue;
			}
			if (left <= 0)
				break;
		}
		int sig = wait_signal(left);
		if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && !killed) {
			dbk_launch_say("%s (pid %d): second stop signal, SIGKILL", c->name,
			               (int)pid);
			kill(pid, SIGKILL);
			killed = true;
			deadline = now() + s->stop_timeout;
		}
	}
	if (c->pid) {
		/* Cannot happen short of a kernel problem; do not hang. */
		dbk_launch_say("%s (pid %d) is still there after SIGKILL", c->name, (int)pid);
		return;
	}
	describe(c == &s->agent ? as : hs, how, sizeof(how));
	dbk_launch_say("%s (pid %d) %s", c->name, (int)pid, how);
}

static void stop_all(struct dbk_supervisor *s)
{
	/* HAProxy first: while it runs, it may still need the agent. */
	stop_child(s, &s->haproxy);
	stop_child(s, &s->agent);
}

enum phase { STARTING_AGENT, STARTING_HAPROXY, RUNNING };

/* The run's state between two events. */
struct run_state {
	enum phase phase;
	double phase_deadline;
	double restart_at, backoff; /* restart_at 0: none due */
	unsigned quick_deaths;
};

/* The agent died (how): schedules its restart after the back-off. false
 * when it is not to be restarted: during start-up, or after too many
 * quick deaths in a row. */
static bool agent_died(struct dbk_supervisor *s, struct run_state *st, const char *how)
{
	double t = now();

	if (st->phase == STARTING_AGENT) {
		dbk_launch_say("dbucket-spoa %s during start-up", how);
		return false;
	}
	if (t - s->agent.started >= s->stable_after) {
		st->quick_deaths = 0;
		st->backoff = s->backoff_min;
	}
	if (++st->quick_deaths >= s->max_quick_deaths) {
		dbk_launch_say("dbucket-spoa %s, %u times in a row within %.0f s of its start: "
		               "giving up",
		               how, st->quick_deaths, s->stable_after);
		return false;
	}
	dbk_launch_say("dbucket-spoa %s: restarting it in %.2f s (HAProxy balances alone "
	               "meanwhile)",
	               how, st->backoff);
	st->restart_at = t + st->backoff;
	st->backoff = st->backoff * 2 > s->backoff_max ? s->backoff_max : st->backoff * 2;
	return true;
}

/* Restarts the agent when due; moves start-up on once the child it waits
 * for answers. false on a failure (said). */
static bool advance(struct dbk_supervisor *s, struct run_state *st)
{
	double t = now();

	if (st->restart_at > 0 && t >= st->restart_at && !s->agent.pid) {
		st->restart_at = 0;
		if (spawn(&s->agent) < 0)
			return false;
		s->agent_restarts++;
		dbk_launch_say("restarted %s (pid %d)", s->agent.name, (int)s->agent.pid);
	}
	if (st->phase == STARTING_AGENT && accepts(s->agent_ready)) {
		if (spawn(&s->haproxy) < 0)
			return false;
		dbk_launch_say("started %s (pid %d)", s->haproxy.name, (int)s->haproxy.pid);
		st->phase = STARTING_HAPROXY;
		st->phase_deadline = now() + s->start_timeout;
	} else if (st->phase == STARTING_HAPROXY && accepts(s->haproxy_ready)) {
		dbk_launch_say("ready: clients on %s, agent pid %d, haproxy pid %d", s->listen,
		               (int)s->agent.pid, (int)s->haproxy.pid);
		st->phase = RUNNING;
	} else if (st->phase != RUNNING && t > st->phase_deadline) {
		dbk_launch_say("%s did not come up within %.0f s",
		               st->phase == STARTING_AGENT ? "dbucket-spoa" : "haproxy",
		               s->start_timeout);
		return false;
	}
	return true;
}

int dbk_supervise_run(struct dbk_supervisor *s)
{
	struct run_state st = { STARTING_AGENT, now() + s->start_timeout, 0, s->backoff_min, 0 };
	int rc = 1;

	if (spawn(&s->agent) < 0)
		return 1;
	dbk_launch_say("started %s (pid %d)", s->agent.name, (int)s->agent.pid);
	for (;;) {
		double t = now(), timeout = -1;
		int as = 0, hs = 0, which, sig;
		char how[96];

		if (st.phase != RUNNING)
			timeout = PROBE_INTERVAL;
		else if (st.restart_at > 0)
			timeout = st.restart_at > t ? st.restart_at - t : 0;
		sig = wait_signal(timeout);
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
			s->stop_signal = sig;
			dbk_launch_say("%s: stopping", strsignal(sig));
			rc = 0;
			break;
		}
		which = reap(s, &as, &hs);
		if (which & REAPED_HAPROXY) {
			describe(hs, how, sizeof(how));
			dbk_launch_say("haproxy %s: stopping", how);
			break;
		}
		if (which & REAPED_AGENT) {
			describe(as, how, sizeof(how));
			if (!agent_died(s, &st, how))
				break;
		}
		if (!advance(s, &st))
			break;
	}
	stop_all(s);
	return rc;
}
