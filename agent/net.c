#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_BACKLOG 511

int dbk_net_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) == 0 || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "unix socket path '%s' is empty or too long", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path));

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket left by a previous run would make bind fail and is
	 * replaced; one that still answers belongs to a live process, and
	 * anything else at that path is the operator's: both are refused. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is not a socket", path);
			close(fd);
			return -1;
		}
		int probe = socket(AF_UNIX, SOCK_STREAM, 0);
		bool live = probe >= 0 &&
		            connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			snprintf(err, errlen, "unix:%s: another process listens there", path);
			close(fd);
			return -1;
		}
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, 0660) < 0 || listen(fd, LISTEN_BACKLOG) < 0 ||
	    dbk_net_nonblock(fd) < 0) {
		snprintf(err, errlen, "unix:%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int listen_tcp(const char *spec, char *err, size_t errlen)
{
	char host[256];
	const char *port;
	size_t hlen;

	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');
		if (!rb || rb[1] != ':') {
			snprintf(err, errlen, "bad address '%s' (want [IPV6]:PORT)", spec);
			return -1;
		}
		hlen = (size_t)(rb - spec - 1);
		memcpy(host, spec + 1, hlen < sizeof(host) ? hlen : 0);
		port = rb + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon) {
			snprintf(err, errlen, "bad address '%s' (want HOST:PORT or unix:PATH)", spec);
			return -1;
		}
		hlen = (size_t)(colon - spec);
		port = colon + 1;
		if (hlen < sizeof(host))
			memcpy(host, spec, hlen);
	}
	if (hlen == 0 || hlen >= sizeof(host) || *port == '\0') {
		snprintf(err, errlen, "bad address '%s' (want HOST:PORT or unix:PATH)", spec);
		return -1;
	}
	host[hlen] = '\0';

	struct addrinfo hints, *res;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", spec, gai_strerror(rc));
		return -1;
	}

	int fd = socket(res->ai_family, SOCK_STREAM, 0);
	int one = 1;
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0 || dbk_net_nonblock(fd) < 0) {
		snprintf(err, errlen, "%s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

int dbk_net_listen(const char *spec, char *err, size_t errlen)
{
	if (strncmp(spec, "unix:", 5) == 0)
		return listen_unix(spec + 5, err, errlen);
	return listen_tcp(spec, err, errlen);
}

bool dbk_net_is_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	if (ss.ss_family == AF_UNIX)
		return true;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
	}
	return false;
}

int dbk_net_unlink(const char *spec)
{
	if (strncmp(spec, "unix:", 5) == 0 && unlink(spec + 5) < 0 && errno != ENOENT)
		return -1;
	return 0;
}
