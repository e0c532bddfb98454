/* dbucket-spop-load's state and the parts that share it: the command
 * line (load_opts.c), the SPOP connections (load_conn.c), the completion
 * link (load_release.c) and the run's phases and report (load_phase.c).
 * One struct load, owned by the event loop; load.c sets it up. */
#ifndef DBK_SPB_LOAD_H
#define DBK_SPB_LOAD_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/conn.h"
#include "spb.h"

/* What we announce in our HELLO, as HAProxy does with tune.bufsize 16k. */
#define DBK_LOAD_FRAME DBK_SPB_HAPROXY_FRAME
#define DBK_LOAD_MAX_ID 48
/* After the run, in-flight NOTIFYs get this long for their ACKs, and
 * queued completion lines this long to leave. */
#define DBK_LOAD_DRAIN_TIMEOUT 5.0

struct dbk_load_opts {
	const char *connect;
	const char *release;
	int connections;
	int depth;
	double seconds;
	double timeout;
	long long total; /* 0: run for `seconds` */
	long long body_bytes;
	int max_tokens;
	bool defer;
	bool help, version;
};

/* A NOTIFY in flight. The ring of slots is in send order; an ACK is
 * expected for the oldest, and one out of order is found by a scan. */
struct dbk_load_slot {
	uint64_t stream_id;
	uint64_t sent_ns;
	bool busy;
	uint8_t id_len;
	char id[DBK_LOAD_MAX_ID];
};

enum dbk_load_cstate { CS_CONNECTING, CS_HELLO, CS_READY, CS_DEAD };

struct dbk_load_conn {
	struct dbk_conn conn; /* while open */
	bool open;
	struct dbk_load *L;
	unsigned idx;
	enum dbk_load_cstate state;
	uint32_t frame_max;
	unsigned depth; /* 1 when the agent refused pipelining */
	struct dbk_load_slot *slots;
	unsigned head, count, inflight;
	size_t out_cap; /* output owed at most: a window of the largest NOTIFY */
};

enum dbk_load_phase {
	PH_HELLO,   /* connecting, HELLO */
	PH_RUN,     /* NOTIFYs flow */
	PH_DRAIN,   /* no new NOTIFY, waiting for the ACKs in flight */
	PH_HOLD,    /* --defer-release: waiting for SIGUSR1 */
	PH_RELEASE, /* writing the last completion lines */
	PH_END,
};

struct dbk_load_errors {
	uint64_t connect, hello, bad_frames, unmatched, no_server, disconnects, closed, lost;
};

/* The link to the agent's completion listener. */
struct dbk_load_rlink {
	struct dbk_conn conn; /* while open */
	bool open, connected;
	struct dbk_buf held; /* --defer-release: the lines until the release */
	size_t lost;         /* bytes of lines never written */
	uint64_t lines;
};

struct dbk_load {
	struct ev_loop *loop;
	struct dbk_load_opts o;
	struct sockaddr_storage agent_sa, rel_sa;
	socklen_t agent_len, rel_len;
	struct dbk_load_conn *conns;
	unsigned nready, ndead;
	enum dbk_load_phase phase;
	bool timed_out;
	bool rel_paused;         /* NOTIFYs wait for completion lines to leave */
	uint64_t t_start, t_end; /* ns, CLOCK_MONOTONIC */
	uint64_t next_sid, seq, sent, acked, decided, decided_window;
	struct dbk_load_errors err;
	struct dbk_spb_lat *lat;
	char *body;
	size_t sample_len;
	size_t notify_max;
	unsigned pid;
	uint64_t wall0_ms;
	char engine_id[64];
	ev_timer deadline, drain, hard;
	ev_signal sigint, sigterm, sigusr1;
	struct dbk_load_rlink rel;
};

uint64_t dbk_load_now_ns(void);

/* load_opts.c: fills o from the command line. Returns -1 to go on, else
 * the exit status (0 after --help). */
int dbk_load_parse_opts(int argc, char **argv, struct dbk_load_opts *o);

/* load_conn.c */
/* Opens connection i to the agent; a failure counts and marks it dead. */
void dbk_load_conn_start(struct dbk_load *L, unsigned i);
/* Tops up its window, writes, re-arms its watcher. */
void dbk_load_conn_kick(struct dbk_load_conn *c);
/* NOTIFYs sent and not yet answered, over every connection. */
unsigned dbk_load_inflight(const struct dbk_load *L);
/* Says HAPROXY-DISCONNECT where it can and frees the connections. */
void dbk_load_conns_close(struct dbk_load *L);

/* load_release.c */
/* Connects the completion link. Returns 0, or -1 (errno set). */
int dbk_load_rel_start(struct dbk_load *L);
/* Bytes of completion lines not written yet (0 once the link is gone). */
size_t dbk_load_rel_pending(const struct dbk_load *L);
/* Whether NOTIFYs must wait for queued completion lines to leave. */
bool dbk_load_rel_blocked(const struct dbk_load *L);
/* Queues the completion line of a decided id. */
void dbk_load_rel_queue(struct dbk_load *L, const struct dbk_load_slot *s, const uint8_t *srv,
                        size_t srv_len);
/* Writes what it can, resumes paused connections, advances the run. */
void dbk_load_rel_settle(struct dbk_load *L);
void dbk_load_rel_close(struct dbk_load *L);

/* load_phase.c */
/* Starts the timers and signal watchers. */
void dbk_load_phases_init(struct dbk_load *L);
/* Moves through the phases as their conditions are met. Called after
 * anything that may complete one (all HELLOs done, last ACK, lines
 * written, a connection lost). */
void dbk_load_advance(struct dbk_load *L);
/* Stops sending: the measured window ends now. */
void dbk_load_end_run(struct dbk_load *L);
uint64_t dbk_load_error_count(const struct dbk_load_errors *e);

#endif
