/* Which pool an SPOP message is for, when the agent runs several
 * (--pool): pure, the pools' books read, nothing written but the
 * scratch set models fill. */
#ifndef DBK_POOL_PICK_H
#define DBK_POOL_PICK_H

#include "pool.h"
#include "lib/spop_codec.h"

/* Optional on both messages: the HAProxy backend the request is for
 * (haproxy/models-per-backend.cfg sets it from a model-to-backend map;
 * dbucket-moved sends be_name). */
#define DBK_ARG_BACKEND "backend"

/* The index of m's pool among pools[0..n), or -1 when its backend
 * argument names none of them. Without that argument: for a route
 * message, the first pool some of whose servers list the request's
 * model, else the first that filters nothing for it yet (its servers'
 * lists unread), else pools[0] (which answers unknown_model); for a
 * moved message, the pool holding its lease (pools[0] when none does). */
int dbk_pool_pick(struct dbk_pool *pools, unsigned n, const struct dbk_spop_message *m);

#endif
