/* Fuzzes the SPOP reader as a connection sees it: the input is the byte
 * stream HAProxy sends (HELLO, then NOTIFY and DISCONNECT frames).
 *
 * Each frame goes through frame_split and frame_parse, then through the
 * HELLO, DISCONNECT and NOTIFY decoders whatever its type. Checked:
 * - frame_split and frame_parse follow spop_codec.h to the byte;
 * - hello_parse and disconnect_parse agree with a model written from
 *   spop_codec.h's contract (status, max-frame-size, pipelining, engine-id,
 *   status-code, message), and pointers stay inside the frame;
 * - after a HELLO, the agent's answer (dbk_spop_agent_hello_build with the
 *   negotiated size) fits in that size and parses back to what was built;
 * - DISCONNECT build -> parse gives back the code and message;
 * - typed values and varints found in the stream re-encode to the same
 *   bytes and decode to the same value; values built from input bytes
 *   survive encode -> decode. */
#include "spop_check.h"

#define OUR_MAX_FRAME 16380u /* the agent's default (config.h) */

/* ---- HELLO model ---- */

/* The next comma-separated token at or after *i, trimmed of blanks, as
 * [*a, *b); false past the end. */
static bool next_token(const uint8_t *s, size_t n, size_t *i, size_t *a, size_t *b)
{
	if (*i > n)
		return false;
	*a = *i;
	while (*i < n && s[*i] != ',')
		(*i)++;
	*b = (*i)++;
	while (*a < *b && (s[*a] == ' ' || s[*a] == '\t'))
		(*a)++;
	while (*b > *a && (s[*b - 1] == ' ' || s[*b - 1] == '\t'))
		(*b)--;
	return true;
}

static bool has_v2(const uint8_t *s, size_t n)
{
	size_t i = 0, a, b;

	while (next_token(s, n, &i, &a, &b)) {
		if (b - a >= 3 && s[a] == '2' && s[a + 1] == '.') {
			size_t k = a + 2;

			while (k < b && s[k] >= '0' && s[k] <= '9')
				k++;
			if (k == b)
				return true;
		}
	}
	return false;
}

static bool has_token(const uint8_t *s, size_t n, const char *tok)
{
	size_t i = 0, a, b, tl = strlen(tok);

	while (next_token(s, n, &i, &a, &b))
		if (b - a == tl && memcmp(s + a, tok, tl) == 0)
			return true;
	return false;
}

/* The integer of any integer type as a mathematical value, split in sign
 * and magnitude. */
static bool int_value(const struct dbk_spop_data *v, bool *neg, uint64_t *mag)
{
	switch (v->type) {
	case DBK_SPOP_T_INT32:
		*neg = v->u.i32 < 0;
		*mag = *neg ? (uint64_t)(-(int64_t)v->u.i32) : (uint64_t)v->u.i32;
		return true;
	case DBK_SPOP_T_UINT32:
		*neg = false;
		*mag = v->u.u32;
		return true;
	case DBK_SPOP_T_INT64:
		*neg = v->u.i64 < 0;
		*mag = *neg ? (uint64_t)0 - (uint64_t)v->u.i64 : (uint64_t)v->u.i64;
		return true;
	case DBK_SPOP_T_UINT64:
		*neg = false;
		*mag = v->u.u64;
		return true;
	default: return false;
	}
}

/* The model reads a KV list's pairs first, then judges them in order:
 * a bad value in a pair before a malformed one is what counts, as the
 * codec judges while it walks. A pair takes two bytes at least, and no
 * payload here exceeds our max frame. */
struct pair {
	const uint8_t *k;
	size_t kl;
	struct dbk_spop_data v;
};
#define MAX_PAIRS (OUR_MAX_FRAME / 2)
static struct pair pairs[MAX_PAIRS];

/* The well-formed pairs at the start of f's payload into pairs[]: their
 * count; *malformed tells whether a malformed one ends them. */
static long model_pairs(const struct dbk_spop_frame *f, bool *malformed)
{
	const uint8_t *p = f->payload, *end = f->payload + f->payload_len;
	long n = 0;

	*malformed = false;
	while (p < end) {
		FUZZ_CHECK(n < MAX_PAIRS);
		if (!model_kv(&p, end, &pairs[n].k, &pairs[n].kl, &pairs[n].v)) {
			*malformed = true;
			break;
		}
		n++;
	}
	return n;
}

struct hello_model {
	uint32_t mfs;
	bool hc, pipelining;
	const uint8_t *eid;
	size_t eid_len;
};

static enum dbk_spop_status model_hello(const struct dbk_spop_frame *f, struct hello_model *h)
{
	const uint8_t *vsn = NULL, *caps = NULL;
	size_t vsn_len = 0, caps_len = 0;
	bool have_mfs = false;

