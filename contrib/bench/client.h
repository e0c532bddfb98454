/* The benchmark's HTTP client on a libev loop: one request per
 * connection (non-blocking connect, write, read the streamed response
 * until it ends), a deadline per request, bounded memory per request.
 * Every call ends in exactly one callback. */
#ifndef DBK_BENCH_CLIENT_H
#define DBK_BENCH_CLIENT_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "lib/list.h"

struct dbk_call;

struct dbk_call_result {
	int status;            /* HTTP status, 0 when none was read */
	bool ok;               /* 200 and a complete stream */
	bool timed_out;        /* the deadline passed (error "timeout") */
	const char *error;     /* why not ok; valid during the callback */
	const char *served_by; /* X-Served-By, "" if none */
	double t0;             /* monotonic seconds, just before connect */
	double ttft, e2e;      /* seconds from t0, when ok */
	uint32_t tokens;       /* output tokens, when ok */
	double *itl;           /* gaps (seconds), the callee owns them */
	size_t n_itl;
};

typedef void (*dbk_call_done_fn)(void *ctx, const struct dbk_call_result *r);

struct dbk_client {
	struct ev_loop *loop;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	double timeout_s;      /* per request, real seconds */
	struct dbk_list calls; /* in flight: struct dbk_call.link */
	size_t n_calls;
};

/* Monotonic clock, seconds. */
double dbk_client_now(void);

void dbk_client_init(struct dbk_client *c, struct ev_loop *loop, const struct sockaddr *addr,
                     socklen_t addrlen, double timeout_s);

/* Sends req (its bytes are taken over, req is left empty) and reports
 * through fn. max_msgs bounds the stream (see dbk_stream_init). Returns 0,
 * or -errno when the call could not start (no callback then): -EMFILE
 * and -ENFILE mean "retry when a call ends". */
int dbk_client_start(struct dbk_client *c, struct dbk_buf *req, size_t max_msgs,
                     dbk_call_done_fn fn, void *ctx);

/* Ends every call in flight with error why (their callbacks run). */
void dbk_client_abort_all(struct dbk_client *c, const char *why);

#endif
