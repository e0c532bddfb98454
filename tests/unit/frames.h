#ifndef DBK_TEST_FRAMES_H
#define DBK_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/spop_codec.h"

/* A HAPROXY-HELLO as 2.6 sends it; hc makes it a health check. */
size_t test_haproxy_hello(uint8_t *out, size_t cap, uint32_t max_frame, bool hc);

/* A NOTIFY carrying one dbucket-route message shaped like HAProxy's:
 * id (string), blen (int64) and a small JSON body (binary). */
size_t test_notify(uint8_t *out, size_t cap, uint64_t sid, uint64_t fid, uint32_t flags,
                   const char *id, int64_t blen);
/* The same, with details=true when details is set (the agent then
 * answers with bucket, group, redirected and score too). */
size_t test_notify_details(uint8_t *out, size_t cap, uint64_t sid, uint64_t fid, uint32_t flags,
                           const char *id, int64_t blen, bool details);

/* A NOTIFY (stream 3, frame 4) with one message msg and n arguments
 * (argn[i], argv[i]). */
size_t test_notify_args(uint8_t *out, size_t cap, const char *msg, unsigned n,
                        const char *const *argn, const struct dbk_spop_data *argv);

/* Finds the set-var (or unset-var, value NULL-typed) action `name` in an
 * ACK frame. */
bool test_ack_var(const struct dbk_spop_frame *f, const char *name, struct dbk_spop_data *out);
bool test_var_is(const struct dbk_spop_frame *f, const char *name, const char *want);

/* The status-code of an AGENT-DISCONNECT frame, 12345 if it is not one. */
uint32_t test_disconnect_status(const struct dbk_spop_frame *f);

#endif
