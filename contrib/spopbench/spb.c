/* Pure helpers of the SPOP benchmark tools. See spb.h. */
#include "spb.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* SPOP action types in an ACK (doc/SPOE.txt, "Actions"). */
#define ACT_SET_VAR 1
#define ACT_UNSET_VAR 2

size_t dbk_spb_hello_build(uint8_t *out, size_t cap, uint32_t max_frame, bool healthcheck,
                           const char *engine_id)
{
	/* HAProxy offers nothing to a health check: it only wants a HELLO. */
	return dbk_spop_haproxy_hello_build(out, cap, max_frame, healthcheck ? "" : "pipelining",
	                                    healthcheck, engine_id);
}

size_t dbk_spb_notify_build(uint8_t *out, size_t cap, uint64_t stream_id, uint64_t frame_id,
                            const char *id, size_t id_len, int64_t blen, const uint8_t *body,
                            size_t body_len)
{
	struct dbk_spop_writer w;
	struct dbk_spop_data v;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, stream_id, frame_id);
	dbk_spop_put_name(&w, "dbucket-route", 13);
	dbk_spop_put_u8(&w, 3);
	v.type = DBK_SPOP_T_STR;
	v.u.buf.ptr = (const uint8_t *)id;
	v.u.buf.len = id_len;
	dbk_spop_put_kv(&w, "id", &v);
	v = dbk_spop_int(blen);
	dbk_spop_put_kv(&w, "blen", &v);
	v.type = DBK_SPOP_T_BIN;
	v.u.buf.ptr = body;
	v.u.buf.len = body_len;
	dbk_spop_put_kv(&w, "body", &v);
	return dbk_spop_frame_end(&w);
}

size_t dbk_spb_haproxy_disconnect_build(uint8_t *out, size_t cap, uint32_t status,
                                        const char *message)
{
	struct dbk_spop_writer w;
	struct dbk_spop_data v;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_HAPROXY_DISCONNECT, DBK_SPOP_FLAG_FIN, 0, 0);
	v.type = DBK_SPOP_T_UINT32;
	v.u.u32 = status;
	dbk_spop_put_kv(&w, "status-code", &v);
	v = dbk_spop_str(message);
	dbk_spop_put_kv(&w, "message", &v);
	return dbk_spop_frame_end(&w);
}

