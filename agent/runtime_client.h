/* HAProxy's runtime API (the stats socket), the socket half: send one
 * command, read the whole answer. The parsing is runtime.h's.
 *
 * HAProxy's CLI starts in non-interactive mode: it runs the one command
 * line it receives, writes the output (ended by an empty line) and closes.
 * So a query is connect, write "<cmd>\n", read until EOF; no framing to
 * guess, and a response that stops early shows as a parse error (no
 * closing empty line) or a read error, never as a short success.
 *
 * Everything is bounded: one command line of at most DBK_RT_MAX_COMMAND
 * bytes, a response of at most max_bytes, a deadline for the whole
 * exchange (connect included: connects are non-blocking). */
#ifndef DBK_RUNTIME_CLIENT_H
#define DBK_RUNTIME_CLIENT_H

#include <ev.h>
#include <stddef.h>
#include <sys/socket.h>

#define DBK_RT_MAX_COMMAND 1024
#define DBK_RT_DEFAULT_TIMEOUT_MS 2000
#define DBK_RT_DEFAULT_MAX_RESPONSE (1024 * 1024)

/* Where the stats socket is, resolved once. */
struct dbk_rt_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	char text[128]; /* for messages */
};

/* Parses "unix:PATH", "/PATH" (as HAProxy's "stats socket" line writes
 * it), "HOST:PORT" or "[IPV6]:PORT". A host name is resolved here, with
 * getaddrinfo, which may block: call it at start-up, not from the loop.
 * Returns 0, or -1 with a one-line reason in err. */
int dbk_rt_addr_parse(const char *spec, struct dbk_rt_addr *a, char *err, size_t errlen);

enum dbk_rt_query_status {
	DBK_RT_Q_OK = 0,  /* EOF after the response */
	DBK_RT_Q_CONNECT, /* connect failed (refused, no such socket, ...) */
	DBK_RT_Q_IO,      /* write or read failed, or the peer reset */
	DBK_RT_Q_TIMEOUT, /* the deadline passed first */
	DBK_RT_Q_TOO_BIG, /* the response outgrew max_bytes */
};

const char *dbk_rt_query_status_str(enum dbk_rt_query_status st);

/* Called once per query, from the event loop, never from inside
 * dbk_rt_query_start. On DBK_RT_Q_OK, buf holds the len bytes read,
 * followed by a NUL (not counted); otherwise buf is NULL, len 0 and err a
 * one-line reason. buf and err are valid only during the call. The query
 * is freed when the callback returns; the callback may start another. */
typedef void (*dbk_rt_query_cb)(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                                const char *err);

struct dbk_rt_query;

/* Starts "cmd\n" to addr. timeout_ms 0 means DBK_RT_DEFAULT_TIMEOUT_MS,
 * max_bytes 0 DBK_RT_DEFAULT_MAX_RESPONSE. cmd must be one command: no
 * CR, LF or ';' (HAProxy runs each ';'-separated part as a command of
 * its own), at most DBK_RT_MAX_COMMAND bytes. Returns the query, or NULL
 * with a reason in err (bad command, out of memory) and no callback to
 * come. A connect that fails at once (no socket to be had included) is
 * still reported through the callback. */
struct dbk_rt_query *dbk_rt_query_start(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                        const char *cmd, unsigned timeout_ms, size_t max_bytes,
                                        dbk_rt_query_cb cb, void *arg, char *err, size_t errlen);

/* The same for several commands in one exchange: cmds is at most
 * DBK_RT_MAX_BATCH bytes of commands separated by ';' (HAProxy runs
 * each in turn and writes their answers one after the other), each one
 * command as dbk_rt_query_start takes it. A writer of many `set table`
 * rows a turn opens one connection instead of one a row. */
#define DBK_RT_MAX_BATCH 8192
struct dbk_rt_query *dbk_rt_query_start_batch(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                              const char *cmds, unsigned timeout_ms,
                                              size_t max_bytes, dbk_rt_query_cb cb, void *arg,
                                              char *err, size_t errlen);

/* Abandons a query whose callback has not run: closes it, no callback. */
void dbk_rt_query_cancel(struct dbk_rt_query *q);

/* The same exchange, blocking (poll()), for start-up discovery before the
 * loop runs. addr as dbk_rt_addr_parse takes it (a host name is resolved
 * outside the deadline). The response goes to buf, NUL-terminated; it must
 * fit in cap - 1 bytes. Returns DBK_RT_Q_OK with *len set, or another
 * status with a reason in err. */
enum dbk_rt_query_status dbk_rt_query_sync(const char *addr, const char *cmd, unsigned timeout_ms,
                                           char *buf, size_t cap, size_t *len, char *err,
                                           size_t errlen);

#endif
