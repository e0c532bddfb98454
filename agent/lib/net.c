#include "lib/net.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/numparse.h"

#define LISTEN_BACKLOG 511

int dbk_net_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int dbk_net_send_pending(int fd, const void *buf, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = send(fd, (const char *)buf + *off, len - *off, MSG_NOSIGNAL);

		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n == 0)
			errno = EPIPE;
		return -1;
	}
	return 0;
}

/* HAProxy's prefixes (its "bind" and "server" address syntax), longest
 * first where one begins another. */
static const struct {
	const char *prefix;
	enum dbk_net_kind kind;
	int family;
} prefixes[] = {
	{ "unix:", DBK_NET_UNIX, AF_UNIX },    { "unix@", DBK_NET_UNIX, AF_UNIX },
	{ "udp4@", DBK_NET_DGRAM, AF_INET },   { "udp6@", DBK_NET_DGRAM, AF_INET6 },
	{ "udp@", DBK_NET_DGRAM, AF_UNSPEC },  { "tcp4@", DBK_NET_STREAM, AF_INET },
	{ "tcp6@", DBK_NET_STREAM, AF_INET6 }, { "tcp@", DBK_NET_STREAM, AF_UNSPEC },
	{ "ipv4@", DBK_NET_STREAM, AF_INET },  { "ipv6@", DBK_NET_STREAM, AF_INET6 },
};

/* Splits HOST:PORT or [IPV6]:PORT into host (NUL-terminated in host[])
 * and port. */
static int split_host_port(const char *spec, const char *rest, char *host, size_t hcap,
                           const char **port, char *err, size_t errlen)
{
	const char *sep;
	size_t hlen;
	unsigned long long p;

	if (rest[0] == '[') {
		sep = strchr(rest, ']');
		if (!sep || sep[1] != ':') {
			dbk_errf(err, errlen, "bad address '%s' (want [IPV6]:PORT)", spec);
			return -1;
		}
		hlen = (size_t)(sep - rest - 1);
		*port = sep + 2;
		rest++;
	} else {
		sep = strrchr(rest, ':');
		hlen = sep ? (size_t)(sep - rest) : 0;
		*port = sep ? sep + 1 : "";
	}
	if (hlen == 0 || hlen >= hcap || **port == '\0') {
		dbk_errf(err, errlen,
		         "bad address '%s' (want HOST:PORT, [IPV6]:PORT, unix:PATH or "
		         "udp@HOST:PORT)",
		         spec);
		return -1;
	}
	if (!dbk_parse_uint(*port, 0, 65535, &p)) {
		dbk_errf(err, errlen, "bad port in '%s' (want a number up to 65535)", spec);
		return -1;
	}
	memcpy(host, rest, hlen);
	host[hlen] = '\0';
	return 0;
}

int dbk_net_spec_parse(const char *spec, struct dbk_net_spec *out, char *err, size_t errlen)
{
	char host[256];
	const char *port, *at;

	if (!spec || !*spec) {
		dbk_errf(err, errlen, "empty address");
		return -1;
	}
	*out = (struct dbk_net_spec){ DBK_NET_STREAM, AF_UNSPEC, spec };
	if (spec[0] == '/')
		*out = (struct dbk_net_spec){ DBK_NET_UNIX, AF_UNIX, spec };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i].prefix);

		if (strncmp(spec, prefixes[i].prefix, n) == 0) {
			*out = (struct dbk_net_spec){ prefixes[i].kind, prefixes[i].family,
				                      spec + n };
			break;
		}
	}
	if (out->kind == DBK_NET_UNIX) {
		size_t n = strlen(out->rest);

		if (n == 0 || n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			dbk_errf(err, errlen, "unix socket path '%s' is empty or too long",
			         out->rest);
			return -1;
		}
		return 0;
	}
	/* Another HAProxy family (abns@, fd@, sockpair@, quic4@, ...) is not
	 * for the agent: say so rather than read it as a host name. */
	at = strchr(out->rest, '@');
	if (at && out->rest == spec && !strchr(spec, '[')) {
		dbk_errf(err, errlen,
		         "'%.*s@' addresses are not supported (want HOST:PORT, [IPV6]:PORT, "
		         "unix:PATH, unix@PATH, udp@, ipv4@ or ipv6@)",
		         (int)(at - spec), spec);
		return -1;
	}
	if (out->kind == DBK_NET_DGRAM && (out->rest[0] == '/' || !strncmp(out->rest, "unix:", 5) ||
	                                   !strncmp(out->rest, "unix@", 5))) {
		dbk_errf(err, errlen, "%s: a UDP address is HOST:PORT or [IPV6]:PORT", spec);
		return -1;
	}
	return split_host_port(spec, out->rest, host, sizeof(host), &port, err, errlen);
}

