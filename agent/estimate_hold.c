/* Held-back charges: see estimate_hold.h. */
#include "estimate_hold.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dbk_hold_init(struct dbk_hold *h, unsigned nservers)
{
	memset(h, 0, sizeof(*h));
	h->e = calloc(DBK_HOLD_MAX, sizeof(*h->e));
	h->watched = calloc(nservers ? nservers : 1, sizeof(*h->watched));
	if (!h->e || !h->watched) {
		dbk_hold_fini(h);
		return -1;
	}
	h->nservers = nservers;
	return 0;
}

void dbk_hold_fini(struct dbk_hold *h)
{
	free(h->e);
	free(h->watched);
	memset(h, 0, sizeof(*h));
}

bool dbk_hold_watching(const struct dbk_hold *h, unsigned server)
{
	return server < h->nservers && h->watched[server];
}

bool dbk_hold_add(struct dbk_hold *h, struct dbk_balancer *bal, const char *id, size_t id_len,
                  double full, double provisional)
{
	struct dbk_bal_lease l;

	if (id_len > DBK_BAL_MAX_ID_LEN || !dbk_bal_lease_get(bal, id, id_len, &l) ||
	    !dbk_hold_watching(h, l.server))
		return false;
	if (h->n == DBK_HOLD_MAX) {
		h->stats.no_room++;
		return false;
	}
	struct dbk_hold_entry *e = &h->e[h->n++];

	e->full = full;
	e->id_len = (uint8_t)id_len;
	memcpy(e->id, id, id_len);
	dbk_bal_recharge(bal, id, id_len, provisional, NULL);
	h->stats.held++;
	return true;
}

/* The running and waiting requests beyond the leases held whole: how
 * many held-back ones the server has (0 to held). */
static size_t arrived(const struct dbk_balancer *bal, unsigned server, size_t held, double engine)
{
	double whole = (double)dbk_bal_server_inflight(bal, server) - (double)held;
	double k = floor(engine) - whole;

	if (!(k > 0))
		return 0;
	return k < (double)held ? (size_t)k : held;
}

size_t dbk_hold_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server, bool ok,
                        double engine)
{
	struct dbk_bal_lease l;
	size_t kept = 0, held = 0, give, given = 0;

	if (server >= h->nservers)
		return 0;
	h->watched[server] = ok && isfinite(engine) && engine >= 0;
	/* Drop the entries whose lease ended; count the server's. */
	for (size_t i = 0; i < h->n; i++) {
		if (!dbk_bal_lease_get(bal, h->e[i].id, h->e[i].id_len, &l))
			continue;
		if (l.server == server)
			held++;
		if (kept != i)
			h->e[kept] = h->e[i];
		kept++;
	}
	h->n = kept;
	/* Without the counts, no evidence can come: in full, as before. */
	give = h->watched[server] ? arrived(bal, server, held, engine) : held;
	kept = 0;
	for (size_t i = 0; i < h->n; i++) {
		struct dbk_hold_entry *e = &h->e[i];

		if (given < give && dbk_bal_lease_get(bal, e->id, e->id_len, &l) &&
		    l.server == server) {
			dbk_bal_recharge(bal, e->id, e->id_len, e->full, NULL);
			if (h->whole)
				h->whole(h->whole_arg, e->id, e->id_len);
			given++;
			continue;
		}
		if (kept != i)
			h->e[kept] = *e;
		kept++;
	}
	h->n = kept;
	if (h->watched[server])
		h->stats.confirmed += given;
	else
		h->stats.unwatched += given;
	return given;
}
