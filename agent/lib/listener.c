#define _GNU_SOURCE /* struct ucred */
#include "lib/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/net.h"

/* Bounds the work of one readable event, so that a connection storm on
 * one listener cannot starve the connections already open. */
#define ACCEPTS_PER_EVENT 64
/* Out of descriptors with no spare left: accept again after this long. */
#define PAUSE_S 0.1

/* Who is at the other end: an address (IPv4 as such, even when mapped
 * into IPv6), or for a unix socket the peer's process id. */
struct peer_key {
	uint8_t family;
	uint8_t addr[16];
};

struct dbk_peer_slot {
	struct peer_key key;
	unsigned count;
	unsigned next; /* in a bucket's chain or the free list: index + 1 */
};

static void peer_of(int fd, const struct sockaddr_storage *ss, struct peer_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = (uint8_t)ss->ss_family;
	if (ss->ss_family == AF_INET) {
		memcpy(k->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			k->family = AF_INET;
			memcpy(k->addr, &a->s6_addr[12], 4);
		} else {
			memcpy(k->addr, a, 16);
		}
	} else {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		k->family = AF_UNIX;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
			memcpy(k->addr, &cr.pid, sizeof(cr.pid));
	}
}

static const char *peer_str(const struct peer_key *k, char *buf, size_t len)
{
	if (k->family == AF_INET || k->family == AF_INET6)
		return inet_ntop(k->family, k->addr, buf, (socklen_t)len) ? buf : "?";
	int pid;
	memcpy(&pid, k->addr, sizeof(pid));
	snprintf(buf, len, "pid:%d", pid);
	return buf;
}

