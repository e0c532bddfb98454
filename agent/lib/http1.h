/* Bounded HTTP/1.1 message parser, for the requests a server reads
 * (the stub, the agent's admin endpoint) and the responses a client
 * reads (the bench): one grammar for start lines, fields and framing.
 * Pure (no I/O, no allocation), so it can be fuzzed and tested byte by
 * byte.
 *
 * Requests:
 * Stateless: each call parses from the start of the buffer, which holds
 * the bytes received so far for the next request (pipelined requests
 * follow it; `total_len` says where this one ends). The head is bounded by
 * max_head_bytes, so re-parsing costs at most that much per read; once the
 * head is complete `total_len` is known and a caller may wait for that
 * many bytes before calling again.
 *
 * Accepted: request line "METHOD SP target SP HTTP/1.x", header fields,
 * a body given by Content-Length, and when the limits allow it a chunked
 * body ("Transfer-Encoding: chunked", that coding alone): then the parser
 * says INCOMPLETE with the head done and `chunked` set, and the caller
 * decodes the body after head_len with dbk_http_body_dechunk, keeping
 * that state across reads (total_len is not known before the end). Line ends may be CRLF or bare LF (RFC
 * 9112 section 2.2 allows a recipient to accept LF); empty lines before
 * the request line are skipped (same section).
 *
 * Refused, with the status to answer and then close the connection:
 *   400 malformed request line or header, obs-fold, a bare CR, conflicting
 *       or non-numeric Content-Length, Content-Length with
 *       Transfer-Encoding (a request-smuggling shape);
 *   411 Transfer-Encoding: chunked where the limits do not allow it (the
 *       agent's admin endpoint: its clients send a Content-Length);
 *   501 any other Transfer-Encoding, or another coding besides chunked;
 *   413 Content-Length above max_body_bytes;
 *   414 request line alone above max_head_bytes;
 *   431 head above max_head_bytes or more than DBK_HTTP_MAX_HEADERS fields;
 *   505 a version other than HTTP/1.0 and HTTP/1.1. */
#ifndef DBK_HTTP1_H
#define DBK_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBK_HTTP_MAX_HEADERS 64

struct dbk_http_slice {
	const char *p;
	size_t n;
};

struct dbk_http_header {
	struct dbk_http_slice name, value;
};

struct dbk_http_limits {
	size_t max_head_bytes; /* request line + fields + blank line */
	size_t max_body_bytes;
	bool chunked; /* accept chunked bodies (else 411) */
};

enum dbk_http_result {
	DBK_HTTP_ERROR = -1,
	DBK_HTTP_INCOMPLETE = 0,
	DBK_HTTP_COMPLETE = 1,
};

struct dbk_http_request {
	struct dbk_http_slice method, target;
	int minor_version; /* 0 or 1 */
	size_t n_headers;
	struct dbk_http_header headers[DBK_HTTP_MAX_HEADERS];
	/* Set once the head is complete (head_len > 0), even while the body
	 * is still incomplete. */
	size_t head_len;
	size_t content_length;
	size_t total_len; /* head_len + content_length; 0 when chunked */
	bool chunked;     /* the body is chunked: see above */
	bool keep_alive;
	bool expect_continue;       /* "Expect: 100-continue" on HTTP/1.1 */
	struct dbk_http_slice body; /* when complete */
	/* On DBK_HTTP_ERROR: the status to answer with and why. */
	int status;
	const char *error;
};

/* Parses buf[0..len). Slices point into buf. */
enum dbk_http_result dbk_http_parse(const char *buf, size_t len, const struct dbk_http_limits *lim,
                                    struct dbk_http_request *req);

/* First field with this name (case-insensitive), or NULL. */
const struct dbk_http_slice *dbk_http_header(const struct dbk_http_request *req, const char *name);

bool dbk_http_slice_eq(struct dbk_http_slice s, const char *lit);
bool dbk_http_slice_ieq(struct dbk_http_slice s, const char *lit);

/* Reason phrase for a status code ("Unknown" for unlisted ones). */
const char *dbk_http_reason(int status);

