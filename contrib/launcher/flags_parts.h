/* What flags*.c share and nobody else needs. */
#ifndef DBK_LAUNCH_FLAGS_PARTS_H
#define DBK_LAUNCH_FLAGS_PARTS_H

#include "flags.h"

/* --policy's value (flags_choice.c): 0, or -1 with argparse's "invalid
 * choice" message. */
int dbk_flags_take_policy(struct dbk_launch_flags *f, const char *v, char *err, size_t errlen);
int dbk_flags_take_layout(struct dbk_launch_flags *f, const char *v, char *err, size_t errlen);

/* What the reference checks after argparse, then what the agent and
 * HAProxy would refuse (flags_check.c): 0, or -1 with the message. */
int dbk_flags_check(const struct dbk_launch_flags *f, char *err, size_t errlen);

/* --layout per-model's checks (flags_models.c): --server-models one per
 * server, each a model name an HAProxy map and backend can carry, no two
 * models on one backend name, at most the agent's pools. */
int dbk_flags_check_models(const struct dbk_launch_flags *f, char *err, size_t errlen);

#endif
