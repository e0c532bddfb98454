#include "books_share_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lib/clock.h"
#include "lib/log.h"

struct dbk_share_loop {
	struct ev_loop *loop;
	ev_timer tick;
	struct dbk_rt_addr addr;
	struct dbk_share *s;
	struct dbk_share_loop_config cfg;
	struct dbk_rt_query *writing, *reading;
	bool write_failing, read_failing;
	bool no_kv;     /* the table does not store bytes_in_cnt */
	unsigned nodes; /* as last logged */
	char cmd[DBK_RT_MAX_BATCH + 1];
};

/* A failure logged when it starts, its end when it ends. */
static void say(bool *failing, bool ok, const char *what, const char *why)
{
	if (!ok && !*failing)
		dbk_log(DBK_LOG_WARN, "share-books-failing", "what=%s error=\"%s\"", what, why);
	else if (ok && *failing)
		dbk_log(DBK_LOG_INFO, "share-books-recovered", "what=%s", what);
	*failing = !ok;
}

/* set table's answer to a data type the table does not store (HAProxy
 * 2.6, src/stick_table.c). */
#define NOT_STORED "Data type not stored in this table"

static bool says(const char *buf, size_t len, const char *what)
{
	size_t n = strlen(what);

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(buf + i, what, n) == 0)
			return true;
	return false;
}

/* set table answers nothing but blank lines when it did it. */
static bool blank(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != '\n' && buf[i] != '\r' && buf[i] != ' ')
			return false;
	return true;
}

static void on_written(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                       const char *err)
{
	struct dbk_share_loop *l = arg;
	char why[160];

	l->writing = NULL;
	if (st == DBK_RT_Q_OK && blank(buf, len)) {
		dbk_share_written(l->s, dbk_mono_ms());
		say(&l->write_failing, true, "write", NULL);
		return;
	}
	/* The four counters before it were written; the KV, which only
	 * makes the others' requests cheaper, is left out from now on. */
	if (st == DBK_RT_Q_OK && !l->no_kv && says(buf, len, NOT_STORED)) {
		l->no_kv = true;
		dbk_share_no_kv(l->s);
		dbk_log(DBK_LOG_WARN, "share-books-no-kv",
		        "table=%s hint=\"store bytes_in_cnt too: without it the others charge "
		        "this node's prompts whole, cached or not\"",
		        l->cfg.table);
		return;
	}
	if (st == DBK_RT_Q_OK)
		dbk_errf(why, sizeof(why), "%.*s", (int)(len > 100 ? 100 : len), buf);
	say(&l->write_failing, false, "write", st == DBK_RT_Q_OK ? why : err);
}

static void on_read(void *arg, enum dbk_rt_query_status st, const char *buf, size_t len,
                    const char *err)
{
	struct dbk_share_loop *l = arg;
	char why[200];

	l->reading = NULL;
	if (st != DBK_RT_Q_OK) {
		say(&l->read_failing, false, "read", err);
		return;
	}
	if (dbk_share_read(l->s, buf, len, l->cfg.names, l->cfg.nnames, dbk_mono_ms(), why,
	                   sizeof(why)) < 0) {
		say(&l->read_failing, false, "read", why);
		return;
	}
	say(&l->read_failing, true, "read", NULL);
	const struct dbk_share_stats *x = dbk_share_stats(l->s);
	if (x->nodes != l->nodes)
		dbk_log(DBK_LOG_INFO, "share-books-nodes", "others=%u inflight=%u", x->nodes,
		        x->others_inflight);
	l->nodes = x->nodes;
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_share_loop *l = (struct dbk_share_loop *)((char *)w -
	                                                     offsetof(struct dbk_share_loop, tick));
	char err[200], show[DBK_RT_MAX_COMMAND];

	(void)revents;
	if (!l->writing && dbk_share_write_cmd(l->s, l->cfg.table, l->cfg.names, dbk_mono_ms(),
	                                       l->cfg.refresh_ms, l->cmd, sizeof(l->cmd)) > 0) {
		l->writing = dbk_rt_query_start_batch(loop, &l->addr, l->cmd, 0, 64 * 1024,
		                                      on_written, l, err, sizeof(err));
		if (!l->writing)
			say(&l->write_failing, false, "write", err);
	}
	if (!l->reading) {
		snprintf(show, sizeof(show), "show table %s", l->cfg.table);
		l->reading = dbk_rt_query_start(loop, &l->addr, show, 0, 0, on_read, l, err,
		                                sizeof(err));
		if (!l->reading)
			say(&l->read_failing, false, "read", err);
	}
}

struct dbk_share_loop *dbk_share_loop_start(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                            struct dbk_share *s,
                                            const struct dbk_share_loop_config *cfg, char *err,
                                            size_t errlen)
{
	struct dbk_share_loop *l = calloc(1, sizeof(*l));

	if (!l) {
		dbk_errf(err, errlen, "out of memory");
		return NULL;
	}
	l->loop = loop;
	l->addr = *addr;
	l->s = s;
	l->cfg = *cfg;
	double every = cfg->interval_ms / 1000.0;
	ev_timer_init(&l->tick, on_tick, every, every);
	ev_timer_start(loop, &l->tick);
	dbk_log(DBK_LOG_INFO, "share-books", "table=%s interval_ms=%u refresh_ms=%u", cfg->table,
	        cfg->interval_ms, cfg->refresh_ms);
	return l;
}

void dbk_share_loop_stop(struct dbk_share_loop *l)
{
	if (!l)
		return;
	ev_timer_stop(l->loop, &l->tick);
	dbk_rt_query_cancel(l->writing);
	dbk_rt_query_cancel(l->reading);
	free(l);
}

/* Unchanged rows are rewritten this often: the table's expire must be
 * longer (haproxy.cfg's sample: 10 s), or a quiet node's rows vanish. */
#define SHARE_REFRESH_MS 1000

struct dbk_share_loop *dbk_share_loop_for(struct ev_loop *loop, struct dbk_policy *p,
                                          const struct dbk_config *cfg, char *err, size_t errlen)
{
	struct dbk_rt_addr addr;
	struct dbk_share_loop_config lc = {
		.table = cfg->share_books,
		.interval_ms = (unsigned)cfg->share_ms,
		.refresh_ms = SHARE_REFRESH_MS,
		.names = cfg->servers,
		.nnames = cfg->nservers,
	};
	struct dbk_share *s;

	if (dbk_rt_addr_parse(cfg->haproxy_socket, &addr, err, errlen) < 0)
		return NULL;
	if (!(s = dbk_share_wrap(p, cfg->nservers, cfg->node, err, errlen)))
		return NULL;
	return dbk_share_loop_start(loop, &addr, s, &lc, err, errlen);
}
