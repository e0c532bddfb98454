/* Fuzzes the agent's books (agent/accounting.h) against a model: any
 * order of NOTIFYs, completion lines (first copies, second copies, lines
 * that overtake their NOTIFY, lines of requests the agent never routed),
 * TTL ticks and runtime API polls, with time passed in.
 *
 * Input: a sequence of operations, two or three bytes each:
 *   op % 4 == 0: NOTIFY id on server
 *   op % 4 == 1: completion line of id, with or without a decision
 *                variable, served where its lease says or elsewhere
 *   op % 4 == 2: time passes (0..25.5 s), then the TTL tick
 *   op % 4 == 3: a runtime API poll of one server, HAProxy holding
 *                0..3 requests there (or unknown)
 * Ids are eight short names and the empty id (a line with "-").
 *
 * Checked, after every operation:
 * - each outcome (released, duplicate, undecided, unknown; ok, ended,
 *   duplicate, bad id) is the model's;
 * - a lease is released exactly once, by its first completion, the TTL
 *   or a reclaim, and nothing else: per-server counts and the live
 *   total equal the model's;
 * - expiry and reclaim give back the oldest eligible leases, in order,
 *   and reclaim only leases older than the cutoff, no more than the
 *   leak the reconcile rule finds;
 * - the counters (completions, duplicates, undecided, elsewhere) add
 *   up as accounting.h says. */
#include "accounting.h"
#include "fuzz.h"

#define NIDS 9 /* id 8 is "" */
#define NSRV 3
#define TTL_MS 10000
#define POLL_MS 1000
#define MIN_AGE_MS 5000
#define MAX_OPS 512

static const char *const ids[NIDS] = { "a", "b", "c", "d", "e", "f", "g", "h", "" };
static const char *const names[NSRV] = { "s0", "s1", "s2" };

struct model {
	bool live[NIDS];
	unsigned server[NIDS];
	uint64_t start[NIDS], seq[NIDS]; /* seq: dispatch order */
	bool buried[NIDS];
	uint64_t buried_at[NIDS];
	uint64_t next_seq;
	uint64_t completions, duplicates, undecided, elsewhere;
	/* The reconcile rule, per server (accounting.h's text). */
	unsigned streak[NSRV];
	long max_h[NSRV];
	long long min_ex[NSRV];
};

/* What the callbacks saw, in order. */
struct seen {
	int id[NIDS];
	unsigned n;
};

static int id_of(const char *id, size_t len)
{
	for (int i = 0; i < NIDS; i++)
		if (strlen(ids[i]) == len && memcmp(ids[i], id, len) == 0)
			return i;
	return -1;
}

static void record(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct seen *s = arg;
	int i = id_of(id, id_len);

	(void)l;
	FUZZ_CHECK(i >= 0 && s->n < NIDS);
	s->id[s->n++] = i;
}

static unsigned live_on(const struct model *m, unsigned server)
{
	unsigned n = 0;

	for (int i = 0; i < NIDS; i++)
		n += m->live[i] && m->server[i] == server;
	return n;
}

/* The live leases, oldest first, that pass keep (server, cutoff). */
static unsigned oldest(const struct model *m, int server, uint64_t started_by, int *out)
{
	unsigned n = 0;
	bool taken[NIDS] = { false };

	for (;;) {
		int best = -1;

		for (int i = 0; i < NIDS; i++)
			if (m->live[i] && !taken[i] && m->start[i] <= started_by &&
			    (server < 0 || m->server[i] == (unsigned)server) &&
			    (best < 0 || m->seq[i] < m->seq[best]))
				best = i;
		if (best < 0)
			return n;
		taken[best] = true;
		out[n++] = best;
	}
}

static void notify(struct dbk_acct *a, struct model *m, int id, unsigned server, uint64_t now)
{
	struct dbk_bal_request r = { .body_bytes = 400, .max_tokens = 16 };
	enum dbk_bal_result want = DBK_BAL_OK;

	if (id == 8)
		want = DBK_BAL_BAD_ID;
	else if (m->buried[id])
		want = DBK_BAL_ENDED;
	else if (m->live[id])
		want = DBK_BAL_DUPLICATE;
	FUZZ_CHECK(dbk_bal_dispatch_to(a->bal, ids[id], strlen(ids[id]), &r, server, now, NULL) ==
	           want);
	if (want != DBK_BAL_OK)
		return;
	m->live[id] = true;
	m->server[id] = server;
	m->start[id] = now;
	m->seq[id] = m->next_seq++;
}

static void complete(struct dbk_acct *a, struct model *m, int id, bool chosen, bool elsewhere,
                     uint64_t now)
{
	unsigned where = m->live[id] ? m->server[id] : 0;
	const char *served = elsewhere ? names[(where + 1) % NSRV] : names[where];
	struct dbk_completion c = {
		.id = ids[id],
		.id_len = strlen(ids[id]),
		.chosen = chosen ? names[where] : "",
		.chosen_len = chosen ? strlen(names[where]) : 0,
		.server = served,
		.server_len = strlen(served),
		.status = 200,
		.log_ms = 1000,
	};
	struct dbk_bal_lease l;
	enum dbk_acct_outcome want;

	if (id != 8 && m->buried[id]) {
		want = DBK_ACCT_DUPLICATE;
		m->duplicates++;
	} else {
		m->completions++;
		if (id != 8) {
			m->buried[id] = true;
			m->buried_at[id] = now;
		}
		if (!chosen && !m->live[id]) {
			want = DBK_ACCT_UNDECIDED;
			m->undecided++;
		} else if (m->live[id]) {
			want = DBK_ACCT_RELEASED;
			m->live[id] = false;
			m->elsewhere += elsewhere;
		} else {
			want = DBK_ACCT_UNKNOWN;
		}
	}
	FUZZ_CHECK(dbk_acct_complete(a, &c, now, 1000, &l) == want);
	if (want == DBK_ACCT_RELEASED)
		FUZZ_CHECK(l.server == where);
}

