#include "completion.h"

#include <string.h>

enum dbk_completion_status dbk_completion_frame(const char *buf, size_t len, const char **msg,
                                                size_t *msg_len, size_t *consumed)
{
	size_t n = 0, i = 0;

	/* RFC 6587: MSG-LEN is NONZERO-DIGIT *DIGIT, then one space. */
	while (i < len && buf[i] >= '0' && buf[i] <= '9') {
		if (i == 0 && buf[i] == '0')
			return DBK_COMPLETION_BAD_FRAME;
		n = n * 10 + (size_t)(buf[i] - '0');
		if (n > DBK_COMPLETION_MAX_LINE)
			return DBK_COMPLETION_BAD_FRAME;
		i++;
	}
	if (i == len)
		return DBK_COMPLETION_NEED_MORE;
	if (i == 0 || buf[i] != ' ')
		return DBK_COMPLETION_BAD_FRAME;
	i++;
	if (len - i < n)
		return DBK_COMPLETION_NEED_MORE;
	*msg = buf + i;
	*msg_len = n;
	*consumed = i + n;
	return DBK_COMPLETION_OK;
}

/* Cuts the next space-separated field off [*p, end). memchr, because
 * this runs once per request and the id is the longest field. */
static bool field(const char **p, const char *end, const char **f, size_t *flen)
{
	const char *s = *p;
	const char *e = s < end ? memchr(s, ' ', (size_t)(end - s)) : NULL;

	if (!e)
		e = end;
	if (e == s)
		return false;
	*f = s;
	*flen = (size_t)(e - s);
	*p = e < end ? e + 1 : e;
	return true;
}

/* A quoted, escaped id at *p (HAProxy's %{+Q,+E}ID): "..." with '\'
 * before '"', '\' and ']', then a space or the end. Unescaped into
 * c->id_buf. */
static bool quoted_id(const char **p, const char *end, struct dbk_completion *c)
{
	const char *s = *p + 1;
	size_t n = 0;

	for (;;) {
		if (s == end)
			return false;
		char ch = *s++;
		if (ch == '"')
			break;
		if (ch == '\\') {
			if (s == end)
				return false;
			ch = *s++;
		}
		if (n == sizeof(c->id_buf))
			return false;
		c->id_buf[n++] = ch;
	}
	if (s != end && *s != ' ')
		return false;
	c->id = c->id_buf;
	c->id_len = n;
	*p = s < end ? s + 1 : s;
	return true;
}

/* A decimal number, or "-" for none (-1). Bounded to 18 digits. */
static bool number(const char *f, size_t n, int64_t *out)
{
	int64_t v = 0;
	bool neg = false;

	if (n == 1 && f[0] == '-') {
		*out = -1;
		return true;
	}
	if (n && (f[0] == '-' || f[0] == '+')) {
		neg = f[0] == '-';
		f++;
		n--;
	}
	if (n == 0 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(unsigned char)f[i] - '0';

		if (d > 9)
			return false;
		v = v * 10 + (int64_t)d;
	}
	*out = neg ? -v : v;
	return true;
}

enum dbk_completion_status dbk_completion_parse(const char *line, size_t len,
                                                struct dbk_completion *c)
{
	const char *p = line, *end = line + len, *f;
	size_t n;
	int64_t v;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	memset(c, 0, sizeof(*c));

	if (!field(&p, end, &f, &n) || n != 4 || memcmp(f, DBK_COMPLETION_TAG, 4) != 0)
		return DBK_COMPLETION_BAD_LINE;
	bool quoted = p < end && *p == '"';
	if (quoted ? !quoted_id(&p, end, c) : !field(&p, end, &c->id, &c->id_len))
		return DBK_COMPLETION_BAD_LINE;
	if (!field(&p, end, &c->chosen, &c->chosen_len))
		return DBK_COMPLETION_BAD_LINE;
	/* "-" is HAProxy's empty field (quoted: ""): a request that never
	 * got as far as an id (a bad request) or a decision. A decision
	 * needs an id. */
	if (!quoted && c->id_len == 1 && c->id[0] == '-')
		c->id_len = 0;
	if (c->chosen_len == 1 && c->chosen[0] == '-')
		c->chosen_len = 0;
	if (c->id_len == 0 && c->chosen_len != 0)
		return DBK_COMPLETION_BAD_LINE;
	if (!field(&p, end, &c->server, &c->server_len))
		return DBK_COMPLETION_BAD_LINE;

	if (!field(&p, end, &f, &n) || !number(f, n, &v) || v < -1 || v > 999)
		return DBK_COMPLETION_BAD_LINE;
	c->status = (int)v;
	if (!field(&p, end, &f, &n) || n != 4)
		return DBK_COMPLETION_BAD_LINE;
	memcpy(c->term, f, 4);
	if (!field(&p, end, &f, &n) || !number(f, n, &c->total_ms))
		return DBK_COMPLETION_BAD_LINE;
	if (!field(&p, end, &f, &n) || !number(f, n, &c->bytes))
		return DBK_COMPLETION_BAD_LINE;
	if (!field(&p, end, &f, &n))
		return DBK_COMPLETION_BAD_LINE;
	c->redispatched = f[0] == '+';
	if (!number(f, n, &v) || v < 0 || v > 1000000)
		return DBK_COMPLETION_BAD_LINE;
	c->retries = (int)v;
	if (!field(&p, end, &f, &n) || !number(f, n, &c->log_ms) || c->log_ms < 0)
		return DBK_COMPLETION_BAD_LINE;
	return DBK_COMPLETION_OK;
}
