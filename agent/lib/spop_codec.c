/* SPOP codec: the wire's primitives and the per-request path (NOTIFY in,
 * ACK out), kept in one file so that the compiler inlines the one into
 * the other; the control frames are in spop_control.c. See spop_codec.h
 * for the contract; doc/SPOE.txt in HAProxy's tree for the protocol.
 * Every decoder works on a local cursor and commits it only on success,
 * so a failed decode leaves the caller's position alone. */
#include "lib/spop_codec.h"

#include <string.h>

/* type(1) + flags(4) + stream-id(>=1) + frame-id(>=1) */
#define FRAME_HDR_MIN 7

/* Typed-data byte: low nibble is the type, high nibble flags. Only BOOL
 * uses a flag, and it carries the value. */
#define DATA_TYPE_MASK 0x0f
#define DATA_FL_TRUE 0x10

#define ACK_SET_VAR 1
#define ACK_UNSET_VAR 2

const char *dbk_spop_status_str(enum dbk_spop_status st)
{
	switch (st) {
	case DBK_SPOP_OK: return "normal";
	case DBK_SPOP_ERR_IO: return "I/O error";
	case DBK_SPOP_ERR_TIMEOUT: return "a timeout occurred";
	case DBK_SPOP_ERR_TOO_BIG: return "frame is too big";
	case DBK_SPOP_ERR_INVALID: return "invalid frame received";
	case DBK_SPOP_ERR_NO_VSN: return "version value not found";
	case DBK_SPOP_ERR_NO_FRAME_SIZE: return "max-frame-size value not found";
	case DBK_SPOP_ERR_NO_CAP: return "capabilities value not found";
	case DBK_SPOP_ERR_BAD_VSN: return "unsupported version";
	case DBK_SPOP_ERR_BAD_FRAME_SIZE: return "max-frame-size too big or too small";
	case DBK_SPOP_ERR_FRAG_NOT_SUPP: return "payload fragmentation is not supported";
	case DBK_SPOP_ERR_INTERLACED: return "invalid interlaced frames";
	case DBK_SPOP_ERR_FRAMEID_NOTFND: return "frame-id not found";
	case DBK_SPOP_ERR_RES: return "resource allocation error";
	case DBK_SPOP_ERR_UNKNOWN: break;
	}
	return "an unknown error occurred";
}

bool dbk_spop_frame_type_known(uint8_t type)
{
	switch (type) {
	case DBK_SPOP_HAPROXY_HELLO:
	case DBK_SPOP_HAPROXY_DISCONNECT:
	case DBK_SPOP_NOTIFY:
	case DBK_SPOP_AGENT_HELLO:
	case DBK_SPOP_AGENT_DISCONNECT:
	case DBK_SPOP_ACK: return true;
	}
	return false;
}

/* ---- Varint ---- */

size_t dbk_spop_varint_encode(uint64_t v, uint8_t *out, size_t cap)
{
	size_t n = 0;

	if (v < 240) {
		if (cap < 1)
			return 0;
		out[0] = (uint8_t)v;
		return 1;
	}
	if (cap < 1)
		return 0;
	out[n++] = (uint8_t)(v | 0xf0);
	v = (v - 240) >> 4;
	while (v >= 128) {
		if (n >= cap)
			return 0;
		out[n++] = (uint8_t)(v | 0x80);
		v = (v - 128) >> 7;
	}
	if (n >= cap)
		return 0;
	out[n++] = (uint8_t)v;
	return n;
}

enum dbk_spop_status dbk_spop_varint_decode(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t r, add;
	unsigned shift = 4;
	uint8_t b;

	if (q >= end)
		return DBK_SPOP_ERR_INVALID;
	r = *q++;
	if (r >= 240) {
		/* Continuation bytes keep their 0x80 bit as part of the value
		 * (the encoder subtracted it), so each one adds at least
		 * 128 << shift: overflow must be checked on both the shift
		 * and the sum. */
		do {
			if (q >= end || shift >= 64)
				return DBK_SPOP_ERR_INVALID;
			b = *q++;
			if (b > (UINT64_MAX >> shift))
				return DBK_SPOP_ERR_INVALID;
			add = (uint64_t)b << shift;
			if (add > UINT64_MAX - r)
				return DBK_SPOP_ERR_INVALID;
			r += add;
			shift += 7;
		} while (b >= 128);
	}
	*v = r;
	*p = q;
	return DBK_SPOP_OK;
}

/* ---- Decoding helpers ---- */