static void tick(struct dbk_acct *a, struct model *m, uint64_t now)
{
	struct seen s = { .n = 0 };
	int want[NIDS];
	unsigned n = now >= TTL_MS ? oldest(m, -1, now - TTL_MS, want) : 0;

	FUZZ_CHECK(dbk_acct_expire(a, now, TTL_MS, record, &s) == n);
	FUZZ_CHECK(s.n == n);
	for (unsigned k = 0; k < n; k++) {
		FUZZ_CHECK(s.id[k] == want[k]);
		m->live[want[k]] = false;
	}
	for (int i = 0; i < NIDS; i++)
		if (m->buried[i] && m->buried_at[i] + DBK_ACCT_BURIED_TTL_MS <= now)
			m->buried[i] = false;
}

/* accounting.h's reconcile rule, written from its text. */
static unsigned model_step(struct model *m, unsigned srv, unsigned ours, long h)
{
	if (h < 0 || (long long)ours <= h) {
		m->streak[srv] = 0;
		return 0;
	}
	long long ex = (long long)ours - h;
	if (m->streak[srv] == 0 || h > m->max_h[srv])
		m->max_h[srv] = h;
	if (m->streak[srv] == 0 || ex < m->min_ex[srv])
		m->min_ex[srv] = ex;
	if (++m->streak[srv] < DBK_ACCT_RECONCILE_K)
		return 0;
	long long t = (long long)ours - m->max_h[srv];
	if (m->min_ex[srv] < t)
		t = m->min_ex[srv];
	m->streak[srv] = 0;
	return t > 0 ? (unsigned)t : 0;
}

static void poll_server(struct dbk_acct *a, struct dbk_acct_reconcile *r, struct model *m,
                        unsigned srv, long h, uint64_t now)
{
	struct seen s = { .n = 0 };
	int eligible[NIDS];
	unsigned leak = model_step(m, srv, live_on(m, srv), h), n = 0;
	uint64_t span = DBK_ACCT_RECONCILE_K * POLL_MS > MIN_AGE_MS ? DBK_ACCT_RECONCILE_K * POLL_MS
	                                                            : MIN_AGE_MS;

	if (leak && now > span) {
		n = oldest(m, (int)srv, now - span, eligible);
		if (n > leak)
			n = leak;
	}
	FUZZ_CHECK(dbk_acct_reconcile(a->bal, srv, r, h, now, POLL_MS, MIN_AGE_MS, record, &s) ==
	           n);
	FUZZ_CHECK(s.n == n);
	for (unsigned k = 0; k < n; k++) {
		FUZZ_CHECK(s.id[k] == eligible[k]);
		m->live[eligible[k]] = false;
	}
}

static void check_books(const struct dbk_acct *a, const struct model *m)
{
	unsigned total = 0;

	for (unsigned s = 0; s < NSRV; s++) {
		FUZZ_CHECK(dbk_bal_server_inflight(a->bal, s) == live_on(m, s));
		total += live_on(m, s);
	}
	FUZZ_CHECK(dbk_bal_stats(a->bal)->leases == total);
	FUZZ_CHECK(a->stats.completions == m->completions);
	FUZZ_CHECK(a->stats.duplicates == m->duplicates);
	FUZZ_CHECK(a->stats.undecided == m->undecided);
	FUZZ_CHECK(a->stats.elsewhere == m->elsewhere);
	FUZZ_CHECK(a->lag_ms.count == dbk_bal_stats(a->bal)->releases);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct dbk_bal_config c;
	struct dbk_acct a;
	struct dbk_acct_reconcile rec[NSRV];
	static struct model m;
	uint64_t now = 100000;

	dbk_bal_config_default(&c, NSRV, false, 32768, 131072);
	struct dbk_balancer *bal = dbk_bal_new(&c);
	FUZZ_CHECK(bal != NULL);
	dbk_acct_init(&a, bal, names);
	memset(&m, 0, sizeof(m));
	for (unsigned s = 0; s < NSRV; s++)
		dbk_acct_reconcile_init(&rec[s]);
	for (unsigned ops = 0; in.n && ops < MAX_OPS; ops++) {
		uint8_t op = fuzz_u8(&in), x = fuzz_u8(&in);
		int id = (op >> 2) % NIDS;

		switch (op % 4) {
		case 0: notify(&a, &m, id, x % NSRV, now); break;
		case 1: complete(&a, &m, id, x & 1, (x >> 1) & 1, now); break;
		case 2:
			now += (uint64_t)x * 100;
			tick(&a, &m, now);
			break;
		case 3:
			poll_server(&a, &rec[x % NSRV], &m, x % NSRV,
			            (x >> 2) & 0x20 ? -1 : (x >> 2) % 4, now);
			break;
		}
		check_books(&a, &m);
	}
	dbk_bal_free(bal);
	return 0;
}
