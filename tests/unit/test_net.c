/* lib/net: which addresses count as this host only, the non-blocking
 * connect the SPOP load client (and any client) uses, and the one syntax
 * of every listening option. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
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
	CHECK(dbk_net_open("udp@nowhere", &udp, err, sizeof(err)) < 0 && err[0]);
	err[0] = 0;
	CHECK(dbk_net_open("udp@", &udp, err, sizeof(err)) < 0 && err[0]);
}

/* HAProxy's spellings of an address are one syntax with the agent's own;
 * a bad one is refused by the parser, before any bind. */
static void test_haproxy_spellings(void)
{
	static const struct {
		const char *spec;
		enum dbk_net_kind kind;
		int family;
		const char *rest;
	} good[] = {
		{ "127.0.0.1:80", DBK_NET_STREAM, AF_UNSPEC, "127.0.0.1:80" },
		{ "[::1]:80", DBK_NET_STREAM, AF_UNSPEC, "[::1]:80" },
		{ "ipv4@127.0.0.1:80", DBK_NET_STREAM, AF_INET, "127.0.0.1:80" },
		{ "ipv6@[::1]:80", DBK_NET_STREAM, AF_INET6, "[::1]:80" },
		{ "tcp@localhost:0", DBK_NET_STREAM, AF_UNSPEC, "localhost:0" },
		{ "unix:/run/x.sock", DBK_NET_UNIX, AF_UNIX, "/run/x.sock" },
		{ "unix@/run/x.sock", DBK_NET_UNIX, AF_UNIX, "/run/x.sock" },
		{ "/run/x.sock", DBK_NET_UNIX, AF_UNIX, "/run/x.sock" },
		{ "udp@127.0.0.1:514", DBK_NET_DGRAM, AF_UNSPEC, "127.0.0.1:514" },
		{ "udp6@[::1]:514", DBK_NET_DGRAM, AF_INET6, "[::1]:514" },
	};
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "", "empty address" },
		{ "127.0.0.1", "want HOST:PORT" },
		{ "127.0.0.1:99999", "bad port in '127.0.0.1:99999'" },
		{ "127.0.0.1:http", "bad port" },
		{ "[::1]80", "want [IPV6]:PORT" },
		{ "abns@agent", "'abns@' addresses are not supported" },
		{ "fd@3", "'fd@' addresses are not supported" },
		{ "unix@", "empty or too long" },
		{ "udp@unix:/tmp/x", "a UDP address is HOST:PORT" },
		{ "udp@/tmp/x", "a UDP address is HOST:PORT" },
	};
	struct dbk_net_spec s;
	char err[160];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		err[0] = 0;
		CHECK(dbk_net_spec_parse(good[i].spec, &s, err, sizeof(err)) == 0);
		if (err[0])
			fprintf(stderr, "  %s: %s\n", good[i].spec, err);
		CHECK(s.kind == good[i].kind && s.family == good[i].family);
		CHECK(strcmp(s.rest, good[i].rest) == 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK(dbk_net_spec_parse(bad[i].spec, &s, err, sizeof(err)) < 0);
		if (!strstr(err, bad[i].why))
			fprintf(stderr, "  %s: '%s' lacks '%s'\n", bad[i].spec, err, bad[i].why);
		CHECK(strstr(err, bad[i].why) != NULL);
	}
	CHECK(dbk_net_unix_path("unix@/a") && strcmp(dbk_net_unix_path("unix@/a"), "/a") == 0);
	CHECK(dbk_net_unix_path("127.0.0.1:1") == NULL);
	/* ipv4@ with a name resolves to IPv4 only; ipv6@ to IPv6. */
	CHECK(local("ipv4@localhost:1"));
	CHECK(local("ipv6@[::1]:1"));
	struct sockaddr_storage sa;
	socklen_t len;
	CHECK(dbk_net_resolve("ipv6@127.0.0.1:1", false, &sa, &len, err, sizeof(err)) < 0);
	CHECK(dbk_net_resolve("udp@127.0.0.1:1", false, &sa, &len, err, sizeof(err)) < 0);
}