/* A length-prefixed byte string (names, and the body of STR/BIN). */
enum dbk_spop_status dbk_spop_get_name(const uint8_t **p, const uint8_t *end, const uint8_t **ptr,
                                       size_t *len)
{
	const uint8_t *q = *p;
	uint64_t n;

	if (dbk_spop_varint_decode(&q, end, &n) != DBK_SPOP_OK)
		return DBK_SPOP_ERR_INVALID;
	if (n > (uint64_t)(end - q))
		return DBK_SPOP_ERR_INVALID;
	*ptr = q;
	*len = (size_t)n;
	*p = q + n;
	return DBK_SPOP_OK;
}

/* An integer type's value from its varint; false when a 32-bit one
 * does not fit. Negative values arrive sign-extended to 64 bits, as
 * HAProxy converts its int to uint64_t before encoding. */
static bool int_set(struct dbk_spop_data *d, uint64_t v)
{
	switch (d->type) {
	case DBK_SPOP_T_INT32:
		if ((int64_t)v < INT32_MIN || (int64_t)v > INT32_MAX)
			return false;
		d->u.i32 = (int32_t)(int64_t)v;
		return true;
	case DBK_SPOP_T_UINT32:
		if (v > UINT32_MAX)
			return false;
		d->u.u32 = (uint32_t)v;
		return true;
	case DBK_SPOP_T_INT64: d->u.i64 = (int64_t)v; return true;
	default: d->u.u64 = v; return true;
	}
}

enum dbk_spop_status dbk_spop_data_decode(const uint8_t **p, const uint8_t *end,
                                          struct dbk_spop_data *d)
{
	const uint8_t *q = *p;
	struct dbk_spop_data out;
	uint64_t v;
	uint8_t tb;

	if (q >= end)
		return DBK_SPOP_ERR_INVALID;
	tb = *q++;
	memset(&out, 0, sizeof(out));
	out.type = (enum dbk_spop_type)(tb & DATA_TYPE_MASK);

