/* The benchmark client's HTTP/1.1 response reader: feeds the bytes of one
 * response, as they arrive split anywhere, through lib/http1 (the head,
 * then the chunked framing) and hands out the decoded body bytes. Memory
 * per response is bounded: the head is buffered up to DBK_RESP_MAX_HEAD,
 * the body never. */
#ifndef DBK_BENCH_RESP_H
#define DBK_BENCH_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/http1.h"

/* Above this the head is refused; vLLM's and HAProxy's are < 1 KiB. */
#define DBK_RESP_MAX_HEAD (64 * 1024)

enum dbk_resp_state {
	DBK_RESP_HEAD = 0,
	DBK_RESP_BODY_LENGTH, /* Content-Length bytes */
	DBK_RESP_BODY_CLOSE,  /* until the connection closes */
	DBK_RESP_BODY_CHUNKED,
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
	bool chunked, keep_alive;
	uint64_t remaining;  /* of a Content-Length body */
	struct dbk_buf head; /* the head's bytes read so far */
	struct dbk_http_chunked ch;
	const char *err;    /* static text when state == ERROR */
	char served_by[64]; /* X-Served-By, printable ASCII, "" if none */
};

/* Starts on a fresh struct; dbk_resp_free releases it. */
void dbk_resp_init(struct dbk_resp *r);
void dbk_resp_free(struct dbk_resp *r);

/* Decodes up to n bytes and returns how many were used; decoding stops
 * at DONE (bytes after the response are left) and at ERROR. */
size_t dbk_resp_feed(struct dbk_resp *r, const char *p, size_t n, dbk_resp_body_fn fn, void *ctx);

/* The peer closed: completes a close-delimited body; anything else not
 * DONE becomes an ERROR. Returns the final state. */
enum dbk_resp_state dbk_resp_eof(struct dbk_resp *r);

#endif
