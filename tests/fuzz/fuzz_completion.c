/* Fuzzes the completion-event receiver: octet-count framing
 * (dbk_completion_frame) over a byte stream, and each framed message
 * through the dbk1 line parser (dbk_completion_parse).
 *
 * Input: the bytes HAProxy's ring forwards ("<len> <line>" ...).
 *
 * Checked:
 * - framing agrees with a model of RFC 6587 as completion.h states it;
 *   on OK, 0 < consumed <= len and the message is the consumed tail; a
 *   frame never becomes BAD_FRAME by being cut short (every prefix of a
 *   whole frame is NEED_MORE);
 * - the parser agrees with a model of completion.h's field list, every
 *   string it returns lies inside the line and holds no space, numbers
 *   are within their stated ranges; trailing CR/LF change nothing; a
 *   quoted id ("..." with '\\' escapes, HAProxy's %{+Q,+E}ID) may hold
 *   spaces and comes out unescaped;
 * - round trip: the parsed fields written back as a dbk1 line parse to
 *   the same values. */
#include "completion.h"
#include "fuzz.h"

/* ---- framing model ---- */

static enum dbk_completion_status model_frame(const char *b, size_t len, size_t *mstart,
                                              size_t *mlen)
{
	size_t i = 0, n = 0;

	if (len > 0 && b[0] == '0')
		return DBK_COMPLETION_BAD_FRAME;
	while (i < len && b[i] >= '0' && b[i] <= '9') {
		n = n * 10 + (size_t)(b[i] - '0');
		if (n > DBK_COMPLETION_MAX_LINE)
			return DBK_COMPLETION_BAD_FRAME;
		i++;
	}
	if (i == len)
		return DBK_COMPLETION_NEED_MORE;
	if (i == 0 || b[i] != ' ')
		return DBK_COMPLETION_BAD_FRAME;
	if (len - i - 1 < n)
		return DBK_COMPLETION_NEED_MORE;
	*mstart = i + 1;
	*mlen = n;
	return DBK_COMPLETION_OK;
}

static void check_frame(const char *b, size_t len, enum dbk_completion_status st, const char *msg,
                        size_t ml, size_t used)
{
	size_t ms = 0, mml = 0;
	enum dbk_completion_status want = model_frame(b, len, &ms, &mml);

	FUZZ_CHECK(st == want);
	if (st != DBK_COMPLETION_OK)
		return;
	FUZZ_CHECK(used > 0 && used <= len);
	FUZZ_CHECK(msg == b + ms && ml == mml && ms + ml == used);
	FUZZ_CHECK(fuzz_inside(msg, ml, b, len));
	FUZZ_CHECK(ml <= DBK_COMPLETION_MAX_LINE);
}

/* ---- line model ---- */

static bool model_number(const char *f, size_t n, int64_t *out)
{
	bool neg = false;
	int64_t v = 0;

	if (n == 1 && f[0] == '-') {
		*out = -1;
		return true;
	}
	if (n > 0 && (f[0] == '+' || f[0] == '-')) {
		neg = f[0] == '-';
		f++;
		n--;
	}
	if (n < 1 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9')
			return false;
		v = v * 10 + (f[i] - '0');
	}
	*out = neg ? -v : v;
	return true;
}

#define NFIELDS 10

/* A quoted id at line[*pos] (the opening quote), unescaped into c. */
static bool model_quoted(const char *line, size_t len, size_t *pos, struct dbk_completion *c,
                         size_t *n)
{
	size_t q = *pos + 1;

	*n = 0;
	for (;;) {
		if (q == len)
			return false;
		char ch = line[q++];
		if (ch == '"')
			break;
		if (ch == '\\') {
			if (q == len)
				return false;
			ch = line[q++];
		}
		if (*n == DBK_COMPLETION_MAX_ID)
			return false;
		c->id_buf[(*n)++] = ch;
	}
	if (q < len && line[q] != ' ')
		return false;
	*pos = q < len ? q + 1 : q;
	return true;
}

