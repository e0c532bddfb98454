/* Fuzzes NOTIFY decoding and the whole routing path: dbk_route_notify
 * with a small balancer, frame after frame, as one connection would, and
 * the rest of a lease's life (release, bury, expiry, usability).
 *
 * Input: 4 parameter bytes, then the byte stream HAProxy sends (frames
 * with their 4-byte length). NOTIFY frames go to dbk_route_notify;
 * pseudo-frames of types 0xf0-0xf4 stand for what the agent does besides
 * (see CTL_RELEASE below); other frames are skipped.
 *   byte 0: servers 1 + (b & 7); dynamic mode if b & 8 (at least 2
 *           servers then)
 *   byte 1: max_leases b & 7 (0: unbounded)
 *   byte 2: bit i set: server i is not usable
 *   byte 3: max-frame-size {256, 1024, 4096, 16380}[b & 3];
 *           group threshold {32768, 4, 256, 100000}[(b >> 2) & 3] tokens
 *
 * Checked, for every NOTIFY:
 * - dbk_spop_msg_next agrees with an independent reading of the payload
 *   (names, argument count capped at DBK_SPOP_MAX_ARGS, every value),
 *   keeps failing once it failed, and every value re-encodes to its bytes;
 * - dbk_route_notify returns OK with a whole ACK that fits the writer
 *   (never an empty one), INVALID exactly when the payload is malformed
 *   (and then changes nothing), or RES only when the writer overflowed;
 * - the ACK is, message by message, what a model of route.c's contract
 *   predicts: server for a routed request, and bucket/group/redirected/
 *   score after it when the message asks for details (a true bool, a
 *   non-zero integer, the string "1"),
 *   error=no-id / duplicate id / lease table full / no usable server /
 *   bad id otherwise; moved=true/false for a dbucket-moved message (true
 *   exactly when the id holds a lease and the server is one of ours);
 *   error=unknown-message when nothing else was said;
 * - the chosen server is usable, in the announced group, and the least
 *   loaded (lowest index on ties) of that group's usable servers;
 * - leases grow by exactly the routed count; loads move by exactly the
 *   scores (routes add, moves carry them over, releases and expiry take
 *   them back, bit for bit); route and balancer counters (per server, per
 *   bucket and group too) move as predicted;
 * - a buried id is refused ("request already ended") for as long as it
 *   stays buried, not just once: its completion may arrive twice;
 *   expiry releases exactly the leases old enough, oldest first. */
#include <math.h>
#include <stdlib.h>

#include "spop_check.h"
#include "balancer.h"
#include "estimate.h"
#include "lib/log.h"
#include "route.h"

#define MAX_SERVERS 8

static const char *const names[MAX_SERVERS] = {
	"vllm0", "vllm1", "vllm2", "vllm3", "vllm4", "vllm5", "vllm6", "vllm7",
};

/* ---- the model's tables: ids holding a lease (with their server, score,
 * start and dispatch order), and ids buried by completions ---- */

#define IDTAB_CAP 8192
#define UNKNOWN_SERVER 0xffffffffu

struct idtab {
	char *id[IDTAB_CAP]; /* NULL: never used; TOMB: deleted */
	size_t len[IDTAB_CAP];
	unsigned server[IDTAB_CAP];
	double score[IDTAB_CAP];
	uint64_t start[IDTAB_CAP];
	uint64_t seq[IDTAB_CAP];
	size_t count, used; /* live entries; live + deleted slots */
	uint64_t next_seq;
	long slots[IDTAB_CAP / 2]; /* the slots used, in insertion order */
};

static char tomb_mark;
#define TOMB (&tomb_mark)

static struct idtab leases, buried;

/* A lease whose ACK was lost (RES) has an unknown server until its
 * release tells. A NOTIFY that moves such a lease makes the loads of that
 * NOTIFY impossible to follow exactly: then only counts are checked. */
static bool degraded;

static uint64_t id_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The slot of id, or -1. */
static long tab_find(const struct idtab *t, const uint8_t *p, size_t n)
{
	size_t i = id_hash(p, n) & (IDTAB_CAP - 1);

	while (t->id[i]) {
		if (t->id[i] != TOMB && t->len[i] == n && memcmp(t->id[i], p, n) == 0)
			return (long)i;
		i = (i + 1) & (IDTAB_CAP - 1);
	}
	return -1;
}

static bool tab_full(const struct idtab *t) { return t->used >= IDTAB_CAP / 2; }

static long tab_add(struct idtab *t, const uint8_t *p, size_t n, double score, uint64_t start)
{
	size_t i = id_hash(p, n) & (IDTAB_CAP - 1);

	FUZZ_CHECK(!tab_full(t));
	while (t->id[i])
		i = (i + 1) & (IDTAB_CAP - 1);
	t->id[i] = (char *)fuzz_dup(p, n);
	t->len[i] = n;
	t->server[i] = UNKNOWN_SERVER;
	t->score[i] = score;
	t->start[i] = start;
	t->seq[i] = t->next_seq++;
	t->slots[t->used] = (long)i;
	t->count++;
	t->used++;
	return (long)i;
}

