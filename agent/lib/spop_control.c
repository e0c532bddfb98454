/* SPOP's control frames, HELLO and DISCONNECT: their KV lists, parsed
 * and written over the primitives of spop_codec.c. Once per connection,
 * not per request. See spop_codec.h for the contract. */
#include "lib/spop_codec.h"

#include <string.h>

static bool list_any(const uint8_t *s, size_t len, bool (*fn)(const uint8_t *tok, size_t tok_len))
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
	return dbk_spop_name_is(t, n, "pipelining");
}

static bool is_int_type(enum dbk_spop_type t)
{
	return t == DBK_SPOP_T_INT32 || t == DBK_SPOP_T_UINT32 || t == DBK_SPOP_T_INT64 ||
	       t == DBK_SPOP_T_UINT64;
}

/* Reads an integer value into [0, UINT32_MAX]. Returns INVALID for a
 * non-integer type and, for an out-of-range one, the given status. */
static enum dbk_spop_status get_u32(const struct dbk_spop_data *d, enum dbk_spop_status range_err,
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

/* A string value's bytes; INVALID for another type. */
static enum dbk_spop_status get_str(const struct dbk_spop_data *v, const uint8_t **s, size_t *len)
{
	if (v->type != DBK_SPOP_T_STR)
		return DBK_SPOP_ERR_INVALID;
	*s = v->u.buf.ptr;
	*len = v->u.buf.len;
	return DBK_SPOP_OK;
}

struct hello_seen {
	struct dbk_spop_hello *h;
	const uint8_t *vsn, *caps;
	size_t vsn_len, caps_len;
	bool have_mfs;
};

static enum dbk_spop_status hello_kv(void *ctx, const uint8_t *k, size_t klen,
                                     const struct dbk_spop_data *v)
{
	struct hello_seen *x = ctx;

	if (dbk_spop_name_is(k, klen, "supported-versions"))
		return get_str(v, &x->vsn, &x->vsn_len);
	if (dbk_spop_name_is(k, klen, "max-frame-size")) {
		x->have_mfs = true;
		return get_u32(v, DBK_SPOP_ERR_BAD_FRAME_SIZE, &x->h->max_frame_size);
	}
	if (dbk_spop_name_is(k, klen, "capabilities"))
		return get_str(v, &x->caps, &x->caps_len);
	if (dbk_spop_name_is(k, klen, "healthcheck")) {
		if (v->type != DBK_SPOP_T_BOOL)
			return DBK_SPOP_ERR_INVALID;
		x->h->healthcheck = v->u.b;
	} else if (dbk_spop_name_is(k, klen, "engine-id")) {
		return get_str(v, &x->h->engine_id, &x->h->engine_id_len);
	}
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spop_hello_parse(const struct dbk_spop_frame *f, struct dbk_spop_hello *h)
{
	struct hello_seen x = { .h = h };
	enum dbk_spop_status st;

	memset(h, 0, sizeof(*h));
	if (f->type != DBK_SPOP_HAPROXY_HELLO || !(f->flags & DBK_SPOP_FLAG_FIN) ||
	    f->stream_id != 0 || f->frame_id != 0)
		return DBK_SPOP_ERR_INVALID;
	st = dbk_spop_kv_walk(f, hello_kv, &x);
	if (st != DBK_SPOP_OK)
		return st;
	/* vsn is non-NULL whenever the key was seen: it points into the
	 * payload even for an empty string. */
	if (!x.vsn)
		return DBK_SPOP_ERR_NO_VSN;
	if (!list_any(x.vsn, x.vsn_len, is_v2))
		return DBK_SPOP_ERR_BAD_VSN;
	if (!x.have_mfs)
		return DBK_SPOP_ERR_NO_FRAME_SIZE;
	if (h->max_frame_size < 256)
		return DBK_SPOP_ERR_BAD_FRAME_SIZE;
	if (!x.caps && !h->healthcheck)
		return DBK_SPOP_ERR_NO_CAP;
	if (x.caps)
		h->pipelining = list_any(x.caps, x.caps_len, is_pipelining);
	return DBK_SPOP_OK;
}

/* A control frame: stream 0, frame 0, FIN, and a KV list (either
 * side's HELLO and DISCONNECT). */
struct control_kv {
	const char *key;
	struct dbk_spop_data v;
};

static size_t control_build(uint8_t *out, size_t cap, enum dbk_spop_frame_type type,
                            const struct control_kv *kv, size_t n)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, type, DBK_SPOP_FLAG_FIN, 0, 0);
	for (size_t i = 0; i < n; i++)
		dbk_spop_put_kv(&w, kv[i].key, &kv[i].v);
	return dbk_spop_frame_end(&w);
}

