/* lib/net: which addresses count as this host only, the non-blocking
 * connect the SPOP load client (and any client) uses, and the one syntax
 * of every listening option. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "lib/net.h"

static bool local(const char *spec)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char err[128];

	if (dbk_net_resolve(spec, false, &sa, &len, err, sizeof(err)) < 0) {
		fprintf(stderr, "  %s: %s\n", spec, err);
		return false;
	}
	return dbk_net_addr_is_local((const struct sockaddr *)&sa);
}

static void test_local_addresses(void)
{
	CHECK(local("127.0.0.1:1"));
	CHECK(local("127.255.3.4:1"));
	CHECK(local("[::1]:1"));
	CHECK(local("[::ffff:127.0.0.2]:1"));
	CHECK(local("unix:/tmp/x.sock"));
	CHECK(!local("10.0.0.1:1"));
	CHECK(!local("128.0.0.1:1"));
	CHECK(!local("[::2]:1"));
	CHECK(!local("[::ffff:10.0.0.1]:1"));
	CHECK(!local("0.0.0.0:1"));
}

/* Waits (bounded) until fd is writable: the connect is done. */
static bool connected(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 2000) == 1;
}

static void test_connect_reports_how_it_went(void)
{
	struct sockaddr_storage sa;
	struct sockaddr_in bound;
	socklen_t len, blen = sizeof(bound);
	char err[128], spec[32];
	int lfd = dbk_net_listen("127.0.0.1:0", err, sizeof(err));

	CHECK(lfd >= 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&bound, &blen) == 0);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", (unsigned)ntohs(bound.sin_port));
	CHECK(dbk_net_resolve(spec, false, &sa, &len, err, sizeof(err)) == 0);
	int fd = dbk_net_connect(&sa, len);
	CHECK(fd >= 0);
	CHECK(connected(fd));
	CHECK_EQ_U(dbk_net_connect_error(fd), 0);
	close(fd);
	/* Nobody listens there any more: refused, told by the error. */
	close(lfd);
	fd = dbk_net_connect(&sa, len);
	if (fd >= 0) {
		CHECK(connected(fd));
		CHECK_EQ_U(dbk_net_connect_error(fd), ECONNREFUSED);
		close(fd);
	} else {
		CHECK_EQ_U(errno, ECONNREFUSED);
	}
}

/* One syntax for every listening option: udp@ binds a datagram socket,
 * anything else listens on a stream; a bad address says why. */
static void test_open_by_spec(void)
{
	char err[128];
	bool udp = true;
	int type;
	socklen_t len = sizeof(type);
	int fd = dbk_net_open("127.0.0.1:0", &udp, err, sizeof(err));

	CHECK(fd >= 0 && !udp);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM);
	close(fd);
	fd = dbk_net_open("udp@127.0.0.1:0", &udp, err, sizeof(err));
	CHECK(fd >= 0 && udp);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM);
	close(fd);
	err[0] = 0;
	CHECK(dbk_net_open("udp@nowhere", &udp, err, sizeof(err)) < 0 && udp && err[0]);
	err[0] = 0;
	CHECK(dbk_net_open("udp@", &udp, err, sizeof(err)) < 0 && err[0]);
}

int main(void)
{
	RUN(test_local_addresses);
	RUN(test_connect_reports_how_it_went);
	RUN(test_open_by_spec);
	return CHECK_DONE();
}
