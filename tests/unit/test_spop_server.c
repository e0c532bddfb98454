/* The SPOP server on a real socket, driven in-process: the test writes
 * frames, turns the event loop until the answers arrive (bounded), and
 * checks them. No threads and no sleeps: the loop is the only clock. */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "lib/log.h"
#include "lib/net.h"
#include "frames.h"
#include "lib/spop_server.h"
#include "route_handler.h"

static const char *const names[] = { "vllm0", "vllm1", "vllm2", "vllm3" };

struct world {
	struct ev_loop *loop;
	struct dbk_balancer *bal;
	struct dbk_route route;
	struct dbk_route_handler rh;
	struct dbk_spop_server *spop;
	char path[108];
	char spec[120];
};

/* A server with handler h, or with the agent's router when h is NULL. */
static void world_up_with(struct world *w, unsigned max_conns, uint32_t max_frame,
                          const struct dbk_spop_handler *h)
{
	struct dbk_bal_config bc;
	struct dbk_spop_handler rh;
	char err[256];

	memset(w, 0, sizeof(*w));
	w->loop = ev_loop_new(EVFLAG_AUTO);
	dbk_bal_config_default(&bc, 4, true, 32768, 131072);
	w->bal = dbk_bal_new(&bc);
	w->route.bal = w->bal;
	w->route.names = names;
	w->route.nnames = 4;
	struct dbk_spop_server_config sc = { .max_frame_size = max_frame,
		                             .max_connections = max_conns,
		                             .hello_timeout = 0.2,
		                             .frame_timeout = 0.2,
		                             .idle_timeout = 0.3 };
	if (!h) {
		rh = dbk_route_handler_init(&w->rh, &w->route);
		h = &rh;
	}
	w->spop = dbk_spop_server_new(w->loop, &sc, h);
	snprintf(w->path, sizeof(w->path), "/tmp/dbk-test-spoa-%d.sock", (int)getpid());
	snprintf(w->spec, sizeof(w->spec), "unix:%s", w->path);
	int fd = dbk_net_listen(w->spec, err, sizeof(err));
	if (fd < 0)
		fprintf(stderr, "listen: %s\n", err);
	dbk_spop_server_add_listener(w->spop, fd);
}

static void world_up(struct world *w, unsigned max_conns, uint32_t max_frame)
{
	world_up_with(w, max_conns, max_frame, NULL);
}

static void world_down(struct world *w)
{
	dbk_spop_server_free(w->spop);
	dbk_bal_free(w->bal);
	ev_loop_destroy(w->loop);
	unlink(w->path);
}

