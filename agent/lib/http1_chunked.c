/* Incremental decoder of chunked transfer coding (RFC 9112 section 7.1);
 * see http1.h. A byte-at-a-time state machine for the framing, whole
 * spans for the data, so a streamed body costs no copy. */
#include "lib/http1.h"

#include <string.h>

#include "lib/numparse.h"

enum {
	CH_SIZE,    /* hex digits of the chunk size */
	CH_SIZE_WS, /* blanks after them */
	CH_EXT,     /* ";ext..." up to the LF */
	CH_SIZE_LF, /* CR seen, LF due */
	CH_DATA,
	CH_DATA_CR, /* the CRLF that ends chunk data */
	CH_DATA_LF,
	CH_TRAILER,
};

void dbk_http_chunked_init(struct dbk_http_chunked *c) { memset(c, 0, sizeof(*c)); }

/* The size line ended: data follows, or the trailer after a last chunk. */
static void chunk_size_done(struct dbk_http_chunked *c)
{
	c->state = c->remaining ? CH_DATA : CH_TRAILER;
	c->line_len = 0;
}

/* One byte of the size line ("HEX [BWS] [;ext] CRLF"); NULL, or why it
 * is refused. */
static const char *chunk_size_byte(struct dbk_http_chunked *c, char ch)
{
	int v = dbk_hex_digit(ch);

	if (c->state == CH_SIZE && v >= 0) {
		/* Fifteen hex digits are 2^60 bytes: more is a bug or an
		 * attack, and the sum below cannot overflow. */
		if (++c->digits > 15)
			return "chunk too large";
		c->remaining = c->remaining * 16 + (uint64_t)v;
	} else if (c->state == CH_SIZE && c->digits == 0) {
		return "bad chunk size";
	} else if (c->state == CH_EXT) {
		if (ch == '\n')
			chunk_size_done(c);
		else if (++c->line_len > DBK_HTTP_MAX_CHUNK_EXT)
			return "chunk extension too long";
	} else if (c->state == CH_SIZE_LF) {
		if (ch != '\n')
			return "bad chunk size";
		chunk_size_done(c);
	} else if (ch == ' ' || ch == '\t') {
		c->state = CH_SIZE_WS;
	} else if (ch == ';') {
		c->state = CH_EXT;
	} else if (ch == '\r') {
		c->state = CH_SIZE_LF;
	} else if (ch == '\n') {
		chunk_size_done(c);
	} else {
		return "bad chunk size";
	}
	return NULL;
}

/* One byte after the data of a chunk or of the trailer section; NULL,
 * or why it is refused. */
static const char *chunk_frame_byte(struct dbk_http_chunked *c, char ch)
{
	if (c->state == CH_DATA_CR && ch == '\r') {
		c->state = CH_DATA_LF;
	} else if (c->state == CH_DATA_CR || c->state == CH_DATA_LF) {
		if (ch != '\n')
			return "missing CRLF after chunk data";
		c->state = CH_SIZE;
		c->digits = 0;
	} else if (++c->trailer_bytes > DBK_HTTP_MAX_TRAILER) {
		return "chunked trailer too large";
	} else if (ch == '\n') {
		/* Trailer fields are read past, not kept: nothing here
		 * needs them. An empty line ends the message. */
		if (c->line_len == 0)
			c->result = DBK_HTTP_COMPLETE;
		c->line_len = 0;
	} else if (ch != '\r') {
		c->line_len++;
	}
	return NULL;
}

size_t dbk_http_chunked_feed(struct dbk_http_chunked *c, const char *p, size_t n,
                             struct dbk_http_slice *data)
{
	size_t i = 0;

	data->p = p;
	data->n = 0;
	while (i < n && c->result == DBK_HTTP_INCOMPLETE) {
		if (c->state == CH_DATA) {
			size_t k = n - i;

			if (k > c->remaining)
				k = (size_t)c->remaining;
			c->remaining -= k;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			*data = (struct dbk_http_slice){ p + i, k };
			return i + k;
		}
		c->error = c->state <= CH_SIZE_LF ? chunk_size_byte(c, p[i])
		                                  : chunk_frame_byte(c, p[i]);
		if (c->error)
			c->result = DBK_HTTP_ERROR;
		i++;
	}
	return i;
}

void dbk_http_body_init(struct dbk_http_body *b, size_t head_len, size_t max_body)
{
	memset(b, 0, sizeof(*b));
	dbk_http_chunked_init(&b->chunked);
	b->start = b->raw_off = head_len;
	b->max = max_body;
}

enum dbk_http_result dbk_http_body_dechunk(struct dbk_http_body *b, char *buf, size_t *len)
{
	struct dbk_http_chunked *c = &b->chunked;

	while (b->raw_off < *len && c->result == DBK_HTTP_INCOMPLETE) {
		struct dbk_http_slice d;
		size_t used = dbk_http_chunked_feed(c, buf + b->raw_off, *len - b->raw_off, &d);

		if (d.n > b->max - b->len) {
			b->too_large = true;
			c->error = "body too large";
			c->result = DBK_HTTP_ERROR;
			break;
		}
		memmove(buf + b->start + b->len, d.p, d.n);
		b->len += d.n;
		b->raw_off += used;
	}
	size_t rest = *len - b->raw_off;

	memmove(buf + b->start + b->len, buf + b->raw_off, rest);
	b->raw_off = b->start + b->len;
	*len = b->raw_off + rest;
	buf[*len] = '\0';
	return c->result;
}