/* ---- Responses (the client side) ----
 *
 * Stateless like requests: dbk_http_parse_response parses the head at the
 * start of buf (the bytes read so far); the body follows head_len bytes
 * in, framed as `framing` says. Accepted: "HTTP/1.0" or "HTTP/1.1", a
 * three-digit status, an optional reason, the same field grammar as
 * requests. Refused (DBK_HTTP_ERROR, `error` says why): another version
 * or a malformed status line or field, conflicting or non-numeric
 * Content-Length, a transfer coding other than chunked (or "identity"),
 * a head above max_head_bytes. A 1xx is an interim response (framing
 * NONE): the real one follows it, and the caller parses again after
 * head_len bytes. A response to HEAD has no body whatever it says: the
 * caller, who knows the method, handles that. */
enum dbk_http_framing {
	DBK_HTTP_BODY_NONE = 0, /* 1xx, 204, 304 */
	DBK_HTTP_BODY_LENGTH,   /* content_length bytes */
	DBK_HTTP_BODY_CHUNKED,  /* see dbk_http_chunked_feed */
	DBK_HTTP_BODY_CLOSE,    /* until the server closes */
};

struct dbk_http_response {
	int minor_version; /* 0 or 1 */
	int status;        /* 100..999 */
	struct dbk_http_slice reason;
	size_t n_headers;
	struct dbk_http_header headers[DBK_HTTP_MAX_HEADERS];
	size_t head_len; /* when complete */
	enum dbk_http_framing framing;
	size_t content_length; /* DBK_HTTP_BODY_LENGTH */
	bool keep_alive;       /* the connection may carry another request */
	const char *error;     /* on DBK_HTTP_ERROR, static text */
};

/* Parses the head at buf[0..len). Slices point into buf. */
enum dbk_http_result dbk_http_parse_response(const char *buf, size_t len, size_t max_head_bytes,
                                             struct dbk_http_response *rsp);

/* First field with this name (case-insensitive), or NULL. */
const struct dbk_http_slice *dbk_http_response_header(const struct dbk_http_response *rsp,
                                                      const char *name);

/* ---- Chunked bodies (RFC 9112 section 7.1) ----
 *
 * Incremental, since a streamed body arrives over seconds in pieces that
 * split anywhere: fixed state, no buffering. Chunk extensions and trailer
 * fields are read past (bounded), not kept. */
#define DBK_HTTP_MAX_CHUNK_EXT 4096
#define DBK_HTTP_MAX_TRAILER (64 * 1024)

struct dbk_http_chunked {
	int state;
	unsigned digits;    /* of the chunk size so far */
	uint64_t remaining; /* of the current chunk */
	size_t line_len, trailer_bytes;
	/* INCOMPLETE until the last chunk and trailer are read; ERROR with
	 * `error` (static text) on a framing error. */
	enum dbk_http_result result;
	const char *error;
};

void dbk_http_chunked_init(struct dbk_http_chunked *c);

/* Decodes from p[0..n) and returns how many bytes it used: it stops
 * after the first span of chunk data (in *data, pointing into p; n == 0
 * when none), at the end of the message and on an error. Call again with
 * the rest. */
size_t dbk_http_chunked_feed(struct dbk_http_chunked *c, const char *p, size_t n,
                             struct dbk_http_slice *data);

/* A chunked body decoded in place in the buffer its bytes are read into
 * (a server's request, a client's response): the data goes right after
 * the head, the bytes not decoded yet right after the data, so the
 * buffer never holds more than the head, the body so far and one read,
 * and a message that follows (pipelined) is left where it starts. */
struct dbk_http_body {
	struct dbk_http_chunked chunked;
	size_t start;   /* where the body goes: the head's length */
	size_t len;     /* decoded so far */
	size_t raw_off; /* the first byte not decoded yet; the message's end once complete */
	size_t max;     /* a body above it is an error with too_large */
	bool too_large;
};

void dbk_http_body_init(struct dbk_http_body *b, size_t head_len, size_t max_body);

/* Decodes what buf[raw_off..*len) holds, rewriting buf and *len (buf
 * has room for a NUL at buf[*len], which it keeps). COMPLETE: the body is
 * buf[start..start+len) and the message ends at raw_off; INCOMPLETE;
 * ERROR: chunked.error says why, too_large when the body passed max. */
enum dbk_http_result dbk_http_body_dechunk(struct dbk_http_body *b, char *buf, size_t *len);

#endif