static int client(struct world *w)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memcpy(sa.sun_path, w->path, strlen(w->path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		return -1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* What came back on one client socket. */
struct reply {
	uint8_t buf[65536];
	size_t len;
	bool closed;
};

/* Turns the loop until `frames` whole frames arrived on fd, or the peer
 * closed; at most 2000 turns. */
static void pump(struct world *w, int fd, struct reply *r, unsigned frames)
{
	for (int turn = 0; turn < 2000; turn++) {
		ev_run(w->loop, EVRUN_NOWAIT);
		ssize_t n = recv(fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
		if (n > 0)
			r->len += (size_t)n;
		else if (n == 0) {
			r->closed = true;
			return;
		}
		unsigned have = 0;
		size_t off = 0, flen;
		bool complete;
		while (dbk_spop_frame_split(r->buf + off, r->len - off, 1 << 20, &flen,
		                            &complete) == DBK_SPOP_OK &&
		       complete) {
			have++;
			off += 4 + flen;
		}
		if (frames && have >= frames)
			return;
	}
}

/* The i-th frame of a reply. */
static bool nth_frame(const struct reply *r, unsigned i, struct dbk_spop_frame *f)
{
	size_t off = 0, flen;
	bool complete;

	for (unsigned k = 0;; k++) {
		if (dbk_spop_frame_split(r->buf + off, r->len - off, 1 << 20, &flen, &complete) !=
		            DBK_SPOP_OK ||
		    !complete)
			return false;
		if (k == i)
			return dbk_spop_frame_parse(r->buf + off + 4, flen, f) == DBK_SPOP_OK;
		off += 4 + flen;
	}
}

static void send_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* Connects and says HELLO (a health check's if hc); what came back is
 * in *r, its first frame in *f. Returns the socket. */
static int say_hello(struct world *w, uint32_t max_frame, bool hc, struct reply *r,
                     struct dbk_spop_frame *f)
{
	uint8_t buf[512];
	int fd = client(w);

	send_all(fd, buf, test_haproxy_hello(buf, sizeof(buf), max_frame, hc));
	pump(w, fd, r, hc ? 0 : 1);
	CHECK(nth_frame(r, 0, f) && f->type == DBK_SPOP_AGENT_HELLO);
	return fd;
}

static int hello_client(struct world *w, uint32_t max_frame)
{
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	return say_hello(w, max_frame, false, &r, &f);
}

static void test_hello_negotiates_frame_size(void)
{
	struct world w;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = say_hello(&w, 9000, false, &r, &f);
	CHECK(f.flags & DBK_SPOP_FLAG_FIN);
	CHECK(!r.closed);
	/* AGENT-HELLO is a KV list; re-read it as if we were HAProxy. */
	const uint8_t *p = f.payload, *end = f.payload + f.payload_len;
	bool saw_vsn = false, saw_size = false, saw_cap = false;
	while (p < end) {
		uint64_t klen;
		struct dbk_spop_data v;
		if (dbk_spop_varint_decode(&p, end, &klen) || klen > (uint64_t)(end - p))
			break;
		const uint8_t *k = p;
		p += klen;
		if (dbk_spop_data_decode(&p, end, &v))
			break;
		if (klen == 7 && !memcmp(k, "version", 7))
			saw_vsn = v.type == DBK_SPOP_T_STR && v.u.buf.len == 3 &&
			          !memcmp(v.u.buf.ptr, "2.0", 3);
		if (klen == 14 && !memcmp(k, "max-frame-size", 14)) {
			int64_t size;
			saw_size = dbk_spop_data_to_i64(&v, &size) && size == 9000;
		}
		if (klen == 12 && !memcmp(k, "capabilities", 12))
			saw_cap = v.u.buf.len == 10 && !memcmp(v.u.buf.ptr, "pipelining", 10);
	}
	CHECK(saw_vsn);
	CHECK(saw_size);
	CHECK(saw_cap);
	close(fd);
	world_down(&w);
}

static void test_healthcheck_hello_closes(void)
{
	struct world w;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = say_hello(&w, 16380, true, &r, &f);
	CHECK(r.closed);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->healthchecks, 1);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->open, 0);
	close(fd);
	world_down(&w);
}

static void test_pipelined_notifies_in_one_write(void)
{
	struct world w;
	uint8_t buf[4096];
	size_t len = 0;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = hello_client(&w, 16380);
	/* Three NOTIFYs back to back, ids as HAProxy 3.x numbers them. */
	len += test_notify(buf + len, sizeof(buf) - len, 7, 1, DBK_SPOP_FLAG_FIN, "a", 3656);
	len += test_notify_details(buf + len, sizeof(buf) - len, 7, 2, DBK_SPOP_FLAG_FIN, "b",
	                           15102, true);
	len += test_notify(buf + len, sizeof(buf) - len, 9, 3, DBK_SPOP_FLAG_FIN, "c", 140000);
	send_all(fd, buf, len);
	pump(&w, fd, &r, 3);
	CHECK(nth_frame(&r, 0, &f) && f.type == DBK_SPOP_ACK && f.stream_id == 7 &&
	      f.frame_id == 1 && test_var_is(&f, "server", "vllm0"));
	CHECK(nth_frame(&r, 1, &f) && f.type == DBK_SPOP_ACK && f.stream_id == 7 &&
	      f.frame_id == 2 && test_var_is(&f, "server", "vllm2") &&
	      test_var_is(&f, "score", "3775.5"));
	CHECK(nth_frame(&r, 2, &f) && f.type == DBK_SPOP_ACK && f.stream_id == 9 &&
	      f.frame_id == 3);
	CHECK(!r.closed);
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, 3);
	close(fd);
	world_down(&w);
}

static void test_frame_split_across_reads(void)
{
	struct world w;
	uint8_t buf[1024];
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = hello_client(&w, 16380);
	size_t len = test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, "split", 100);
	for (size_t i = 0; i < len; i++) {
		send_all(fd, buf + i, 1);
		ev_run(w.loop, EVRUN_NOWAIT);
	}
	pump(&w, fd, &r, 1);
	CHECK(nth_frame(&r, 0, &f) && f.type == DBK_SPOP_ACK && test_var_is(&f, "server", "vllm0"));
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, 1);
	close(fd);
	world_down(&w);
}

