/* SPOP codec: HAProxy's Stream Processing Offload Protocol, version 2.0.
 *
 * Pure functions over byte buffers. Nothing here knows about sockets,
 * time or global state, so every function can be unit-tested and fuzzed
 * alone. Decoders never read outside [buf, buf + len): malformed input
 * yields a status code from enum dbk_spop_status, never a crash.
 *
 * Decoded strings and binaries point into the caller's buffer; they are
 * valid as long as that buffer is.
 *
 * spop_codec.c holds the wire's primitives (varints, typed data, the
 * writer, frame headers, KV lists) and the per-request frames (NOTIFY,
 * ACK); spop_control.c the control frames (HELLO, DISCONNECT).
 */
#ifndef DBK_SPOP_CODEC_H
#define DBK_SPOP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum dbk_spop_frame_type {
	DBK_SPOP_HAPROXY_HELLO = 1,
	DBK_SPOP_HAPROXY_DISCONNECT = 2,
	DBK_SPOP_NOTIFY = 3,
	DBK_SPOP_AGENT_HELLO = 101,
	DBK_SPOP_AGENT_DISCONNECT = 102,
	DBK_SPOP_ACK = 103,
};

#define DBK_SPOP_FLAG_FIN 0x00000001u
#define DBK_SPOP_FLAG_ABORT 0x00000002u

/* True for the six frame types above. dbk_spop_frame_parse accepts any
 * type byte; the connection layer uses this to reject unknown ones. */
bool dbk_spop_frame_type_known(uint8_t type);

/* DISCONNECT status codes, as doc/SPOE.txt numbers them. Also the error
 * type of every decoder: DBK_SPOP_OK (0, "normal") means success. */
enum dbk_spop_status {
	DBK_SPOP_OK = 0,
	DBK_SPOP_ERR_IO = 1,
	DBK_SPOP_ERR_TIMEOUT = 2,
	DBK_SPOP_ERR_TOO_BIG = 3,
	DBK_SPOP_ERR_INVALID = 4,
	DBK_SPOP_ERR_NO_VSN = 5,
	DBK_SPOP_ERR_NO_FRAME_SIZE = 6,
	DBK_SPOP_ERR_NO_CAP = 7,
	DBK_SPOP_ERR_BAD_VSN = 8,
	DBK_SPOP_ERR_BAD_FRAME_SIZE = 9,
	DBK_SPOP_ERR_FRAG_NOT_SUPP = 10,
	DBK_SPOP_ERR_INTERLACED = 11,
	DBK_SPOP_ERR_FRAMEID_NOTFND = 12,
	DBK_SPOP_ERR_RES = 13,
	DBK_SPOP_ERR_UNKNOWN = 99,
};

/* A short human-readable text for a status, used as DISCONNECT message. */
const char *dbk_spop_status_str(enum dbk_spop_status st);

enum dbk_spop_type {
	DBK_SPOP_T_NULL = 0,
	DBK_SPOP_T_BOOL = 1,
	DBK_SPOP_T_INT32 = 2,
	DBK_SPOP_T_UINT32 = 3,
	DBK_SPOP_T_INT64 = 4,
	DBK_SPOP_T_UINT64 = 5,
	DBK_SPOP_T_IPV4 = 6,
	DBK_SPOP_T_IPV6 = 7,
	DBK_SPOP_T_STR = 8,
	DBK_SPOP_T_BIN = 9,
};

enum dbk_spop_scope {
	DBK_SPOP_SCOPE_PROC = 0,
	DBK_SPOP_SCOPE_SESS = 1,
	DBK_SPOP_SCOPE_TXN = 2,
	DBK_SPOP_SCOPE_REQ = 3,
	DBK_SPOP_SCOPE_RES = 4,
};

/* One typed value. STR and BIN share u.buf (not NUL-terminated).
 * Signed integers travel as their value converted to uint64_t (so a
 * negative int32 is sign-extended to 64 bits, as HAProxy does); decoding
 * an INT32 or UINT32 whose varint is out of range is DBK_SPOP_ERR_INVALID.
 * Only BOOL uses the type byte's flag nibble (0x10 = true). */
struct dbk_spop_data {
	enum dbk_spop_type type;
	union {
		bool b;
		int32_t i32;
		uint32_t u32;
		int64_t i64;
		uint64_t u64;
		uint8_t ipv4[4];
		uint8_t ipv6[16];
		struct {
			const uint8_t *ptr;
			size_t len;
		} buf;
	} u;
};

/* ---- Varint (HAProxy's encoding, not LEB128) ---- */

/* Encodes v into out; returns the bytes written (1..10), or 0 if cap is
 * too small. */
size_t dbk_spop_varint_encode(uint64_t v, uint8_t *out, size_t cap);

/* Decodes a varint at *p, never reading at or past end. On success
 * advances *p and returns DBK_SPOP_OK; on truncation or overflow of 64
 * bits returns DBK_SPOP_ERR_INVALID and leaves *p unchanged. */