static void tab_del(struct idtab *t, long i)
{
	free(t->id[i]);
	t->id[i] = TOMB;
	t->count--;
}

static void tab_clear(struct idtab *t)
{
	for (size_t k = 0; k < t->used; k++) {
		long i = t->slots[k];

		if (t->id[i] != TOMB)
			free(t->id[i]);
		t->id[i] = NULL;
	}
	t->count = t->used = 0;
	t->next_seq = 0;
}

/* ---- one message as the model reads it ---- */

#define MODEL_MAX_MSGS 2048

enum kind { OTHER, ROUTE, MOVED };

struct model_msg {
	enum kind kind;
	/* ROUTE */
	bool routed;
	bool details;      /* bucket, group, redirected, score follow */
	const char *error; /* when not routed: the error variable */
	double score;
	unsigned std_bucket;
	enum dbk_estimate_source src;
	bool estimated;          /* got past the id check */
	bool counted;            /* the estimate's counters move (plain mode) */
	enum dbk_bal_result res; /* when refused */
	long slot;               /* leases slot of a routed or moved id */
	/* MOVED */
	bool moved; /* the answer */
	unsigned to;
};

static struct model_msg msgs[MODEL_MAX_MSGS];

/* dbk_log_quote: NUL-terminated within size, printable, quotes escaped. */
static void check_quote(const uint8_t *s, size_t len, size_t size)
{
	char *buf = malloc(size ? size : 1);
	const char *r;

	FUZZ_CHECK(buf != NULL);
	r = dbk_log_quote(buf, size, (const char *)s, len);
	FUZZ_CHECK(r == buf);
	if (size) {
		size_t n = strnlen(buf, size);

		FUZZ_CHECK(n < size);
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)buf[i];

			FUZZ_CHECK(c >= 0x20 && c != 0x7f);
		}
		/* Escapes come in pairs: \" or \\ . */
		for (size_t i = 0; i < n; i++) {
			if (buf[i] == '\\') {
				FUZZ_CHECK(i + 1 < n && (buf[i + 1] == '\\' || buf[i + 1] == '"'));
				i++;
			} else {
				FUZZ_CHECK(buf[i] != '"');
			}
		}
	}
	free(buf);
}

/* Reads the payload independently and compares with dbk_spop_msg_next.
 * Fills msgs[] (kind) and returns the message count, or -1 when the
 * payload is malformed. */
static long read_messages(const struct dbk_spop_frame *f, const uint8_t *body, size_t len)
{
	const uint8_t *q = f->payload, *end = f->payload + f->payload_len;
	struct dbk_spop_msg_iter it;
	static struct dbk_spop_message m;
	long count = 0;
	bool done;

	dbk_spop_msg_iter_init(&it, f);
	for (;;) {
		const uint8_t *before = it.p;
		enum dbk_spop_status st = dbk_spop_msg_next(&it, &m, &done);
		bool ok = true;
		const uint8_t *name = NULL;
		size_t name_len = 0;
		unsigned nb = 0;

		FUZZ_CHECK(before == q);
		if (q >= end) {
			FUZZ_CHECK(st == DBK_SPOP_OK && done);
			return count;
		}
		/* Message name, argument count, then nb (name, value) pairs. */
		uint64_t n;
		if (dbk_spop_varint_decode(&q, end, &n) != DBK_SPOP_OK || n > (uint64_t)(end - q)) {
			ok = false;
		} else {
			name = q;
			name_len = (size_t)n;
			q += n;
			if (q >= end)
				ok = false;
			else
				nb = *q++;
		}
		for (unsigned i = 0; ok && i < nb; i++) {
			const uint8_t *an;
			size_t anl;
			struct dbk_spop_data v;

			if (dbk_spop_varint_decode(&q, end, &n) != DBK_SPOP_OK ||
			    n > (uint64_t)(end - q)) {
				ok = false;
				break;
			}
			an = q;
			anl = (size_t)n;
			q += n;
			if (check_data_at(&q, end, body, len, &v) != DBK_SPOP_OK) {
				ok = false;
				break;
			}
			if (st == DBK_SPOP_OK && i < DBK_SPOP_MAX_ARGS) {
				FUZZ_CHECK(i < m.nargs);
				FUZZ_CHECK(m.args[i].name == an && m.args[i].name_len == anl);
				FUZZ_CHECK(spop_data_equal(&m.args[i].value, &v));
			}
		}
		if (!ok) {
			FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID && it.p == before);
			FUZZ_CHECK(dbk_spop_msg_next(&it, &m, &done) == DBK_SPOP_ERR_INVALID);
			FUZZ_CHECK(it.p == before);
			return -1;
		}
		FUZZ_CHECK(st == DBK_SPOP_OK && !done);
		FUZZ_CHECK(m.name == name && m.name_len == name_len);
		FUZZ_CHECK(m.nargs == (nb < DBK_SPOP_MAX_ARGS ? nb : DBK_SPOP_MAX_ARGS));
		FUZZ_CHECK(it.p == q);
		FUZZ_CHECK(count < MODEL_MAX_MSGS);
		memset(&msgs[count], 0, sizeof(msgs[count]));
		msgs[count].kind = key_is(name, name_len, DBK_MSG_ROUTE)   ? ROUTE
		                   : key_is(name, name_len, DBK_MSG_MOVED) ? MOVED
		                                                           : OTHER;
		count++;
	}
}