/* Sends raw bytes after a good HELLO to a server with handler h (the
 * router if NULL) and expects AGENT-DISCONNECT with the given status,
 * then a close, and no ACK before it. */
static void expect_disconnect_with(const struct dbk_spop_handler *h, const uint8_t *bytes,
                                   size_t len, uint32_t status, uint32_t max_frame)
{
	struct world w;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up_with(&w, 16, 16380, h);
	int fd = hello_client(&w, max_frame);
	send_all(fd, bytes, len);
	pump(&w, fd, &r, 0);
	CHECK(nth_frame(&r, 0, &f));
	CHECK_EQ_U(f.type, DBK_SPOP_AGENT_DISCONNECT);
	CHECK_EQ_U(test_disconnect_status(&f), status);
	CHECK(r.closed);
	const struct dbk_spop_server_stats *st = dbk_spop_server_stats(w.spop);
	CHECK_EQ_U(st->open, 0);
	CHECK_EQ_U(st->acks, 0);
	CHECK_EQ_U(st->disconnects[status], 1);
	close(fd);
	world_down(&w);
}

static void expect_disconnect(const uint8_t *bytes, size_t len, uint32_t status, uint32_t max_frame)
{
	expect_disconnect_with(NULL, bytes, len, status, max_frame);
}

static void test_frame_above_negotiated_size(void)
{
	/* 1200 bytes declared on a connection that agreed on 1024. */
	uint8_t big[] = { 0, 0, 0x04, 0xb0, DBK_SPOP_NOTIFY, 0, 0, 0, 1, 1, 1 };
	expect_disconnect(big, sizeof(big), DBK_SPOP_ERR_TOO_BIG, 1024);
}

static void test_fragmented_notify_refused(void)
{
	uint8_t buf[512];
	size_t len = test_notify(buf, sizeof(buf), 1, 1, 0, "x", 10);
	expect_disconnect(buf, len, DBK_SPOP_ERR_FRAG_NOT_SUPP, 16380);
}

static void test_unknown_frame_type(void)
{
	uint8_t buf[] = { 0, 0, 0, 7, 42, 0, 0, 0, 1, 0, 0 };
	expect_disconnect(buf, sizeof(buf), DBK_SPOP_ERR_INVALID, 16380);
}

static void test_malformed_notify_payload(void)
{
	/* A message name whose length runs past the frame. */
	uint8_t buf[] = { 0, 0, 0, 9, DBK_SPOP_NOTIFY, 0, 0, 0, 1, 1, 1, 50, 'a' };
	expect_disconnect(buf, sizeof(buf), DBK_SPOP_ERR_INVALID, 16380);
}

static void test_haproxy_disconnect_answered(void)
{
	uint8_t buf[256];
	size_t len = dbk_spop_disconnect_build(buf, sizeof(buf), DBK_SPOP_OK, "bye");
	buf[4] = DBK_SPOP_HAPROXY_DISCONNECT;
	expect_disconnect(buf, len, DBK_SPOP_OK, 16380);
}

static void test_notify_before_hello(void)
{
	struct world w;
	uint8_t buf[512];
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = client(&w);
	send_all(fd, buf, test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, "x", 10));
	pump(&w, fd, &r, 0);
	CHECK(nth_frame(&r, 0, &f));
	CHECK_EQ_U(test_disconnect_status(&f), DBK_SPOP_ERR_INVALID);
	CHECK(r.closed);
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, 0);
	close(fd);
	world_down(&w);
}

static void test_many_connections_and_limit(void)
{
	struct world w;
	enum { N = 40 };
	int fds[N + 1];
	uint8_t buf[512];

	world_up(&w, N, 16380);
	for (int i = 0; i < N; i++)
		fds[i] = hello_client(&w, 16380);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->open, N);
	/* One over the limit takes the place of the oldest that never sent
	 * a NOTIFY. */
	struct reply r = { .len = 0 };
	fds[N] = hello_client(&w, 16380);
	CHECK(fds[N] >= 0);
	pump(&w, fds[0], &r, 0);
	CHECK(r.closed);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->evicted_conns, 1);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->refused_conns, 0);
	/* Every admitted connection still routes. */
	for (int i = 1; i <= N; i++) {
		char id[16];
		struct reply ri = { .len = 0 };
		struct dbk_spop_frame f;
		snprintf(id, sizeof(id), "c%d", i);
		send_all(fds[i], buf,
		         test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, id, 400));
		pump(&w, fds[i], &ri, 1);
		CHECK(nth_frame(&ri, 0, &f) && f.type == DBK_SPOP_ACK);
	}
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, N);
	/* All at work: a newcomer is refused, none of them closed. */
	struct reply rn = { .len = 0 };
	int extra = client(&w);
	pump(&w, extra, &rn, 0);
	CHECK(rn.closed);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->refused_conns, 1);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->open, N);
	close(extra);
	for (int i = 0; i <= N; i++)
		close(fds[i]);
	world_down(&w);
}

