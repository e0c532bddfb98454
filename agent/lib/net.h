/* Socket helpers, in the spirit of Redis's anet.c: create listening
 * sockets from a textual address, nothing protocol-specific. */
#ifndef DBK_NET_H
#define DBK_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The one address syntax of every option, HAProxy's spellings included:
 *   HOST:PORT, [IPV6]:PORT     a stream socket (TCP); "tcp@", "ipv4@" or
 *                              "tcp4@", "ipv6@" or "tcp6@" in front say
 *                              so, the last two forcing the family
 *   unix:PATH, unix@PATH, /PATH  a unix stream socket
 *   udp@, udp4@, udp6@ + HOST:PORT  datagrams (completion lines)
 * PORT is a number up to 65535 (0: any, for a listener). Checked
 * without a look-up, so that a command line is refused at parse time;
 * rest points into spec. Returns 0, or -1 with a one-line reason. */
enum dbk_net_kind { DBK_NET_STREAM, DBK_NET_DGRAM, DBK_NET_UNIX };
struct dbk_net_spec {
	enum dbk_net_kind kind;
	int family;       /* AF_UNSPEC, AF_INET or AF_INET6; AF_UNIX for UNIX */
	const char *rest; /* HOST:PORT or [IPV6]:PORT, or the path */
};
int dbk_net_spec_parse(const char *spec, struct dbk_net_spec *out, char *err, size_t errlen);

/* The path of a unix socket spec, or NULL for any other. */
const char *dbk_net_unix_path(const char *spec);

/* Resolves a spec of the syntax above but datagrams' (passive: for
 * bind). A host name may block in getaddrinfo: start-up only.
 * Returns 0, or -1 with a one-line reason in err. */
int dbk_net_resolve(const char *spec, bool passive, struct sockaddr_storage *sa, socklen_t *len,
                    char *err, size_t errlen);

/* The same for a numeric address only (and unix sockets): never looks a
 * name up, so never blocks; a host name fails. */
int dbk_net_resolve_numeric(const char *spec, struct sockaddr_storage *sa, socklen_t *len,
                            char *err, size_t errlen);

/* Opens a non-blocking listening socket for a stream spec (above). A unix socket gets mode 0660 and replaces
 * a stale socket file at PATH (never any other kind of file). Returns the
 * fd, or -1 with a one-line reason in err. */
int dbk_net_listen(const char *spec, char *err, size_t errlen);

/* Binds a non-blocking UDP socket for spec, "HOST:PORT" or
 * "[IPV6]:PORT" (with or without a udp@, ipv4@, ... prefix), with a receive buffer as large as the system allows up
 * to 4 MB (datagrams that arrive while it is full are dropped). Returns
 * the fd, or -1 with a one-line reason in err. */
int dbk_net_bind_udp(const char *spec, char *err, size_t errlen);

/* Every listening option: a datagram spec (udp@...) binds a UDP socket
 * (dbk_net_bind_udp), "fd@N" takes socket N as inherited from the parent
 * (a listening stream or a bound datagram socket: the parent bound it,
 * so no other process can take its port in between), anything else
 * listens on a stream socket (dbk_net_listen). Sets *udp to which;
 * returns the fd, or -1 with a one-line reason in err. */
int dbk_net_open(const char *spec, bool *udp, char *err, size_t errlen);

/* N of an "fd@N" spec (N >= 3: never a standard stream), or -1 when spec
 * is not one. */
int dbk_net_fd_spec(const char *spec);

/* A listening TCP socket (*tcp) and a bound UDP socket (*udp) on one free
 * port of 127.0.0.1, both left open (close-on-exec) for a child to take
 * as fd@N: the port is held from the call on, so no other process can
 * take it before the child starts. Returns the port, or -1 with a reason
 * in err (*tcp and *udp then -1). */
int dbk_net_loopback_pair(int *tcp, int *udp, char *err, size_t errlen);

/* Removes the socket file of a unix socket spec; no-op for the others. Returns
 * -1 (errno set) if it is there and cannot be removed. */
int dbk_net_unlink(const char *spec);

/* Whether a listening socket is reachable only from this host: a unix
 * socket, 127.0.0.0/8 or ::1. */
bool dbk_net_is_local(int fd);
/* The same for an address (an IPv4-mapped 127.0.0.0/8 counts too). */
bool dbk_net_addr_is_local(const struct sockaddr *sa);

/* One entry of an allow-list: an address and how many of its leading
 * bits a peer must share. */
struct dbk_net_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned bits;
};

/* Parses a numeric "ADDR" or "ADDR/BITS" (IPv4 or IPv6; no name is
 * looked up). Returns 0, or -1 with a one-line reason in err. */
int dbk_net_cidr_parse(const char *s, struct dbk_net_cidr *c, char *err, size_t errlen);
/* Whether sa is within c (an IPv4-mapped IPv6 address as IPv4); a unix
 * socket is within none. */
bool dbk_net_cidr_match(const struct dbk_net_cidr *c, const struct sockaddr *sa);

/* Starts a non-blocking connect to sa (see dbk_net_resolve), with
 * TCP_NODELAY and FD_CLOEXEC. The socket turns writable once the connect
 * is done; dbk_net_connect_error then tells how it went. Returns the fd,
 * or -1 with errno set. */
int dbk_net_connect(const struct sockaddr_storage *sa, socklen_t len);
/* 0 for a connect that succeeded, else its errno. */
int dbk_net_connect_error(int fd);

/* Sends buf[*off, len) on a non-blocking socket until all of it is gone
 * or the socket is full, advancing *off (EINTR is retried, SIGPIPE never
 * raised). Returns 0, with *off == len or the rest waiting for room, or
 * -1 on an error, errno set (EPIPE for a send that took nothing). */
int dbk_net_send_pending(int fd, const void *buf, size_t len, size_t *off);

/* Sets O_NONBLOCK and FD_CLOEXEC. Returns 0 or -1. */
int dbk_net_nonblock(int fd);

/* Writes "IP:PORT" or "[IPV6]:PORT" of fd's own address (peer false: what
 * a listener bound with port 0 got) or of its peer (for logs) into buf.
 * Returns the port, or -1 (buf "?") when fd is not an IP socket. */
int dbk_net_sockname(int fd, bool peer, char *buf, size_t len);
/* The same for an address already in hand (a datagram's sender). */
int dbk_net_addr_name(const struct sockaddr_storage *ss, char *buf, size_t len);

#endif
