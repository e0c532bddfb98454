/* Charges of requests whose body was not whole: see estimate_hold.h. */
#include "estimate_hold.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dbk_hold_init(struct dbk_hold *h, unsigned nservers)
{
	memset(h, 0, sizeof(*h));
	h->e = calloc(DBK_HOLD_MAX, sizeof(*h->e));
	h->s = calloc(nservers ? nservers : 1, sizeof(*h->s));
	if (!h->e || !h->s) {
		dbk_hold_fini(h);
		return -1;
	}
	h->nservers = nservers;
	return 0;
}

void dbk_hold_fini(struct dbk_hold *h)
{
	free(h->e);
	free(h->s);
	memset(h, 0, sizeof(*h));
}

bool dbk_hold_watching(const struct dbk_hold *h, unsigned server)
{
	return server < h->nservers && h->s[server].watched;
}

uint64_t dbk_hold_grace_ms(uint64_t missing, uint64_t scrape_ms)
{
	uint64_t transfer = DBK_HOLD_TRANSFER_MAX_MS;

	/* Compared before multiplying: missing may be any int64. */
	if (missing < (uint64_t)DBK_HOLD_TRANSFER_MAX_MS * DBK_HOLD_LINK_BYTES_PER_S / 1000)
		transfer = missing * 1000 / DBK_HOLD_LINK_BYTES_PER_S;
	if (scrape_ms > UINT64_MAX / 2 / DBK_HOLD_SCRAPES)
		return UINT64_MAX / 2;
	return DBK_HOLD_SCRAPES * scrape_ms + transfer;
}

bool dbk_hold_add(struct dbk_hold *h, struct dbk_balancer *bal, const char *id, size_t id_len,
                  double full, double part, uint64_t missing, uint64_t now_ms)
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
	uint64_t grace = dbk_hold_grace_ms(missing, h->scrape_ms);

	e->full = full;
	e->part = part;
	e->due_ms = now_ms > UINT64_MAX - grace ? UINT64_MAX : now_ms + grace;
	e->taken = h->strict;
	e->id_len = (uint8_t)id_len;
	memcpy(e->id, id, id_len);
	if (h->strict) {
		dbk_bal_recharge(bal, id, id_len, part, NULL);
		h->stats.held++;
	} else {
		h->stats.watched++;
	}
	return true;
}

/* Drops the entries whose lease ended; returns how many of the live ones
 * are on server. */
static size_t live_on(struct dbk_hold *h, const struct dbk_balancer *bal, unsigned server)
{
	struct dbk_bal_lease l;
	size_t kept = 0, on = 0;

	for (size_t i = 0; i < h->n; i++) {
		if (!dbk_bal_lease_get(bal, h->e[i].id, h->e[i].id_len, &l))
			continue;
		if (l.server == server)
			on++;
		if (kept != i)
			h->e[kept] = h->e[i];
		kept++;
	}
	h->n = kept;
	return on;
}

/* Whether e's lease is on server. */
static bool on_server(const struct dbk_balancer *bal, const struct dbk_hold_entry *e,
                      unsigned server)
{
	struct dbk_bal_lease l;

	return dbk_bal_lease_get(bal, e->id, e->id_len, &l) && l.server == server;
}

/* Strict: the requests counted beyond the leases charged in full on
 * this scrape and the one before can only be held ones; that many of
 * them, the oldest first, are made whole (all of them when the counts
 * are missing). gone: leases that left the server since the scrape was
 * sent, which its count may still hold. */
