/* Frames as HAProxy sends them and readers for the agent's answers,
 * shared by the unit tests of the router and of the server. */
#include "frames.h"

#include <string.h>

size_t test_haproxy_hello(uint8_t *out, size_t cap, uint32_t max_frame, bool hc)
{
	return dbk_spop_haproxy_hello_build(out, cap, max_frame, hc ? "" : "pipelining,async", hc,
	                                    NULL);
}

/* A NOTIFY shaped like HAProxy 2.6's for spoe-message dbucket-route. */
size_t test_notify_details(uint8_t *out, size_t cap, uint64_t sid, uint64_t fid, uint32_t flags,
                           const char *id, int64_t blen, bool details)
{
	struct dbk_spop_writer w;
	struct dbk_spop_data v = dbk_spop_str(id);
	static const char body[] = "{\"prompt\":\"hello\",\"max_tokens\":8}";

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, flags, sid, fid);
	dbk_spop_put_name(&w, "dbucket-route", 13);
	dbk_spop_put_u8(&w, details ? 4 : 3);
	dbk_spop_put_kv(&w, "id", &v);
	v = dbk_spop_int(blen);
	dbk_spop_put_kv(&w, "blen", &v);
	v = (struct dbk_spop_data){ .type = DBK_SPOP_T_BIN,
		                    .u.buf = { (const uint8_t *)body, sizeof(body) - 1 } };
	dbk_spop_put_kv(&w, "body", &v);
	if (details) {
		v = dbk_spop_bool(true);
		dbk_spop_put_kv(&w, "details", &v);
	}
	return dbk_spop_frame_end(&w);
}

size_t test_notify(uint8_t *out, size_t cap, uint64_t sid, uint64_t fid, uint32_t flags,
                   const char *id, int64_t blen)
{
	return test_notify_details(out, cap, sid, fid, flags, id, blen, false);
}

/* Looks up a set-var action by name in an ACK; returns its value. */
bool test_ack_var(const struct dbk_spop_frame *f, const char *name, struct dbk_spop_data *out)
{
	const uint8_t *p = f->payload, *end = f->payload + f->payload_len;

	while (p < end) {
		uint8_t action = *p++;
		if (p >= end)
			return false;
		uint8_t nargs = *p++;
		if (p >= end)
			return false;
		p++; /* scope */
		uint64_t nlen;
		if (dbk_spop_varint_decode(&p, end, &nlen) != DBK_SPOP_OK ||
		    nlen > (uint64_t)(end - p))
			return false;
		const uint8_t *nm = p;
		p += nlen;
		struct dbk_spop_data v = { .type = DBK_SPOP_T_NULL };
		if (action == 1 && nargs == 3 && dbk_spop_data_decode(&p, end, &v) != DBK_SPOP_OK)
			return false;
		if (nlen == strlen(name) && memcmp(nm, name, nlen) == 0) {
			*out = v;
			return true;
		}
	}
	return false;
}

bool test_var_is(const struct dbk_spop_frame *f, const char *name, const char *want)
{
	struct dbk_spop_data v;

	return test_ack_var(f, name, &v) && v.type == DBK_SPOP_T_STR &&
	       v.u.buf.len == strlen(want) && memcmp(v.u.buf.ptr, want, v.u.buf.len) == 0;
}

uint32_t test_disconnect_status(const struct dbk_spop_frame *f)
{
	uint32_t code = 12345;
	const uint8_t *msg;
	size_t mlen;

	if (f->type != DBK_SPOP_AGENT_DISCONNECT ||
	    dbk_spop_disconnect_parse(f, &code, &msg, &mlen) != DBK_SPOP_OK)
		return 12345;
	return code;
}

/* A NOTIFY with one message `msg` and the given args (name, value). */
size_t test_notify_args(uint8_t *out, size_t cap, const char *msg, unsigned n,
                        const char *const *argn, const struct dbk_spop_data *argv)
{
	struct dbk_spop_writer w;

	dbk_spop_writer_init(&w, out, cap);
	dbk_spop_frame_begin(&w, DBK_SPOP_NOTIFY, DBK_SPOP_FLAG_FIN, 3, 4);
	dbk_spop_put_name(&w, msg, strlen(msg));
	if (w.len < w.cap)
		w.buf[w.len++] = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		dbk_spop_put_name(&w, argn[i], strlen(argn[i]));
		dbk_spop_put_data(&w, &argv[i]);
	}
	return dbk_spop_frame_end(&w);
}