static struct dbk_spop_data u32_data(uint32_t x)
{
	return (struct dbk_spop_data){ .type = DBK_SPOP_T_UINT32, .u.u32 = x };
}

size_t dbk_spop_agent_hello_build(uint8_t *out, size_t cap, uint32_t max_frame_size,
                                  bool pipelining)
{
	const struct control_kv kv[] = {
		{ "version", dbk_spop_str("2.0") },
		{ "max-frame-size", u32_data(max_frame_size) },
		{ "capabilities", dbk_spop_str(pipelining ? "pipelining" : "") },
	};

	return control_build(out, cap, DBK_SPOP_AGENT_HELLO, kv, sizeof(kv) / sizeof(kv[0]));
}

size_t dbk_spop_haproxy_hello_build(uint8_t *out, size_t cap, uint32_t max_frame_size,
                                    const char *capabilities, bool healthcheck,
                                    const char *engine_id)
{
	struct control_kv kv[5] = {
		{ "supported-versions", dbk_spop_str("2.0") },
		{ "max-frame-size", u32_data(max_frame_size) },
		{ "capabilities", dbk_spop_str(capabilities) },
	};
	size_t n = 3;

	if (healthcheck)
		kv[n++] = (struct control_kv){ "healthcheck", dbk_spop_bool(true) };
	if (engine_id)
		kv[n++] = (struct control_kv){ "engine-id", dbk_spop_str(engine_id) };
	return control_build(out, cap, DBK_SPOP_HAPROXY_HELLO, kv, n);
}

/* ---- DISCONNECT ---- */

size_t dbk_spop_disconnect_build(uint8_t *out, size_t cap, enum dbk_spop_status status,
                                 const char *message)
{
	const struct control_kv kv[] = {
		{ "status-code", u32_data((uint32_t)status) },
		{ "message", dbk_spop_str(message ? message : dbk_spop_status_str(status)) },
	};

	return control_build(out, cap, DBK_SPOP_AGENT_DISCONNECT, kv, sizeof(kv) / sizeof(kv[0]));
}

struct disconnect_seen {
	uint32_t *status_code;
	const uint8_t **msg;
	size_t *msg_len;
	bool have_status;
};

static enum dbk_spop_status disconnect_kv(void *ctx, const uint8_t *k, size_t klen,
                                          const struct dbk_spop_data *v)
{
	struct disconnect_seen *x = ctx;

	if (dbk_spop_name_is(k, klen, "status-code")) {
		x->have_status = true;
		return get_u32(v, DBK_SPOP_ERR_INVALID, x->status_code);
	}
	if (dbk_spop_name_is(k, klen, "message"))
		return get_str(v, x->msg, x->msg_len);
	return DBK_SPOP_OK;
}

enum dbk_spop_status dbk_spop_disconnect_parse(const struct dbk_spop_frame *f,
                                               uint32_t *status_code, const uint8_t **msg,
                                               size_t *msg_len)
{
	struct disconnect_seen x = { status_code, msg, msg_len, false };

	*msg = NULL;
	*msg_len = 0;
	if (f->type != DBK_SPOP_HAPROXY_DISCONNECT && f->type != DBK_SPOP_AGENT_DISCONNECT)
		return DBK_SPOP_ERR_INVALID;
	if (dbk_spop_kv_walk(f, disconnect_kv, &x) != DBK_SPOP_OK)
		return DBK_SPOP_ERR_INVALID;
	return x.have_status ? DBK_SPOP_OK : DBK_SPOP_ERR_INVALID;
}
