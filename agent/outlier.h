/* Outlier ejection: which servers fail their requests, told by HAProxy's
 * completion lines (status and termination flags), and how long each is
 * left out. A server can pass its health check and serve /metrics while
 * its completions fail at once; least-load and earliest-first-token
 * policies then love it, since a failing server is never busy.
 *
 * What it follows:
 * - Envoy's outlier detection (envoyproxy.io, arch_overview/outlier and
 *   config.cluster.v3.OutlierDetection): consecutive 5xx and a failure
 *   percentage with a minimum request volume; ejection for base time x
 *   the times ejected, capped (max_ejection_time), the multiplier
 *   shrinking again while the host stays healthy; max_ejection_percent,
 *   with at least one host ejectable.
 * - The vLLM Router's circuit breaker (vllm-project/router,
 *   src/core/circuit_breaker.rs: failure_threshold 5, success_threshold 2,
 *   open -> half-open after a timeout, one failure in half-open reopens):
 *   after its back-off a server takes traffic again half-open, one failure
 *   ejects it again at once, two successes close it.
 *
 * Two rules of our own: the cap never lets ejection leave no usable
 * server (the caller says how many are usable, for every reason), and a
 * fleet of one is never ejected from.
 *
 * Pure: no I/O, no clock, no logging; time is passed in and what changed
 * is returned for the caller to apply (dbk_bal_set_out) and log. */
#ifndef DBK_OUTLIER_H
#define DBK_OUTLIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "completion.h"

#define DBK_OUTLIER_DEFAULT_CONSECUTIVE 5
#define DBK_OUTLIER_DEFAULT_RATIO 0.3
#define DBK_OUTLIER_DEFAULT_MIN_REQUESTS 20
#define DBK_OUTLIER_DEFAULT_WINDOW_MS 10000
#define DBK_OUTLIER_DEFAULT_BASE_MS 10000
#define DBK_OUTLIER_DEFAULT_MAX_MS 300000
#define DBK_OUTLIER_DEFAULT_MAX_PERCENT 50
/* Successes in half-open that close it (the vLLM Router's default). */
#define DBK_OUTLIER_HALF_OPEN_SUCCESSES 2

/* The integer types are the command line's (lib/cli fills them). */
struct dbk_outlier_config {
	bool enabled;
	int consecutive;     /* failures in a row that eject; 0: rule off */
	double ratio;        /* failure share over the window that ejects; 0: off */
	int min_requests;    /* ... counted over at least this many requests */
	long long window_ms; /* the ratio's window (two of them, rolling) */
	long long base_ms;   /* first ejection; the n-th lasts n times as long */
	long long max_ms;    /* ... up to this */
	int max_percent;     /* of the fleet ejected at once (at least one) */
};

void dbk_outlier_config_default(struct dbk_outlier_config *c);

/* What one completion line says about the server that served it. */
enum dbk_outlier_verdict {
	DBK_OUTLIER_IGNORE = 0, /* not the server's doing either way */
	DBK_OUTLIER_SUCCESS,
	DBK_OUTLIER_FAILURE,
};

/* The server's fault: a 5xx it answered (termination "----" or a data
 * phase flag), HAProxy's own 502/503/504 or no response at all with a
 * server-side termination flag (S: refused, reset, aborted; s: server
 * timeout) in the connect, headers or data phase. Not the server's: a
 * client abort or client timeout (C, c), HAProxy's own refusals and
 * errors (P, R, I, D, K, L, U), a wait in the queue (second flag Q: the
 * server was full, as the agent's choice can be), a 4xx (counted as a
 * success: the server answered). *why is a short word for the log
 * ("http-500", "connect", "reset", "timeout", "aborted") or NULL. */
enum dbk_outlier_verdict dbk_outlier_classify(int status, const char term[5], const char **why);

enum dbk_outlier_state {
	DBK_OUTLIER_CLOSED = 0, /* in rotation */
	DBK_OUTLIER_EJECTED,
	DBK_OUTLIER_HALF_OPEN, /* back after a back-off, on probation */
};

struct dbk_outlier_server {
	enum dbk_outlier_state state;
	unsigned consecutive;             /* failures in a row */
	unsigned half_open_ok;            /* successes since half-open */
	uint64_t win_start_ms;            /* the current window began */
	unsigned win_total, win_failed;   /* this window */
	unsigned prev_total, prev_failed; /* the window before */
	unsigned multiplier;              /* back-off steps owed */
	uint64_t until_ms;                /* ejected until */
	uint64_t returned_ms;             /* last return (0: never ejected) */
	const char *reason;               /* of the last ejection */
	/* Totals, for the reports. */
	uint64_t failures, successes, ejections;
};

struct dbk_outlier_stats {
	uint64_t ejections; /* servers ejected */
	uint64_t returns;   /* back-offs ended */
	uint64_t capped;    /* ejections the cap (or the last usable server) refused */
	uint64_t failures;  /* completions counted as the server's failure */
	unsigned ejected;   /* servers ejected now */
};

struct dbk_outlier {
	struct dbk_outlier_config cfg;
	unsigned n;
	/* Servers in the fleet now (n at first): the share ejected at once
	 * is of these, not of the slots a changing fleet keeps spare. */
	unsigned fleet;
	struct dbk_outlier_server *s;
	struct dbk_outlier_stats stats;
};

/* An ejection: server, why, for how long. */
struct dbk_outlier_change {
	unsigned server;
	const char *reason; /* "consecutive" or "ratio", or "half-open" */
	const char *last;   /* the last failure's word (dbk_outlier_classify) */
	uint64_t for_ms;
};

/* n servers, all closed. Returns -1 when out of memory. */
int dbk_outlier_init(struct dbk_outlier *o, const struct dbk_outlier_config *c, unsigned n);
void dbk_outlier_free(struct dbk_outlier *o);

/* Counts one verdict for server at now_ms. others is how many other
 * servers the balancer may choose now (every reason counted): with none,
 * the server stays. Returns true, with *ch, when the server is to be ejected
 * now (the caller sets DBK_BAL_OUT_EJECTED). A verdict for an ejected
 * server (a request that was in flight) is counted but changes nothing. */
bool dbk_outlier_observe(struct dbk_outlier *o, unsigned server, enum dbk_outlier_verdict v,
                         const char *why, uint64_t now_ms, unsigned others,
                         struct dbk_outlier_change *ch);

/* Ends every back-off due by now_ms: each such server goes half-open
 * and cb (may be NULL) is called for it (the caller clears
 * DBK_BAL_OUT_EJECTED). Returns how many. */
size_t dbk_outlier_tick(struct dbk_outlier *o, uint64_t now_ms,
                        void (*cb)(void *arg, unsigned server), void *arg);

/* The earliest back-off end, or UINT64_MAX when none is ejected. */
uint64_t dbk_outlier_next_due(const struct dbk_outlier *o);

/* Whether server is ejected now (false out of range). */
bool dbk_outlier_ejected(const struct dbk_outlier *o, unsigned server);

/* The fleet's size now (servers present, at most n). */
void dbk_outlier_set_fleet(struct dbk_outlier *o, unsigned fleet);

/* Forgets what server did (a new instance in its slot): closed, no
 * history. Returns true when it was ejected (the caller clears the bit). */
bool dbk_outlier_reset(struct dbk_outlier *o, unsigned server);

const char *dbk_outlier_state_str(enum dbk_outlier_state s);

#endif
