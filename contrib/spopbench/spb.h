/* Pure helpers of the SPOP benchmark tools (dbucket-null-agent and
 * dbucket-spop-load): the frames HAProxy 2.6 sends, the checks HAProxy
 * makes on the agent's answers, completion lines, and a latency
 * histogram. No sockets, no clock, no globals, so that the unit test can
 * check that the load client speaks exactly what HAProxy speaks. Frames
 * are written with lib/spop_codec.h's writer and read with its reader. */
#ifndef DBK_SPB_H
#define DBK_SPB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/spop_codec.h"

/* What HAProxy 2.6 announces with the default tune.bufsize (16384 - 4). */
#define DBK_SPB_HAPROXY_FRAME 16380
/* haproxy/dbucket.spoe.conf sends req.body,bytes(0,15000). */
#define DBK_SPB_SAMPLE_MAX 15000
/* The smallest body dbk_spb_body_fill can write (its JSON skeleton). */
#define DBK_SPB_BODY_MIN 48

/* ---- HAProxy's side ---- */

/* A HAPROXY-HELLO as HAProxy 2.6 writes it: supported-versions "2.0",
 * max-frame-size (uint32), capabilities ("pipelining", or "" for a
 * health check), healthcheck true for a health check, and engine-id when
 * not NULL. Returns the frame size, 0 if cap is too small. */
size_t dbk_spb_hello_build(uint8_t *out, size_t cap, uint32_t max_frame, bool healthcheck,
                           const char *engine_id);

/* A NOTIFY carrying one spoe-message dbucket-route, as HAProxy 2.6
 * encodes `args id=unique-id blen=req.body_size body=req.body,...`:
 * id a string, blen an int64, body a binary; flags FIN. Returns the
 * frame size, 0 if cap is too small. */
size_t dbk_spb_notify_build(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
                            const char *id, size_t id_len, int64_t blen, const uint8_t *body,
                            size_t body_len);

/* A HAPROXY-DISCONNECT with status-code and message, as HAProxy sends
 * when it closes an idle connection (status 0, "normal"). Returns the
 * frame size, 0 if cap is too small. */
size_t dbk_spb_haproxy_disconnect_build(uint8_t *out, size_t cap, uint32_t status,
                                        const char *message);

/* Writes an OpenAI-style completion request of exactly len bytes
 * (len >= DBK_SPB_BODY_MIN), with "max_tokens": max_tokens (0..99999)
 * and a prompt of 'a's padding it. Returns len, or 0 if len is too small
 * or too large for cap. */
size_t dbk_spb_body_fill(char *out, size_t cap, size_t len, unsigned max_tokens);

/* HAProxy's unique-id-format %{+X}o%pid-%Ts%ms-%rt, e.g.
 * "1C2B-6B0D0AA6124-0007": pid, wall-clock seconds and milliseconds
 * (as HAProxy prints them, in hex) and a request counter. Returns the
 * length, 0 if cap is too small. */
size_t dbk_spb_unique_id(char *out, size_t cap, unsigned pid, uint64_t wall_ms, uint64_t counter);

/* ---- The agent's answers, checked as HAProxy checks them ---- */

struct dbk_spb_agent_hello {
	uint32_t max_frame_size;
	bool pipelining;
};

/* Parses an AGENT-HELLO: FIN set, ids 0, a "version" 2.x, a
 * "max-frame-size" integer in [256, UINT32_MAX], "capabilities" a
 * string. Unknown keys are skipped. Returns DBK_SPOP_OK, or the status
 * HAProxy would disconnect with (NO_VSN, BAD_VSN, NO_FRAME_SIZE,
 * BAD_FRAME_SIZE, NO_CAP, INVALID). */
enum dbk_spop_status dbk_spb_agent_hello_parse(const struct dbk_spop_frame *f,
                                               struct dbk_spb_agent_hello *h);

/* Walks the actions of an ACK (set-var and unset-var, as HAProxy 2.6
 * knows them) and finds the set-var of `name` in `scope` whose value is a
 * string. *found tells whether it was there; *val and *val_len point into
 * the frame. Returns DBK_SPOP_OK, or DBK_SPOP_ERR_INVALID for a malformed
 * action list (an unknown action type, a short or bad argument). */
enum dbk_spop_status dbk_spb_ack_find_str(const struct dbk_spop_frame *f, enum dbk_spop_scope scope,
                                          const char *name, const uint8_t **val, size_t *val_len,
                                          bool *found);

/* ---- Completion lines (agent/completion.h) ---- */

/* Writes one octet-counted completion event as HAProxy's ring sends it:
 * "<len> dbk1 <id> <server> <server> 200 ---- 10 100 0 <wall_ms>", no
 * trailing newline. Returns the bytes written, 0 if cap is too small. */
size_t dbk_spb_completion_build(char *out, size_t cap, const char *id, size_t id_len,
                                const char *server, size_t server_len, uint64_t wall_ms);

/* ---- Latency histogram ----
 * Log-linear buckets over nanoseconds: exact below 64 ns, then 64 buckets
 * per power of two (under 1.6 % relative error), up to 2^41 ns (36 min);
 * larger values land in the last bucket. Fixed size, no allocation. */
#define DBK_SPB_LAT_SUB_BITS 6
#define DBK_SPB_LAT_SUB (1u << DBK_SPB_LAT_SUB_BITS)
#define DBK_SPB_LAT_MAX_EXP 40
/* Below 64 ns: 64 exact buckets; then octaves 2^6 .. 2^40. */
#define DBK_SPB_LAT_BUCKETS ((DBK_SPB_LAT_MAX_EXP - DBK_SPB_LAT_SUB_BITS + 2) * DBK_SPB_LAT_SUB)

struct dbk_spb_lat {
	uint64_t count;
	uint64_t max_ns;
	double sum_ns;
	uint64_t buckets[DBK_SPB_LAT_BUCKETS];
};

void dbk_spb_lat_init(struct dbk_spb_lat *l);
void dbk_spb_lat_add(struct dbk_spb_lat *l, uint64_t ns);
/* The q-quantile (q in [0,1]) in ns: the middle of the bucket that holds
 * it (the value itself below 64 ns, the maximum in the overflow bucket),
 * never above the maximum; 0 when empty. */
double dbk_spb_lat_quantile(const struct dbk_spb_lat *l, double q);

#endif
