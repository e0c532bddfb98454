#include "request.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/numparse.h"

#define BENCH_USER_AGENT "dbucket-bench"

/* HOST[:PORT] or [IPV6][:PORT] at a into u->host and u->port; returns
 * where the authority ends, or NULL with the reason in err. */
static const char *parse_authority(const char *a, struct dbk_url *u, char *err, size_t errn)
{
	const char *p = a, *host = a, *host_end;
	unsigned long long port = 80;
	char digits[8];
	size_t hl, i;

	if (*p == '[') {
		host = ++p;
		host_end = strchr(p, ']');
		if (!host_end)
			return dbk_errf(err, errn,
			                "--url: no ']' after the IPv6 "
			                "address"),
			       NULL;
		p = host_end + 1;
	} else {
		p += strcspn(p, ":/");
		host_end = p;
	}
	hl = (size_t)(host_end - host);
	if (hl == 0 || hl >= sizeof(u->host))
		return dbk_errf(err, errn, "--url: bad host"), NULL;
	for (i = 0; i < hl; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr(".-_:%", host[i]))
			return dbk_errf(err, errn, "--url: bad character in host"), NULL;
	if (*p == ':') {
		size_t n = strcspn(++p, "/");

		if (n == 0 || n >= sizeof(digits))
			return dbk_errf(err, errn,
			                "--url: port must be "
			                "1..65535"),
			       NULL;
		memcpy(digits, p, n);
		digits[n] = 0;
		if (!dbk_parse_uint(digits, 1, 65535, &port))
			return dbk_errf(err, errn,
			                "--url: port must be "
			                "1..65535"),
			       NULL;
		p += n;
	}
	memcpy(u->host, host, hl);
	snprintf(u->port, sizeof(u->port), "%llu", port);
	return p;
}

int dbk_url_parse(const char *url, enum dbk_endpoint ep, struct dbk_url *u, char *err, size_t errn)
{
	const char *p, *path;
	const char *suffix = ep == DBK_EP_CHAT ? "/v1/chat/completions" : "/v1/completions";
	size_t bl, i;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, "http://", 7) != 0)
		return dbk_errf(err, errn,
		                "--url must start with http:// "
		                "(no TLS: the benchmark talks to loopback)"),
		       -1;
	p = parse_authority(url + 7, u, err, errn);
	if (!p)
		return -1;
	if (*p && *p != '/')
		return dbk_errf(err, errn,
		                "--url: unexpected '%c' after the "
		                "host",
		                *p),
		       -1;
	path = p;
	for (i = 0; path[i]; i++)
		if ((unsigned char)path[i] <= 0x20 || (unsigned char)path[i] >= 0x7f ||
		    path[i] == '?' || path[i] == '#')
			return dbk_errf(err, errn,
			                "--url: the path may not hold "
			                "spaces, '?' or '#'"),
			       -1;
	bl = strlen(path);
	while (bl && path[bl - 1] == '/')
		bl--;
	/* Accept both the server root and the OpenAI base ".../v1". */
	if (bl >= 3 && memcmp(path + bl - 3, "/v1", 3) == 0)
		bl -= 3;
	if (bl + strlen(suffix) >= sizeof(u->path))
		return dbk_errf(err, errn, "--url: path too long"), -1;
	snprintf(u->path, sizeof(u->path), "%.*s%s", (int)bl, path, suffix);
	snprintf(u->addr, sizeof(u->addr), strchr(u->host, ':') ? "[%s]:%s" : "%s:%s", u->host,
	         u->port);
	snprintf(u->authority, sizeof(u->authority), "%.*s", (int)(p - (url + 7)), url + 7);
	return 0;
}

char *dbk_json_quote(const char *s)
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
                       const struct dbk_req_spec *s)
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
	dbk_buf_printf(out, "Content-Length: %zu\r\n\r\n", body->len);
	dbk_buf_add(out, body->p, body->len);
	if (body->oom)
		out->oom = true;
}
