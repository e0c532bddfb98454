/* SPOP codec. See spop.h for the contract; doc/SPOE.txt in HAProxy's tree
 * for the protocol. Every decoder works on a local cursor and commits it
 * only on success, so a failed decode leaves the caller's position alone. */
#include "lib/spop_codec.h"

#include <string.h>

/* type(1) + flags(4) + stream-id(>=1) + frame-id(>=1) */
#define FRAME_HDR_MIN 7

/* Typed-data byte: low nibble is the type, high nibble flags. Only BOOL
 * uses a flag, and it carries the value. */
#define DATA_TYPE_MASK 0x0f
#define DATA_FL_TRUE   0x10

#define ACK_SET_VAR   1
#define ACK_UNSET_VAR 2

const char *dbk_spop_status_str(enum dbk_spop_status st)
{
	switch (st) {
	case DBK_SPOP_OK:                 return "normal";
	case DBK_SPOP_ERR_IO:             return "I/O error";
	case DBK_SPOP_ERR_TIMEOUT:        return "a timeout occurred";
	case DBK_SPOP_ERR_TOO_BIG:        return "frame is too big";
	case DBK_SPOP_ERR_INVALID:        return "invalid frame received";
	case DBK_SPOP_ERR_NO_VSN:         return "version value not found";
	case DBK_SPOP_ERR_NO_FRAME_SIZE:  return "max-frame-size value not found";
	case DBK_SPOP_ERR_NO_CAP:         return "capabilities value not found";
	case DBK_SPOP_ERR_BAD_VSN:        return "unsupported version";
	case DBK_SPOP_ERR_BAD_FRAME_SIZE: return "max-frame-size too big or too small";
	case DBK_SPOP_ERR_FRAG_NOT_SUPP:  return "payload fragmentation is not supported";
	case DBK_SPOP_ERR_INTERLACED:     return "invalid interlaced frames";
	case DBK_SPOP_ERR_FRAMEID_NOTFND: return "frame-id not found";
	case DBK_SPOP_ERR_RES:            return "resource allocation error";
	case DBK_SPOP_ERR_UNKNOWN:        break;
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
	case DBK_SPOP_ACK:
		return true;
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

enum dbk_spop_status dbk_spop_varint_decode(const uint8_t **p,
                                            const uint8_t *end,
                                            uint64_t *v)
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
static enum dbk_spop_status get_bytes(const uint8_t **p, const uint8_t *end,
                                      const uint8_t **ptr, size_t *len)
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

enum dbk_spop_status dbk_spop_data_decode(const uint8_t **p,
                                          const uint8_t *end,
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
	case DBK_SPOP_T_NULL:
		break;
	case DBK_SPOP_T_BOOL:
		out.u.b = (tb & DATA_FL_TRUE) != 0;
		break;
	case DBK_SPOP_T_INT32:
		/* Negative values arrive sign-extended to 64 bits, as HAProxy
		 * converts its int to uint64_t before encoding. */
		if (dbk_spop_varint_decode(&q, end, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		if ((int64_t)v < INT32_MIN || (int64_t)v > INT32_MAX)
			return DBK_SPOP_ERR_INVALID;
		out.u.i32 = (int32_t)(int64_t)v;
		break;
	case DBK_SPOP_T_UINT32:
		if (dbk_spop_varint_decode(&q, end, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		if (v > UINT32_MAX)
			return DBK_SPOP_ERR_INVALID;
		out.u.u32 = (uint32_t)v;
		break;
	case DBK_SPOP_T_INT64:
		if (dbk_spop_varint_decode(&q, end, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		out.u.i64 = (int64_t)v;
		break;
	case DBK_SPOP_T_UINT64:
		if (dbk_spop_varint_decode(&q, end, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		out.u.u64 = v;
		break;
	case DBK_SPOP_T_IPV4:
		if (end - q < 4)
			return DBK_SPOP_ERR_INVALID;
		memcpy(out.u.ipv4, q, 4);
		q += 4;
		break;
	case DBK_SPOP_T_IPV6:
		if (end - q < 16)
			return DBK_SPOP_ERR_INVALID;
		memcpy(out.u.ipv6, q, 16);
		q += 16;
		break;
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		if (get_bytes(&q, end, &out.u.buf.ptr, &out.u.buf.len) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		break;
	default:
		return DBK_SPOP_ERR_INVALID;
	}
	*d = out;
	*p = q;
	return DBK_SPOP_OK;
}

bool dbk_spop_data_to_i64(const struct dbk_spop_data *d, int64_t *out)
{
	switch (d->type) {
	case DBK_SPOP_T_BOOL:   *out = d->u.b;   return true;
	case DBK_SPOP_T_INT32:  *out = d->u.i32; return true;
	case DBK_SPOP_T_UINT32: *out = d->u.u32; return true;
	case DBK_SPOP_T_INT64:  *out = d->u.i64; return true;
	case DBK_SPOP_T_UINT64:
		if (d->u.u64 > INT64_MAX)
			return false;
		*out = (int64_t)d->u.u64;
		return true;
	default:
		return false;
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

static void put_u8(struct dbk_spop_writer *w, uint8_t b)
{
	put_bytes(w, &b, 1);
}

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

void dbk_spop_put_data(struct dbk_spop_writer *w, const struct dbk_spop_data *d)
{
	switch (d->type) {
	case DBK_SPOP_T_NULL:
		put_u8(w, DBK_SPOP_T_NULL);
		break;
	case DBK_SPOP_T_BOOL:
		put_u8(w, DBK_SPOP_T_BOOL | (d->u.b ? DATA_FL_TRUE : 0));
		break;
	case DBK_SPOP_T_INT32:
		/* Sign-extend, as HAProxy does: it decodes every integer
		 * type into an int64 by plain conversion. */
		put_u8(w, DBK_SPOP_T_INT32);
		dbk_spop_put_varint(w, (uint64_t)(int64_t)d->u.i32);
		break;
	case DBK_SPOP_T_UINT32:
		put_u8(w, DBK_SPOP_T_UINT32);
		dbk_spop_put_varint(w, d->u.u32);
		break;
	case DBK_SPOP_T_INT64:
		put_u8(w, DBK_SPOP_T_INT64);
		dbk_spop_put_varint(w, (uint64_t)d->u.i64);
		break;
	case DBK_SPOP_T_UINT64:
		put_u8(w, DBK_SPOP_T_UINT64);
		dbk_spop_put_varint(w, d->u.u64);
		break;
	case DBK_SPOP_T_IPV4:
		put_u8(w, DBK_SPOP_T_IPV4);
		put_bytes(w, d->u.ipv4, 4);
		break;
	case DBK_SPOP_T_IPV6:
		put_u8(w, DBK_SPOP_T_IPV6);
		put_bytes(w, d->u.ipv6, 16);
		break;
	case DBK_SPOP_T_STR:
	case DBK_SPOP_T_BIN:
		put_u8(w, (uint8_t)d->type);
		dbk_spop_put_varint(w, d->u.buf.len);
		put_bytes(w, d->u.buf.ptr, d->u.buf.len);
		break;
	default:
		/* A caller bug; poison the frame rather than emit garbage. */
		w->overflow = true;
		break;
	}
}

static void put_be32(struct dbk_spop_writer *w, uint32_t v)
{
	uint8_t b[4] = {
		(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v,
	};

	put_bytes(w, b, 4);
}

static uint32_t get_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

void dbk_spop_frame_begin(struct dbk_spop_writer *w, enum dbk_spop_frame_type type,
                          uint32_t flags, uint64_t stream_id, uint64_t frame_id)
{
	w->len = 0;
	w->overflow = false;
	put_be32(w, 0); /* patched by frame_end */
	put_u8(w, (uint8_t)type);
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

enum dbk_spop_status dbk_spop_frame_split(const uint8_t *buf, size_t avail,
                                          uint32_t max_frame_size,
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

enum dbk_spop_status dbk_spop_frame_parse(const uint8_t *buf, size_t len,
                                          struct dbk_spop_frame *f)
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

/* A hand-built frame may carry a NULL payload, and NULL + 0 is undefined. */
static const uint8_t *payload_end(const struct dbk_spop_frame *f)
{
	return f->payload_len ? f->payload + f->payload_len : f->payload;
}

static enum dbk_spop_status kv_next(const uint8_t **p, const uint8_t *end,
                                    const uint8_t **key, size_t *key_len,
                                    struct dbk_spop_data *val)
{
	const uint8_t *q = *p;

	if (get_bytes(&q, end, key, key_len) != DBK_SPOP_OK ||
	    dbk_spop_data_decode(&q, end, val) != DBK_SPOP_OK)
		return DBK_SPOP_ERR_INVALID;
	*p = q;
	return DBK_SPOP_OK;
}

static bool bytes_eq(const uint8_t *b, size_t len, const char *s)
{
	size_t n = strlen(s);

	return len == n && (n == 0 || memcmp(b, s, n) == 0);
}

/* Calls fn on each trimmed token of a comma-separated list; stops and
 * returns true as soon as fn does. */
static bool list_any(const uint8_t *s, size_t len,
                     bool (*fn)(const uint8_t *tok, size_t tok_len))
{
	size_t i = 0;

	while (i <= len) {
		size_t a = i, b;

		while (i < len && s[i] != ',')
			i++;
		b = i;
		while (a < b && (s[a] == ' ' || s[a] == '\t'))
			a++;
		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
			b--;
		if (b > a && fn(s + a, b - a))
			return true;
		i++; /* past the comma, or past len to stop */
	}
	return false;
}

/* "2.<digits>": any 2.x minor is wire-compatible with what we speak. */
static bool is_v2(const uint8_t *t, size_t n)
{
	if (n < 3 || t[0] != '2' || t[1] != '.')
		return false;
	for (size_t i = 2; i < n; i++)
		if (t[i] < '0' || t[i] > '9')
			return false;
	return true;
}

static bool is_pipelining(const uint8_t *t, size_t n)
{
	return bytes_eq(t, n, "pipelining");
}

static bool is_int_type(enum dbk_spop_type t)
{
	return t == DBK_SPOP_T_INT32 || t == DBK_SPOP_T_UINT32 ||
	       t == DBK_SPOP_T_INT64 || t == DBK_SPOP_T_UINT64;
}

/* Reads an integer value into [0, UINT32_MAX]. Returns INVALID for a
 * non-integer type and, for an out-of-range one, the given status. */
static enum dbk_spop_status get_u32(const struct dbk_spop_data *d,
                                    enum dbk_spop_status range_err,
                                    uint32_t *out)
{
	int64_t v;

	if (!is_int_type(d->type))
		return DBK_SPOP_ERR_INVALID;
	if (!dbk_spop_data_to_i64(d, &v) || v < 0 || v > UINT32_MAX)
		return range_err;
	*out = (uint32_t)v;
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spop_hello_parse(const struct dbk_spop_frame *f,
                                          struct dbk_spop_hello *h)
{
	const uint8_t *p = f->payload, *end = payload_end(f);
	const uint8_t *vsn = NULL, *caps = NULL;
	size_t vsn_len = 0, caps_len = 0;
	bool have_mfs = false;
	enum dbk_spop_status st;

	memset(h, 0, sizeof(*h));
	if (f->type != DBK_SPOP_HAPROXY_HELLO || !(f->flags & DBK_SPOP_FLAG_FIN) ||
	    f->stream_id != 0 || f->frame_id != 0)
		return DBK_SPOP_ERR_INVALID;

	while (p < end) {
		const uint8_t *k;
		size_t klen;
		struct dbk_spop_data v;

		if (kv_next(&p, end, &k, &klen, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		if (bytes_eq(k, klen, "supported-versions")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			vsn = v.u.buf.ptr;
			vsn_len = v.u.buf.len;
		} else if (bytes_eq(k, klen, "max-frame-size")) {
			st = get_u32(&v, DBK_SPOP_ERR_BAD_FRAME_SIZE,
			             &h->max_frame_size);
			if (st != DBK_SPOP_OK)
				return st;
			have_mfs = true;
		} else if (bytes_eq(k, klen, "capabilities")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			caps = v.u.buf.ptr;
			caps_len = v.u.buf.len;
		} else if (bytes_eq(k, klen, "healthcheck")) {
			if (v.type != DBK_SPOP_T_BOOL)
				return DBK_SPOP_ERR_INVALID;
			h->healthcheck = v.u.b;
		} else if (bytes_eq(k, klen, "engine-id")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			h->engine_id = v.u.buf.ptr;
			h->engine_id_len = v.u.buf.len;
		}
	}

	/* vsn is non-NULL whenever the key was seen: it points into the
	 * payload even for an empty string. */
	if (!vsn)
		return DBK_SPOP_ERR_NO_VSN;
	if (!list_any(vsn, vsn_len, is_v2))
		return DBK_SPOP_ERR_BAD_VSN;
	if (!have_mfs)
		return DBK_SPOP_ERR_NO_FRAME_SIZE;
	if (h->max_frame_size < 256)
		return DBK_SPOP_ERR_BAD_FRAME_SIZE;
	if (!caps && !h->healthcheck)
		return DBK_SPOP_ERR_NO_CAP;
	if (caps)
		h->pipelining = list_any(caps, caps_len, is_pipelining);
	return DBK_SPOP_OK;
}

static void put_kv_str(struct dbk_spop_writer *w, const char *k, const char *v)
{
	struct dbk_spop_data d = dbk_spop_str(v);

	dbk_spop_put_name(w, k, strlen(k));
	dbk_spop_put_data(w, &d);
}

static void put_kv_u32(struct dbk_spop_writer *w, const char *k, uint32_t v)
{
	struct dbk_spop_data d = { .type = DBK_SPOP_T_UINT32, .u.u32 = v };

	dbk_spop_put_name(w, k, strlen(k));
	dbk_spop_put_data(w, &d);
}

size_t dbk_spop_agent_hello_build(uint8_t *out, size_t cap,
                                  uint32_t max_frame_size, bool pipelining)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_AGENT_HELLO, DBK_SPOP_FLAG_FIN, 0, 0);
	put_kv_str(&w, "version", "2.0");
	put_kv_u32(&w, "max-frame-size", max_frame_size);
	put_kv_str(&w, "capabilities", pipelining ? "pipelining" : "");
	return dbk_spop_frame_end(&w);
}

/* ---- DISCONNECT ---- */

size_t dbk_spop_disconnect_build(uint8_t *out, size_t cap,
                                 enum dbk_spop_status status,
                                 const char *message)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_AGENT_DISCONNECT, DBK_SPOP_FLAG_FIN, 0, 0);
	put_kv_u32(&w, "status-code", (uint32_t)status);
	put_kv_str(&w, "message", message ? message : dbk_spop_status_str(status));
	return dbk_spop_frame_end(&w);
}

enum dbk_spop_status dbk_spop_disconnect_parse(const struct dbk_spop_frame *f,
                                               uint32_t *status_code,
                                               const uint8_t **msg,
                                               size_t *msg_len)
{
	const uint8_t *p = f->payload, *end = payload_end(f);
	bool have_status = false;

	*msg = NULL;
	*msg_len = 0;
	if (f->type != DBK_SPOP_HAPROXY_DISCONNECT &&
	    f->type != DBK_SPOP_AGENT_DISCONNECT)
		return DBK_SPOP_ERR_INVALID;

	while (p < end) {
		const uint8_t *k;
		size_t klen;
		struct dbk_spop_data v;

		if (kv_next(&p, end, &k, &klen, &v) != DBK_SPOP_OK)
			return DBK_SPOP_ERR_INVALID;
		if (bytes_eq(k, klen, "status-code")) {
			if (get_u32(&v, DBK_SPOP_ERR_INVALID, status_code) != DBK_SPOP_OK)
				return DBK_SPOP_ERR_INVALID;
			have_status = true;
		} else if (bytes_eq(k, klen, "message")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			*msg = v.u.buf.ptr;
			*msg_len = v.u.buf.len;
		}
	}
	return have_status ? DBK_SPOP_OK : DBK_SPOP_ERR_INVALID;
}

/* ---- NOTIFY ---- */

void dbk_spop_msg_iter_init(struct dbk_spop_msg_iter *it,
                            const struct dbk_spop_frame *f)
{
	it->p = f->payload;
	it->end = payload_end(f);
}

enum dbk_spop_status dbk_spop_msg_next(struct dbk_spop_msg_iter *it,
                                       struct dbk_spop_message *m, bool *done)
{
	const uint8_t *q = it->p, *end = it->end;
	unsigned nb;

	*done = false;
	if (q >= end) {
		*done = true;
		return DBK_SPOP_OK;
	}
	m->nargs = 0;
	if (get_bytes(&q, end, &m->name, &m->name_len) != DBK_SPOP_OK || q >= end)
		return DBK_SPOP_ERR_INVALID;
	nb = *q++;
	for (unsigned i = 0; i < nb; i++) {
		struct dbk_spop_arg a;

		if (get_bytes(&q, end, &a.name, &a.name_len) != DBK_SPOP_OK ||
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

const struct dbk_spop_data *dbk_spop_msg_arg(const struct dbk_spop_message *m,
                                             const char *name)
{
	if (!name)
		return NULL;
	for (unsigned i = 0; i < m->nargs; i++)
		if (bytes_eq(m->args[i].name, m->args[i].name_len, name))
			return &m->args[i].value;
	return NULL;
}

/* ---- ACK ---- */

void dbk_spop_ack_begin(struct dbk_spop_writer *w, uint64_t stream_id,
                        uint64_t frame_id)
{
	dbk_spop_frame_begin(w, DBK_SPOP_ACK, DBK_SPOP_FLAG_FIN, stream_id, frame_id);
}

void dbk_spop_ack_set_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope,
                          const char *name, const struct dbk_spop_data *v)
{
	if (!name)
		name = "";
	put_u8(w, ACK_SET_VAR);
	put_u8(w, 3);
	put_u8(w, (uint8_t)scope);
	dbk_spop_put_name(w, name, strlen(name));
	dbk_spop_put_data(w, v);
}

void dbk_spop_ack_unset_var(struct dbk_spop_writer *w, enum dbk_spop_scope scope,
                            const char *name)
{
	if (!name)
		name = "";
	put_u8(w, ACK_UNSET_VAR);
	put_u8(w, 2);
	put_u8(w, (uint8_t)scope);
	dbk_spop_put_name(w, name, strlen(name));
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
