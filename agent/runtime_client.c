#include "runtime_client.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* No caller needs more, and it keeps max_bytes + 2 far from overflow. */
#define MAX_RESPONSE_CAP (256u * 1024 * 1024)

const char *dbk_rt_query_status_str(enum dbk_rt_query_status st)
{
	switch (st) {
	case DBK_RT_Q_OK: return "ok";
	case DBK_RT_Q_CONNECT: return "connect";
	case DBK_RT_Q_IO: return "io";
	case DBK_RT_Q_TIMEOUT: return "timeout";
	case DBK_RT_Q_TOO_BIG: return "too_big";
	}
	return "?";
}

int dbk_rt_addr_parse(const char *spec, struct dbk_rt_addr *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (dbk_net_resolve(spec, false, &a->sa, &a->len, err, errlen) < 0)
		return -1;
	snprintf(a->text, sizeof(a->text), "%s", spec);
	return 0;
}

/* Copies cmd and its newline into out. Returns the length, or 0 when cmd
 * is not exactly one command line. */
static size_t make_command(const char *cmd, char *out, size_t cap, char *err, size_t errlen)
{
	size_t n = cmd ? strnlen(cmd, DBK_RT_MAX_COMMAND + 1) : 0;

	if (n == 0 || n > DBK_RT_MAX_COMMAND || n + 2 > cap) {
		dbk_errf(err, errlen, "runtime API command empty or longer than %d bytes",
		         DBK_RT_MAX_COMMAND);
		return 0;
	}
	if (strpbrk(cmd, "\r\n;")) {
		dbk_errf(err, errlen, "runtime API command must be one command (no CR, LF or ';')");
		return 0;
	}
	memcpy(out, cmd, n);
	out[n] = '\n';
	out[n + 1] = '\0';
	return n + 1;
}

/* Starts a non-blocking connect (dbk_net_connect). Returns the fd, or -1
 * with err (a unix socket with no listener fails here, not later; EAGAIN
 * on one is a full backlog: the same remedy as a refusal, try again at
 * the next poll). */
static int open_connect(const struct dbk_rt_addr *a, char *err, size_t errlen)
{
	int fd = dbk_net_connect(&a->sa, a->len);

	if (fd < 0)
		dbk_errf(err, errlen, "connect %s: %s", a->text, strerror(errno));
	return fd;
}

static int connect_result(int fd, const struct dbk_rt_addr *a, char *err, size_t errlen)
{
	int e = dbk_net_connect_error(fd);

	if (e) {
		dbk_errf(err, errlen, "connect %s: %s", a->text, strerror(e));
		return -1;
	}
	return 0;
}

static size_t clamp_max(size_t max_bytes)
{
	if (max_bytes == 0)
		return DBK_RT_DEFAULT_MAX_RESPONSE;
	return max_bytes > MAX_RESPONSE_CAP ? MAX_RESPONSE_CAP : max_bytes;
}

/* ---- asynchronous ---- */

struct dbk_rt_query {
	struct dbk_conn conn; /* while connected: the query's deadline is its timer */
	ev_timer failed;      /* or a connect that failed at once */
	struct ev_loop *loop;
	bool connected, answered;
	dbk_rt_query_cb cb;
	void *arg;
	struct dbk_rt_addr addr;
	size_t max_bytes;
	/* A failure found inside dbk_rt_query_start, reported from the loop
	 * so that the callback never runs inside the caller's call. */
	char early_err[192];
};

/* The answer is read until EOF; one byte past the limit is too big. */
static void on_answer(struct dbk_conn *conn)
{
	struct dbk_rt_query *q = conn->arg;
	char msg[256];

	if (conn->in.len <= q->max_bytes)
		return;
	snprintf(msg, sizeof(msg), "response from %s larger than %zu bytes", q->addr.text,
	         q->max_bytes);
	q->answered = true;
	q->cb(q->arg, DBK_RT_Q_TOO_BIG, NULL, 0, msg);
	dbk_conn_close(conn, DBK_CONN_LOCAL);
}

/* LOCAL: answered already, or cancelled; no callback. */
static void on_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_rt_query *q = conn->arg;
	char msg[256];

	switch (why) {
	case DBK_CONN_LOCAL: break;
	case DBK_CONN_EOF: q->cb(q->arg, DBK_RT_Q_OK, conn->in.p, conn->in.len, NULL); break;
	case DBK_CONN_TIMEOUT:
		snprintf(msg, sizeof(msg), "no complete answer from %s in time", q->addr.text);
		q->cb(q->arg, DBK_RT_Q_TIMEOUT, NULL, 0, msg);
		break;
	case DBK_CONN_ERROR:
		snprintf(msg, sizeof(msg), "%s %s: %s", conn->err_op, q->addr.text,
		         strerror(conn->err_no));
		q->cb(q->arg, strcmp(conn->err_op, "connect") ? DBK_RT_Q_IO : DBK_RT_Q_CONNECT,
		      NULL, 0, msg);
		break;
	}
	free(q);
}

