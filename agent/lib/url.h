/* The one URL parser: "http://HOST[:PORT][/PATH]" (https:// recognised,
 * for a caller to refuse or use) with HOST a name, an IPv4 address or
 * "[IPv6]". No user info, query or fragment: nothing here needs them.
 * Pure, bounded (fixed fields), fuzzed (tests/fuzz/fuzz_url.c). */
#ifndef DBK_URL_H
#define DBK_URL_H

#include <stdbool.h>
#include <stddef.h>

struct dbk_url {
	bool https;
	char host[256];      /* without brackets */
	char port[6];        /* as digits; 80 or 443 when not given */
	char authority[300]; /* the Host header: host[:port] as given */
	char addr[270];      /* "HOST:PORT" or "[IPV6]:PORT", for lib/net */
	char path[1024];     /* as given, "" when none */
};

/* Returns 0, or -1 with a one-line reason in err (u then undefined). */
int dbk_url_split(const char *url, struct dbk_url *u, char *err, size_t errlen);

#endif
