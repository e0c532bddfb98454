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
#include "lib/url.h"
#include "model/prompt.h"

/* "http://HOST[:PORT][/BASE]" (lib/url) with the endpoint path
 * (/v1/completions or /v1/chat/completions) appended to BASE, without
 * doubling a trailing "/v1". */
int dbk_request_url_parse(const char *url, enum dbk_endpoint ep, struct dbk_url *u, char *err,
                          size_t errn);

/* s as a JSON string literal, quotes included (malloc'd; NULL when out
 * of memory). Control characters become \u escapes. */
char *dbk_request_json_quote(const char *s);

/* The whole HTTP/1.1 request (head and JSON body) into out; body is
 * scratch space. One request per connection: "Connection: close".
 * priority, when not NULL, goes in an X-Request-Class header. */
void dbk_request_build(struct dbk_buf *out, struct dbk_buf *body, const struct dbk_url *u,
                       const struct dbk_req_spec *s, const char *priority);

#endif