static const struct dbk_conn_ops query_ops = { .on_data = on_answer, .on_close = on_closed };

static void on_failed(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_rt_query *q = (struct dbk_rt_query *)((char *)w -
	                                                 offsetof(struct dbk_rt_query, failed));

	(void)loop;
	(void)revents;
	q->cb(q->arg, DBK_RT_Q_CONNECT, NULL, 0, q->early_err);
	free(q);
}

/* Starts the query of out (out_len bytes, its newline included). */
static struct dbk_rt_query *start_query(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                        const char *out, size_t out_len, unsigned timeout_ms,
                                        size_t max_bytes, dbk_rt_query_cb cb, void *arg, char *err,
                                        size_t errlen)
{
	struct dbk_rt_query *q = calloc(1, sizeof(*q));

	if (!q) {
		dbk_errf(err, errlen, "out of memory");
		return NULL;
	}
	q->loop = loop;
	q->cb = cb;
	q->arg = arg;
	q->addr = *addr;
	q->addr.text[sizeof(q->addr.text) - 1] = '\0';
	q->max_bytes = clamp_max(max_bytes);
	if (dbk_conn_connect(&q->conn, loop, &q->addr.sa, q->addr.len, &query_ops, q,
	                     q->max_bytes + 1) < 0) {
		snprintf(q->early_err, sizeof(q->early_err), "connect %s: %s", q->addr.text,
		         strerror(errno));
		ev_timer_init(&q->failed, on_failed, 0., 0.);
		ev_timer_start(loop, &q->failed);
		return q;
	}
	q->connected = true;
	/* Sent once the connect is done; the deadline covers it all. */
	dbk_buf_add(&q->conn.out, out, out_len);
	if (q->conn.out.oom) {
		dbk_errf(err, errlen, "out of memory");
		dbk_conn_close(&q->conn, DBK_CONN_LOCAL); /* frees q, no callback */
		return NULL;
	}
	dbk_conn_deadline(&q->conn, (timeout_ms ? timeout_ms : DBK_RT_DEFAULT_TIMEOUT_MS) / 1000.0);
	dbk_conn_update(&q->conn);
	return q;
}

static bool query_args_ok(struct ev_loop *loop, const struct dbk_rt_addr *addr, dbk_rt_query_cb cb,
                          char *err, size_t errlen)
{
	if (!loop || !addr || !cb || addr->len == 0) {
		dbk_errf(err, errlen, "runtime API query: missing loop, address or callback");
		return false;
	}
	return true;
}

struct dbk_rt_query *dbk_rt_query_start(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                        const char *cmd, unsigned timeout_ms, size_t max_bytes,
                                        dbk_rt_query_cb cb, void *arg, char *err, size_t errlen)
{
	char out[DBK_RT_MAX_COMMAND + 2];
	size_t out_len;

	if (!query_args_ok(loop, addr, cb, err, errlen))
		return NULL;
	out_len = make_command(cmd, out, sizeof(out), err, errlen);
	if (out_len == 0)
		return NULL;
	return start_query(loop, addr, out, out_len, timeout_ms, max_bytes, cb, arg, err, errlen);
}

struct dbk_rt_query *dbk_rt_query_start_batch(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                              const char *cmds, unsigned timeout_ms,
                                              size_t max_bytes, dbk_rt_query_cb cb, void *arg,
                                              char *err, size_t errlen)
{
	char out[DBK_RT_MAX_BATCH + 2];
	size_t n = cmds ? strnlen(cmds, DBK_RT_MAX_BATCH + 1) : 0;

	if (!query_args_ok(loop, addr, cb, err, errlen))
		return NULL;
	if (n == 0 || n > DBK_RT_MAX_BATCH) {
		dbk_errf(err, errlen, "runtime API batch empty or longer than %d bytes",
		         DBK_RT_MAX_BATCH);
		return NULL;
	}
	/* Each part one command, as dbk_rt_query_start takes it. */
	for (const char *p = cmds; p <= cmds + n;) {
		const char *semi = memchr(p, ';', (size_t)(cmds + n - p));
		const char *e = semi ? semi : cmds + n;
		char one[DBK_RT_MAX_COMMAND + 2];
		char part[DBK_RT_MAX_COMMAND + 1];
		size_t pl = (size_t)(e - p);

		if (pl > DBK_RT_MAX_COMMAND) {
			dbk_errf(err, errlen, "runtime API command longer than %d bytes",
			         DBK_RT_MAX_COMMAND);
			return NULL;
		}
		memcpy(part, p, pl);
		part[pl] = '\0';
		if (make_command(part, one, sizeof(one), err, errlen) == 0)
			return NULL;
		p = e + 1;
	}
	memcpy(out, cmds, n);
	out[n] = '\n';
	return start_query(loop, addr, out, n + 1, timeout_ms, max_bytes, cb, arg, err, errlen);
}