static void test_garbage_then_new_connection_works(void)
{
	struct world w;
	uint8_t junk[64];
	struct reply r = { .len = 0 };

	world_up(&w, 16, 16380);
	int fd = client(&w);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(0xA5 ^ (i * 37));
	send_all(fd, junk, sizeof(junk));
	pump(&w, fd, &r, 0);
	CHECK(r.closed);
	close(fd);
	fd = hello_client(&w, 16380);
	CHECK(fd >= 0);
	close(fd);
	world_down(&w);
}

/* Blocks in the loop (each turn waits for an event or the timer) until the
 * peer closes; at most 50 turns. */
static void pump_until_closed(struct world *w, int fd, struct reply *r)
{
	for (int turn = 0; turn < 50 && !r->closed; turn++) {
		ev_run(w->loop, EVRUN_ONCE);
		for (;;) {
			ssize_t n = recv(fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
			if (n > 0) {
				r->len += (size_t)n;
				continue;
			}
			if (n == 0)
				r->closed = true;
			break;
		}
	}
}

static void test_no_hello_times_out(void)
{
	struct world w;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = client(&w);
	pump_until_closed(&w, fd, &r);
	CHECK(r.closed);
	CHECK(nth_frame(&r, 0, &f));
	CHECK_EQ_U(test_disconnect_status(&f), DBK_SPOP_ERR_TIMEOUT);
	close(fd);
	world_down(&w);
}

static void test_half_frame_times_out(void)
{
	struct world w;
	uint8_t buf[512];
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380);
	int fd = hello_client(&w, 16380);
	size_t len = test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, "slow", 10);
	/* Half a frame, then silence: the rest never comes. */
	send_all(fd, buf, len / 2);
	pump_until_closed(&w, fd, &r);
	CHECK(r.closed);
	CHECK(nth_frame(&r, 0, &f));
	CHECK_EQ_U(test_disconnect_status(&f), DBK_SPOP_ERR_TIMEOUT);
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, 0);
	close(fd);
	world_down(&w);
}

/* A peer whose every write ends mid-frame, each frame whole within a
 * quarter of the frame timeout: it is timed frame by frame, never cut.
 * The loop's own timer paces the writes (no sleeps). */
struct trickle {
	ev_timer t;
	int fd;
	uint8_t buf[4096];
	size_t len, off, step;
	unsigned writes;
};

static void on_trickle(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct trickle *tr = (struct trickle *)w;

	(void)loop;
	(void)revents;
	size_t n = tr->len - tr->off < tr->step ? tr->len - tr->off : tr->step;
	send_all(tr->fd, tr->buf + tr->off, n);
	tr->off += n;
	tr->writes++;
	if (tr->off == tr->len)
		ev_timer_stop(loop, w);
}

static void test_frame_timer_starts_at_each_frame(void)
{
	struct world w;
	struct trickle tr = { .len = 0 };
	struct reply r = { .len = 0 };
	enum { FRAMES = 8 };

	world_up(&w, 16, 16380); /* frame_timeout 0.2 s */
	tr.fd = hello_client(&w, 16380);
	size_t flen = 0;
	for (int i = 0; i < FRAMES; i++) {
		char id[16];
		snprintf(id, sizeof(id), "t%d", i);
		flen = test_notify(tr.buf + tr.len, sizeof(tr.buf) - tr.len, 1, (uint64_t)i + 1,
		                   DBK_SPOP_FLAG_FIN, id, 400);
		tr.len += flen;
	}
	/* Writes of one frame's length, starting half-way into the first:
	 * every write ends mid-frame, 0.05 s apart, 8 frames in 0.45 s. */
	tr.step = flen;
	send_all(tr.fd, tr.buf, flen / 2);
	tr.off = flen / 2;
	ev_timer_init(&tr.t, on_trickle, 0.05, 0.05);
	ev_timer_start(w.loop, &tr.t);
	for (int turn = 0; turn < 400 && (ev_is_active(&tr.t) || r.len == 0); turn++) {
		ev_run(w.loop, EVRUN_ONCE);
		ssize_t n = recv(tr.fd, r.buf + r.len, sizeof(r.buf) - r.len, 0);
		if (n > 0)
			r.len += (size_t)n;
	}
	pump(&w, tr.fd, &r, FRAMES);
	struct dbk_spop_frame f;
	for (unsigned i = 0; i < FRAMES; i++)
		CHECK(nth_frame(&r, i, &f) && f.type == DBK_SPOP_ACK);
	CHECK(!r.closed);
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, FRAMES);
	ev_timer_stop(w.loop, &tr.t);
	close(tr.fd);
	world_down(&w);
}

