/* lib/dgram: each datagram reaches the callback whole, in order, from
 * every socket of the set; a longer one is cut to the buffer, its start
 * kept (what the completion lines' parser reads); an allow-list drops
 * the others' and counts them. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "lib/dgram.h"
#include "lib/net.h"

struct seen {
	unsigned n;
	size_t len[4];
	char text[4][16];
};

static void on_dgram(void *arg, const char *buf, size_t len)
{
	struct seen *s = arg;

	if (s->n < 4) {
		s->len[s->n] = len;
		memcpy(s->text[s->n], buf, len < 15 ? len : 15);
		s->n++;
	}
}

/* Sends msg to fd's address from a fresh socket bound to from (an IPv4
 * loopback address) or to any. */
static bool send_from(const char *from, int fd, const char *msg)
{
	struct sockaddr_in sa, src = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int out = socket(AF_INET, SOCK_DGRAM, 0);
	bool ok = out >= 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0;

	if (ok && from)
		ok = inet_pton(AF_INET, from, &src.sin_addr) == 1 &&
		     bind(out, (struct sockaddr *)&src, sizeof(src)) == 0;
	ok = ok &&
	     sendto(out, msg, strlen(msg), 0, (struct sockaddr *)&sa, len) == (ssize_t)strlen(msg);
	if (out >= 0)
		close(out);
	return ok;
}

static bool send_to(int fd, const char *msg) { return send_from(NULL, fd, msg); }

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	*(bool *)w->data = true;
	ev_break(loop, EVBREAK_ONE);
}

/* Runs the loop until n datagrams were seen or 2 s have passed. */
static void wait_for(struct ev_loop *loop, const struct seen *seen, unsigned n)
{
	bool late = false;
	ev_timer t;

	ev_timer_init(&t, on_timeout, 2.0, 0);
	t.data = &late;
	ev_timer_start(loop, &t);
	for (int turn = 0; turn < 1000 && seen->n < n && !late; turn++)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
}

static void test_datagrams_whole_or_cut(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct dbk_dgram_set set;
	struct seen seen = { 0 };
	char err[128];
	int a = dbk_net_bind_udp("127.0.0.1:0", err, sizeof(err));
	int b = dbk_net_bind_udp("127.0.0.1:0", err, sizeof(err));

	CHECK(loop && a >= 0 && b >= 0);
	CHECK(dbk_dgram_init(&set, loop, 8, on_dgram, &seen) == 0);
	CHECK(dbk_dgram_add(&set, a) == 0 && dbk_dgram_add(&set, b) == 0);
	/* Each wait ends on the datagrams' arrival, or after 2 s at most; one
	 * socket and then the other, so that the order is the one sent. */
	CHECK(send_to(a, "one") && send_to(a, "twelve bytes"));
	wait_for(loop, &seen, 2);
	CHECK(send_to(b, "three"));
	wait_for(loop, &seen, 3);
	CHECK_EQ_U(seen.n, 3);
	CHECK_EQ_U(seen.len[0], 3);
	CHECK(memcmp(seen.text[0], "one", 3) == 0);
	CHECK_EQ_U(seen.len[1], 8);
	CHECK(memcmp(seen.text[1], "twelve b", 8) == 0);
	CHECK_EQ_U(seen.len[2], 5);
	CHECK(memcmp(seen.text[2], "three", 5) == 0);
	dbk_dgram_close(&set);
	CHECK(set.n == 0 && set.buf == NULL);
	/* Closed by the set: the descriptors are gone. */
	CHECK(fcntl(a, F_GETFD) < 0 && fcntl(b, F_GETFD) < 0);
	ev_loop_destroy(loop);
}

static void test_full_set_refuses(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct dbk_dgram_set set;
	char err[128];
	int fds[DBK_LISTENER_MAX + 1];

	CHECK(dbk_dgram_init(&set, loop, 64, on_dgram, NULL) == 0);
	for (unsigned i = 0; i <= DBK_LISTENER_MAX; i++) {
		fds[i] = dbk_net_bind_udp("127.0.0.1:0", err, sizeof(err));
		CHECK(fds[i] >= 0);
		CHECK((dbk_dgram_add(&set, fds[i]) == 0) == (i < DBK_LISTENER_MAX));
	}
	close(fds[DBK_LISTENER_MAX]); /* refused: still the caller's */
	dbk_dgram_close(&set);
	ev_loop_destroy(loop);
}

/* With an allow-list, a datagram from another sender never reaches the
 * callback and is counted; one from an allowed sender does, in order. */
static void test_allow_list(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct dbk_dgram_set set;
	struct seen seen = { 0 };
	struct dbk_net_cidr allow;
	uint64_t refused = 0;
	char err[128];
	int fd = dbk_net_bind_udp("127.0.0.1:0", err, sizeof(err));

	CHECK(loop && fd >= 0);
	CHECK(dbk_net_cidr_parse("127.0.0.2/32", &allow, err, sizeof(err)) == 0);
	CHECK(dbk_dgram_init(&set, loop, 64, on_dgram, &seen) == 0);
	dbk_dgram_allow(&set, &allow, 1, &refused);
	CHECK(dbk_dgram_add(&set, fd) == 0);
	/* The refused one is sent first: were it let through, it would be
	 * seen before the allowed one the wait ends on. */
	CHECK(send_from("127.0.0.3", fd, "forged"));
	CHECK(send_from("127.0.0.2", fd, "real"));
	wait_for(loop, &seen, 1);
	CHECK_EQ_U(seen.n, 1);
	CHECK(memcmp(seen.text[0], "real", 4) == 0);
	CHECK_EQ_U(refused, 1);
	dbk_dgram_close(&set);
	ev_loop_destroy(loop);
}

int main(void)
{
	RUN(test_datagrams_whole_or_cut);
	RUN(test_full_set_refuses);
	RUN(test_allow_list);
	return CHECK_DONE();
}