/* ---- the routing model ---- */

struct snapshot {
	struct dbk_route_stats rs;
	struct dbk_bal_stats bs;
	double load[MAX_SERVERS];
	unsigned inflight[MAX_SERVERS];
	uint64_t by_server[MAX_SERVERS];
};

static void snap(struct snapshot *s, const struct dbk_route *r, unsigned n)
{
	s->rs = r->stats;
	s->bs = *dbk_bal_stats(r->bal);
	for (unsigned i = 0; i < n; i++) {
		s->load[i] = dbk_bal_server_load(r->bal, i);
		s->inflight[i] = dbk_bal_server_inflight(r->bal, i);
		s->by_server[i] = r->by_server[i];
	}
}

static void predict_route(struct model_msg *mm, const struct dbk_spop_message *m,
                          struct dbk_balancer *b, size_t max_leases, bool any_usable, uint64_t now)
{
	const struct dbk_spop_data *id = dbk_spop_msg_arg(m, DBK_ARG_ID);
	const struct dbk_spop_data *blen = dbk_spop_msg_arg(m, DBK_ARG_BLEN);
	const struct dbk_spop_data *body = dbk_spop_msg_arg(m, DBK_ARG_BODY);
	const struct dbk_spop_data *det = dbk_spop_msg_arg(m, DBK_ARG_DETAILS);

	if (det) {
		switch (det->type) {
		case DBK_SPOP_T_BOOL: mm->details = det->u.b; break;
		case DBK_SPOP_T_INT32:
		case DBK_SPOP_T_UINT32:
		case DBK_SPOP_T_INT64:
		case DBK_SPOP_T_UINT64:
			/* All four travel as a uint64: non-zero is true. */
			mm->details = det->u.u64 != 0;
			break;
		case DBK_SPOP_T_STR:
			mm->details = det->u.buf.len == 1 && det->u.buf.ptr[0] == '1';
			break;
		default: break;
		}
	}
	if (!id || (id->type != DBK_SPOP_T_STR && id->type != DBK_SPOP_T_BIN) ||
	    id->u.buf.len == 0) {
		mm->error = "no-id";
		return;
	}
	check_quote(id->u.buf.ptr, id->u.buf.len, DBK_BAL_MAX_ID_LEN + 1);
	check_quote(id->u.buf.ptr, id->u.buf.len, id->u.buf.ptr[0] % 8);

	int64_t bs = -1;
	if (blen && !dbk_spop_data_to_i64(blen, &bs))
		bs = -1;
	const uint8_t *sample = NULL;
	size_t sl = 0;
	if (body && (body->type == DBK_SPOP_T_STR || body->type == DBK_SPOP_T_BIN)) {
		sample = body->u.buf.ptr;
		sl = body->u.buf.len;
	}
	struct dbk_bal_request req;
	struct dbk_bal_decision d;
	mm->estimated = true;
	/* Dynamic mode scores by length alone and skips the estimate (and
	 * its counters): the length is the same either way; but a body sent
	 * without a Content-Length (clen 0) is parsed, to tell a whole one. */
	const struct dbk_spop_data *clen = dbk_spop_msg_arg(m, DBK_ARG_CLEN);
	int64_t cl;
	bool no_len = clen && dbk_spop_data_to_i64(clen, &cl) && cl == 0;
	mm->src = dbk_estimate(bs, sample, sl, &req);
	mm->counted = !dbk_bal_config(b)->dynamic || no_len;
	/* Its length only a floor: scored as the longest bucket's at least
	 * (route.c, estimate). */
	if (no_len && mm->src != DBK_EST_JSON && !(mm->src == DBK_EST_NO_BODY && bs <= 0)) {
		const struct dbk_bal_config *c = dbk_bal_config(b);
		req.body_bytes = fmax(req.body_bytes,
		                      DBK_BAL_BYTES_PER_TOKEN * c->bounds[c->nbuckets - 1]);
	}
	(void)dbk_bal_decide(b, &req, &d); /* score and bucket: state-free */
	FUZZ_CHECK(isfinite(d.score) && d.score >= 0);
	mm->score = d.score;
	mm->std_bucket = d.std_bucket;

	enum dbk_bal_result res;
	if (id->u.buf.len > DBK_BAL_MAX_ID_LEN)
		res = DBK_BAL_BAD_ID;
	else if (tab_find(&buried, id->u.buf.ptr, id->u.buf.len) >= 0)
		res = DBK_BAL_ENDED;
	else if (tab_find(&leases, id->u.buf.ptr, id->u.buf.len) >= 0)
		res = DBK_BAL_DUPLICATE;
	else if (max_leases && leases.count >= max_leases)
		res = DBK_BAL_FULL;
	else if (!any_usable)
		res = DBK_BAL_NO_SERVER;
	else
		res = DBK_BAL_OK;
	if (res == DBK_BAL_OK) {
		mm->routed = true;
		mm->slot = tab_add(&leases, id->u.buf.ptr, id->u.buf.len, d.score, now);
	} else {
		mm->error = dbk_bal_result_str(res);
		mm->res = res;
	}
}