static unsigned bucket_of(const struct dbk_listener_set *s, const struct peer_key *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	const uint8_t *p = (const uint8_t *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 16777619u;
	return h & (s->nbuckets - 1);
}

/* The slot of k, created if absent (one must be free). */
static unsigned slot_get(struct dbk_listener_set *s, const struct peer_key *k)
{
	unsigned b = bucket_of(s, k);

	for (unsigned i = s->buckets[b]; i; i = s->slots[i - 1].next)
		if (memcmp(&s->slots[i - 1].key, k, sizeof(*k)) == 0)
			return i - 1;
	unsigned i = s->free_slot - 1;
	s->free_slot = s->slots[i].next;
	s->slots[i].key = *k;
	s->slots[i].count = 0;
	s->slots[i].next = s->buckets[b];
	s->buckets[b] = i + 1;
	return i;
}

static void slot_put(struct dbk_listener_set *s, unsigned i)
{
	if (--s->slots[i].count)
		return;
	unsigned *p = &s->buckets[bucket_of(s, &s->slots[i].key)];
	while (*p != i + 1)
		p = &s->slots[*p - 1].next;
	*p = s->slots[i].next;
	s->slots[i].next = s->free_slot;
	s->free_slot = i + 1;
}

static void log_refusal(struct dbk_listener_set *s, const char *reason, unsigned limit,
                        const struct peer_key *k)
{
	uint64_t suppressed;
	char p[64];

	if (s->refused)
		(*s->refused)++;
	if (dbk_log_limit_allow(&s->refuse_log, ev_now(s->loop), &suppressed))
		dbk_log(DBK_LOG_WARN, "conn-refused",
		        "reason=%s for=%s peer=%s limit=%u suppressed=%llu", reason, s->what,
		        peer_str(k, p, sizeof(p)), limit, (unsigned long long)suppressed);
}

/* Open connections from k. */
static unsigned peer_count(const struct dbk_listener_set *s, const struct peer_key *k)
{
	for (unsigned i = s->buckets[bucket_of(s, k)]; i; i = s->slots[i - 1].next)
		if (memcmp(&s->slots[i - 1].key, k, sizeof(*k)) == 0)
			return s->slots[i - 1].count;
	return 0;
}

/* Which limit a new connection from k is over, or NULL. */
static const char *over_limit(const struct dbk_listener_set *s, const struct peer_key *k,
                              unsigned *limit)
{
	if (s->open >= s->max_conns) {
		*limit = s->max_conns;
		return "max-connections";
	}
	if (s->max_per_peer && peer_count(s, k) >= s->max_per_peer) {
		*limit = s->max_per_peer;
		return "max-connections-per-peer";
	}
	return NULL;
}

/* Whether the allow-list lets the peer at ss in. */
static bool allowed(struct dbk_listener_set *s, int fd, const struct sockaddr_storage *ss)
{
	if (!s->nallow || ss->ss_family == AF_UNIX)
		return true;
	for (unsigned i = 0; i < s->nallow; i++)
		if (dbk_net_cidr_match(&s->allow[i], (const struct sockaddr *)ss))
			return true;
	struct peer_key k;
	peer_of(fd, ss, &k);
	log_refusal(s, "not-allowed", 0, &k);
	return false;
}

/* Counts fd against the limits; false when it is over one of them. */
static bool admit(struct dbk_listener_set *s, int fd, const struct sockaddr_storage *ss)
{
	struct peer_key k;
	unsigned limit;
	const char *over;

	peer_of(fd, ss, &k);
	over = over_limit(s, &k, &limit);
	/* The owner may close a connection it values less than a new one. */
	if (over && s->make_room && s->make_room(s->room_arg, &k))
		over = over_limit(s, &k, &limit);
	if (over) {
		log_refusal(s, over, limit, &k);
		return false;
	}
	if ((unsigned)fd >= s->fd_cap) {
		unsigned cap = s->fd_cap ? s->fd_cap : 64;
		while (cap <= (unsigned)fd)
			cap *= 2;
		unsigned *m = realloc(s->slot_of_fd, cap * sizeof(*m));
		if (!m) {
			log_refusal(s, "out-of-memory", 0, &k);
			return false;
		}
		memset(m + s->fd_cap, 0, (cap - s->fd_cap) * sizeof(*m));
		s->slot_of_fd = m;
		s->fd_cap = cap;
	}
	/* open < max_conns, so fewer peers than slots hold one: never fails. */
	unsigned i = slot_get(s, &k);
	s->slots[i].count++;
	s->slot_of_fd[fd] = i + 1;
	s->open++;
	return true;
}

int dbk_listener_may_evict(const struct dbk_listener_set *s, int fd, const void *peer)
{
	if (fd < 0 || (unsigned)fd >= s->fd_cap || !s->slot_of_fd[fd])
		return 0;
	if (s->open >= s->max_conns)
		return 1;
	return memcmp(&s->slots[s->slot_of_fd[fd] - 1].key, peer, sizeof(struct peer_key)) == 0;
}

void dbk_listener_release(struct dbk_listener_set *s, int fd)
{
	if (fd < 0 || (unsigned)fd >= s->fd_cap || !s->slot_of_fd[fd])
		return;
	slot_put(s, s->slot_of_fd[fd] - 1);
	s->slot_of_fd[fd] = 0;
	s->open--;
}

static void set_watchers(struct dbk_listener_set *s, bool on)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (on)
			ev_io_start(s->loop, &s->ls[i].io);
		else
			ev_io_stop(s->loop, &s->ls[i].io);
	}
}

static void on_resume(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_listener_set *s =
	        (struct dbk_listener_set *)((char *)w - offsetof(struct dbk_listener_set, resume));

	(void)loop;
	(void)revents;
	if (s->reserve_fd < 0)
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	set_watchers(s, true);
}

/* Out of descriptors, with a connection waiting that would wake us again
 * at once: take it with the spare descriptor and close it, so the peer
 * hears no now instead of hanging, or without a spare stop accepting for
 * a moment. Returns whether accepting may go on. */
