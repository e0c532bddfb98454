/* Where a session's last request went, as HAProxy's session table tells
 * it (issue 31; no protocol of ours). Several HAProxy nodes each route a
 * share of a conversation's turns; each node's agent knows only the
 * prefixes it sent itself. HAProxy records, per session key, the server
 * that served the session's last request and that request's prompt
 * length, in a stick table its `peers` replicate; on the session's next
 * request, on any node, it passes them to the agent as two SPOE args,
 * and the policy records the request's prefix up to that length on that
 * server (policy_ops.h's hint) before it chooses. haproxy.cfg
 * (DBK_SESSION_TABLE):
 *   stick-table type string len 64 size 100k expire 30m peers P store gpt(2)
 *   gpt(0)  CRC-32 of the server's name (srv_name,crc32: a name, not its
 *           id, which a reload renumbers)
 *   gpt(1)  the prompt's tokens (req.body_size / 4, the agent's estimate)
 * A key not in the table reads 0: nothing is hinted. */
#ifndef DBK_SESSION_HINT_H
#define DBK_SESSION_HINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy_ops.h"
#include "lib/spop_codec.h"

/* The route message's args (haproxy/dbucket.spoe.conf); both optional. */
#define DBK_ARG_SESSION_SERVER "ssrv"
#define DBK_ARG_SESSION_TOKENS "stok"

/* HAProxy's crc32 converter: zlib's crc32 (IEEE 802.3, reflected). */
uint32_t dbk_shint_crc32(const void *p, size_t n);

/* The index among names[0..n) whose name's CRC-32 is crc; -1: none (or
 * crc 0, a key the table does not hold). NULL or "" names are skipped. */
int dbk_shint_server(const char *const *names, unsigned n, uint32_t crc);

/* Tells p's policy where r's session last went, when srv and tok name a
 * known server and a length and r has a session; whether it was told. */
bool dbk_shint_apply(const struct dbk_policy *p, const char *const *names, unsigned n,
                     const struct dbk_spop_data *srv, const struct dbk_spop_data *tok,
                     const struct dbk_policy_request *r);

#endif
