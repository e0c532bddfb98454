#include "lib/url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "lib/numparse.h"

/* HOST[:PORT] or [IPV6][:PORT] at a into u->host and u->port; returns
 * where the authority ends, or NULL with the reason in err. */
static const char *parse_authority(const char *a, struct dbk_url *u, char *err, size_t errlen)
{
	const char *p = a, *host = a, *host_end;
	unsigned long long port = u->https ? 443 : 80;
	char digits[8];
	size_t hl, i;

	if (*p == '[') {
		host = ++p;
		host_end = strchr(p, ']');
		if (!host_end)
			return dbk_errf(err, errlen, "no ']' after the IPv6 address"), NULL;
		p = host_end + 1;
	} else {
		p += strcspn(p, ":/");
		host_end = p;
	}
	hl = (size_t)(host_end - host);
	if (hl == 0 || hl >= sizeof(u->host))
		return dbk_errf(err, errlen, "bad host"), NULL;
	for (i = 0; i < hl; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr(".-_:%", host[i]))
			return dbk_errf(err, errlen, "bad character in host"), NULL;
	if (*p == ':') {
		size_t n = strcspn(++p, "/");

		if (n == 0 || n >= sizeof(digits))
			return dbk_errf(err, errlen, "port must be 1..65535"), NULL;
		memcpy(digits, p, n);
		digits[n] = 0;
		if (!dbk_parse_uint(digits, 1, 65535, &port))
			return dbk_errf(err, errlen, "port must be 1..65535"), NULL;
		p += n;
	}
	memcpy(u->host, host, hl);
	u->host[hl] = '\0';
	snprintf(u->port, sizeof(u->port), "%llu", port);
	return p;
}

int dbk_url_split(const char *url, struct dbk_url *u, char *err, size_t errlen)
{
	const char *a, *p;
	size_t i, al;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, "http://", 7) == 0) {
		a = url + 7;
	} else if (strncmp(url, "https://", 8) == 0) {
		a = url + 8;
		u->https = true;
	} else {
		return dbk_errf(err, errlen, "must start with http://"), -1;
	}
	p = parse_authority(a, u, err, errlen);
	if (!p)
		return -1;
	if (*p && *p != '/')
		return dbk_errf(err, errlen, "unexpected '%c' after the host", *p), -1;
	for (i = 0; p[i]; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f || p[i] == '?' ||
		    p[i] == '#')
			return dbk_errf(err, errlen, "the path may not hold spaces, '?' or '#'"),
			       -1;
	if (i >= sizeof(u->path))
		return dbk_errf(err, errlen, "path too long"), -1;
	memcpy(u->path, p, i + 1);
	/* At most a bracketed host, a colon and 7 digits: it fits. */
	al = (size_t)(p - a);
	memcpy(u->authority, a, al);
	u->authority[al] = '\0';
	snprintf(u->addr, sizeof(u->addr), strchr(u->host, ':') ? "[%s]:%s" : "%s:%s", u->host,
	         u->port);
	return 0;
}