const char *dbk_net_unix_path(const char *spec)
{
	struct dbk_net_spec s;
	char err[8];

	if (dbk_net_spec_parse(spec, &s, err, sizeof(err)) < 0 || s.kind != DBK_NET_UNIX)
		return NULL;
	return s.rest;
}

/* flags: AI_PASSIVE for bind, AI_NUMERICHOST never to look up a name. */
static int resolve_spec(const char *spec, const struct dbk_net_spec *s, int flags,
                        struct sockaddr_storage *sa, socklen_t *len, char *err, size_t errlen)
{
	char host[256];
	const char *port;

	memset(sa, 0, sizeof(*sa));
	if (s->kind == DBK_NET_UNIX) {
		struct sockaddr_un *su = (struct sockaddr_un *)sa;

		su->sun_family = AF_UNIX;
		memcpy(su->sun_path, s->rest, strlen(s->rest) + 1);
		*len = (socklen_t)sizeof(*su);
		return 0;
	}
	if (split_host_port(spec, s->rest, host, sizeof(host), &port, err, errlen) < 0)
		return -1;

	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = s->family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | flags;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0 || !res || res->ai_addrlen > sizeof(*sa)) {
		dbk_errf(err, errlen, "%s:%s: %s", host, port,
		         rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A spec for a stream socket or a connect: datagrams are refused. */
static int resolve(const char *spec, int flags, struct sockaddr_storage *sa, socklen_t *len,
                   char *err, size_t errlen)
{
	struct dbk_net_spec s;

	if (dbk_net_spec_parse(spec, &s, err, errlen) < 0)
		return -1;
	if (s.kind == DBK_NET_DGRAM) {
		dbk_errf(err, errlen, "%s: a datagram address where a stream is wanted", spec);
		return -1;
	}
	return resolve_spec(spec, &s, flags, sa, len, err, errlen);
}

int dbk_net_resolve(const char *spec, bool passive, struct sockaddr_storage *sa, socklen_t *len,
                    char *err, size_t errlen)
{
	return resolve(spec, passive ? AI_PASSIVE : 0, sa, len, err, errlen);
}

int dbk_net_resolve_numeric(const char *spec, struct sockaddr_storage *sa, socklen_t *len,
                            char *err, size_t errlen)
{
	return resolve(spec, AI_NUMERICHOST, sa, len, err, errlen);
}

static int listen_unix(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	const char *path = sa->sun_path;
	struct stat st;
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0) {
		dbk_errf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* A socket left by a previous run would make bind fail and is
	 * replaced; one that still answers belongs to a live process, and
	 * anything else at that path is the operator's: both are refused. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			dbk_errf(err, errlen, "'%s' exists and is not a socket", path);
			close(fd);
			return -1;
		}
		int probe = socket(AF_UNIX, SOCK_STREAM, 0);
		bool live = probe >= 0 &&
		            connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			dbk_errf(err, errlen, "unix:%s: another process listens there", path);
			close(fd);
			return -1;
		}
		unlink(path);
	}
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || chmod(path, 0660) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0 || dbk_net_nonblock(fd) < 0) {
		dbk_errf(err, errlen, "unix:%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A non-blocking socket of `type` bound to spec's address (with
 * SO_REUSEADDR), and listening when it is a stream. */
static int open_bound(const char *spec, int type, char *err, size_t errlen)
{
	struct dbk_net_spec s;
	struct sockaddr_storage sa;
	socklen_t len;
	int one = 1;

	if (dbk_net_spec_parse(spec, &s, err, errlen) < 0)
		return -1;
	if (s.kind == DBK_NET_DGRAM && type == SOCK_STREAM) {
		dbk_errf(err, errlen, "%s: a datagram address where a stream is wanted", spec);
		return -1;
	}
	if (s.kind == DBK_NET_UNIX && type == SOCK_DGRAM) {
		dbk_errf(err, errlen, "%s: a UDP address is HOST:PORT or [IPV6]:PORT", spec);
		return -1;
	}
	if (resolve_spec(spec, &s, AI_PASSIVE, &sa, &len, err, errlen) < 0)
		return -1;
	if (sa.ss_family == AF_UNIX)
		return listen_unix((const struct sockaddr_un *)&sa, err, errlen);
	int fd = socket(sa.ss_family, type, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, len) < 0 ||
	    (type == SOCK_STREAM && listen(fd, LISTEN_BACKLOG) < 0) || dbk_net_nonblock(fd) < 0) {
		dbk_errf(err, errlen, "%s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int dbk_net_listen(const char *spec, char *err, size_t errlen)
{
	return open_bound(spec, SOCK_STREAM, err, errlen);
}

int dbk_net_bind_udp(const char *spec, char *err, size_t errlen)
{
	int want = 4 << 20;
	int fd = open_bound(spec, SOCK_DGRAM, err, errlen);

	if (fd < 0)
		return -1;
	/* A burst of completions must wait in the kernel while the loop is
	 * busy: past net.core.rmem_max only a privileged process may go
	 * (FORCE), and a smaller buffer still works. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	return fd;
}

int dbk_net_fd_spec(const char *spec)
{
	unsigned long long n;

	if (!spec || strncmp(spec, "fd@", 3) != 0 || !dbk_parse_uint(spec + 3, 3, 1 << 20, &n))
		return -1;
	return (int)n;
}

/* An inherited socket (fd@N) taken as it is: a listening stream or a
 * bound datagram socket, made non-blocking and kept from any exec. */
static int open_inherited(const char *spec, int fd, bool *udp, char *err, size_t errlen)
{
	int type = 0, listening = 0;
	socklen_t len = sizeof(type), llen = sizeof(listening);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
		dbk_errf(err, errlen, "%s: not an inherited socket (%s)", spec, strerror(errno));
		return -1;
	}
	if (type == SOCK_STREAM &&
	    (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &llen) < 0 || !listening)) {
		dbk_errf(err, errlen, "%s: a stream socket that is not listening", spec);
		return -1;
	}
	if (type != SOCK_STREAM && type != SOCK_DGRAM) {
		dbk_errf(err, errlen, "%s: neither a stream nor a datagram socket", spec);
		return -1;
	}
	if (dbk_net_nonblock(fd) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		dbk_errf(err, errlen, "%s: %s", spec, strerror(errno));
		return -1;
	}
	*udp = type == SOCK_DGRAM;
	return fd;
}

int dbk_net_open(const char *spec, bool *udp, char *err, size_t errlen)
{
	struct dbk_net_spec s;
	int fd = dbk_net_fd_spec(spec);

	*udp = false;
	if (fd >= 0)
		return open_inherited(spec, fd, udp, err, errlen);
	if (dbk_net_spec_parse(spec, &s, err, errlen) < 0)
		return -1;
	*udp = s.kind == DBK_NET_DGRAM;
	return *udp ? dbk_net_bind_udp(spec, err, errlen) : dbk_net_listen(spec, err, errlen);
}

int dbk_net_loopback_pair(int *tcp, int *udp, char *err, size_t errlen)
{
	*tcp = *udp = -1;
	for (int try = 0; try < 16; try++) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);
		char spec[32];
		int t = dbk_net_listen("127.0.0.1:0", err, errlen), u;

		if (t < 0)
			return -1;
		if (getsockname(t, (struct sockaddr *)&sa, &len) < 0 ||
		    fcntl(t, F_SETFD, FD_CLOEXEC) < 0) {
			dbk_errf(err, errlen, "127.0.0.1:0: %s", strerror(errno));
			close(t);
			return -1;
		}
		snprintf(spec, sizeof(spec), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
		u = dbk_net_bind_udp(spec, err, errlen);
		if (u >= 0 && fcntl(u, F_SETFD, FD_CLOEXEC) == 0) {
			*tcp = t;
			*udp = u;
			return ntohs(sa.sin_port);
		}
		if (u >= 0)
			close(u);
		close(t);
	}
	dbk_errf(err, errlen, "no loopback port free for both TCP and UDP in 16 tries");
	return -1;
}

bool dbk_net_addr_is_local(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_UNIX)
		return true;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127);
	}
	return false;
}

