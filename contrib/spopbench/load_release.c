/* The completion link: with --release, every decided id's completion line
 * goes to the agent's completion listener as HAProxy's ring would send
 * it, so leases are given back and the agent runs in steady state. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/net.h"
#include "load.h"

/* Completion lines waiting to be written: above HIGH no new NOTIFY is
 * sent until they fall below LOW, so the client never outruns the
 * agent's completion reader with unbounded memory. */
#define REL_HIGH (1u << 20)
#define REL_LOW (256u << 10)
/* One completion line is under 100 bytes; deferred lines are kept whole. */
#define REL_LINE_MAX 512

bool dbk_load_rel_blocked(const struct dbk_load *L)
{
	return L->o.release && !L->o.defer && L->rel.fd >= 0 && L->rel.len - L->rel.off > REL_HIGH;
}

/* Room for one more line: what was written is dropped first, then the
 * buffer doubles. */
static void make_room(struct dbk_load_rlink *r)
{
	if (r->cap - r->len >= REL_LINE_MAX)
		return;
	if (r->off > 0) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	if (r->cap - r->len >= REL_LINE_MAX)
		return;
	size_t ncap = r->cap ? r->cap * 2 : 1u << 20;
	char *nb = realloc(r->buf, ncap);

	if (!nb) {
		fprintf(stderr, "dbucket-spop-load: out of memory for completion lines\n");
		exit(1);
	}
	r->buf = nb;
	r->cap = ncap;
}

/* Deferred lines are all kept (bounded by --total); immediate ones are
 * bounded by REL_HIGH plus one window of ACKs, since sending stops above
 * REL_HIGH. */
void dbk_load_rel_queue(struct dbk_load *L, const struct dbk_load_slot *s, const uint8_t *srv,
                        size_t srv_len)
{
	struct dbk_load_rlink *r = &L->rel;

	if (!L->o.release || r->fd < 0)
		return;
	make_room(r);
	size_t n = dbk_spb_completion_build(r->buf + r->len, r->cap - r->len, s->id, s->id_len,
	                                    (const char *)srv, srv_len, dbk_wall_ms());
	if (n == 0) {
		L->err.no_server++; /* a server name too long for a line */
		return;
	}
	r->len += n;
	r->lines++;
}

/* Without its completion lines the agent would pile up leases, which is
 * not the steady state asked for: the run ends here. */
static void rel_lost(struct dbk_load *L)
{
	struct dbk_load_rlink *r = &L->rel;

	L->err.closed++;
	ev_io_stop(L->loop, &r->io);
	close(r->fd);
	r->fd = -1;
	r->lost = r->len - r->off;
	r->off = r->len = 0;
	if (L->phase == PH_RUN)
		dbk_load_end_run(L);
}

static void rel_flush(struct dbk_load *L)
{
	struct dbk_load_rlink *r = &L->rel;

	if (r->fd < 0 || !r->connected || (L->o.defer && L->phase != PH_RELEASE))
		return;
	if (dbk_net_send_pending(r->fd, r->buf, r->len, &r->off) < 0) {
		fprintf(stderr, "dbucket-spop-load: completion link: %s\n", strerror(errno));
		rel_lost(L);
		return;
	}
	if (r->off == r->len)
		r->off = r->len = 0;
}

void dbk_load_rel_settle(struct dbk_load *L)
{
	struct dbk_load_rlink *r = &L->rel;

	rel_flush(L);
	if (r->fd >= 0) {
		bool pending = r->len > r->off && (!L->o.defer || L->phase == PH_RELEASE);

		dbk_load_set_events(L->loop, &r->io, !r->connected || pending ? EV_WRITE : 0);
	}
	/* Enough lines left (or the link is gone and they never will):
	 * the connections that paused for them go on. */
	if (L->rel_paused && (r->len - r->off < REL_LOW || r->fd < 0)) {
		L->rel_paused = false;
		for (int i = 0; i < L->o.connections && L->phase == PH_RUN; i++)
			dbk_load_conn_kick(&L->conns[i]);
	}
	dbk_load_advance(L);
}

static void on_rel_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct dbk_load *L = (struct dbk_load *)((char *)w - offsetof(struct dbk_load, rel.io));
	struct dbk_load_rlink *r = &L->rel;

	(void)loop;
	(void)revents;
	if (!r->connected) {
		int e = dbk_net_connect_error(r->fd);

		if (e != 0) {
			fprintf(stderr, "dbucket-spop-load: completion link to %s: %s\n",
			        L->o.release, strerror(e));
			L->err.connect++;
			ev_io_stop(L->loop, &r->io);
			close(r->fd);
			r->fd = -1;
			dbk_load_advance(L);
			return;
		}
		r->connected = true;
	}
	dbk_load_rel_settle(L);
}

int dbk_load_rel_start(struct dbk_load *L)
{
	L->rel.fd = dbk_net_connect(&L->rel_sa, L->rel_len);
	if (L->rel.fd < 0)
		return -1;
	ev_io_init(&L->rel.io, on_rel_io, L->rel.fd, EV_WRITE);
	ev_io_start(L->loop, &L->rel.io);
	return 0;
}

void dbk_load_rel_close(struct dbk_load *L)
{
	if (L->rel.fd >= 0) {
		ev_io_stop(L->loop, &L->rel.io);
		close(L->rel.fd);
		L->rel.fd = -1;
	}
	free(L->rel.buf);
	L->rel.buf = NULL;
}