static void test_open_haproxy_spellings(void)
{
	char err[160], path[64];
	bool udp = false;
	int fd;

	snprintf(path, sizeof(path), "unix@/tmp/dbk-test-net-%d.sock", (int)getpid());
	fd = dbk_net_open(path, &udp, err, sizeof(err));
	CHECK(fd >= 0 && !udp);
	if (fd >= 0) {
		struct sockaddr_un su;
		socklen_t len = sizeof(su);

		CHECK(getsockname(fd, (struct sockaddr *)&su, &len) == 0 &&
		      su.sun_family == AF_UNIX && strcmp(su.sun_path, path + 5) == 0);
		close(fd);
	}
	CHECK(dbk_net_unlink(path) == 0 && access(path + 5, F_OK) < 0);
	fd = dbk_net_open("udp4@127.0.0.1:0", &udp, err, sizeof(err));
	CHECK(fd >= 0 && udp);
	if (fd >= 0)
		close(fd);
	fd = dbk_net_open("ipv4@127.0.0.1:0", &udp, err, sizeof(err));
	CHECK(fd >= 0 && !udp);
	if (fd >= 0)
		close(fd);
	CHECK(dbk_net_listen("udp@127.0.0.1:0", err, sizeof(err)) < 0);
}

/* The launcher's completion sockets: bound once, held open for the agent
 * to take as fd@N, so that the port cannot be taken by another process
 * between the launcher's choice and the agent's start (with a port only
 * picked and closed, a bind here would succeed). */
static void test_loopback_pair_holds_its_port(void)
{
	char err[128], spec[32];
	int tcp, udp, again;
	bool is_udp = true;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int port = dbk_net_loopback_pair(&tcp, &udp, err, sizeof(err));

	CHECK(port > 0 && tcp >= 0 && udp >= 0);
	CHECK((fcntl(tcp, F_GETFD) & FD_CLOEXEC) && (fcntl(udp, F_GETFD) & FD_CLOEXEC));
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	again = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(bind(again, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == EADDRINUSE);
	close(again);
	again = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(bind(again, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == EADDRINUSE);
	close(again);
	/* The agent's side: the same sockets, each of its kind. */
	snprintf(spec, sizeof(spec), "fd@%d", tcp);
	CHECK(dbk_net_open(spec, &is_udp, err, sizeof(err)) == tcp && !is_udp);
	snprintf(spec, sizeof(spec), "fd@%d", udp);
	CHECK(dbk_net_open(spec, &is_udp, err, sizeof(err)) == udp && is_udp);
	CHECK(fcntl(udp, F_GETFL) & O_NONBLOCK);
	close(tcp);
	close(udp);
	/* Not a socket, a closed fd, a standard stream: refused. */
	int p[2];
	CHECK(pipe(p) == 0);
	snprintf(spec, sizeof(spec), "fd@%d", p[0]);
	err[0] = 0;
	CHECK(dbk_net_open(spec, &is_udp, err, sizeof(err)) < 0 && err[0]);
	close(p[0]);
	close(p[1]);
	CHECK(dbk_net_open(spec, &is_udp, err, sizeof(err)) < 0);
	CHECK(dbk_net_fd_spec("fd@1") < 0 && dbk_net_fd_spec("fd@x") < 0 &&
	      dbk_net_fd_spec("fd@7") == 7);
	CHECK(dbk_net_open("fd@1", &is_udp, err, sizeof(err)) < 0);
}

int main(void)
{
	RUN(test_local_addresses);
	RUN(test_connect_reports_how_it_went);
	RUN(test_open_by_spec);
	RUN(test_haproxy_spellings);
	RUN(test_open_haproxy_spellings);
	RUN(test_loopback_pair_holds_its_port);
	return CHECK_DONE();
}
