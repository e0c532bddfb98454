/* Runs dbucket-spoa and HAProxy as children and stays with them.
 *
 * Policy:
 * - Start-up in order: the agent, then (once its admin socket accepts,
 *   i.e. every listener is bound) HAProxy, then "ready" once HAProxy's
 *   runtime API answers. A child that fails during start-up ends the
 *   launcher with status 1: that is a configuration error, and retrying
 *   would only repeat it.
 * - The agent dying later is restarted, after 0.25 s doubling to 8 s;
 *   HAProxy balances with leastconn meanwhile, as it does whenever the
 *   agent is away. Five deaths in a row, each within a minute of its
 *   start, end the launcher with status 1.
 * - HAProxy dying ends the launcher with status 1 (after stopping the
 *   agent): HAProxy owns the clients' socket, and restarting it is the
 *   service manager's call.
 * - SIGTERM, SIGINT or SIGHUP stop HAProxy, then the agent (SIGTERM, then
 *   SIGKILL after 5 s each), and the launcher exits 0. A second such
 *   signal while stopping sends SIGKILL at once.
 *
 * The children run in their own process group, so that a terminal's ^C
 * reaches the launcher alone and the stop keeps its order; they get
 * SIGTERM if the launcher itself dies (PR_SET_PDEATHSIG). Signals are
 * taken synchronously with sigtimedwait: no handlers, no races with
 * waitpid. */
#ifndef DBK_LAUNCH_SUPERVISE_H
#define DBK_LAUNCH_SUPERVISE_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct dbk_child {
	const char *name; /* for messages */
	char **argv;      /* argv[0] is an absolute path */
	pid_t pid;        /* 0 when not running */
	double started;   /* monotonic seconds */
	/* Close-on-exec sockets this child alone inherits (fd@N on its
	 * command line): the launcher keeps them bound across restarts. */
	const int *inherit;
	unsigned ninherit;
};

struct dbk_supervisor {
	struct dbk_child agent;
	struct dbk_child haproxy;
	const char *agent_ready;   /* unix socket that accepts once the agent is up */
	const char *haproxy_ready; /* unix socket that accepts once HAProxy is up */
	const char *listen;        /* where clients connect, for the "ready" line */
	/* Limits (seconds, counts); dbk_supervise_init sets the defaults. */
	double start_timeout;
	double stop_timeout;
	double backoff_min, backoff_max;
	double stable_after; /* an agent up this long resets the count */
	unsigned max_quick_deaths;
	/* Results, for the caller and the tests. */
	unsigned agent_restarts;
	int stop_signal; /* the signal that stopped us, 0 if none */
};

/* The signals the supervisor takes: block them (dbk_supervise_block)
 * before anything else, so that one arriving early waits for the loop. */
void dbk_supervise_block(void);

void dbk_supervise_init(struct dbk_supervisor *s);

/* Runs until a stop signal or a failure; returns the exit status (0 or 1).
 * Every child started has been waited for when it returns. */
int dbk_supervise_run(struct dbk_supervisor *s);

#endif