/* dbucket-moved id=<id> server=<name>: true when the id holds a lease and
 * the name is one of the servers. */
static void predict_moved(struct model_msg *mm, const struct dbk_spop_message *m, unsigned nservers)
{
	const struct dbk_spop_data *id = dbk_spop_msg_arg(m, DBK_ARG_ID);
	const struct dbk_spop_data *srv = dbk_spop_msg_arg(m, DBK_ARG_SERVER);

	mm->moved = false;
	if (!id || !srv || (id->type != DBK_SPOP_T_STR && id->type != DBK_SPOP_T_BIN) ||
	    srv->type != DBK_SPOP_T_STR)
		return;
	mm->to = nservers;
	for (unsigned i = 0; i < nservers; i++)
		if (buf_is(srv, names[i]))
			mm->to = i;
	if (mm->to == nservers || id->u.buf.len == 0 || id->u.buf.len > DBK_BAL_MAX_ID_LEN)
		return;
	mm->slot = tab_find(&leases, id->u.buf.ptr, id->u.buf.len);
	mm->moved = mm->slot >= 0;
}

/* Predicts each message's outcome (second pass with msg_next, whose
 * agreement with the independent reading is already checked). */
static void predict(const struct dbk_spop_frame *f, struct dbk_balancer *b, unsigned nservers,
                    size_t max_leases, long count, uint64_t now)
{
	struct dbk_spop_msg_iter it;
	static struct dbk_spop_message m;
	bool done, any_usable = false;

	for (unsigned i = 0; i < nservers; i++)
		any_usable |= dbk_bal_usable(b, i);
	dbk_spop_msg_iter_init(&it, f);
	for (long k = 0; k < count; k++) {
		FUZZ_CHECK(dbk_spop_msg_next(&it, &m, &done) == DBK_SPOP_OK && !done);
		if (msgs[k].kind == ROUTE)
			predict_route(&msgs[k], &m, b, max_leases, any_usable, now);
		else if (msgs[k].kind == MOVED)
			predict_moved(&msgs[k], &m, nservers);
	}
}

/* One set-var action of the ACK. */
static void ack_var(const uint8_t **p, const uint8_t *end, const char *want_name,
                    struct dbk_spop_data *v)
{
	const uint8_t *q = *p, *k;
	uint64_t n;

	FUZZ_CHECK(end - q >= 3);
	FUZZ_CHECK(q[0] == 1 && q[1] == 3 && q[2] == DBK_SPOP_SCOPE_TXN);
	q += 3;
	FUZZ_CHECK(dbk_spop_varint_decode(&q, end, &n) == DBK_SPOP_OK);
	FUZZ_CHECK(n <= (uint64_t)(end - q));
	k = q;
	q += n;
	FUZZ_CHECK(key_is(k, (size_t)n, want_name));
	FUZZ_CHECK(dbk_spop_data_decode(&q, end, v) == DBK_SPOP_OK);
	*p = q;
}

/* The score variable: "%.10g" of the score (route.c's format_score
 * promises that spelling; crashes/fuzz_notify/score-11-digits once broke
 * it). */
static void check_score(const struct dbk_spop_data *v, double score)
{
	char want[32];

	snprintf(want, sizeof(want), "%.10g", score);
	if (!buf_is(v, want))
		fuzz_fail(__FILE__, __LINE__, "score variable is not \"%.10g\" of the score");
}

/* Walks the ACK against the predictions, following the loads (load[]),
 * the decisions per server and per (bucket, group). */
