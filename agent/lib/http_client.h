/* A lean HTTP/1.1 client for polling one server over and over (the
 * agent's scraper): one keep-alive connection, one request at a time,
 * plain HTTP only. It exists because a general client's per-request
 * machinery (libcurl's: handles, connection cache checks, poll()s,
 * allocations) cost the agent several times more CPU than the bytes
 * moved. Here a request in the steady state is one send() and usually
 * one recv() (over lib/conn): the request bytes are the caller's,
 * prepared once and copied to the connection's output; the socket's
 * read watcher stays registered while the connection lives (so
 * no epoll_ctl per request); the response is read only until it is
 * complete, framed by the shared parser (lib/http1: Content-Length,
 * chunked, or until close); the buffer is kept between requests, so no
 * allocation either.
 *
 * No timer of its own: the caller owns one for all its clients and calls
 * dbk_hc_expire when a deadline may have passed. A failure closes the
 * connection and the next request opens a new one; a request whose reused
 * connection turns out closed by the server before any byte of the answer
 * (an idle keep-alive timeout racing the request) is sent once more on a
 * new connection, as browsers and libcurl do for an idempotent GET. */
#ifndef DBK_HTTP_CLIENT_H
#define DBK_HTTP_CLIENT_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "lib/http1.h"

/* Largest response head read. */
#define DBK_HC_MAX_HEAD (16 * 1024)

/* What a request came to: a status (any, the caller judges it) and the
 * body, or status 0 and why not. body points into the client's buffer
 * and lives until the next request on it. */
struct dbk_hc_result {
	int status;
	const char *body;
	size_t body_len;
	const char *error;
	bool too_large; /* the error: the body is over max_body */
};

typedef void (*dbk_hc_done_fn)(void *arg, const struct dbk_hc_result *r);

/* The answer being read, apart from the socket (pure, so it can be
 * fuzzed): the bytes read so far are in a dbk_buf, and each step frames
 * them with lib/http1. A chunked body is decoded in place, so `in` is
 * rewritten: the head, then the body, then the bytes not decoded yet. */
struct dbk_hc_answer {
	size_t max_body;
	bool head_done;
	struct dbk_http_response rsp;
	struct dbk_http_body body; /* a chunked body, decoded so far */
	bool too_large;            /* the error was too_big's */
	char err[160];
};

void dbk_hc_answer_init(struct dbk_hc_answer *a, size_t max_body);
/* After more bytes were appended to in (eof: none will follow), whether
 * the answer is complete: COMPLETE with *res (its body inside in, NUL
 * after it) and *end (where the answer ends in in; bytes after it were
 * not asked for); INCOMPLETE; or ERROR with a->err: a malformed head or
 * chunk, a body above max_body. An interim (1xx) answer is dropped from
 * in. */
enum dbk_http_result dbk_hc_answer_step(struct dbk_hc_answer *a, struct dbk_buf *in, bool eof,
                                        struct dbk_hc_result *res, size_t *end);

struct dbk_hc_link;

struct dbk_hc {
	struct ev_loop *loop;
	struct dbk_hc_link *link; /* the connection (lib/conn), or NULL */
	struct sockaddr_storage sa;
	socklen_t salen;
	size_t max_body;
	dbk_hc_done_fn done;
	void *arg;
	uint64_t connects; /* connections opened, for tests and the curious */
	/* Set by the caller: close the connection after each answer (for a
	 * request sent less often than servers keep an idle connection). */
	bool once;

	/* The request in flight. */
	bool busy, reused, retried;
	bool moved; /* the address changed: this connection is the last */
	const char *req;
	size_t req_len;
	uint64_t deadline_ms;
	/* What was read of the answer, kept between requests: lent to the
	 * connection while there is one. */
	struct dbk_buf in;
	struct dbk_hc_answer ans;
	char err[160];
};

/* An idle client with no address yet; done is called once per request
 * that dbk_hc_get accepted. */
void dbk_hc_init(struct dbk_hc *c, struct ev_loop *loop, size_t max_body, dbk_hc_done_fn done,
                 void *arg);
/* Where to connect from now on; a connection to another address is
 * closed (at once, or when the request in flight on it is over). */
void dbk_hc_set_addr(struct dbk_hc *c, const struct sockaddr *sa, socklen_t len);
bool dbk_hc_has_addr(const struct dbk_hc *c);

/* Sends req[0..len) (a whole request, which stays the caller's and must
 * live until done is called) and reads the answer, by deadline_ms
 * (monotonic). Returns 0, and done follows (it may come before this
 * returns, when the kept connection proves dead and a new one is refused
 * at once); or -1 with c->err saying why (busy, no address, the connect
 * failed at once), and done is not called. */
int dbk_hc_get(struct dbk_hc *c, const char *req, size_t len, uint64_t deadline_ms);

/* Ends the request in flight as timed out if now_ms is past its
 * deadline (done is called). */
void dbk_hc_expire(struct dbk_hc *c, uint64_t now_ms);

/* Bytes of the answer read so far. */
size_t dbk_hc_answer_len(struct dbk_hc *c);

/* Closes the connection; a request in flight is dropped without done. */
void dbk_hc_free(struct dbk_hc *c);

#endif
