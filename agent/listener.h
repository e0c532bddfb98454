/* Accepting connections on a libev loop: every server in the agent (SPOP,
 * completion events, admin) hands its listening sockets to a listener set
 * and gets each accepted, non-blocking fd through a callback. */
#ifndef DBK_LISTENER_H
#define DBK_LISTENER_H

#include <ev.h>

#define DBK_LISTENER_MAX 8

/* Takes ownership of fd: keep it or close it. */
typedef void (*dbk_accept_cb)(void *arg, int fd);

struct dbk_listener_set {
	struct ev_loop *loop;
	dbk_accept_cb cb;
	void *arg;
	const char *what;           /* for logs */
	unsigned n;
	struct dbk_listener {
		ev_io io;
		struct dbk_listener_set *set;
	} ls[DBK_LISTENER_MAX];
};

void dbk_listener_init(struct dbk_listener_set *s, struct ev_loop *loop,
                       const char *what, dbk_accept_cb cb, void *arg);
/* Starts accepting on an already listening fd. Returns -1 when full. */
int dbk_listener_add(struct dbk_listener_set *s, int fd);
/* Stops and closes every listening fd. */
void dbk_listener_close(struct dbk_listener_set *s);

#endif