static void check_ack(const uint8_t *ack, size_t len, uint32_t frame_max,
                      const struct dbk_spop_frame *nf, long count, const struct dbk_balancer *b,
                      unsigned nservers, double *load, uint64_t *per_server,
                      uint64_t (*per_bg)[DBK_BAL_MAX_BUCKETS])
{
	size_t flen;
	bool complete;
	struct dbk_spop_frame f;
	struct dbk_spop_data v;
	size_t said = 0;

	FUZZ_CHECK(dbk_spop_frame_split(ack, len, frame_max, &flen, &complete) == DBK_SPOP_OK);
	FUZZ_CHECK(complete && flen + 4 == len);
	FUZZ_CHECK(dbk_spop_frame_parse(ack + 4, flen, &f) == DBK_SPOP_OK);
	FUZZ_CHECK(f.type == DBK_SPOP_ACK && f.flags == DBK_SPOP_FLAG_FIN);
	FUZZ_CHECK(f.stream_id == nf->stream_id && f.frame_id == nf->frame_id);

	const uint8_t *p = f.payload, *end = f.payload + f.payload_len;
	for (long k = 0; k < count; k++) {
		const struct model_msg *mm = &msgs[k];

		if (mm->kind == OTHER)
			continue;
		said++;
		if (mm->kind == MOVED) {
			ack_var(&p, end, DBK_VAR_MOVED, &v);
			FUZZ_CHECK(v.type == DBK_SPOP_T_BOOL && v.u.b == mm->moved);
			if (!mm->moved)
				continue;
			unsigned from = leases.server[mm->slot];
			if (from == UNKNOWN_SERVER) {
				degraded = true;
			} else if (from != mm->to) {
				load[from] -= leases.score[mm->slot];
				load[mm->to] += leases.score[mm->slot];
			}
			leases.server[mm->slot] = mm->to;
			continue;
		}
		if (!mm->routed) {
			ack_var(&p, end, DBK_VAR_ERROR, &v);
			FUZZ_CHECK(buf_is(&v, mm->error));
			continue;
		}
		/* server: usable, least loaded of its group (lowest index on ties) */
		ack_var(&p, end, DBK_VAR_SERVER, &v);
		FUZZ_CHECK(v.type == DBK_SPOP_T_STR);
		unsigned s = MAX_SERVERS;
		for (unsigned i = 0; i < nservers; i++)
			if (buf_is(&v, names[i]))
				s = i;
		FUZZ_CHECK(s < nservers && dbk_bal_usable(b, s));
		unsigned g = dbk_bal_group_of(b, s);
		for (unsigned i = 0; i < nservers && !degraded; i++) {
			if (i == s || !dbk_bal_usable(b, i) || dbk_bal_group_of(b, i) != g)
				continue;
			FUZZ_CHECK(load[s] < load[i] || (load[s] == load[i] && s < i));
		}
		load[s] += mm->score;
		leases.server[mm->slot] = s;
		per_server[s]++;

		FUZZ_CHECK(g < dbk_bal_config(b)->nbuckets);
		per_bg[mm->std_bucket][g]++;
		if (!mm->details)
			continue;
		ack_var(&p, end, DBK_VAR_BUCKET, &v);
		FUZZ_CHECK(v.type == DBK_SPOP_T_INT64 && v.u.i64 == (int64_t)mm->std_bucket);
		ack_var(&p, end, DBK_VAR_GROUP, &v);
		FUZZ_CHECK(v.type == DBK_SPOP_T_INT64 && v.u.i64 == (int64_t)g);
		ack_var(&p, end, DBK_VAR_REDIRECTED, &v);
		FUZZ_CHECK(v.type == DBK_SPOP_T_BOOL && v.u.b == (mm->std_bucket != g));
		ack_var(&p, end, DBK_VAR_SCORE, &v);
		check_score(&v, mm->score);
	}
	if (said == 0) {
		ack_var(&p, end, DBK_VAR_ERROR, &v);
		FUZZ_CHECK(buf_is(&v, "unknown-message"));
	}
	FUZZ_CHECK(p == end);
}

/* route.c reports every balancer decision, routed or refused, once. */
static uint64_t decisions_told;

static void count_decision(void *arg, const struct dbk_route_event *e)
{
	(void)arg;
	FUZZ_CHECK(e->id_len > 0 && (e->res == DBK_BAL_OK) == (e->d != NULL));
	decisions_told++;
}