static bool out_of_fds(struct dbk_listener_set *s, int lfd, int err)
{
	uint64_t suppressed;
	bool shed = false;

	if (s->reserve_fd >= 0) {
		close(s->reserve_fd);
		int fd = accept(lfd, NULL, NULL);
		int aerr = errno;
		if (fd >= 0)
			close(fd);
		s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			shed = true;
			if (s->refused)
				(*s->refused)++;
		} else if (aerr == EAGAIN || aerr == EWOULDBLOCK) {
			/* Linux fails accept() with EMFILE before it looks at
			 * the backlog: nothing was waiting after all. */
			return false;
		}
	}
	if (dbk_log_limit_allow(&s->emfile_log, ev_now(s->loop), &suppressed))
		dbk_log(DBK_LOG_WARN, "accept-failed",
		        "for=%s error=\"%s\" action=%s suppressed=%llu", s->what, strerror(err),
		        shed && s->reserve_fd >= 0 ? "refused" : "paused",
		        (unsigned long long)suppressed);
	if (shed && s->reserve_fd >= 0)
		return true;
	set_watchers(s, false);
	ev_timer_set(&s->resume, PAUSE_S, 0);
	ev_timer_start(s->loop, &s->resume);
	return false;
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_listener_set *s = ((struct dbk_listener *)w)->set;

	(void)loop;
	(void)revents;
	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept(w->fd, (struct sockaddr *)&ss, &sl);

		if (fd < 0) {
			int err = errno;
			uint64_t suppressed;

			if (err == EINTR || err == ECONNABORTED)
				continue;
			if (err == EAGAIN || err == EWOULDBLOCK)
				return;
			if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
				if (out_of_fds(s, w->fd, err))
					continue;
				return;
			}
			if (dbk_log_limit_allow(&s->emfile_log, ev_now(s->loop), &suppressed))
				dbk_log(DBK_LOG_WARN, "accept-failed",
				        "for=%s error=\"%s\" suppressed=%llu", s->what,
				        strerror(err), (unsigned long long)suppressed);
			return;
		}
		if (!allowed(s, fd, &ss) || (s->max_conns && !admit(s, fd, &ss)) ||
		    dbk_net_nonblock(fd) < 0) {
			dbk_listener_release(s, fd);
			close(fd);
			continue;
		}
		s->cb(s->arg, fd);
	}
}

void dbk_listener_init(struct dbk_listener_set *s, struct ev_loop *loop, const char *what,
                       dbk_accept_cb cb, void *arg)
{
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->what = what;
	s->cb = cb;
	s->arg = arg;
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ev_timer_init(&s->resume, on_resume, PAUSE_S, 0);
}

int dbk_listener_limit(struct dbk_listener_set *s, unsigned max_conns, unsigned max_per_peer,
                       uint64_t *refused)
{
	unsigned nb = 16;

	while (nb < max_conns)
		nb *= 2;
	s->slots = calloc(max_conns ? max_conns : 1, sizeof(*s->slots));
	s->buckets = calloc(nb, sizeof(*s->buckets));
	if (!s->slots || !s->buckets)
		return -1;
	for (unsigned i = 0; i < max_conns; i++)
		s->slots[i].next = i + 2 <= max_conns ? i + 2 : 0;
	s->free_slot = max_conns ? 1 : 0;
	s->nbuckets = nb;
	s->max_conns = max_conns;
	s->max_per_peer = max_per_peer;
	s->refused = refused;
	return 0;
}

int dbk_listener_open(struct dbk_listener_set *s, struct ev_loop *loop, const char *what,
                      dbk_accept_cb cb, void *arg, unsigned max_conns, unsigned max_per_peer,
                      uint64_t *refused)
{
	dbk_listener_init(s, loop, what, cb, arg);
	if (dbk_listener_limit(s, max_conns, max_per_peer, refused) < 0) {
		dbk_listener_close(s);
		return -1;
	}
	return 0;
}

int dbk_listener_add(struct dbk_listener_set *s, int fd)
{
	if (s->n == DBK_LISTENER_MAX)
		return -1;
	struct dbk_listener *l = &s->ls[s->n++];
	l->set = s;
	ev_io_init(&l->io, on_accept, fd, EV_READ);
	if (!ev_is_active(&s->resume))
		ev_io_start(s->loop, &l->io);
	return 0;
}

void dbk_listener_close(struct dbk_listener_set *s)
{
	ev_timer_stop(s->loop, &s->resume);
	for (unsigned i = 0; i < s->n; i++) {
		ev_io_stop(s->loop, &s->ls[i].io);
		close(s->ls[i].io.fd);
	}
	s->n = 0;
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	s->reserve_fd = -1;
	free(s->slots);
	free(s->buckets);
	free(s->slot_of_fd);
	s->slots = NULL;
	s->buckets = NULL;
	s->slot_of_fd = NULL;
	s->fd_cap = s->max_conns = 0;
}

unsigned long dbk_listener_fd_limit(unsigned long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		struct rlimit up = rl;

		up.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want
		                                                                 : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	return rl.rlim_cur == RLIM_INFINITY ? want : (unsigned long)rl.rlim_cur;
}
