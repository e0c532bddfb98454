#include "request.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

#define BENCH_USER_AGENT "dbucket-bench"

int dbk_request_url_parse(const char *url, enum dbk_endpoint ep, struct dbk_url *u, char *err,
                          size_t errn)
{
	const char *suffix = ep == DBK_EP_CHAT ? "/v1/chat/completions" : "/v1/completions";
	char why[128];
	size_t bl;

	if (strncmp(url, "http://", 7) != 0)
		return dbk_errf(err, errn,
		                "--url must start with http:// "
		                "(no TLS: the benchmark talks to loopback)"),
		       -1;
	if (dbk_url_split(url, u, why, sizeof(why)) < 0)
		return dbk_errf(err, errn, "--url: %s", why), -1;
	bl = strlen(u->path);
	while (bl && u->path[bl - 1] == '/')
		bl--;
	/* Accept both the server root and the OpenAI base ".../v1". */
	if (bl >= 3 && memcmp(u->path + bl - 3, "/v1", 3) == 0)
		bl -= 3;
	if (bl + strlen(suffix) >= sizeof(u->path))
		return dbk_errf(err, errn, "--url: path too long"), -1;
	memcpy(u->path + bl, suffix, strlen(suffix) + 1);
	return 0;
}

char *dbk_request_json_quote(const char *s)
{
	size_t n = strlen(s), i, j = 0;
	char *p;

	if (n > (SIZE_MAX - 3) / 6)
		return NULL;
	p = malloc(n * 6 + 3);
	if (!p)
		return NULL;
	p[j++] = '"';
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			p[j++] = '\\';
			p[j++] = (char)c;
		} else if (c < 0x20) {
			j += (size_t)snprintf(p + j, 7, "\\u%04x", c);
		} else {
			p[j++] = (char)c;
		}
	}
	p[j++] = '"';
	p[j] = 0;
	return p;
}

void dbk_request_build(struct dbk_buf *out, struct dbk_buf *body, const struct dbk_url *u,
                       const struct dbk_req_spec *s, const char *priority)
{
	dbk_prompt_body(body, s);

	dbk_buf_reset(out);
	dbk_buf_printf(out,
	               "POST %s HTTP/1.1\r\n"
	               "Host: %s\r\n"
	               "User-Agent: " BENCH_USER_AGENT "\r\n"
	               "Content-Type: application/json\r\n"
	               "Accept: text/event-stream\r\n"
	               "Connection: close\r\n",
	               u->path, u->authority);
	if (s->has_session)
		dbk_buf_printf(out, "X-Session-Id: conv-%llu\r\n", (unsigned long long)s->session);
	if (priority)
		dbk_buf_printf(out, "X-Request-Class: %s\r\n", priority);
	dbk_buf_printf(out, "Content-Length: %zu\r\n\r\n", body->len);
	dbk_buf_add(out, body->p, body->len);
	if (body->oom)
		out->oom = true;
}
