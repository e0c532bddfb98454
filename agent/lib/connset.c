#include "lib/connset.h"

/* The connection whose closing makes room for peer: the one idle
 * longest of those that did no useful work, or none for stale_s; one
 * that is doing its job is never closed for a newcomer (that one is
 * refused). Closed, and the new one admitted. */
static int make_room(void *arg, const void *peer)
{
	struct dbk_connset *s = arg;
	struct dbk_conn *c = NULL;
	struct dbk_list *it, *nx;
	ev_tstamp now = ev_now(s->ls.loop);
	uint64_t suppressed;

	dbk_list_for_each_safe(it, nx, &s->conns)
	{
		struct dbk_conn *x = dbk_list_elem(it, struct dbk_conn, set_link);

		if (!x->dead && dbk_listener_may_evict(&s->ls, x->fd, peer) &&
		    (!x->useful || (s->stale_s > 0 && now - x->useful_at >= s->stale_s))) {
			c = x;
			break;
		}
	}
	if (!c)
		return 0;
	if (s->evicted)
		(*s->evicted)++;
	if (dbk_log_limit_allow(&s->evict_log, now, &suppressed))
		dbk_log(DBK_LOG_WARN, "conn-evicted",
		        "for=%s reason=\"%s, made way\" idle_s=%.1f suppressed=%llu", s->ls.what,
		        c->useful ? "nothing useful lately" : "never useful", now - c->useful_at,
		        (unsigned long long)suppressed);
	/* Never inside its own callback (accepting is not one), so it ends
	 * now and its slot is free: c is gone after this. */
	dbk_conn_close(c, DBK_CONN_LOCAL);
	return 1;
}

int dbk_connset_open(struct dbk_connset *s, struct ev_loop *loop, const char *what,
                     dbk_accept_cb cb, void *arg, const struct dbk_connset_limits *lim)
{
	dbk_list_init(&s->conns);
	s->evicted = lim->evicted;
	s->stale_s = lim->stale_s;
	s->evict_log = (struct dbk_log_limit){ 0 };
	if (dbk_listener_open(&s->ls, loop, what, cb, arg, lim->max_conns, lim->max_per_peer,
	                      lim->refused) < 0)
		return -1;
	s->ls.make_room = make_room;
	s->ls.room_arg = s;
	s->ls.allow = lim->allow;
	s->ls.nallow = lim->nallow;
	return 0;
}

int dbk_connset_add_listener(struct dbk_connset *s, int fd) { return dbk_listener_add(&s->ls, fd); }

void dbk_connset_useful(struct dbk_conn *c)
{
	if (!c->set)
		return;
	c->useful_at = ev_now(c->loop);
	c->useful = true;
	dbk_list_del(&c->set_link);
	dbk_list_append(&c->set->conns, &c->set_link);
}

void dbk_connset_forget(struct dbk_conn *c)
{
	if (!c->set)
		return;
	dbk_listener_release(&c->set->ls, c->fd);
	dbk_list_del(&c->set_link);
	c->set = NULL;
}

void dbk_connset_close(struct dbk_connset *s, void (*bye)(struct dbk_conn *c))
{
	/* The connections first, so that each gives its place back. */
	while (!dbk_list_empty(&s->conns)) {
		struct dbk_conn *c = dbk_list_first(&s->conns, struct dbk_conn, set_link);

		if (bye)
			bye(c);
		else
			dbk_conn_close(c, DBK_CONN_LOCAL);
	}
	dbk_listener_close(&s->ls);
}