	switch (tb & DATA_TYPE_MASK) {
	case DBK_SPOP_T_NULL: break;
	case DBK_SPOP_T_BOOL: out.u.b = (tb & DATA_FL_TRUE) != 0; break;
	case DBK_SPOP_T_INT32:
	case DBK_SPOP_T_UINT32:
	case DBK_SPOP_T_INT64:
	case DBK_SPOP_T_UINT64:
		if (dbk_spop_varint_decode(&q, end, &v) != DBK_SPOP_OK || !int_set(&out, v))
			return DBK_SPOP_ERR_INVALID;
		break;
	case DBK_SPOP_T_IPV4:
	case DBK_SPOP_T_IPV6: {
		size_t n = out.type == DBK_SPOP_T_IPV4 ? sizeof(out.u.ipv4) : sizeof(out.u.ipv6);

		if ((size_t)(end - q) < n)
			return DBK_SPOP_ERR_INVALID;
		memcpy(out.type == DBK_SPOP_T_IPV4 ? out.u.ipv4 : out.u.ipv6, q, n);
		q += n;
		break;
	}
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		if (dbk_spop_get_name(&q, end, &out.u.buf.ptr, &out.u.buf.len) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		break;
	default: return DBK_SPOP_ERR_INVALID;
	}
	*d = out;
	*p = q;
	return DBK_SPOP_OK;
}

bool dbk_spop_data_to_i64(const struct dbk_spop_data *d, int64_t *out)
{
	switch (d->type) {
	case DBK_SPOP_T_BOOL: *out = d->u.b; return true;
	case DBK_SPOP_T_INT32: *out = d->u.i32; return true;
	case DBK_SPOP_T_UINT32: *out = d->u.u32; return true;
	case DBK_SPOP_T_INT64: *out = d->u.i64; return true;
	case DBK_SPOP_T_UINT64:
		if (d->u.u64 > INT64_MAX)
			return false;
		*out = (int64_t)d->u.u64;
		return true;
	default: return false;
	}
}

/* ---- Writer ---- */

void dbk_spop_writer_init(struct dbk_spop_writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->overflow = false;
}

/* After the first overflow every write is dropped, even one that would
 * fit: a frame with a hole in it must never look valid. */
static void put_bytes(struct dbk_spop_writer *w, const void *src, size_t n)
{
	if (w->overflow || n > w->cap - w->len) {
		w->overflow = true;
		return;
	}
	if (n)
		memcpy(w->buf + w->len, src, n);
	w->len += n;
}

void dbk_spop_put_u8(struct dbk_spop_writer *w, uint8_t b) { put_bytes(w, &b, 1); }

void dbk_spop_put_varint(struct dbk_spop_writer *w, uint64_t v)
{
	uint8_t tmp[10];

	put_bytes(w, tmp, dbk_spop_varint_encode(v, tmp, sizeof(tmp)));
}

void dbk_spop_put_name(struct dbk_spop_writer *w, const char *s, size_t len)
{
	dbk_spop_put_varint(w, len);
	put_bytes(w, s, len);
}

void dbk_spop_put_kv(struct dbk_spop_writer *w, const char *key, const struct dbk_spop_data *v)
{
	dbk_spop_put_name(w, key, strlen(key));
	dbk_spop_put_data(w, v);
}

void dbk_spop_put_data(struct dbk_spop_writer *w, const struct dbk_spop_data *d)
{
	if ((unsigned)d->type > DBK_SPOP_T_BIN) {
		/* A caller bug; poison the frame rather than emit garbage. */
		w->overflow = true;
		return;
	}
	dbk_spop_put_u8(w, (uint8_t)d->type |
	                           (d->type == DBK_SPOP_T_BOOL && d->u.b ? DATA_FL_TRUE : 0));
	switch (d->type) {
	case DBK_SPOP_T_NULL:
	case DBK_SPOP_T_BOOL: break;
	/* Sign-extend, as HAProxy does: it decodes every integer type into
	 * an int64 by plain conversion. */
	case DBK_SPOP_T_INT32: dbk_spop_put_varint(w, (uint64_t)(int64_t)d->u.i32); break;
	case DBK_SPOP_T_UINT32: dbk_spop_put_varint(w, d->u.u32); break;
	case DBK_SPOP_T_INT64: dbk_spop_put_varint(w, (uint64_t)d->u.i64); break;
	case DBK_SPOP_T_UINT64: dbk_spop_put_varint(w, d->u.u64); break;
	case DBK_SPOP_T_IPV4: put_bytes(w, d->u.ipv4, 4); break;
	case DBK_SPOP_T_IPV6: put_bytes(w, d->u.ipv6, 16); break;
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		dbk_spop_put_varint(w, d->u.buf.len);
		put_bytes(w, d->u.buf.ptr, d->u.buf.len);
		break;
	}
}

static void put_be32(struct dbk_spop_writer *w, uint32_t v)
{
	uint8_t b[4] = {
		(uint8_t)(v >> 24),
		(uint8_t)(v >> 16),
		(uint8_t)(v >> 8),
		(uint8_t)v,
	};

	put_bytes(w, b, 4);
}

static uint32_t get_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

void dbk_spop_frame_begin(struct dbk_spop_writer *w, enum dbk_spop_frame_type type, uint32_t flags,
                          uint64_t stream_id, uint64_t frame_id)
{
	w->len = 0;
	w->overflow = false;
	put_be32(w, 0); /* patched by frame_end */
	dbk_spop_put_u8(w, (uint8_t)type);
	put_be32(w, flags);
	dbk_spop_put_varint(w, stream_id);
	dbk_spop_put_varint(w, frame_id);
}

size_t dbk_spop_frame_end(struct dbk_spop_writer *w)
{
	size_t body;

	if (w->overflow || w->len < 4 + FRAME_HDR_MIN)
		return 0;
	body = w->len - 4;
	if (body > UINT32_MAX)
		return 0;
	w->buf[0] = (uint8_t)(body >> 24);
	w->buf[1] = (uint8_t)(body >> 16);
	w->buf[2] = (uint8_t)(body >> 8);
	w->buf[3] = (uint8_t)body;
	return w->len;
}

/* ---- Reader ---- */

enum dbk_spop_status dbk_spop_frame_split(const uint8_t *buf, size_t avail, uint32_t max_frame_size,
                                          size_t *frame_len, bool *complete)
{
	uint32_t n;

	*complete = false;
	*frame_len = 0;
	if (avail < 4)
		return DBK_SPOP_OK;
	n = get_be32(buf);
	if (n == 0)
		return DBK_SPOP_ERR_INVALID;
	if (n > max_frame_size)
		return DBK_SPOP_ERR_TOO_BIG;
	*frame_len = n;
	*complete = avail - 4 >= n;
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spop_frame_parse(const uint8_t *buf, size_t len, struct dbk_spop_frame *f)
{
	const uint8_t *p = buf, *end;
	struct dbk_spop_frame out;

	if (len < FRAME_HDR_MIN)
		return DBK_SPOP_ERR_INVALID;
	end = buf + len;
	out.type = p[0];
	out.flags = get_be32(p + 1);
	p += 5;
	if (dbk_spop_varint_decode(&p, end, &out.stream_id) != DBK_SPOP_OK ||
	    dbk_spop_varint_decode(&p, end, &out.frame_id) != DBK_SPOP_OK)
		return DBK_SPOP_ERR_INVALID;
	out.payload = p;
	out.payload_len = (size_t)(end - p);
	*f = out;
	return DBK_SPOP_OK;
}

/* ---- KV lists (HELLO, DISCONNECT) ---- */

const uint8_t *dbk_spop_payload_end(const struct dbk_spop_frame *f)
{
	/* A hand-built frame may carry a NULL payload, and NULL + 0 is
	 * undefined. */
	return f->payload_len ? f->payload + f->payload_len : f->payload;
}

enum dbk_spop_status dbk_spop_kv_walk(const struct dbk_spop_frame *f, dbk_spop_kv_fn fn, void *ctx)
{
	const uint8_t *p = f->payload, *end = dbk_spop_payload_end(f);

	/* Each pair takes at least two bytes, so the walk ends. */
	while (p < end) {
		const uint8_t *k;
		size_t klen;
		struct dbk_spop_data v;
		enum dbk_spop_status st;

		if (dbk_spop_get_name(&p, end, &k, &klen) != DBK_SPOP_OK ||
		    dbk_spop_data_decode(&p, end, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		st = fn(ctx, k, klen, &v);
		if (st != DBK_SPOP_OK)
			return st;
	}
	return DBK_SPOP_OK;
}

/* ---- NOTIFY ---- */

void dbk_spop_msg_iter_init(struct dbk_spop_msg_iter *it, const struct dbk_spop_frame *f)
{
	it->p = f->payload;
	it->end = dbk_spop_payload_end(f);
}

enum dbk_spop_status dbk_spop_msg_next(struct dbk_spop_msg_iter *it, struct dbk_spop_message *m,
                                       bool *done)
{
	const uint8_t *q = it->p, *end = it->end;
	unsigned nb;

	*done = false;
	if (q >= end) {
		*done = true;
		return DBK_SPOP_OK;
	}
	m->nargs = 0;
	if (dbk_spop_get_name(&q, end, &m->name, &m->name_len) != DBK_SPOP_OK || q >= end)
		return DBK_SPOP_ERR_INVALID;
	nb = *q++;
	for (unsigned i = 0; i < nb; i++) {
		struct dbk_spop_arg a;

		if (dbk_spop_get_name(&q, end, &a.name, &a.name_len) != DBK_SPOP_OK ||
		    dbk_spop_data_decode(&q, end, &a.value) != DBK_SPOP_OK) {
			m->nargs = 0;
			return DBK_SPOP_ERR_INVALID;
		}
		if (i < DBK_SPOP_MAX_ARGS)
			m->args[m->nargs++] = a;
	}
	it->p = q;
	return DBK_SPOP_OK;
}

const struct dbk_spop_data *dbk_spop_msg_arg(const struct dbk_spop_message *m, const char *name)
{
	if (!name)
		return NULL;
	for (unsigned i = 0; i < m->nargs; i++)
		if (dbk_spop_name_is(m->args[i].name, m->args[i].name_len, name))
			return &m->args[i].value;
	return NULL;
}

/* ---- ACK ---- */

void dbk_spop_ack_begin(struct dbk_spop_writer *w, uint64_t stream_id, uint64_t frame_id)
{
	dbk_spop_frame_begin(w, DBK_SPOP_ACK, DBK_SPOP_FLAG_FIN, stream_id, frame_id);
}

/* An action's head: its type, its argument count, then the variable's
 * scope and name (the two arguments every action has). */
static void put_action(struct dbk_spop_writer *w, uint8_t type, uint8_t nargs,
                       enum dbk_spop_scope scope, const char *name)
{
	if (!name)
		name = "";
	dbk_spop_put_u8(w, type);
	dbk_spop_put_u8(w, nargs);
	dbk_spop_put_u8(w, (uint8_t)scope);
	dbk_spop_put_name(w, name, strlen(name));
}

void dbk_spop_ack_set_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope, const char *name,
                          const struct dbk_spop_data *v)
{
	put_action(w, ACK_SET_VAR, 3, scope, name);
	dbk_spop_put_data(w, v);
}

void dbk_spop_ack_unset_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope, const char *name)
{
	put_action(w, ACK_UNSET_VAR, 2, scope, name);
}

struct dbk_spop_data dbk_spop_str(const char *s)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_STR };

	if (s) {
		d.u.buf.ptr = (const uint8_t *)s;
		d.u.buf.len = strlen(s);
	}
	return d;
}

struct dbk_spop_data dbk_spop_int(int64_t v)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_INT64, .u.i64 = v };

	return d;
}

struct dbk_spop_data dbk_spop_bool(bool v)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_BOOL, .u.b = v };

	return d;
}