static enum dbk_completion_status model_parse(const char *line, size_t len,
                                              struct dbk_completion *c)
{
	const char *f[NFIELDS];
	size_t fl[NFIELDS];
	size_t pos = 0;
	int64_t v;
	bool quoted = false;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	memset(c, 0, sizeof(*c));
	/* Ten fields, one space apart; what follows the tenth is free. */
	for (int k = 0; k < NFIELDS; k++) {
		size_t s = pos;

		if (k == 1 && pos < len && line[pos] == '"') {
			quoted = true;
			if (!model_quoted(line, len, &pos, c, &fl[1]))
				return DBK_COMPLETION_BAD_LINE;
			f[1] = c->id_buf;
			continue;
		}
		while (pos < len && line[pos] != ' ')
			pos++;
		if (pos == s)
			return DBK_COMPLETION_BAD_LINE;
		f[k] = line + s;
		fl[k] = pos - s;
		if (pos < len)
			pos++;
		if (k == 0 && !(fl[0] == 4 && memcmp(f[0], "dbk1", 4) == 0))
			return DBK_COMPLETION_BAD_LINE;
		if (k == 2) {
			bool no_id = quoted ? fl[1] == 0 : fl[1] == 1 && f[1][0] == '-';
			bool no_choice = fl[2] == 1 && f[2][0] == '-';

			if (no_id && !no_choice)
				return DBK_COMPLETION_BAD_LINE;
		}
	}
	c->id = f[1];
	c->id_len = !quoted && fl[1] == 1 && f[1][0] == '-' ? 0 : fl[1];
	c->chosen = f[2];
	c->chosen_len = fl[2] == 1 && f[2][0] == '-' ? 0 : fl[2];
	c->server = f[3];
	c->server_len = fl[3];
	if (!model_number(f[4], fl[4], &v) || v < -1 || v > 999)
		return DBK_COMPLETION_BAD_LINE;
	c->status = (int)v;
	if (fl[5] != 4)
		return DBK_COMPLETION_BAD_LINE;
	memcpy(c->term, f[5], 4);
	if (!model_number(f[6], fl[6], &c->total_ms) || !model_number(f[7], fl[7], &c->bytes))
		return DBK_COMPLETION_BAD_LINE;
	c->redispatched = f[8][0] == '+';
	if (!model_number(f[8], fl[8], &v) || v < 0 || v > 1000000)
		return DBK_COMPLETION_BAD_LINE;
	c->retries = (int)v;
	if (!model_number(f[9], fl[9], &c->log_ms) || c->log_ms < 0)
		return DBK_COMPLETION_BAD_LINE;
	return DBK_COMPLETION_OK;
}