static void test_idle_after_hello_times_out(void)
{
	struct world w;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up(&w, 16, 16380); /* idle_timeout 0.3 s */
	int fd = hello_client(&w, 16380);
	ev_tstamp t0 = ev_now(w.loop);
	pump_until_closed(&w, fd, &r);
	CHECK(r.closed);
	CHECK(nth_frame(&r, 0, &f));
	CHECK_EQ_U(test_disconnect_status(&f), DBK_SPOP_ERR_TIMEOUT);
	ev_now_update(w.loop);
	CHECK(ev_now(w.loop) - t0 >= 0.25);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->open, 0);
	close(fd);
	world_down(&w);
}

/* Out of descriptors: the pending connections are taken with the spare
 * descriptor and closed (the peer hears no at once), counted, and the
 * loop goes idle instead of waking for them again; once descriptors are
 * back, connections are served. */
static void test_out_of_descriptors_sheds_without_spinning(void)
{
	struct world w;
	struct rlimit saved, low;
	enum { N = 5 };
	int fds[N];

	world_up(&w, 16, 16380);
	for (int i = 0; i < N; i++)
		fds[i] = client(&w); /* in the backlog, not accepted yet */
	getrlimit(RLIMIT_NOFILE, &saved);
	/* No descriptor left: the lowest free one is the limit. */
	int probe = dup(0);
	low = saved;
	low.rlim_cur = (rlim_t)probe;
	close(probe);
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	unsigned closed = 0, turns = 0;
	for (; turns < 200 && closed < N; turns++) {
		ev_run(w.loop, EVRUN_NOWAIT);
		closed = 0;
		for (int i = 0; i < N; i++) {
			char b[64];
			ssize_t n = recv(fds[i], b, sizeof(b), MSG_PEEK);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				closed++;
		}
	}
	setrlimit(RLIMIT_NOFILE, &saved);
	CHECK_EQ_U(closed, N);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->refused_conns, N);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->accepted, 0);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	int fd = hello_client(&w, 16380);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->accepted, 1);
	close(fd);
	world_down(&w);
}

/* ---- The handler interface, with handlers of the test's own ---- */

struct probe {
	unsigned calls;
	uint64_t last_stream, last_frame;
	enum dbk_spop_status answer; /* what the handler returns */
	size_t fill;                 /* bytes of junk to write: overflow */
};

static enum dbk_spop_status probe_notify(void *arg, const struct dbk_spop_frame *f,
                                         struct dbk_spop_writer *w)
{
	struct probe *p = arg;
	struct dbk_spop_data v = dbk_spop_str("probe");
	char junk[64] = "";

	p->calls++;
	p->last_stream = f->stream_id;
	p->last_frame = f->frame_id;
	dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, "who", &v);
	for (size_t n = 0; n < p->fill; n += sizeof(junk) - 1) {
		v = dbk_spop_str(junk);
		memset(junk, 'j', sizeof(junk) - 1);
		dbk_spop_ack_set_var(w, DBK_SPOP_SCOPE_TXN, "junk", &v);
	}
	return p->answer;
}

/* The server frames the ACK around what the handler writes: ids echo
 * the NOTIFY's, whatever the handler does; it counts what it handled. */
