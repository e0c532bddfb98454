/* HAProxy's runtime API (the stats socket), the parsing half: what the
 * agent learns from HAProxy about the backend it routes for.
 *
 *   show servers state <backend>   names in configuration order, and the
 *                                  numeric operational/administrative state
 *   show stat <backend> 4 -1       per-server CSV: scur, qcur, status text
 *
 * Pure and bounded: no I/O, no allocation, no globals; every function takes
 * (buffer, length), never reads past it and never needs a NUL terminator,
 * so each one can be fed arbitrary bytes (fuzzed). Columns are found by
 * their NAME in the header line, never by position: HAProxy 2.8 and 3.x add
 * and move columns, and a parser by position would read the wrong one
 * silently.
 *
 * A response is accepted only when complete: HAProxy's CLI ends every
 * command's output with an empty line, and promises that no command emits
 * one inside its output, so a response without it was cut short (server
 * list truncated) and is refused rather than half-applied.
 *
 * See runtime_client.h for the sockets. */
#ifndef DBK_RUNTIME_H
#define DBK_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

/* Longest server name kept; HAProxy's are far shorter in practice. */
#define DBK_RT_NAME_MAX 64
/* Longest line (or CSV record) looked at; HAProxy's show stat lines are
 * about 1-3 KB. A longer one means the input is not what we think it is. */
#define DBK_RT_MAX_LINE 65536
/* Longest address kept: an IPv6 literal. */
#define DBK_RT_ADDR_MAX 45

/* What the agent may do with a server, worst last so that the worse of two
 * opinions is the larger value (see dbk_rt_state_worse). */
enum dbk_rt_server_state {
	DBK_RT_READY = 0, /* takes new requests */
	DBK_RT_DRAIN,     /* up, finishing its sessions: no new requests */
	DBK_RT_DOWN,      /* health checks say it is down */
	DBK_RT_MAINT,     /* taken out by an operator, a tracked server or DNS */
};

const char *dbk_rt_state_str(enum dbk_rt_server_state s);

static inline enum dbk_rt_server_state dbk_rt_state_worse(enum dbk_rt_server_state a,
                                                          enum dbk_rt_server_state b)
{
	return a > b ? a : b;
}

/* srv_op_state (HAProxy's enum srv_state). */
#define DBK_RT_OP_STOPPED 0  /* down: health check failed, or in maintenance */
#define DBK_RT_OP_STARTING 1 /* up, slow-starting */
#define DBK_RT_OP_RUNNING 2
#define DBK_RT_OP_STOPPING 3 /* up but soft-stopping (NOLB: 404 with disable-on-404) */

/* srv_admin_state bits (HAProxy's enum srv_admin, include/haproxy/server-t.h
 * and doc/management.txt). */
#define DBK_RT_ADMF_FMAINT 0x01 /* forced into maintenance (set server ... state maint) */
#define DBK_RT_ADMF_IMAINT 0x02 /* inherited from a tracked server */
#define DBK_RT_ADMF_CMAINT \
	0x04                    /* "disabled" in the configuration: a record of the
                                 * origin only, always set together with FMAINT; it
                                 * stays after "enable server", when the server is
                                 * usable again, so it alone never means MAINT */
#define DBK_RT_ADMF_FDRAIN 0x08 /* forced into drain (set server ... state drain) */
#define DBK_RT_ADMF_IDRAIN 0x10 /* drain inherited from a tracked server */
#define DBK_RT_ADMF_RMAINT 0x20 /* maintenance: DNS resolution failed */
#define DBK_RT_ADMF_HMAINT \
	0x40 /* FQDN changed at runtime (HMAINT in 2.x docs,
                                 * FQDN_CHANGED in 3.x): never removed, and
                                 * despite the name not a maintenance state */
/* The masks HAProxy itself tests (SRV_ADMF_MAINT, SRV_ADMF_DRAIN). */
#define DBK_RT_ADMF_MAINT (DBK_RT_ADMF_FMAINT | DBK_RT_ADMF_IMAINT | DBK_RT_ADMF_RMAINT)
#define DBK_RT_ADMF_DRAIN (DBK_RT_ADMF_FDRAIN | DBK_RT_ADMF_IDRAIN)

/* The state the numbers of show servers state mean: any MAINT bit gives
 * MAINT; else op state STOPPED gives DOWN (a failed health check sets no
 * admin bit); else a DRAIN bit or STOPPING gives DRAIN; else READY. */
enum dbk_rt_server_state dbk_rt_state_from_flags(unsigned op_state, unsigned admin_state);

/* The state a show stat status text means, by its first word: "UP",
 * "UP 1/3" and "no check" are READY; "DRAIN", "DRAIN 1/2", "DRAIN (agent)",
 * "NOLB", "NOLB 1/2" are DRAIN; "DOWN", "DOWN 1/2" (going up, still down),
 * "DOWN (agent)" are DOWN; "MAINT", "MAINT (via be/srv)",
 * "MAINT (resolution)" are MAINT. Returns 0, or -1 for any other text
 * (*out is then DOWN: a state we do not understand is not one to route to). */