void dbk_rt_query_cancel(struct dbk_rt_query *q)
{
	if (!q)
		return;
	if (q->connected) {
		dbk_conn_close(&q->conn, DBK_CONN_LOCAL);
		return;
	}
	ev_timer_stop(q->loop, &q->failed);
	free(q);
}

/* ---- synchronous ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline. Returns 1 when ready, 0 on
 * timeout, -1 on a poll error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = events };

		if (left <= 0)
			return 0;
		int rc = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (rc > 0)
			return 1;
		if (rc == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* wait_fd with its failure said: "<what> ADDR: timed out" (TIMEOUT) or
 * the poll's error (fail). DBK_RT_Q_OK when fd is ready. */
static enum dbk_rt_query_status wait_step(int fd, short events, int64_t deadline, const char *what,
                                          const struct dbk_rt_addr *a,
                                          enum dbk_rt_query_status fail, char *err, size_t errlen)
{
	int rc = wait_fd(fd, events, deadline);

	if (rc > 0)
		return DBK_RT_Q_OK;
	dbk_errf(err, errlen, "%s %s: %s", what, a->text, rc == 0 ? "timed out" : strerror(errno));
	return rc == 0 ? DBK_RT_Q_TIMEOUT : fail;
}

enum dbk_rt_query_status dbk_rt_query_sync(const char *addr, const char *cmd, unsigned timeout_ms,
                                           char *buf, size_t cap, size_t *len, char *err,
                                           size_t errlen)
{
	struct dbk_rt_addr a;
	char out[DBK_RT_MAX_COMMAND + 2];
	size_t out_len, off = 0, got = 0;
	enum dbk_rt_query_status st = DBK_RT_Q_OK;
	int64_t deadline;
	int fd, rc;

	*len = 0;
	if (!buf || cap == 0) {
		dbk_errf(err, errlen, "no response buffer");
		return DBK_RT_Q_IO;
	}
	buf[0] = '\0';
	if (dbk_rt_addr_parse(addr, &a, err, errlen) < 0)
		return DBK_RT_Q_CONNECT;
	out_len = make_command(cmd, out, sizeof(out), err, errlen);
	if (out_len == 0)
		return DBK_RT_Q_IO;
	deadline = mono_ms() + (timeout_ms ? timeout_ms : DBK_RT_DEFAULT_TIMEOUT_MS);

	fd = open_connect(&a, err, errlen);
	if (fd < 0)
		return DBK_RT_Q_CONNECT;
	st = wait_step(fd, POLLOUT, deadline, "connect", &a, DBK_RT_Q_CONNECT, err, errlen);
	if (st != DBK_RT_Q_OK)
		goto out;
	if (connect_result(fd, &a, err, errlen) < 0) {
		st = DBK_RT_Q_CONNECT;
		goto out;
	}

	for (;;) {
		if (dbk_net_send_pending(fd, out, out_len, &off) < 0) {
			dbk_errf(err, errlen, "write %s: %s", a.text, strerror(errno));
			st = DBK_RT_Q_IO;
			goto out;
		}
		if (off == out_len)
			break;
		st = wait_step(fd, POLLOUT, deadline, "write", &a, DBK_RT_Q_IO, err, errlen);
		if (st != DBK_RT_Q_OK)
			goto out;
	}

	/* Until EOF; every round either reads or waits, and the deadline
	 * bounds the waits. */
	for (;;) {
		char extra;
		/* At cap - 1 bytes, one more byte tells a response that ends
		 * exactly there from a larger one. */
		char *dst = got < cap - 1 ? buf + got : &extra;
		size_t room = got < cap - 1 ? cap - 1 - got : 1;
		ssize_t r = read(fd, dst, room);

		if (r == 0)
			break;
		if (r > 0) {
			if (dst == &extra) {
				dbk_errf(err, errlen, "response from %s larger than %zu bytes",
				         a.text, cap - 1);
				st = DBK_RT_Q_TOO_BIG;
				goto out;
			}
			got += (size_t)r;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			dbk_errf(err, errlen, "read %s: %s", a.text, strerror(errno));
			st = DBK_RT_Q_IO;
			goto out;
		}
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc <= 0) {
			dbk_errf(err, errlen, "no complete answer from %s in time", a.text);
			st = rc == 0 ? DBK_RT_Q_TIMEOUT : DBK_RT_Q_IO;
			goto out;
		}
	}
	buf[got] = '\0';
	*len = got;
out:
	close(fd);
	if (st != DBK_RT_Q_OK)
		buf[0] = '\0';
	return st;
}