	memset(h, 0, sizeof(*h));
	if (f->type != DBK_SPOP_HAPROXY_HELLO || !(f->flags & DBK_SPOP_FLAG_FIN) || f->stream_id ||
	    f->frame_id)
		return DBK_SPOP_ERR_INVALID;
	bool malformed;
	long n = model_pairs(f, &malformed);

	for (long i = 0; i < n; i++) {
		const uint8_t *k = pairs[i].k;
		size_t kl = pairs[i].kl;
		struct dbk_spop_data v = pairs[i].v;
		bool neg;
		uint64_t mag;

		if (key_is(k, kl, "supported-versions")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			vsn = v.u.buf.ptr;
			vsn_len = v.u.buf.len;
		} else if (key_is(k, kl, "max-frame-size")) {
			if (!int_value(&v, &neg, &mag))
				return DBK_SPOP_ERR_INVALID;
			if (neg || mag > UINT32_MAX)
				return DBK_SPOP_ERR_BAD_FRAME_SIZE;
			h->mfs = (uint32_t)mag;
			have_mfs = true;
		} else if (key_is(k, kl, "capabilities")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			caps = v.u.buf.ptr;
			caps_len = v.u.buf.len;
		} else if (key_is(k, kl, "healthcheck")) {
			if (v.type != DBK_SPOP_T_BOOL)
				return DBK_SPOP_ERR_INVALID;
			h->hc = v.u.b;
		} else if (key_is(k, kl, "engine-id")) {
			if (v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			h->eid = v.u.buf.ptr;
			h->eid_len = v.u.buf.len;
		}
	}
	if (malformed)
		return DBK_SPOP_ERR_INVALID;
	if (!vsn)
		return DBK_SPOP_ERR_NO_VSN;
	if (!has_v2(vsn, vsn_len))
		return DBK_SPOP_ERR_BAD_VSN;
	if (!have_mfs)
		return DBK_SPOP_ERR_NO_FRAME_SIZE;
	if (h->mfs < 256)
		return DBK_SPOP_ERR_BAD_FRAME_SIZE;
	if (!caps && !h->hc)
		return DBK_SPOP_ERR_NO_CAP;
	h->pipelining = caps && has_token(caps, caps_len, "pipelining");
	return DBK_SPOP_OK;
}

/* The agent's HELLO, read back: exactly version, max-frame-size and
 * capabilities, with the values it was built from. */
static void check_agent_hello(uint32_t mfs, bool pipelining)
{
	size_t cap = (size_t)mfs + 4;
	uint8_t *out = malloc(cap);
	size_t n, flen;
	bool complete;
	struct dbk_spop_frame f;
	int seen = 0;

	FUZZ_CHECK(out != NULL);
	n = dbk_spop_agent_hello_build(out, cap, mfs, pipelining);
	FUZZ_CHECK(n > 4 && n <= cap);
	FUZZ_CHECK(dbk_spop_frame_split(out, n, mfs, &flen, &complete) == DBK_SPOP_OK);
	FUZZ_CHECK(complete && flen == n - 4);
	FUZZ_CHECK(dbk_spop_frame_parse(out + 4, flen, &f) == DBK_SPOP_OK);
	FUZZ_CHECK(f.type == DBK_SPOP_AGENT_HELLO && f.flags == DBK_SPOP_FLAG_FIN);
	FUZZ_CHECK(f.stream_id == 0 && f.frame_id == 0);
	bool malformed;
	long npairs = model_pairs(&f, &malformed);
	FUZZ_CHECK(!malformed);
	for (long i = 0; i < npairs; i++) {
		const struct pair *kv = &pairs[i];

		if (key_is(kv->k, kv->kl, "version")) {
			FUZZ_CHECK(buf_is(&kv->v, "2.0"));
			seen |= 1;
		} else if (key_is(kv->k, kv->kl, "max-frame-size")) {
			FUZZ_CHECK(kv->v.type == DBK_SPOP_T_UINT32 && kv->v.u.u32 == mfs);
			seen |= 2;
		} else if (key_is(kv->k, kv->kl, "capabilities")) {
			FUZZ_CHECK(buf_is(&kv->v, pipelining ? "pipelining" : ""));
			seen |= 4;
		} else {
			FUZZ_CHECK(!"unexpected key in AGENT-HELLO");
		}
	}
	FUZZ_CHECK(seen == 7);
	/* It is not a HAPROXY-HELLO. */
	struct dbk_spop_hello h;
	FUZZ_CHECK(dbk_spop_hello_parse(&f, &h) == DBK_SPOP_ERR_INVALID);
	/* Too small a buffer is refused, never overrun. */
	FUZZ_CHECK(dbk_spop_agent_hello_build(out, n - 1, mfs, pipelining) == 0);
	free(out);
}

static void check_hello(const struct dbk_spop_frame *f, const uint8_t *body, size_t len,
                        uint32_t *frame_max)
{
	struct dbk_spop_hello h;
	struct hello_model m;
	enum dbk_spop_status st = dbk_spop_hello_parse(f, &h);
	enum dbk_spop_status want = model_hello(f, &m);

	FUZZ_CHECK(st == want);
	if (st != DBK_SPOP_OK)
		return;
	FUZZ_CHECK(h.max_frame_size == m.mfs && h.max_frame_size >= 256);
	FUZZ_CHECK(h.healthcheck == m.hc && h.pipelining == m.pipelining);
	FUZZ_CHECK(h.engine_id == m.eid && h.engine_id_len == m.eid_len);
	FUZZ_CHECK(fuzz_inside(h.engine_id, h.engine_id_len, body, len));

	/* Negotiation as spop_server.c does it: the smaller of the two sizes. */
	uint32_t mfs = h.max_frame_size < OUR_MAX_FRAME ? h.max_frame_size : OUR_MAX_FRAME;
	check_agent_hello(mfs, h.pipelining);
	*frame_max = mfs;
}

/* ---- DISCONNECT ---- */

static enum dbk_spop_status model_disconnect(const struct dbk_spop_frame *f, uint32_t *code,
                                             const uint8_t **msg, size_t *msg_len)
{
	bool have = false, malformed;
	long n;

	*msg = NULL;
	*msg_len = 0;
	if (f->type != DBK_SPOP_HAPROXY_DISCONNECT && f->type != DBK_SPOP_AGENT_DISCONNECT)
		return DBK_SPOP_ERR_INVALID;
	n = model_pairs(f, &malformed);
	for (long i = 0; i < n; i++) {
		const struct pair *kv = &pairs[i];
		bool neg;
		uint64_t mag;

		if (key_is(kv->k, kv->kl, "status-code")) {
			if (!int_value(&kv->v, &neg, &mag) || neg || mag > UINT32_MAX)
				return DBK_SPOP_ERR_INVALID;
			*code = (uint32_t)mag;
			have = true;
		} else if (key_is(kv->k, kv->kl, "message")) {
			if (kv->v.type != DBK_SPOP_T_STR)
				return DBK_SPOP_ERR_INVALID;
			*msg = kv->v.u.buf.ptr;
			*msg_len = kv->v.u.buf.len;
		}
	}
	return have && !malformed ? DBK_SPOP_OK : DBK_SPOP_ERR_INVALID;
}

static void check_disconnect_roundtrip(uint32_t code, const char *msg)
{
	size_t ml = msg ? strlen(msg) : strlen(dbk_spop_status_str((enum dbk_spop_status)code));
	size_t cap = 4 + 7 + 40 + ml + 10;
	uint8_t *out = malloc(cap);
	size_t n, flen;
	bool complete;
	struct dbk_spop_frame f;
	uint32_t code2 = 0;
	const uint8_t *m2;
	size_t m2l;
	const char *want = msg ? msg : dbk_spop_status_str((enum dbk_spop_status)code);

	FUZZ_CHECK(out != NULL);
	n = dbk_spop_disconnect_build(out, cap, (enum dbk_spop_status)code, msg);
	FUZZ_CHECK(n > 4 && n <= cap);
	FUZZ_CHECK(dbk_spop_frame_split(out, n, UINT32_MAX, &flen, &complete) == DBK_SPOP_OK);
	FUZZ_CHECK(complete && flen == n - 4);
	FUZZ_CHECK(dbk_spop_frame_parse(out + 4, flen, &f) == DBK_SPOP_OK);
	FUZZ_CHECK(f.type == DBK_SPOP_AGENT_DISCONNECT && (f.flags & DBK_SPOP_FLAG_FIN));
	FUZZ_CHECK(dbk_spop_disconnect_parse(&f, &code2, &m2, &m2l) == DBK_SPOP_OK);
	FUZZ_CHECK(code2 == code && m2l == strlen(want) &&
	           (m2l == 0 || memcmp(m2, want, m2l) == 0));
	FUZZ_CHECK(dbk_spop_disconnect_build(out, n - 1, (enum dbk_spop_status)code, msg) == 0);
	free(out);
}

static void check_disconnect(const struct dbk_spop_frame *f, const uint8_t *body, size_t len)
{
	uint32_t code = 0xdeadbeef, mcode = 0xdeadbeef;
	const uint8_t *msg, *mmsg;
	size_t ml, mml;
	enum dbk_spop_status st = dbk_spop_disconnect_parse(f, &code, &msg, &ml);
	enum dbk_spop_status want = model_disconnect(f, &mcode, &mmsg, &mml);

	FUZZ_CHECK(st == want);
	if (st != DBK_SPOP_OK)
		return;
	FUZZ_CHECK(code == mcode && msg == mmsg && ml == mml);
	FUZZ_CHECK(fuzz_inside(msg, ml, body, len));
	if (msg && memchr(msg, 0, ml) == NULL) {
		char *s = malloc(ml + 1);

		FUZZ_CHECK(s != NULL);
		memcpy(s, msg, ml);
		s[ml] = '\0';
		check_disconnect_roundtrip(code, s);
		free(s);
	}
	check_disconnect_roundtrip(code, NULL);
}

/* ---- NOTIFY (lightly; fuzz_notify.c goes deep) ---- */

static void check_notify_iter(const struct dbk_spop_frame *f, const uint8_t *body, size_t len)
{
	struct dbk_spop_msg_iter it;
	static struct dbk_spop_message m;
	bool done = false;
	size_t rounds = 0;

	dbk_spop_msg_iter_init(&it, f);
	for (;;) {
		const uint8_t *before = it.p;
		enum dbk_spop_status st = dbk_spop_msg_next(&it, &m, &done);

		if (st != DBK_SPOP_OK) {
			FUZZ_CHECK(st == DBK_SPOP_ERR_INVALID && it.p == before);
			/* It keeps failing. */
			FUZZ_CHECK(dbk_spop_msg_next(&it, &m, &done) == st && it.p == before);
			return;
		}
		if (done) {
			FUZZ_CHECK(it.p == f->payload + f->payload_len);
			return;
		}
		FUZZ_CHECK(it.p > before && ++rounds <= len);
		FUZZ_CHECK(fuzz_inside(m.name, m.name_len, body, len));
		FUZZ_CHECK(m.nargs <= DBK_SPOP_MAX_ARGS);
		for (unsigned i = 0; i < m.nargs; i++)
			FUZZ_CHECK(fuzz_inside(m.args[i].name, m.args[i].name_len, body, len));
	}
}

/* ---- driver ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t frame_max = OUR_MAX_FRAME;
	size_t off = 0;

	/* A frame built by hand may carry a NULL payload (spop_codec.c guards it). */
	{
		struct dbk_spop_frame nf = { .type = DBK_SPOP_HAPROXY_HELLO,
			                     .flags = DBK_SPOP_FLAG_FIN };
		struct dbk_spop_hello h;
		struct dbk_spop_msg_iter it;
		static struct dbk_spop_message m;
		uint32_t c;
		const uint8_t *msg;
		size_t ml;
		bool done;

		FUZZ_CHECK(dbk_spop_hello_parse(&nf, &h) == DBK_SPOP_ERR_NO_VSN);
		nf.type = DBK_SPOP_HAPROXY_DISCONNECT;
		FUZZ_CHECK(dbk_spop_disconnect_parse(&nf, &c, &msg, &ml) == DBK_SPOP_ERR_INVALID);
		dbk_spop_msg_iter_init(&it, &nf);
		FUZZ_CHECK(dbk_spop_msg_next(&it, &m, &done) == DBK_SPOP_OK && done);
	}