enum dbk_spop_status dbk_spop_varint_decode(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* ---- Typed data ---- */

/* Decodes one typed value (type byte included). Unknown types, bad
 * varints and lengths past end give DBK_SPOP_ERR_INVALID. */
enum dbk_spop_status dbk_spop_data_decode(const uint8_t **p, const uint8_t *end,
                                          struct dbk_spop_data *d);

/* A name (varint length, then bytes) at *p, never reading at or past
 * end: the encoding of keys, message and argument names, and of a
 * string's body. Advances *p and returns DBK_SPOP_OK, or INVALID. */
enum dbk_spop_status dbk_spop_get_name(const uint8_t **p, const uint8_t *end, const uint8_t **name,
                                       size_t *len);

/* Whether name[0, len) spells s. Inline: with a constant s the length
 * is folded, so matching an argument name is a compare and a memcmp. */
static inline bool dbk_spop_name_is(const uint8_t *name, size_t len, const char *s)
{
	size_t n = strlen(s);

	return len == n && (n == 0 || memcmp(name, s, n) == 0);
}

/* Integer value of any of the four integer types, or of a bool.
 * Returns false for other types (and for a uint64 above INT64_MAX). */
bool dbk_spop_data_to_i64(const struct dbk_spop_data *d, int64_t *out);

/* ---- Frame writer ----
 * Accumulates one frame in a caller-provided buffer. Any write that would
 * overflow sets .overflow and is dropped, so callers check once at the
 * end instead of after every field. */
struct dbk_spop_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool overflow;
};

void dbk_spop_writer_init(struct dbk_spop_writer *w, uint8_t *buf, size_t cap);
void dbk_spop_put_varint(struct dbk_spop_writer *w, uint64_t v);
/* One raw byte: a message's argument count, an action's header. */
void dbk_spop_put_u8(struct dbk_spop_writer *w, uint8_t b);
/* A string without type byte: varint length then bytes (names, keys). */
void dbk_spop_put_name(struct dbk_spop_writer *w, const char *s, size_t len);
/* A typed value, type byte included. An unknown type marks the writer
 * as overflowed, so the frame is refused at frame_end. */
void dbk_spop_put_data(struct dbk_spop_writer *w, const struct dbk_spop_data *d);
/* A pair of a KV list, or a message's argument: name, then typed value. */
void dbk_spop_put_kv(struct dbk_spop_writer *w, const char *key, const struct dbk_spop_data *v);

/* Starts a frame at buf[0] (resetting len and overflow, so a writer can
 * be reused frame after frame): reserves the 4-byte length, writes type,
 * flags, stream-id and frame-id. */
void dbk_spop_frame_begin(struct dbk_spop_writer *w, enum dbk_spop_frame_type type, uint32_t flags,
                          uint64_t stream_id, uint64_t frame_id);
/* Patches the length. Returns the whole frame's size (4-byte prefix
 * included), or 0 if anything overflowed. Keeping the frame within the
 * peer's max-frame-size is the caller's job: size cap accordingly. */
size_t dbk_spop_frame_end(struct dbk_spop_writer *w);

/* ---- Frame reader ---- */

struct dbk_spop_frame {
	uint8_t type;
	uint32_t flags;
	uint64_t stream_id;
	uint64_t frame_id;
	const uint8_t *payload;
	size_t payload_len;
};

/* Looks at the start of a receive buffer. If a whole frame is there,
 * returns DBK_SPOP_OK with *complete = true and *frame_len = the bytes
 * after the 4-byte length prefix. If not, DBK_SPOP_OK with *complete =
 * false (and *frame_len already set once the prefix is in, else 0). A
 * declared length above max_frame_size gives DBK_SPOP_ERR_TOO_BIG (and a
 * zero length DBK_SPOP_ERR_INVALID) as soon as the prefix is in. */
enum dbk_spop_status dbk_spop_frame_split(const uint8_t *buf, size_t avail, uint32_t max_frame_size,
                                          size_t *frame_len, bool *complete);

/* Parses the frame body (the bytes after the 4-byte length prefix).
 * Fewer than 7 bytes or a bad id varint is DBK_SPOP_ERR_INVALID; type
 * and flags are not judged here. */
enum dbk_spop_status dbk_spop_frame_parse(const uint8_t *buf, size_t len, struct dbk_spop_frame *f);

/* The end of a frame's payload (a hand-built frame may have a NULL one). */
const uint8_t *dbk_spop_payload_end(const struct dbk_spop_frame *f);

/* ---- KV lists (the payload of HELLO and DISCONNECT frames) ---- */

typedef enum dbk_spop_status (*dbk_spop_kv_fn)(void *ctx, const uint8_t *key, size_t key_len,
                                               const struct dbk_spop_data *v);

/* Calls fn on each key and value of f's payload, in order. Returns
 * DBK_SPOP_OK, INVALID for a malformed list, or the first status fn
 * returns other than OK (the walk stops there). */
enum dbk_spop_status dbk_spop_kv_walk(const struct dbk_spop_frame *f, dbk_spop_kv_fn fn, void *ctx);

/* ---- HELLO ---- */

struct dbk_spop_hello {
	uint32_t max_frame_size; /* HAProxy's */
	bool healthcheck;
	bool pipelining;          /* HAProxy offered "pipelining" */
	const uint8_t *engine_id; /* may be NULL */
	size_t engine_id_len;
};