static void check_notify(struct dbk_route *r, unsigned nservers, size_t max_leases,
                         uint32_t frame_max, const struct dbk_spop_frame *f, const uint8_t *body,
                         size_t len, uint64_t now)
{
	struct snapshot s0, s1;
	long count = read_messages(f, body, len);
	size_t cap = (size_t)frame_max + 4;
	uint8_t *out = malloc(cap);
	struct dbk_spop_writer w;

	FUZZ_CHECK(out != NULL);
	degraded = false;
	snap(&s0, r, nservers);
	decisions_told = 0;
	if (count >= 0 && DBK_ROUTE_ACK_MAX((size_t)count) <= cap)
		predict(f, r->bal, nservers, max_leases, count, now);
	/* The SPOP server begins and ends the ACK around the router. */
	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_ack_begin(&w, f->stream_id, f->frame_id);
	enum dbk_spop_status st = dbk_route_notify(r, f, now, &w);
	snap(&s1, r, nservers);
	FUZZ_CHECK(w.len <= cap);
	FUZZ_CHECK(s1.rs.notifies == s0.rs.notifies + 1);

	/* Malformed, or an ACK that might not fit: refused before any
	 * message is acted on. */
	bool too_big = count >= 0 && DBK_ROUTE_ACK_MAX((size_t)count) > cap;
	if (count < 0 || too_big) {
		FUZZ_CHECK(st == (too_big ? DBK_SPOP_ERR_RES : DBK_SPOP_ERR_INVALID));
		FUZZ_CHECK(memcmp(&s0.bs, &s1.bs, sizeof(s0.bs)) == 0);
		s0.rs.notifies++;
		FUZZ_CHECK(memcmp(&s0.rs, &s1.rs, sizeof(s0.rs)) == 0);
		for (unsigned i = 0; i < nservers; i++)
			FUZZ_CHECK(s1.load[i] == s0.load[i] && s1.inflight[i] == s0.inflight[i] &&
			           s1.by_server[i] == s0.by_server[i]);
		free(out);
		return;
	}

	/* Counters, whatever became of the ACK. */
	uint64_t routed = 0, refused = 0, no_id = 0, unknown = 0, trunc = 0, malf = 0;
	uint64_t dup = 0, bad = 0, full_or_none = 0, moved = 0, ended = 0;
	for (long k = 0; k < count; k++) {
		const struct model_msg *mm = &msgs[k];

		if (mm->kind == OTHER) {
			unknown++;
			continue;
		}
		if (mm->kind == MOVED) {
			moved += mm->moved;
			continue;
		}
		if (mm->estimated && mm->counted) {
			trunc += mm->src == DBK_EST_TRUNCATED;
			malf += mm->src == DBK_EST_MALFORMED;
		}
		if (mm->routed) {
			routed++;
		} else if (!mm->estimated) {
			no_id++;
		} else if (mm->res == DBK_BAL_ENDED) {
			ended++; /* the client left: not a refusal */
		} else {
			refused++;
			if (mm->res == DBK_BAL_DUPLICATE)
				dup++;
			else if (mm->res == DBK_BAL_BAD_ID)
				bad++;
			else
				full_or_none++;
		}
	}
	FUZZ_CHECK(s1.rs.routed - s0.rs.routed == routed);
	FUZZ_CHECK(s1.rs.refused - s0.rs.refused == refused);
	FUZZ_CHECK(s1.rs.no_id - s0.rs.no_id == no_id);
	FUZZ_CHECK(s1.rs.unknown_messages - s0.rs.unknown_messages == unknown);
	FUZZ_CHECK(s1.rs.truncated_bodies - s0.rs.truncated_bodies == trunc);
	FUZZ_CHECK(s1.rs.malformed_bodies - s0.rs.malformed_bodies == malf);
	FUZZ_CHECK(s1.rs.moved - s0.rs.moved == moved);
	FUZZ_CHECK(s1.bs.moved - s0.bs.moved <= moved);
	FUZZ_CHECK(s1.bs.decisions - s0.bs.decisions == routed);
	FUZZ_CHECK(s1.bs.duplicates - s0.bs.duplicates == dup);
	FUZZ_CHECK(s1.bs.bad_ids - s0.bs.bad_ids == bad);
	FUZZ_CHECK(s1.bs.refused - s0.bs.refused == full_or_none);
	FUZZ_CHECK(s1.bs.ended - s0.bs.ended == ended);
	FUZZ_CHECK(decisions_told == routed + refused + ended);
	/* Every routed request has one class; the reference predicts
	 * nothing and no fleet is saturated here, so admission (on) sheds
	 * none; a class not known is counted at most once a message. */
	uint64_t admitted = 0, shed = 0;
	for (int c = 0; c < DBK_CLASS_N; c++) {
		admitted += s1.rs.admitted[c] - s0.rs.admitted[c];
		for (int k = 0; k < DBK_SHED_NREASONS; k++)
			shed += s1.rs.shed[c][k];
	}
	FUZZ_CHECK(admitted == routed);
	FUZZ_CHECK(shed == 0);
	FUZZ_CHECK(s1.rs.bad_class - s0.rs.bad_class <= (uint64_t)count);
	/* Leases grow by the routed count, and only by it. */
	FUZZ_CHECK(s1.bs.leases == s0.bs.leases + routed);
	FUZZ_CHECK(s1.bs.leases == leases.count);
	if (max_leases)
		FUZZ_CHECK(s1.bs.leases <= max_leases);
	uint64_t inflight0 = 0, inflight1 = 0, dec0 = 0, dec1 = 0;
	for (unsigned i = 0; i < nservers; i++) {
		inflight0 += s0.inflight[i];
		inflight1 += s1.inflight[i];
		dec0 += s0.by_server[i];
		dec1 += s1.by_server[i];
		FUZZ_CHECK(isfinite(s1.load[i]));
	}
	FUZZ_CHECK(inflight1 - inflight0 == routed && inflight1 == s1.bs.leases);
	FUZZ_CHECK(dec1 - dec0 == routed);
	uint64_t bg0 = 0, bg1 = 0;
	for (unsigned i = 0; i < DBK_BAL_MAX_BUCKETS; i++)
		for (unsigned j = 0; j < DBK_BAL_MAX_BUCKETS; j++) {
			bg0 += s0.rs.by_bucket_group[i][j];
			bg1 += s1.rs.by_bucket_group[i][j];
		}
	FUZZ_CHECK(bg1 - bg0 == routed);

	/* An ACK that could fit always does (crashes/fuzz_notify/
	 * ack-overflow-leaks-leases once took leases, then failed). */
	FUZZ_CHECK(st == DBK_SPOP_OK);
	FUZZ_CHECK(dbk_spop_frame_end(&w) > 4);

	double load[MAX_SERVERS];
	uint64_t per_server[MAX_SERVERS] = { 0 };
	static uint64_t per_bg[DBK_BAL_MAX_BUCKETS][DBK_BAL_MAX_BUCKETS];

	memcpy(load, s0.load, sizeof(load));
	memset(per_bg, 0, sizeof(per_bg));
	check_ack(out, w.len, frame_max, f, count, r->bal, nservers, load, per_server, per_bg);
	for (unsigned i = 0; i < nservers; i++) {
		FUZZ_CHECK(s1.by_server[i] - s0.by_server[i] == per_server[i]);
		/* Loads moved by exactly the scores, in the same order:
		 * bit-exact. */
		if (!degraded)
			FUZZ_CHECK(load[i] == s1.load[i]);
	}
	for (unsigned i = 0; i < DBK_BAL_MAX_BUCKETS; i++)
		for (unsigned j = 0; j < DBK_BAL_MAX_BUCKETS; j++)
			FUZZ_CHECK(s1.rs.by_bucket_group[i][j] - s0.rs.by_bucket_group[i][j] ==
			           per_bg[i][j]);
	free(out);
}