int dbk_net_cidr_parse(const char *s, struct dbk_net_cidr *c, char *err, size_t errlen)
{
	char a[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long long bits;

	memset(c, 0, sizeof(*c));
	if (n >= sizeof(a)) {
		dbk_errf(err, errlen, "'%s' is not an address", s);
		return -1;
	}
	memcpy(a, s, n);
	a[n] = '\0';
	if (inet_pton(AF_INET, a, c->addr) == 1)
		c->family = AF_INET;
	else if (inet_pton(AF_INET6, a, c->addr) == 1)
		c->family = AF_INET6;
	else {
		dbk_errf(err, errlen, "'%s' is not a numeric address", s);
		return -1;
	}
	unsigned max = c->family == AF_INET ? 32 : 128;
	if (!slash)
		bits = max;
	else if (!dbk_parse_uint(slash + 1, 0, max, &bits)) {
		dbk_errf(err, errlen, "'%s': the prefix length is 0 to %u", s, max);
		return -1;
	}
	c->bits = (unsigned)bits;
	return 0;
}

bool dbk_net_cidr_match(const struct dbk_net_cidr *c, const struct sockaddr *sa)
{
	const uint8_t *a;
	int family = sa->sa_family;

	if (family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	} else if (family == AF_INET6) {
		const struct in6_addr *in6 =
		        &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		a = in6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(in6)) {
			family = AF_INET;
			a += 12;
		}
	} else {
		return false;
	}
	if (family != c->family)
		return false;
	unsigned whole = c->bits / 8, rest = c->bits % 8;
	if (memcmp(a, c->addr, whole) != 0)
		return false;
	return rest == 0 || ((a[whole] ^ c->addr[whole]) & (0xffu << (8 - rest)) & 0xffu) == 0;
}