static size_t strict_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server,
                             size_t held, double engine, double gone)
{
	struct dbk_hold_server *s = &h->s[server];
	size_t give = held, given = 0, kept = 0;
	double k = 0;

	if (s->watched) {
		double whole = (double)dbk_bal_server_inflight(bal, server) - (double)held;
		double both;

		k = floor(engine) - gone - whole;
		both = fmin(k, s->excess);
		give = !(both > 0) ? 0 : both < (double)held ? (size_t)both : held;
	}
	for (size_t i = 0; i < h->n; i++) {
		struct dbk_hold_entry *e = &h->e[i];

		if (given < give && on_server(bal, e, server)) {
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
	/* Those made whole are counted whole by the next scrape. */
	s->excess = s->watched && k > 0 ? k - (double)given : 0;
	if (s->watched)
		h->stats.confirmed += given;
	else
		h->stats.unwatched += given;
	return given;
}

/* Take back: how many of server's partial-body leases the counts show
 * missing from its engine on every scrape of the last DBK_HOLD_SCRAPES
 * spans (0 until there are that many in a row). */
static size_t missing_now(struct dbk_hold *h, const struct dbk_balancer *bal, unsigned server,
                          double engine, uint64_t now_ms)
{
	struct dbk_hold_server *s = &h->s[server];
	double d = (double)dbk_bal_server_inflight(bal, server) - floor(engine);
	uint64_t span = h->scrape_ms > DBK_HOLD_SPAN_MIN_MS ? h->scrape_ms : DBK_HOLD_SPAN_MIN_MS;

	if (!s->watched || !(d >= 1)) {
		s->run = 0;
		return 0;
	}
	if (s->run && now_ms >= s->span_ms && now_ms - s->span_ms < span) {
		s->deficit[s->run - 1] = fmin(s->deficit[s->run - 1], d);
	} else {
		if (s->run == DBK_HOLD_SCRAPES) {
			memmove(s->deficit, s->deficit + 1,
			        sizeof(s->deficit) - sizeof(s->deficit[0]));
			s->run--;
		}
		s->deficit[s->run++] = d;
		s->span_ms = now_ms;
	}
	if (s->run < DBK_HOLD_SCRAPES)
		return 0;
	for (unsigned i = 0; i < DBK_HOLD_SCRAPES; i++)
		d = fmin(d, s->deficit[i]);
	return (size_t)d;
}

/* Take back: the oldest of server's leases past their grace, as many as
 * are missing, are charged part; every other one full. */
static size_t take_back_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server,
                                double engine, double gone, uint64_t now_ms)
{
	size_t want = missing_now(h, bal, server, engine, now_ms), changed = 0, taken = 0;
	/* A lease that left while the scrape was out may be in its count: the
	 * deficit may be larger by as many. The run that takes a charge back
	 * reads the smaller deficit, the one that gives it back the larger:
	 * a completion line racing one scrape (every burst's end meets one)
	 * moves nothing either way. */
	double most = (double)dbk_bal_server_inflight(bal, server) + gone - floor(engine);

	for (size_t i = 0; i < h->n; i++)
		taken += h->e[i].taken && on_server(bal, &h->e[i], server);
	if (h->s[server].watched && most >= 1) {
		size_t keep = most >= (double)taken ? taken : (size_t)most;

		if (keep > want)
			want = keep;
	}

	for (size_t i = 0; i < h->n; i++) {
		struct dbk_hold_entry *e = &h->e[i];

		if (!on_server(bal, e, server))
			continue;
		bool take = want > 0 && now_ms >= e->due_ms;

		want -= take;
		if (take == e->taken)
			continue;
		e->taken = take;
		dbk_bal_recharge(bal, e->id, e->id_len, take ? e->part : e->full, NULL);
		void (*tell)(void *, const char *, size_t) = take ? h->taken : h->whole;

		if (tell)
			tell(h->whole_arg, e->id, e->id_len);
		if (take)
			h->stats.taken_back++;
		else
			h->stats.recharged++;
		changed++;
	}
	return changed;
}

void dbk_hold_scrape_sent(struct dbk_hold *h, const struct dbk_balancer *bal, unsigned server)
{
	if (server >= h->nservers)
		return;
	h->s[server].sent = true;
	h->s[server].ended_at_send = dbk_bal_server_ended(bal, server);
}

size_t dbk_hold_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server, bool ok,
                        double engine, uint64_t now_ms)
{
	if (server >= h->nservers)
		return 0;
	struct dbk_hold_server *s = &h->s[server];
	uint64_t ended = dbk_bal_server_ended(bal, server);
	/* Fewer than at the send: another balancer now; nothing known. */
	double gone = s->sent && ended >= s->ended_at_send ? (double)(ended - s->ended_at_send) : 0;

	s->sent = false;
	s->watched = ok && isfinite(engine) && engine >= 0;
	size_t on = live_on(h, bal, server);

	if (h->strict)
		return strict_scraped(h, bal, server, on, engine, gone);
	return take_back_scraped(h, bal, server, engine, gone, now_ms);
}