int dbk_rt_state_from_status(const char *s, size_t len, enum dbk_rt_server_state *out);

/* One server of the backend, as both commands describe it. */
struct dbk_rt_server {
	char name[DBK_RT_NAME_MAX + 1];      /* NUL-terminated */
	enum dbk_rt_server_state state;      /* the worse of the two sources known */
	int op_state;                        /* srv_op_state; -1 when not known */
	int admin_state;                     /* srv_admin_state; -1 when not known */
	bool stat_seen;                      /* the last show stat had this server */
	enum dbk_rt_server_state stat_state; /* its status text, when stat_seen */
	long scur;                           /* current sessions; -1 when not known */
	long qcur;                           /* requests queued on it; -1 when not known */
	/* show stat's weight: the effective one, which ramps from 1 during
	 * slowstart and is 0 after "set server ... weight 0" (drain); -1
	 * when not known. show servers state's srv_uweight is the user's
	 * weight only (HAProxy 2.6 .. 3.x). */
	long weight;
	char addr[DBK_RT_ADDR_MAX + 1]; /* srv_addr, "" when not known */
	int port;                       /* srv_port, 0 when not known */
};

/* Sets s to a server named name (truncated to DBK_RT_NAME_MAX) that
 * nothing is known about: READY, every number -1. */
void dbk_rt_server_init(struct dbk_rt_server *s, const char *name);

/* The server's state with its weight: HAProxy's weight 0 is a drain
 * ("set server ... weight 0"), whatever the status says (a server
 * without checks still says "no check"). */
enum dbk_rt_server_state dbk_rt_server_state(const struct dbk_rt_server *s);

/* Index of the server called name[0..len) in srv[0..n), or -1. */
int dbk_rt_find(const struct dbk_rt_server *srv, unsigned n, const char *name, size_t len);

/* What HAProxy holds for the server: sessions plus requests queued on it
 * (a request use-server sent to a full server waits in its queue, not in
 * scur). -1 when show stat has not told us. */
long dbk_rt_server_load(const struct dbk_rt_server *s);

/* Parses the output of "show servers state <backend>": the format version
 * ("1"), a "# be_id be_name srv_id srv_name ..." header, one line per
 * server, an empty line. Fills out[0..*n) with the servers of backend in
 * the order HAProxy lists them (configuration order), each with op_state,
 * admin_state and state set, addr and port when the srv_addr and srv_port
 * columns hold an IP literal and a port (else "" and 0), and nothing from
 * show stat (scur -1).
 *
 * Returns 0, or -1 with a one-line reason in err (and *n == 0) when: the
 * output is not a servers-state dump (HAProxy's own error text, such as
 * "Can't find backend.", is quoted in err), the version is not 1, a needed
 * column is missing, the output is truncated, a line of the backend has too
 * few fields or a bad value, a name is empty, too long or not printable,
 * a name repeats, or there are more than max servers. A dump is used whole
 * or not at all: one skipped line would shift every later server's index.
 * Lines of other backends and '#' comment lines are skipped. */
int dbk_rt_parse_servers_state(const char *buf, size_t len, const char *backend,
                               struct dbk_rt_server *out, unsigned max, unsigned *n, char *err,
                               size_t errlen);

struct dbk_rt_stat_result {
	unsigned matched;        /* rows applied to a server of the list */
	unsigned unknown_names;  /* server rows of the backend not in the list
	                          * (added at runtime, or renamed: rediscover) */
	unsigned unknown_status; /* status texts not understood (taken as DOWN) */
};

/* Parses the CSV output of "show stat <backend> 4 -1" (a "# pxname,svname,
 * ..." header, one record per server, an empty line; fields may be
 * double-quoted, as HAProxy quotes texts with commas) and applies each
 * server row of backend to the entry of srv[0..n) with the same name:
 * stat_seen, stat_state, scur, qcur and weight (-1 if that column is
 * absent; a weight above 256, HAProxy's largest, is refused),
 * then state, recomputed as the worse of the flags (if known) and the
 * status. Entries without a row get stat_seen false and scur/qcur -1 and
 * keep the state of their flags alone. Frontend and backend rows are
 * skipped.
 *
 * Returns 0, or -1 with a reason in err, leaving srv[] untouched, on the
 * same kinds of faults as dbk_rt_parse_servers_state (and a server row
 * repeated). res may be NULL. */
int dbk_rt_parse_stat(const char *buf, size_t len, const char *backend, struct dbk_rt_server *srv,
                      unsigned n, struct dbk_rt_stat_result *res, char *err, size_t errlen);

#endif