static void test_handler_writes_the_actions_of_an_ack(void)
{
	struct probe p = { .answer = DBK_SPOP_OK };
	struct dbk_spop_handler h = { probe_notify, &p };
	struct world w;
	uint8_t buf[1024];
	size_t len = 0;
	struct reply r = { .len = 0 };
	struct dbk_spop_frame f;

	world_up_with(&w, 16, 16380, &h);
	int fd = hello_client(&w, 16380);
	len += test_notify(buf + len, sizeof(buf) - len, 41, 5, DBK_SPOP_FLAG_FIN, "a", 10);
	len += test_notify(buf + len, sizeof(buf) - len, 42, 6, DBK_SPOP_FLAG_FIN, "b", 10);
	send_all(fd, buf, len);
	pump(&w, fd, &r, 2);
	CHECK_EQ_U(p.calls, 2);
	CHECK_EQ_U(p.last_stream, 42);
	CHECK_EQ_U(p.last_frame, 6);
	CHECK(nth_frame(&r, 0, &f) && f.type == DBK_SPOP_ACK && f.stream_id == 41 &&
	      f.frame_id == 5 && (f.flags & DBK_SPOP_FLAG_FIN) && test_var_is(&f, "who", "probe"));
	CHECK(nth_frame(&r, 1, &f) && f.stream_id == 42 && f.frame_id == 6);
	CHECK(!r.closed);
	const struct dbk_spop_server_stats *st = dbk_spop_server_stats(w.spop);
	CHECK_EQ_U(st->notifies, 2);
	CHECK_EQ_U(st->acks, 2);
	CHECK_EQ_U(st->frames_in, 3);
	CHECK_EQ_U(st->frames_out, 3);
	/* No router was given: no lease anywhere. */
	CHECK_EQ_U(dbk_bal_stats(w.bal)->leases, 0);
	close(fd);
	world_down(&w);
}

/* A handler's refusal is the DISCONNECT's status, with no ACK before it;
 * so is an answer that does not fit the negotiated frame (RES). */
static void expect_handler_disconnect(struct probe *p, uint32_t max_frame, uint32_t status)
{
	struct dbk_spop_handler h = { probe_notify, p };
	uint8_t buf[512];
	size_t len = test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, "x", 10);

	expect_disconnect_with(&h, buf, len, status, max_frame);
	CHECK_EQ_U(p->calls, 1);
}

static void test_handler_refusal_disconnects(void)
{
	struct probe p = { .answer = DBK_SPOP_ERR_INVALID };

	expect_handler_disconnect(&p, 16380, DBK_SPOP_ERR_INVALID);
}

static void test_handler_overflow_is_a_resource_error(void)
{
	/* 2 KB of actions in a 1 KB frame: the handler says OK, the frame
	 * cannot hold it. */
	struct probe p = { .answer = DBK_SPOP_OK, .fill = 2048 };

	expect_handler_disconnect(&p, 1024, DBK_SPOP_ERR_RES);
}

/* The agent's glue times every NOTIFY it routes. */
static void test_route_handler_times_each_notify(void)
{
	struct world w;
	uint8_t buf[512];
	struct reply r = { .len = 0 };

	world_up(&w, 16, 16380);
	int fd = hello_client(&w, 16380);
	send_all(fd, buf, test_notify(buf, sizeof(buf), 1, 1, DBK_SPOP_FLAG_FIN, "t", 10));
	pump(&w, fd, &r, 1);
	CHECK_EQ_U(w.rh.notify_seconds.count, 1);
	CHECK(w.rh.notify_seconds.sum >= 0);
	CHECK_EQ_U(w.route.stats.routed, 1);
	CHECK_EQ_U(dbk_spop_server_stats(w.spop)->haproxy_disconnects, 0);
	close(fd);
	world_down(&w);
}

int main(void)
{
	dbk_log_set_level(getenv("DBK_TEST_LOG") ? DBK_LOG_DEBUG : DBK_LOG_ERROR);
	RUN(test_hello_negotiates_frame_size);
	RUN(test_healthcheck_hello_closes);
	RUN(test_pipelined_notifies_in_one_write);
	RUN(test_frame_split_across_reads);
	RUN(test_frame_above_negotiated_size);
	RUN(test_fragmented_notify_refused);
	RUN(test_unknown_frame_type);
	RUN(test_malformed_notify_payload);
	RUN(test_haproxy_disconnect_answered);
	RUN(test_notify_before_hello);
	RUN(test_many_connections_and_limit);
	RUN(test_garbage_then_new_connection_works);
	RUN(test_no_hello_times_out);
	RUN(test_half_frame_times_out);
	RUN(test_frame_timer_starts_at_each_frame);
	RUN(test_idle_after_hello_times_out);
	RUN(test_out_of_descriptors_sheds_without_spinning);
	RUN(test_handler_writes_the_actions_of_an_ack);
	RUN(test_handler_refusal_disconnects);
	RUN(test_handler_overflow_is_a_resource_error);
	RUN(test_route_handler_times_each_notify);
	return CHECK_DONE();
}