bool dbk_net_is_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	return dbk_net_addr_is_local((const struct sockaddr *)&ss);
}

int dbk_net_connect(const struct sockaddr_storage *sa, socklen_t len)
{
	int fd = socket(sa->ss_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (dbk_net_nonblock(fd) < 0 ||
	    (connect(fd, (const struct sockaddr *)sa, len) < 0 && errno != EINPROGRESS)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	/* Requests here are small and latency-bound: no Nagle (fails
	 * harmlessly on unix sockets). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int dbk_net_connect_error(int fd)
{
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		return errno;
	return e;
}

int dbk_net_unlink(const char *spec)
{
	const char *path = dbk_net_unix_path(spec);

	if (path && unlink(path) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int dbk_net_addr_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	const void *addr;
	unsigned port;

	snprintf(buf, len, "?");
	if (ss->ss_family == AF_INET) {
		addr = &((const struct sockaddr_in *)ss)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		addr = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	} else {
		return -1;
	}
	if (!inet_ntop(ss->ss_family, addr, ip, sizeof(ip)))
		return -1;
	snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, port);
	return (int)port;
}

int dbk_net_sockname(int fd, bool peer, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
	              : getsockname(fd, (struct sockaddr *)&ss, &sl);

	if (rc < 0) {
		snprintf(buf, len, "?");
		return -1;
	}
	return dbk_net_addr_name(&ss, buf, len);
}