/* ---- what the agent does besides NOTIFYs, as pseudo-frames ----
 * Frame types 0xf0-0xf4 (not SPOP's) carry, in their payload, an id or
 * parameters: release a lease (a completion line), bury an id (a
 * completion that overtook its NOTIFY), expire leases or buried ids
 * (the TTL timer; ttl = first byte, ms), make a server (un)usable. */
#define CTL_RELEASE 0xf0
#define CTL_BURY 0xf1
#define CTL_EXPIRE 0xf2
#define CTL_EXPIRE_BURIED 0xf3
#define CTL_USABLE 0xf4

static struct {
	long slot[IDTAB_CAP];
	size_t n, next;
	double *load;
} expiring;

static int by_seq(const void *a, const void *b)
{
	uint64_t x = leases.seq[*(const long *)a], y = leases.seq[*(const long *)b];

	return x < y ? -1 : x > y;
}

static void on_expired(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	(void)arg;
	FUZZ_CHECK(expiring.next < expiring.n);
	long k = expiring.slot[expiring.next++];
	FUZZ_CHECK(leases.len[k] == id_len && memcmp(leases.id[k], id, id_len) == 0);
	FUZZ_CHECK(l->score == leases.score[k] && l->start_ms == leases.start[k]);
	if (leases.server[k] != UNKNOWN_SERVER)
		FUZZ_CHECK(l->server == leases.server[k]);
	/* Oldest first, each the amounts it was charged. */
	expiring.load[l->server] -= l->score;
}

