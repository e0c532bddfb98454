#include "runtime_client.h"

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

/* First read buffer; doubled as needed up to the query's limit. A
 * show stat of a few servers is a few KB. */
#define IN_START 16384
/* No caller needs more, and it keeps max_bytes + 2 far from overflow. */
#define MAX_RESPONSE_CAP (256u * 1024 * 1024)
/* Reads per readiness event, so one fast peer cannot hold the loop. */
#define READ_ROUNDS 16

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
		snprintf(err, errlen, "runtime API command empty or longer than %d bytes",
		         DBK_RT_MAX_COMMAND);
		return 0;
	}
	if (strpbrk(cmd, "\r\n;")) {
		snprintf(err, errlen, "runtime API command must be one command (no CR, LF or ';')");
		return 0;
	}
	memcpy(out, cmd, n);
	out[n] = '\n';
	out[n + 1] = '\0';
	return n + 1;
}

/* A non-blocking socket, connect started. Returns the fd (with
 * *pending set when the connect is still in progress), -1 with err when
 * no socket could be made, or -2 with err when the connect failed at
 * once (a unix socket with no listener fails here, not later). */
static int open_connect(const struct dbk_rt_addr *a, bool *pending, char *err, size_t errlen)
{
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*pending = false;
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)&a->sa, a->len) == 0)
		return fd;
	if (errno == EINPROGRESS) {
		*pending = true;
		return fd;
	}
	/* EAGAIN on a unix socket: its backlog is full. Same remedy as a
	 * refusal: try again at the next poll. */
	snprintf(err, errlen, "connect %s: %s", a->text, strerror(errno));
	close(fd);
	return -2;
}

