/* A sink for HAProxy's completion ring: accepts connections on a
 * listener set and reads and forgets what comes, so that an HAProxy in
 * front of dbucket-null-agent does the logging work it would do in front
 * of dbucket-spoa. */
#ifndef DBK_SPB_SINK_H
#define DBK_SPB_SINK_H

#include <ev.h>
#include <stdint.h>

#include "lib/list.h"
#include "lib/listener.h"

struct dbk_sink {
	struct ev_loop *loop;
	struct dbk_listener_set ls;
	struct dbk_list links;
	uint64_t accepted; /* connections */
	uint64_t bytes;    /* read and dropped */
};

void dbk_sink_init(struct dbk_sink *s, struct ev_loop *loop);
/* Closes the listeners and every connection. */
void dbk_sink_close(struct dbk_sink *s);

#endif