static void check_control(struct dbk_route *r, unsigned nservers, const struct dbk_spop_frame *f,
                          uint64_t now)
{
	struct dbk_balancer *b = r->bal;
	const uint8_t *id = f->payload;
	size_t n = f->payload_len;
	bool id_ok = n >= 1 && n <= DBK_BAL_MAX_ID_LEN;
	unsigned ttl = n ? id[0] : 0;
	struct snapshot s0, s1;
	double load[MAX_SERVERS];
	long k;

	snap(&s0, r, nservers);
	memcpy(load, s0.load, sizeof(load));
	switch (f->type) {
	case CTL_RELEASE: {
		struct dbk_bal_lease out;
		enum dbk_bal_result res = dbk_bal_release(b, (const char *)id, n, &out);

		k = id_ok ? tab_find(&leases, id, n) : -1;
		snap(&s1, r, nservers);
		if (!id_ok) {
			FUZZ_CHECK(res == DBK_BAL_BAD_ID && s1.bs.bad_ids == s0.bs.bad_ids + 1);
		} else if (k < 0) {
			FUZZ_CHECK(res == DBK_BAL_UNKNOWN);
			FUZZ_CHECK(s1.bs.unknown_releases == s0.bs.unknown_releases + 1);
		} else {
			FUZZ_CHECK(res == DBK_BAL_OK && s1.bs.releases == s0.bs.releases + 1);
			FUZZ_CHECK(out.score == leases.score[k] && out.start_ms == leases.start[k]);
			if (leases.server[k] != UNKNOWN_SERVER)
				FUZZ_CHECK(out.server == leases.server[k]);
			FUZZ_CHECK(out.server < nservers &&
			           out.group == dbk_bal_group_of(b, out.server));
			FUZZ_CHECK(s1.inflight[out.server] + 1 == s0.inflight[out.server]);
			load[out.server] -= out.score;
			tab_del(&leases, k);
		}
		break;
	}
	case CTL_BURY:
		dbk_bal_bury(b, (const char *)id, n, now);
		if (id_ok && tab_find(&buried, id, n) < 0)
			tab_add(&buried, id, n, 0, now);
		snap(&s1, r, nservers);
		FUZZ_CHECK(memcmp(&s0.bs, &s1.bs, sizeof(s0.bs)) == 0);
		break;
	case CTL_EXPIRE: {
		expiring.n = expiring.next = 0;
		expiring.load = load;
		/* Slots in insertion order, which is dispatch order. */
		for (size_t j = 0; j < leases.used; j++) {
			long i = leases.slots[j];

			if (leases.id[i] != TOMB && leases.start[i] + ttl <= now)
				expiring.slot[expiring.n++] = i;
		}
		qsort(expiring.slot, expiring.n, sizeof(expiring.slot[0]), by_seq);
		size_t done = dbk_bal_expire(b, now, ttl, on_expired, NULL);
		snap(&s1, r, nservers);
		FUZZ_CHECK(done == expiring.n && expiring.next == expiring.n);
		FUZZ_CHECK(s1.bs.expired == s0.bs.expired + done);
		for (size_t i = 0; i < expiring.n; i++)
			tab_del(&leases, expiring.slot[i]);
		break;
	}
	case CTL_EXPIRE_BURIED:
		dbk_bal_expire_buried(b, now, ttl);
		for (size_t j = 0; j < buried.used; j++) {
			long i = buried.slots[j];

			if (buried.id[i] != TOMB && buried.start[i] + ttl <= now)
				tab_del(&buried, i);
		}
		snap(&s1, r, nservers);
		FUZZ_CHECK(memcmp(&s0.bs, &s1.bs, sizeof(s0.bs)) == 0);
		break;
	case CTL_USABLE: {
		unsigned srv = n ? id[0] % nservers : 0;
		bool usable = n >= 2 ? id[1] & 1 : !dbk_bal_usable(b, srv);

		dbk_bal_set_usable(b, srv, usable);
		FUZZ_CHECK(dbk_bal_usable(b, srv) == usable);
		snap(&s1, r, nservers);
		break;
	}
	default: return;
	}
	/* The books: leases, in flight, loads (bit-exact). */
	uint64_t inflight = 0;
	for (unsigned i = 0; i < nservers; i++) {
		inflight += s1.inflight[i];
		FUZZ_CHECK(s1.load[i] == load[i]);
	}
	FUZZ_CHECK(s1.bs.leases == leases.count && inflight == leases.count);
	FUZZ_CHECK(memcmp(&s0.rs, &s1.rs, sizeof(s0.rs)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t frame_sizes[4] = { 256, 1024, 4096, 16380 };
	static const double thresholds[4] = { 32768, 4, 256, 100000 };
	static uint64_t by_server[MAX_SERVERS];
	struct fuzz_in in = { data, size };
	uint8_t b0 = fuzz_u8(&in), b1 = fuzz_u8(&in), b2 = fuzz_u8(&in), b3 = fuzz_u8(&in);
	unsigned nservers = 1 + (b0 & 7);
	bool dynamic = b0 & 8;
	size_t max_leases = b1 & 7;
	uint32_t frame_max = frame_sizes[b3 & 3];
	struct dbk_bal_config cfg;
	struct dbk_route r;
	uint64_t now = 1000;

	if (dynamic && nservers < 2)
		nservers = 2; /* one per group at least */
	dbk_bal_config_default(&cfg, nservers, dynamic, thresholds[(b3 >> 2) & 3], 131072);
	cfg.max_leases = max_leases;
	memset(&r, 0, sizeof(r));
	memset(by_server, 0, sizeof(by_server));
	r.bal = dbk_bal_new(&cfg);
	FUZZ_CHECK(r.bal != NULL);
	r.names = names;
	r.nnames = nservers;
	r.by_server = by_server;
	r.on_decision = count_decision;
	/* Admission on: the class argument is read (and its bad values
	 * counted) on every route message. */
	struct dbk_admit_config ac;
	dbk_admit_config_default(&ac);
	ac.enabled = true;
	r.admit = &ac;
	for (unsigned i = 0; i < nservers; i++)
		if (b2 & (1u << i))
			dbk_bal_set_usable(r.bal, i, false);
	size_t off = 0;
	while (off < in.n) {
		size_t flen;
		bool complete;
		enum dbk_spop_status st = dbk_spop_frame_split(in.p + off, in.n - off, frame_max,
		                                               &flen, &complete);

		check_split(in.p + off, in.n - off, frame_max, st, flen, complete);
		if (st != DBK_SPOP_OK || !complete)
			break;
		uint8_t *body = fuzz_dup(in.p + off + 4, flen);
		struct dbk_spop_frame f;

		st = dbk_spop_frame_parse(body, flen, &f);
		check_parse(body, flen, st, &f);
		if (st == DBK_SPOP_OK && f.type == DBK_SPOP_NOTIFY)
			check_notify(&r, nservers, max_leases, frame_max, &f, body, flen, now++);
		else if (st == DBK_SPOP_OK && f.type >= CTL_RELEASE && f.type <= CTL_USABLE)
			check_control(&r, nservers, &f, now++);
		if (tab_full(&leases) || tab_full(&buried)) {
			free(body);
			break; /* the model's tables are full: enough for one input */
		}
		free(body);
		off += 4 + flen;
	}
	dbk_bal_free(r.bal);
	tab_clear(&leases);
	tab_clear(&buried);
	return 0;
}