	while (off < size) {
		size_t flen = 12345;
		bool complete = true;
		enum dbk_spop_status st = dbk_spop_frame_split(data + off, size - off, frame_max,
		                                               &flen, &complete);

		check_split(data + off, size - off, frame_max, st, flen, complete);
		if (st != DBK_SPOP_OK || !complete)
			break;

		/* The frame body in a buffer of its own size. */
		uint8_t *body = fuzz_dup(data + off + 4, flen);
		struct dbk_spop_frame f;

		memset(&f, 0, sizeof(f));
		st = dbk_spop_frame_parse(body, flen, &f);
		check_parse(body, flen, st, &f);
		if (st == DBK_SPOP_OK) {
			check_hello(&f, body, flen, &frame_max);
			check_disconnect(&f, body, flen);
			check_notify_iter(&f, body, flen);
		}
		/* Varints and typed values at the first offsets of the body. */
		for (size_t i = 0; i < flen && i < 48; i++) {
			const uint8_t *p = body + i;
			struct dbk_spop_data d;

			check_varint_bytes(body + i, flen - i);
			(void)check_data_at(&p, body + flen, body, flen, &d);
		}
		free(body);
		off += 4 + flen;
	}

	/* Values built from the input's last bytes. */
	struct fuzz_in in = { data + size - (size < 24 ? size : 24), size < 24 ? size : 24 };
	check_data_from_input(&in);
	return 0;
}
