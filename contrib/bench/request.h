/* What the benchmark sends and where: the target URL, the loopback rule,
 * and the HTTP request of one trace row around the body model/prompt.h
 * writes. Pure. */
#ifndef DBK_BENCH_REQUEST_H
#define DBK_BENCH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/buf.h"
#include "model/prompt.h"

struct dbk_url {
	char host[256]; /* without brackets */
	char port[6];
	char authority[300]; /* Host header: host[:port] as given */
	char addr[270];      /* "HOST:PORT" or "[IPV6]:PORT", for
	                       * dbk_net_resolve */
	char path[1024];     /* base path + the endpoint's */
};

/* "http://HOST[:PORT][/BASE]" with HOST a name, an IPv4 address or
 * "[IPv6]". The endpoint path (/v1/completions or /v1/chat/completions)
 * is appended to BASE, without doubling a trailing "/v1". */
int dbk_url_parse(const char *url, enum dbk_endpoint ep, struct dbk_url *u, char *err, size_t errn);

/* s as a JSON string literal, quotes included (malloc'd; NULL when out
 * of memory). Control characters become \u escapes. */
char *dbk_json_quote(const char *s);

/* The whole HTTP/1.1 request (head and JSON body) into out; body is
 * scratch space. One request per connection: "Connection: close". */
void dbk_request_build(struct dbk_buf *out, struct dbk_buf *body, const struct dbk_url *u,
                       const struct dbk_req_spec *s);

#endif
