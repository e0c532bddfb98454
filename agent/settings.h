/* Live tuning: the balancer settings an operator may change while the
 * agent runs, as "key = value" text. The same keys serve the --config
 * file (reread on SIGHUP) and the admin endpoint (GET/POST /config).
 * Pure: text in, configuration out.
 *
 *   server-group-threshold = 32768   # tokens where the long bucket starts
 *   max-request-tokens     = 131072  # upper bound of the last bucket
 *   sensitivity            = 1.0     # exponent on the load ratio
 *   affinity-strength      = 0.1     # how fast affinity decays with distance
 *   redirect-threshold     = 0.12    # p above which a request moves
 *   group-sizes            = 2,2     # servers per group, in list order
 *   max-leases             = 1000000 # requests in flight at most
 */
#ifndef DBK_SETTINGS_H
#define DBK_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "balancer.h"
#include "lib/buf.h"

/* Sets one key (see numparse.h for the grammar). Returns 0, or -1 with a reason naming the key. */
int dbk_settings_set(struct dbk_bal_config *c, const char *key, const char *value, char *err,
                     size_t errlen);

/* Applies every "key = value" line of text ('#' starts a comment).
 * Returns 0, or -1 with "line N: reason"; c may be partly changed then,
 * so callers work on a copy. */
int dbk_settings_parse(struct dbk_bal_config *c, const char *text, size_t len, char *err,
                       size_t errlen);

/* Applies a URL query string "key=value&key=value" (percent-encoding
 * and '+' decoded). Same error contract as dbk_settings_parse. */
int dbk_settings_query(struct dbk_bal_config *c, const char *query, char *err, size_t errlen);

/* Writes c in the same format, or as one line of logfmt pairs. */
void dbk_settings_describe(const struct dbk_bal_config *c, bool one_line, struct dbk_buf *out);

#endif
