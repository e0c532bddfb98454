/* The completion link: with --release, every decided id's completion line
 * goes to the agent's completion listener as HAProxy's ring would send
 * it, so leases are given back and the agent runs in steady state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "load.h"

/* Completion lines waiting to be written: above HIGH no new NOTIFY is
 * sent until they fall below LOW, so the client never outruns the
 * agent's completion reader with unbounded memory. */
#define REL_HIGH (1u << 20)
#define REL_LOW (256u << 10)
/* One completion line is under 100 bytes. */
#define REL_LINE_MAX 512

bool dbk_load_rel_blocked(const struct dbk_load *L)
{
	return L->o.release && !L->o.defer && L->rel.open &&
	       dbk_conn_pending(&L->rel.conn) > REL_HIGH;
}

size_t dbk_load_rel_pending(const struct dbk_load *L)
{
	return L->rel.open ? L->rel.held.len + dbk_conn_pending(&L->rel.conn) : 0;
}

/* Deferred lines are held until the release, all kept (bounded by
 * --total); immediate ones are bounded by REL_HIGH plus one window of
 * ACKs, since sending stops above REL_HIGH. */
void dbk_load_rel_queue(struct dbk_load *L, const struct dbk_load_slot *s, const uint8_t *srv,
                        size_t srv_len)
{
	struct dbk_load_rlink *r = &L->rel;
	struct dbk_buf *b = L->o.defer && L->phase != PH_RELEASE ? &r->held : &r->conn.out;

	if (!L->o.release || !r->open)
		return;
	if (!dbk_buf_reserve(b, REL_LINE_MAX)) {
		fprintf(stderr, "dbucket-spop-load: out of memory for completion lines\n");
		exit(1);
	}
	size_t n = dbk_spb_completion_build(b->p + b->len, REL_LINE_MAX, s->id, s->id_len,
	                                    (const char *)srv, srv_len, dbk_wall_ms());
	if (n == 0) {
		L->err.no_server++; /* a server name too long for a line */
		return;
	}
	b->len += n;
	r->lines++;
}

void dbk_load_rel_settle(struct dbk_load *L)
{
	struct dbk_load_rlink *r = &L->rel;

	if (r->open && r->held.len && L->phase == PH_RELEASE) {
		dbk_buf_add(&r->conn.out, r->held.p, r->held.len);
		dbk_buf_free(&r->held);
	}
	if (r->open)
		dbk_conn_update(&r->conn); /* may lose the link: rel_closed */
	/* Enough lines left (or the link is gone and they never will):
	 * the connections that paused for them go on. */
	if (L->rel_paused && (!r->open || dbk_conn_pending(&r->conn) < REL_LOW)) {
		L->rel_paused = false;
		for (int i = 0; i < L->o.connections && L->phase == PH_RUN; i++)
			dbk_load_conn_kick(&L->conns[i]);
	}
	dbk_load_advance(L);
}

static void rel_connected(struct dbk_conn *conn)
{
	struct dbk_load *L = conn->arg;

	L->rel.connected = true;
	dbk_load_rel_settle(L);
}

/* Without its completion lines the agent would pile up leases, which is
 * not the steady state asked for: the run ends here. */
static void rel_closed(struct dbk_conn *conn, enum dbk_conn_why why)
{
	struct dbk_load *L = conn->arg;
	struct dbk_load_rlink *r = &L->rel;

	if (!r->open)
		return; /* ours, at the end */
	r->open = false;
	if (why == DBK_CONN_ERROR && strcmp(conn->err_op, "connect") == 0) {
		fprintf(stderr, "dbucket-spop-load: completion link to %s: %s\n", L->o.release,
		        strerror(conn->err_no));
		L->err.connect++;
		dbk_load_advance(L);
		return;
	}
	fprintf(stderr, "dbucket-spop-load: completion link: %s\n",
	        why == DBK_CONN_ERROR ? strerror(conn->err_no) : "closed");
	L->err.closed++;
	r->lost = r->held.len + dbk_conn_pending(conn);
	dbk_buf_free(&r->held);
	if (L->phase == PH_RUN)
		dbk_load_end_run(L);
}

/* The agent sends nothing on this link: nothing is read (in_max 0). */
static const struct dbk_conn_ops rel_ops = { .on_connect = rel_connected, .on_close = rel_closed };

int dbk_load_rel_start(struct dbk_load *L)
{
	if (dbk_conn_connect(&L->rel.conn, L->loop, &L->rel_sa, L->rel_len, &rel_ops, L, 0) < 0)
		return -1;
	L->rel.open = true;
	return 0;
}

void dbk_load_rel_close(struct dbk_load *L)
{
	if (L->rel.open) {
		L->rel.open = false;
		dbk_conn_close(&L->rel.conn, DBK_CONN_LOCAL);
	}
	dbk_buf_free(&L->rel.held);
}