static bool same_str(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static bool same(const struct dbk_completion *a, const struct dbk_completion *b)
{
	return same_str(a->id, a->id_len, b->id, b->id_len) &&
	       same_str(a->chosen, a->chosen_len, b->chosen, b->chosen_len) &&
	       same_str(a->server, a->server_len, b->server, b->server_len) &&
	       a->status == b->status && memcmp(a->term, b->term, 5) == 0 &&
	       a->total_ms == b->total_ms && a->bytes == b->bytes && a->retries == b->retries &&
	       a->redispatched == b->redispatched && a->log_ms == b->log_ms;
}

static void put(char *out, size_t *o, const char *s, size_t n)
{
	memcpy(out + *o, s, n);
	*o += n;
}

static void putf(char *out, size_t *o, const char *fmt, long long v)
{
	*o += (size_t)snprintf(out + *o, 32, fmt, v);
}

static void check_line(const char *line, size_t len)
{
	struct dbk_completion c, m, c2;
	enum dbk_completion_status st = dbk_completion_parse(line, len, &c);
	enum dbk_completion_status want = model_parse(line, len, &m);

	FUZZ_CHECK(st == want);
	FUZZ_CHECK(st == DBK_COMPLETION_OK || st == DBK_COMPLETION_BAD_LINE);
	if (st != DBK_COMPLETION_OK)
		return;
	FUZZ_CHECK(same(&c, &m));
	bool quoted = c.id == c.id_buf;
	FUZZ_CHECK(quoted || fuzz_inside(c.id, c.id_len, line, len));
	FUZZ_CHECK(c.id_len <= DBK_COMPLETION_MAX_ID || !quoted);
	FUZZ_CHECK(fuzz_inside(c.chosen, c.chosen_len, line, len));
	FUZZ_CHECK(fuzz_inside(c.server, c.server_len, line, len));
	FUZZ_CHECK(c.server_len > 0);
	FUZZ_CHECK((quoted || !memchr(c.id, ' ', c.id_len)) &&
	           !memchr(c.chosen, ' ', c.chosen_len) && !memchr(c.server, ' ', c.server_len));
	FUZZ_CHECK(c.id_len != 0 || c.chosen_len == 0);
	FUZZ_CHECK(c.status >= -1 && c.status <= 999);
	FUZZ_CHECK(c.term[4] == '\0');
	FUZZ_CHECK(c.retries >= 0 && c.retries <= 1000000);
	FUZZ_CHECK(c.log_ms >= 0);

	/* Written back, it reads the same. */
	size_t cap = 2 * c.id_len + c.chosen_len + c.server_len + 200, o = 0;
	char *out = malloc(cap);

	FUZZ_CHECK(out != NULL);
	put(out, &o, "dbk1 ", 5);
	if (quoted) {
		/* As HAProxy's +Q,+E write it. */
		put(out, &o, "\"", 1);
		for (size_t i = 0; i < c.id_len; i++) {
			if (c.id[i] == '"' || c.id[i] == '\\' || c.id[i] == ']')
				put(out, &o, "\\", 1);
			put(out, &o, &c.id[i], 1);
		}
		put(out, &o, "\"", 1);
	} else if (c.id_len) {
		put(out, &o, c.id, c.id_len);
	} else {
		put(out, &o, "-", 1);
	}
	put(out, &o, " ", 1);
	if (c.chosen_len)
		put(out, &o, c.chosen, c.chosen_len);
	else
		put(out, &o, "-", 1);
	put(out, &o, " ", 1);
	put(out, &o, c.server, c.server_len);
	putf(out, &o, " %lld ", c.status);
	put(out, &o, c.term, 4);
	putf(out, &o, " %lld", c.total_ms);
	putf(out, &o, " %lld", c.bytes);
	putf(out, &o, c.redispatched ? " +%lld" : " %lld", c.retries);
	putf(out, &o, " %lld", c.log_ms);
	put(out, &o, " GET / HTTP/1.1\r\n", 17);
	FUZZ_CHECK(o <= cap);
	FUZZ_CHECK(dbk_completion_parse(out, o, &c2) == DBK_COMPLETION_OK);
	FUZZ_CHECK(same(&c, &c2));
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0;

	while (off < size) {
		const char *msg = NULL;
		size_t ml = 0, used = 0;
		enum dbk_completion_status st = dbk_completion_frame(buf + off, size - off, &msg,
		                                                     &ml, &used);

		check_frame(buf + off, size - off, st, msg, ml, used);
		if (st == DBK_COMPLETION_OK) {
			/* Cut short, it is never refused: only NEED_MORE. */
			size_t cuts[3] = { used - 1, used / 2, (size_t)data[off] % used };

			for (int k = 0; k < 3; k++) {
				const char *m2;
				size_t ml2, u2;

				FUZZ_CHECK(dbk_completion_frame(buf + off, cuts[k], &m2, &ml2,
				                                &u2) == DBK_COMPLETION_NEED_MORE);
			}
			/* The message in a buffer of its own size. */
			char *line = (char *)fuzz_dup(msg, ml);
			check_line(line, ml);
			free(line);
			off += used;
			continue;
		}
		if (st == DBK_COMPLETION_NEED_MORE) {
			/* Whatever is there is a line on its own too. */
			char *line = (char *)fuzz_dup(buf + off, size - off);
			check_line(line, size - off);
			free(line);
		}
		break;
	}
	/* The whole input as a single line. */
	check_line(buf, size);
	return 0;
}