size_t dbk_spb_body_fill(char *out, size_t cap, size_t len, unsigned max_tokens)
{
	char head[64];
	static const char tail[] = "\"}";

	if (max_tokens > 99999 || len < DBK_SPB_BODY_MIN || len > cap)
		return 0;
	/* Fixed-width max_tokens keeps the skeleton's size independent of
	 * its value, so DBK_SPB_BODY_MIN holds for any of them. */
	int n = snprintf(head, sizeof(head), "{\"model\":\"m\",\"max_tokens\":%5u,\"prompt\":\"",
	                 max_tokens);
	if (n < 0 || (size_t)n + sizeof(tail) - 1 > len)
		return 0;
	memcpy(out, head, (size_t)n);
	memset(out + n, 'a', len - (size_t)n - (sizeof(tail) - 1));
	memcpy(out + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	return len;
}

size_t dbk_spb_unique_id(char *out, size_t cap, unsigned pid, uint64_t wall_ms, uint64_t counter)
{
	int n = snprintf(out, cap, "%04X-%08" PRIX64 "%03X-%04" PRIX64, pid, wall_ms / 1000,
	                 (unsigned)(wall_ms % 1000), counter);

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* ---- The agent's answers ---- */

/* Whether a comma-separated list holds "pipelining" (spaces trimmed). */
static bool has_pipelining(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t a = i, b;

		while (i < len && s[i] != ',')
			i++;
		b = i++;
		while (a < b && s[a] == ' ')
			a++;
		while (b > a && s[b - 1] == ' ')
			b--;
		if (dbk_spop_name_is(s + a, b - a, "pipelining"))
			return true;
	}
	return false;
}

struct hello_seen {
	struct dbk_spb_agent_hello *h;
	bool vsn, vsn_ok, size, cap;
	int64_t mfs;
};

static enum dbk_spop_status agent_hello_kv(void *ctx, const uint8_t *k, size_t klen,
                                           const struct dbk_spop_data *v)
{
	struct hello_seen *x = ctx;

	if (dbk_spop_name_is(k, klen, "version")) {
		if (v->type != DBK_SPOP_T_STR)
			return DBK_SPOP_ERR_INVALID;
		x->vsn = true;
		x->vsn_ok = v->u.buf.len >= 3 && v->u.buf.ptr[0] == '2' && v->u.buf.ptr[1] == '.';
	} else if (dbk_spop_name_is(k, klen, "max-frame-size")) {
		if (!dbk_spop_data_to_i64(v, &x->mfs) || v->type == DBK_SPOP_T_BOOL)
			return DBK_SPOP_ERR_INVALID;
		x->size = true;
	} else if (dbk_spop_name_is(k, klen, "capabilities")) {
		if (v->type != DBK_SPOP_T_STR)
			return DBK_SPOP_ERR_INVALID;
		x->cap = true;
		x->h->pipelining = has_pipelining(v->u.buf.ptr, v->u.buf.len);
	}
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spb_agent_hello_parse(const struct dbk_spop_frame *f,
                                               struct dbk_spb_agent_hello *h)
{
	struct hello_seen x = { .h = h };

	memset(h, 0, sizeof(*h));
	if (f->type != DBK_SPOP_AGENT_HELLO || !(f->flags & DBK_SPOP_FLAG_FIN) ||
	    f->stream_id != 0 || f->frame_id != 0)
		return DBK_SPOP_ERR_INVALID;
	if (dbk_spop_kv_walk(f, agent_hello_kv, &x) != DBK_SPOP_OK)
		return DBK_SPOP_ERR_INVALID;
	if (!x.vsn)
		return DBK_SPOP_ERR_NO_VSN;
	if (!x.vsn_ok)
		return DBK_SPOP_ERR_BAD_VSN;
	if (!x.size)
		return DBK_SPOP_ERR_NO_FRAME_SIZE;
	if (x.mfs < 256 || x.mfs > (int64_t)UINT32_MAX)
		return DBK_SPOP_ERR_BAD_FRAME_SIZE;
	if (!x.cap)
		return DBK_SPOP_ERR_NO_CAP;
	h->max_frame_size = (uint32_t)x.mfs;
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spb_ack_find_str(const struct dbk_spop_frame *f, enum dbk_spop_scope scope,
                                          const char *name, const uint8_t **val, size_t *val_len,
                                          bool *found)
{
	const uint8_t *p = f->payload, *end = dbk_spop_payload_end(f);

	*found = false;
	/* Each action consumes at least four bytes, so the loop ends. */
	while (p < end) {
		if (end - p < 3)
			return DBK_SPOP_ERR_INVALID;
		uint8_t type = p[0], nargs = p[1], sc = p[2];
		const uint8_t *nm;
		size_t nlen;
		struct dbk_spop_data v = { .type = DBK_SPOP_T_NULL };

		p += 3;
		if (dbk_spop_get_name(&p, end, &nm, &nlen) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		if (type == ACT_SET_VAR && nargs == 3) {
			if (dbk_spop_data_decode(&p, end, &v) != DBK_SPOP_OK)
				return DBK_SPOP_ERR_INVALID;
		} else if (!(type == ACT_UNSET_VAR && nargs == 2)) {
			return DBK_SPOP_ERR_INVALID;
		}
		/* The last set-var of a name wins, as in HAProxy. */
		if (type == ACT_SET_VAR && sc == (uint8_t)scope &&
		    dbk_spop_name_is(nm, nlen, name)) {
			*found = v.type == DBK_SPOP_T_STR;
			if (*found) {
				*val = v.u.buf.ptr;
				*val_len = v.u.buf.len;
			}
		}
	}
	return DBK_SPOP_OK;
}

size_t dbk_spb_completion_build(char *out, size_t cap, const char *id, size_t id_len,
                                const char *server, size_t server_len, uint64_t wall_ms)
{
	char line[512];
	int n, m;

	if (id_len > 200 || server_len > 200)
		return 0;
	n = snprintf(line, sizeof(line), "dbk1 %.*s %.*s %.*s 200 ---- 10 100 0 %" PRIu64,
	             (int)id_len, id, (int)server_len, server, (int)server_len, server, wall_ms);
	if (n < 0 || (size_t)n >= sizeof(line))
		return 0;
	m = snprintf(out, cap, "%d %s", n, line);
	return m > 0 && (size_t)m < cap ? (size_t)m : 0;
}

/* ---- Latency histogram ---- */

void dbk_spb_lat_init(struct dbk_spb_lat *l) { memset(l, 0, sizeof(*l)); }

static unsigned lat_index(uint64_t ns)
{
	if (ns < DBK_SPB_LAT_SUB)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* >= SUB_BITS */
	if (e > DBK_SPB_LAT_MAX_EXP)
		return DBK_SPB_LAT_BUCKETS - 1;
	unsigned sub = (unsigned)(ns >> (e - DBK_SPB_LAT_SUB_BITS)) & (DBK_SPB_LAT_SUB - 1);
	return (e - DBK_SPB_LAT_SUB_BITS + 1) * DBK_SPB_LAT_SUB + sub;
}

/* [lo, hi) of a bucket, in ns. */
static void lat_bounds(unsigned i, double *lo, double *hi)
{
	if (i < DBK_SPB_LAT_SUB) {
		*lo = i;
		*hi = i + 1;
		return;
	}
	unsigned e = i / DBK_SPB_LAT_SUB + DBK_SPB_LAT_SUB_BITS - 1;
	unsigned sub = i % DBK_SPB_LAT_SUB;
	double width = (double)(1ULL << (e - DBK_SPB_LAT_SUB_BITS));

	*lo = (double)(1ULL << e) + sub * width;
	*hi = *lo + width;
}

void dbk_spb_lat_add(struct dbk_spb_lat *l, uint64_t ns)
{
	l->buckets[lat_index(ns)]++;
	l->count++;
	l->sum_ns += (double)ns;
	if (ns > l->max_ns)
		l->max_ns = ns;
}

double dbk_spb_lat_quantile(const struct dbk_spb_lat *l, double q)
{
	if (l->count == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	/* The rank of the sample, 1-based, as "nearest rank" defines it. */
	uint64_t rank = (uint64_t)(q * (double)l->count);
	if ((double)rank < q * (double)l->count || rank == 0)
		rank++;
	uint64_t seen = 0;
	for (unsigned i = 0; i < DBK_SPB_LAT_BUCKETS; i++) {
		seen += l->buckets[i];
		if (seen >= rank) {
			double lo, hi;

			/* The overflow bucket has no width to take a middle of. */
			if (i == DBK_SPB_LAT_BUCKETS - 1)
				return (double)l->max_ns;
			lat_bounds(i, &lo, &hi);
			double mid = i < DBK_SPB_LAT_SUB ? lo : (lo + hi) / 2;
			return mid > (double)l->max_ns ? (double)l->max_ns : mid;
		}
	}
	return (double)l->max_ns;
}
