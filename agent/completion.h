/* Completion events: HAProxy logs one line per finished request into a
 * ring that forwards it to the agent over TCP with octet-count framing
 * (RFC 6587: "<len> <line>"). This module turns those bytes into events.
 *
 * Pure and bounded: no sockets, no allocation, every length checked. The
 * line is the frontend's log-format, which starts with these fields,
 * separated by single spaces (the rest of the line is for humans):
 *
 *   dbk1 %{+Q,+E}ID %[var(txn.dbucket.server)] %s %ST %tsc %Tt %B %rc %[date(0,ms)]
 *
 * dbk1 names the format, so that a line of another shape is counted as
 * malformed rather than misread. The id is quoted and escaped (HAProxy's
 * +Q and +E: '"', '\' and ']' prefixed with '\'; "" when there is none),
 * since a unique-id-format built from a client's header can hold spaces
 * and quotes; a bare %ID, as the sample logged before, still parses (an
 * id without spaces, "-" for none). */
#ifndef DBK_COMPLETION_H
#define DBK_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBK_COMPLETION_TAG "dbk1"
/* HAProxy's default ring maxlen is 1024; allow generous room for long
 * request lines in the human part. */
#define DBK_COMPLETION_MAX_LINE 16384
/* Longest quoted id kept, unescaped (the balancer's DBK_BAL_MAX_ID_LEN). */
#define DBK_COMPLETION_MAX_ID 255

struct dbk_completion {
	const char *id; /* %ID, unescaped; id_len 0 if none ("-" or "") */
	size_t id_len;
	char id_buf[DBK_COMPLETION_MAX_ID]; /* a quoted id, unescaped */
	const char *chosen;                 /* the agent's choice; chosen_len 0 if none ("-") */
	size_t chosen_len;
	const char *server; /* %s: where HAProxy actually sent it */
	size_t server_len;
	int status;        /* %ST; -1 when none */
	char term[5];      /* %tsc, NUL-terminated, e.g. "----", "CD--" */
	int64_t total_ms;  /* %Tt; -1 when none */
	int64_t bytes;     /* %B */
	int retries;       /* %rc without its '+' */
	bool redispatched; /* %rc carried '+' */
	int64_t log_ms;    /* when HAProxy logged it (Unix ms): the stream's end */
};

enum dbk_completion_status {
	DBK_COMPLETION_OK = 0,
	DBK_COMPLETION_NEED_MORE, /* framing: wait for more bytes */
	DBK_COMPLETION_BAD_FRAME, /* framing broken: drop the connection */
	DBK_COMPLETION_BAD_LINE,  /* not a dbk1 line: count and skip it */
};

/* Finds the next octet-counted message at the start of buf. On OK, *msg
 * and *msg_len are the message and *consumed the bytes to drop. A length
 * above DBK_COMPLETION_MAX_LINE, a missing space or a non-digit give
 * BAD_FRAME. */
enum dbk_completion_status dbk_completion_frame(const char *buf, size_t len, const char **msg,
                                                size_t *msg_len, size_t *consumed);

/* Parses one message (trailing CR/LF ignored). Strings in c point into
 * line, or (a quoted id) into c itself: c must not be copied. A quoted id
 * longer than DBK_COMPLETION_MAX_ID unescaped is a BAD_LINE (no lease
 * can have it). */
enum dbk_completion_status dbk_completion_parse(const char *line, size_t len,
                                                struct dbk_completion *c);

#endif
