/* Which of the agent's server slots each of HAProxy's servers is: the
 * agent follows HAProxy's backend as it changes (servers added and
 * deleted through the runtime API, server-template slots filled and
 * emptied by DNS, a reload with another list) while every part of the
 * agent keeps indexing by slot (leases, the policy's per-server books,
 * the scraper, the reports).
 *
 * A server is its name: HAProxy's names are unique within a backend and
 * are what use-server and the completion lines carry, while its numeric
 * id (srv_id) is renumbered by a reload that inserts a server before it.
 * A server keeps its slot for as long as HAProxy lists it. A new name
 * takes the lowest slot that was free before this poll (a slot freed by
 * the same poll is not reused at once, so that no one poll both ends a
 * server's leases and starts another on the same index). A server whose
 * address or port changes (a new pod behind a server-template slot, or
 * "set server ... addr") is a new incarnation: what was learnt of the
 * old one no longer holds. An address that is not known (an unresolved
 * server-template slot, "-") changes nothing: the slot remembers the
 * last known one.
 *
 * Pure: no I/O, no allocation, no globals; bounded by its inputs. */
#ifndef DBK_RUNTIME_MEMBERS_H
#define DBK_RUNTIME_MEMBERS_H

#include "runtime.h"

/* One of the agent's slots: the server in it (name "" when free) and the
 * last address it was known at ("" and 0 when none yet). */
struct dbk_rt_slot {
	char name[DBK_RT_NAME_MAX + 1];
	char addr[DBK_RT_ADDR_MAX + 1];
	int port;
};

enum dbk_rt_change {
	DBK_RT_SLOT_FREE = 0, /* free before, free now */
	DBK_RT_SLOT_SAME,     /* the same server, at the same address */
	DBK_RT_SLOT_ADDED,    /* a server new to the agent came into it */
	DBK_RT_SLOT_MOVED,    /* the same name at a new address: a new incarnation */
	DBK_RT_SLOT_GONE,     /* its server is no longer in HAProxy's backend */
};

const char *dbk_rt_change_str(enum dbk_rt_change c);

struct dbk_rt_plan_counts {
	unsigned added, moved, gone;
	unsigned no_room; /* HAProxy's servers left without a slot (all taken) */
};

/* Maps HAProxy's servers fresh[0..n) (a parsed show servers state, names
 * unique) onto slots[0..nslots): slot_of[i] is fresh[i]'s slot, or -1
 * when no slot was free; change[k] says what happens to slot k. Changes
 * nothing; dbk_rt_plan_apply does. counts may be NULL. */
void dbk_rt_plan(const struct dbk_rt_slot *slots, unsigned nslots,
                 const struct dbk_rt_server *fresh, unsigned n, int *slot_of,
                 enum dbk_rt_change *change, struct dbk_rt_plan_counts *counts);

/* Writes the plan into slots: names of added servers, addresses that are
 * known now, "" for gone ones. */
void dbk_rt_plan_apply(struct dbk_rt_slot *slots, unsigned nslots,
                       const struct dbk_rt_server *fresh, unsigned n, const int *slot_of,
                       const enum dbk_rt_change *change);

#endif