/* Parses a HAPROXY-HELLO frame. Checks: FIN set, stream-id and frame-id 0,
 * "supported-versions" present (else NO_VSN) and listing a 2.x version
 * (else BAD_VSN), "max-frame-size" present (else NO_FRAME_SIZE) and not
 * below 256 (else BAD_FRAME_SIZE), "capabilities" present (else NO_CAP,
 * except that a health-check HELLO may omit it or leave it empty).
 * Unknown keys are ignored. INVALID for: another frame type, no FIN,
 * non-zero ids, a malformed KV list, or a known key with a value of the
 * wrong type (max-frame-size must be one of the four integer types, and
 * one outside [256, UINT32_MAX] is BAD_FRAME_SIZE; healthcheck a bool;
 * the others strings). Checks run in the order listed above. */
enum dbk_spop_status dbk_spop_hello_parse(const struct dbk_spop_frame *f, struct dbk_spop_hello *h);

/* Writes a whole AGENT-HELLO frame: version "2.0", max-frame-size, and
 * capabilities "pipelining" (or "" when pipelining is false). Returns the
 * frame size or 0 if cap is too small. */
size_t dbk_spop_agent_hello_build(uint8_t *out, size_t cap, uint32_t max_frame_size,
                                  bool pipelining);

/* Writes a whole HAPROXY-HELLO, HAProxy's side (for the benchmark tools
 * and the tests that play HAProxy): supported-versions "2.0",
 * max-frame-size, capabilities, then healthcheck true when healthcheck
 * is set and engine-id when not NULL. Returns the frame size or 0 if cap
 * is too small. */
size_t dbk_spop_haproxy_hello_build(uint8_t *out, size_t cap, uint32_t max_frame_size,
                                    const char *capabilities, bool healthcheck,
                                    const char *engine_id);

/* ---- DISCONNECT ---- */

/* Writes a whole AGENT-DISCONNECT frame with "status-code" and "message"
 * (message NULL means dbk_spop_status_str(status)). */
size_t dbk_spop_disconnect_build(uint8_t *out, size_t cap, enum dbk_spop_status status,
                                 const char *message);

/* Parses a HAPROXY-DISCONNECT (or AGENT-DISCONNECT) frame's status-code
 * and optional message (*msg NULL when absent). Flags and ids are not
 * checked: the peer is leaving anyway, and its reason is what matters.
 * INVALID for another frame type, a malformed KV list, a missing or
 * non-integer or out-of-range status-code, or a non-string message. */
enum dbk_spop_status dbk_spop_disconnect_parse(const struct dbk_spop_frame *f,
                                               uint32_t *status_code, const uint8_t **msg,
                                               size_t *msg_len);

/* ---- NOTIFY ---- */

#define DBK_SPOP_MAX_ARGS 32

struct dbk_spop_arg {
	const uint8_t *name;
	size_t name_len;
	struct dbk_spop_data value;
};

struct dbk_spop_message {
	const uint8_t *name;
	size_t name_len;
	unsigned nargs; /* arguments stored in args[] */
	struct dbk_spop_arg args[DBK_SPOP_MAX_ARGS];
};

/* Iterates over the messages of a NOTIFY frame's payload. */
struct dbk_spop_msg_iter {
	const uint8_t *p;
	const uint8_t *end;
};

void dbk_spop_msg_iter_init(struct dbk_spop_msg_iter *it, const struct dbk_spop_frame *f);

/* Decodes the next message into *m. Returns DBK_SPOP_OK and sets *done =
 * false when a message was produced; DBK_SPOP_OK with *done = true at the
 * end of the payload; an error status (DBK_SPOP_ERR_INVALID) on malformed
 * input, and then the iterator stays put, so it keeps failing. Messages
 * with more than DBK_SPOP_MAX_ARGS arguments are fully parsed; the extra
 * arguments are skipped. */
enum dbk_spop_status dbk_spop_msg_next(struct dbk_spop_msg_iter *it, struct dbk_spop_message *m,
                                       bool *done);

/* Finds an argument by name, or NULL. */
const struct dbk_spop_data *dbk_spop_msg_arg(const struct dbk_spop_message *m, const char *name);

/* ---- ACK ---- */

/* Starts an ACK frame echoing the NOTIFY's stream-id and frame-id. */
void dbk_spop_ack_begin(struct dbk_spop_writer *w, uint64_t stream_id, uint64_t frame_id);
/* set-var: 01 03 <scope> <name> <typed value> */
void dbk_spop_ack_set_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope, const char *name,
                          const struct dbk_spop_data *v);
/* unset-var: 02 02 <scope> <name> */
void dbk_spop_ack_unset_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope, const char *name);
/* Convenience constructors for values. dbk_spop_str(NULL) is "";
 * dbk_spop_int always yields an INT64. */
struct dbk_spop_data dbk_spop_str(const char *s);
struct dbk_spop_data dbk_spop_int(int64_t v);
struct dbk_spop_data dbk_spop_bool(bool v);

#endif