static int connect_result(int fd, const struct dbk_rt_addr *a, char *err, size_t errlen)
{
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		snprintf(err, errlen, "connect %s: %s", a->text, strerror(e));
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

enum phase { P_CONNECTING, P_WRITING, P_READING, P_FAILED };

struct dbk_rt_query {
	struct ev_loop *loop;
	ev_io io;
	ev_timer timer;
	enum phase phase;
	dbk_rt_query_cb cb;
	void *arg;
	struct dbk_rt_addr addr;
	char out[DBK_RT_MAX_COMMAND + 2];
	size_t out_len, out_off;
	char *in;
	size_t in_len, in_cap, max_bytes;
	/* A failure found inside dbk_rt_query_start, reported from the loop
	 * so that the callback never runs inside the caller's call. */
	enum dbk_rt_query_status early;
	char early_err[192];
};

static void query_free(struct dbk_rt_query *q)
{
	ev_io_stop(q->loop, &q->io);
	ev_timer_stop(q->loop, &q->timer);
	if (q->io.fd >= 0)
		close(q->io.fd);
	free(q->in);
	free(q);
}

static void finish(struct dbk_rt_query *q, enum dbk_rt_query_status st, const char *err)
{
	ev_io_stop(q->loop, &q->io);
	ev_timer_stop(q->loop, &q->timer);
	if (st == DBK_RT_Q_OK) {
		q->in[q->in_len] = '\0';
		q->cb(q->arg, st, q->in, q->in_len, NULL);
	} else {
		q->cb(q->arg, st, NULL, 0, err ? err : dbk_rt_query_status_str(st));
	}
	query_free(q);
}

static void fail_errno(struct dbk_rt_query *q, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s %s: %s", what, q->addr.text, strerror(errno));
	finish(q, DBK_RT_Q_IO, msg);
}

static void switch_to(struct dbk_rt_query *q, enum phase p, int events)
{
	q->phase = p;
	ev_io_stop(q->loop, &q->io);
	ev_io_set(&q->io, q->io.fd, events);
	ev_io_start(q->loop, &q->io);
}

/* Returns true when the query is finished (and freed). */
static bool do_write(struct dbk_rt_query *q)
{
	if (dbk_net_send_pending(q->io.fd, q->out, q->out_len, &q->out_off) < 0) {
		fail_errno(q, "write");
		return true;
	}
	if (q->out_off < q->out_len)
		return false;
	switch_to(q, P_READING, EV_READ);
	return false;
}

static void do_read(struct dbk_rt_query *q)
{
	for (int round = 0; round < READ_ROUNDS; round++) {
		/* Room for one byte beyond the limit (to tell "exactly at the
		 * limit, then EOF" from "more") and the closing NUL. */
		if (q->in_len + 2 > q->in_cap) {
			size_t want = q->in_cap * 2;
			if (want > q->max_bytes + 2)
				want = q->max_bytes + 2;
			char *n = realloc(q->in, want);
			if (!n) {
				finish(q, DBK_RT_Q_IO, "out of memory");
				return;
			}
			q->in = n;
			q->in_cap = want;
		}
		ssize_t r = read(q->io.fd, q->in + q->in_len, q->in_cap - 1 - q->in_len);
		if (r == 0) {
			finish(q, DBK_RT_Q_OK, NULL);
			return;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			fail_errno(q, "read");
			return;
		}
		q->in_len += (size_t)r;
		if (q->in_len > q->max_bytes) {
			char msg[256];
			snprintf(msg, sizeof(msg), "response from %s larger than %zu bytes",
			         q->addr.text, q->max_bytes);
			finish(q, DBK_RT_Q_TOO_BIG, msg);
			return;
		}
	}
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_rt_query *q = (struct dbk_rt_query *)((char *)w -
	                                                 offsetof(struct dbk_rt_query, io));
	char msg[256];

	(void)loop;
	(void)revents;
	switch (q->phase) {
	case P_CONNECTING:
		if (connect_result(q->io.fd, &q->addr, msg, sizeof(msg)) < 0) {
			finish(q, DBK_RT_Q_CONNECT, msg);
			return;
		}
		q->phase = P_WRITING;
		do_write(q); /* finishes, waits for EV_WRITE, or switches to reading */
		return;
	case P_WRITING: do_write(q); return;
	case P_READING: do_read(q); return;
	case P_FAILED: return;
	}
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_rt_query *q = (struct dbk_rt_query *)((char *)w -
	                                                 offsetof(struct dbk_rt_query, timer));
	char msg[256];

	(void)loop;
	(void)revents;
	if (q->phase == P_FAILED) {
		finish(q, q->early, q->early_err);
		return;
	}
	snprintf(msg, sizeof(msg), "no complete answer from %s in time", q->addr.text);
	finish(q, DBK_RT_Q_TIMEOUT, msg);
}

struct dbk_rt_query *dbk_rt_query_start(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                        const char *cmd, unsigned timeout_ms, size_t max_bytes,
                                        dbk_rt_query_cb cb, void *arg, char *err, size_t errlen)
{
	struct dbk_rt_query *q;
	bool pending;
	int fd;

	if (!loop || !addr || !cb || addr->len == 0) {
		snprintf(err, errlen, "runtime API query: missing loop, address or callback");
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	q->out_len = make_command(cmd, q->out, sizeof(q->out), err, errlen);
	if (q->out_len == 0) {
		free(q);
		return NULL;
	}
	q->max_bytes = clamp_max(max_bytes);
	q->in_cap = q->max_bytes + 2 < IN_START ? q->max_bytes + 2 : IN_START;
	q->in = malloc(q->in_cap);
	if (!q->in) {
		snprintf(err, errlen, "out of memory");
		free(q);
		return NULL;
	}
	q->loop = loop;
	q->cb = cb;
	q->arg = arg;
	q->addr = *addr;
	q->addr.text[sizeof(q->addr.text) - 1] = '\0';

	fd = open_connect(&q->addr, &pending, q->early_err, sizeof(q->early_err));
	if (fd == -1) {
		snprintf(err, errlen, "%s", q->early_err);
		free(q->in);
		free(q);
		return NULL;
	}
	/* Connected at once (usual for unix sockets) or not: either way the
	 * first writability event drives the exchange. */
	ev_io_init(&q->io, on_io, fd >= 0 ? fd : -1, EV_WRITE);
	ev_timer_init(&q->timer, on_timer,
	              (timeout_ms ? timeout_ms : DBK_RT_DEFAULT_TIMEOUT_MS) / 1000.0, 0.);
	if (fd == -2) {
		q->phase = P_FAILED;
		q->early = DBK_RT_Q_CONNECT;
		ev_timer_set(&q->timer, 0., 0.);
		ev_timer_start(loop, &q->timer);
		return q;
	}
	q->phase = pending ? P_CONNECTING : P_WRITING;
	ev_io_start(loop, &q->io);
	ev_timer_start(loop, &q->timer);
	return q;
}

void dbk_rt_query_cancel(struct dbk_rt_query *q)
{
	if (q)
		query_free(q);
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

enum dbk_rt_query_status dbk_rt_query_sync(const char *addr, const char *cmd, unsigned timeout_ms,
                                           char *buf, size_t cap, size_t *len, char *err,
                                           size_t errlen)
{
	struct dbk_rt_addr a;
	char out[DBK_RT_MAX_COMMAND + 2];
	size_t out_len, off = 0, got = 0;
	enum dbk_rt_query_status st = DBK_RT_Q_OK;
	bool pending;
	int64_t deadline;
	int fd, rc;

	*len = 0;
	if (!buf || cap == 0) {
		snprintf(err, errlen, "no response buffer");
		return DBK_RT_Q_IO;
	}
	buf[0] = '\0';
	if (dbk_rt_addr_parse(addr, &a, err, errlen) < 0)
		return DBK_RT_Q_CONNECT;
	out_len = make_command(cmd, out, sizeof(out), err, errlen);
	if (out_len == 0)
		return DBK_RT_Q_IO;
	deadline = mono_ms() + (timeout_ms ? timeout_ms : DBK_RT_DEFAULT_TIMEOUT_MS);

	fd = open_connect(&a, &pending, err, errlen);
	if (fd < 0)
		return DBK_RT_Q_CONNECT;
	if (pending) {
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc <= 0) {
			snprintf(err, errlen, "connect %s: %s", a.text,
			         rc == 0 ? "timed out" : strerror(errno));
			st = rc == 0 ? DBK_RT_Q_TIMEOUT : DBK_RT_Q_CONNECT;
			goto out;
		}
		if (connect_result(fd, &a, err, errlen) < 0) {
			st = DBK_RT_Q_CONNECT;
			goto out;
		}
	}

	for (;;) {
		if (dbk_net_send_pending(fd, out, out_len, &off) < 0) {
			snprintf(err, errlen, "write %s: %s", a.text, strerror(errno));
			st = DBK_RT_Q_IO;
			goto out;
		}
		if (off == out_len)
			break;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc <= 0) {
			snprintf(err, errlen, "write %s: %s", a.text,
			         rc == 0 ? "timed out" : strerror(errno));
			st = rc == 0 ? DBK_RT_Q_TIMEOUT : DBK_RT_Q_IO;
			goto out;
		}
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
				snprintf(err, errlen, "response from %s larger than %zu bytes",
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
			snprintf(err, errlen, "read %s: %s", a.text, strerror(errno));
			st = DBK_RT_Q_IO;
			goto out;
		}
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc <= 0) {
			snprintf(err, errlen, "no complete answer from %s in time", a.text);
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
