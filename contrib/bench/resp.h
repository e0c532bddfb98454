/* Incremental HTTP/1.1 response decoder for the benchmark client: status
 * line, the few headers it needs, and the body (Content-Length, chunked
 * or read to close) handed out as decoded bytes. Pure and bounded: bytes
 * may arrive split anywhere, memory per response is fixed. */
#ifndef DBK_BENCH_RESP_H
#define DBK_BENCH_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Above this the head is refused; vLLM's and HAProxy's are < 1 KiB. */
#define DBK_RESP_MAX_HEAD (64 * 1024)
/* Longer header lines are skipped (none the client reads is long). */
#define DBK_RESP_MAX_LINE 2048

enum dbk_resp_state {
	DBK_RESP_HEAD = 0,
	DBK_RESP_BODY_LENGTH,    /* Content-Length bytes */
	DBK_RESP_BODY_CLOSE,     /* until the connection closes */
	DBK_RESP_CHUNK_SIZE,
	DBK_RESP_CHUNK_DATA,
	DBK_RESP_CHUNK_END,      /* the CRLF after chunk data */
	DBK_RESP_TRAILER,
	DBK_RESP_DONE,
	DBK_RESP_ERROR,
};

/* Decoded body bytes; a non-zero return stops decoding (state ERROR,
 * err "body rejected"): the consumer keeps its own reason. */
typedef int (*dbk_resp_body_fn)(void *ctx, const char *p, size_t n);

struct dbk_resp {
	enum dbk_resp_state state;
	int status;
	int minor;
	bool chunked, has_length, keep_alive;
	uint64_t content_length;
	uint64_t remaining;      /* of the body or of the current chunk */
	size_t head_bytes;       /* of the current head, for the bound */
	bool line_dropped;       /* current line overflowed: skipped */
	bool status_seen;        /* the status line of this head is read */
	size_t line_len;
	const char *err;         /* static text when state == ERROR */
	char served_by[64];      /* X-Served-By, printable ASCII, "" if none */
	char line[DBK_RESP_MAX_LINE];
};

void dbk_resp_init(struct dbk_resp *r);

/* Decodes up to n bytes and returns how many were used; decoding stops
 * at DONE (bytes after the response are left) and at ERROR. */
size_t dbk_resp_feed(struct dbk_resp *r, const char *p, size_t n,
                     dbk_resp_body_fn fn, void *ctx);

/* The peer closed: completes a close-delimited body; anything else not
 * DONE becomes an ERROR. Returns the final state. */
enum dbk_resp_state dbk_resp_eof(struct dbk_resp *r);

#endif
