/* HTTP/1.1 responses as uvicorn writes them for vLLM: status line, the
 * stub's X-Served-By, then the body or an SSE stream. Only appends to a
 * connection's output; conn.c sends it. */
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "server.h"

void dbk_stub_send_head(struct dbk_stub_conn *c, int status, const char *ctype,
                        long long content_length, bool keep_alive, int minor, const char *extra)
{
	dbk_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nX-Served-By: %s\r\n", status,
	               dbk_http_reason(status), c->s->opt.name);
	if (ctype)
		dbk_buf_printf(&c->out, "Content-Type: %s\r\n", ctype);
	if (content_length >= 0)
		dbk_buf_printf(&c->out, "Content-Length: %lld\r\n", content_length);
	if (extra)
		dbk_buf_adds(&c->out, extra);
	if (!keep_alive)
		dbk_buf_adds(&c->out, "Connection: close\r\n");
	else if (minor == 0)
		dbk_buf_adds(&c->out, "Connection: keep-alive\r\n");
	dbk_buf_adds(&c->out, "\r\n");
}

void dbk_stub_respond(struct dbk_stub_conn *c, int status, const char *ctype, const char *body,
                      size_t n, bool keep_alive, int minor, bool head_only, const char *extra)
{
	dbk_stub_send_head(c, status, ctype, (long long)n, keep_alive, minor, extra);
	if (!head_only)
		dbk_buf_add(&c->out, body, n);
	if (!keep_alive)
		c->close_after_write = true;
}

void dbk_stub_respond_error(struct dbk_stub_conn *c, int status, const char *type, const char *msg,
                            bool keep_alive, int minor)
{
	struct dbk_buf *t = &c->s->tmp;

	dbk_buf_reset(t);
	dbk_api_error_json(t, status, type, msg);
	dbk_stub_respond(c, status, "application/json", t->p, t->len, keep_alive, minor, false,
	                 NULL);
}

void dbk_stub_respond_detail(struct dbk_stub_conn *c, int status, const char *detail,
                             bool keep_alive, int minor, const char *extra)
{
	struct dbk_buf *t = &c->s->tmp;

	dbk_buf_reset(t);
	dbk_api_detail_json(t, detail);
	dbk_stub_respond(c, status, "application/json", t->p, t->len, keep_alive, minor, false,
	                 extra);
}

void dbk_stub_send_stream_data(struct dbk_stub_conn *c, bool chunked, const char *p, size_t n)
{
	if (chunked)
		dbk_buf_printf(&c->out, "%zx\r\n", n);
	dbk_buf_add(&c->out, p, n);
	if (chunked)
		dbk_buf_add(&c->out, "\r\n", 2);
}

void dbk_stub_log_refusal(const struct dbk_stub_server *s, const char *peer, int status,
                          const char *why)
{
	char q[600];

	dbk_log(DBK_LOG_DEBUG, "request-refused", "stub=%s peer=%s status=%d error=\"%s\"",
	        s->opt.name, peer, status, dbk_log_quote(q, sizeof(q), why, strlen(why)));
}
