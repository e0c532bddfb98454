#include "admin_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "lib/log.h"

enum what { READ_STATUS, READ_METRICS, WRITE };

static bool slice_is(struct dbk_http_slice s, const char *lit, size_t n)
{
	return s.n == n && strncasecmp(s.p, lit, n) == 0;
}

/* The host part of a Host value ("name", "name:port", "[v6]:port"),
 * without brackets. */
static struct dbk_http_slice host_part(struct dbk_http_slice v)
{
	struct dbk_http_slice h = v;

	if (v.n && v.p[0] == '[') {
		const char *end = memchr(v.p, ']', v.n);

		h.p = v.p + 1;
		h.n = end ? (size_t)(end - h.p) : 0;
		return h;
	}
	const char *colon = memchr(v.p, ':', v.n);
	if (colon)
		h.n = (size_t)(colon - v.p);
	return h;
}

static bool is_loopback_ip(struct dbk_http_slice h)
{
	char s[INET6_ADDRSTRLEN];
	unsigned char a[16];

	if (h.n == 0 || h.n >= sizeof(s))
		return false;
	memcpy(s, h.p, h.n);
	s[h.n] = '\0';
	if (inet_pton(AF_INET, s, a) == 1)
		return a[0] == 127;
	return inet_pton(AF_INET6, s, a) == 1 && IN6_IS_ADDR_LOOPBACK((struct in6_addr *)a);
}

/* Whether the agent answers to this Host: the name cannot have been
 * resolved by someone else's DNS. */
static bool host_ok(const struct dbk_admin_policy *p, const struct dbk_admin_via *via,
                    struct dbk_http_slice v)
{
	struct dbk_http_slice h = host_part(v);

	if (h.n == 0)
		return false;
	if (slice_is(h, "localhost", 9) || is_loopback_ip(h))
		return true;
	if (via->local_addr && *via->local_addr &&
	    slice_is(h, via->local_addr, strlen(via->local_addr)))
		return true;
	for (unsigned i = 0; i < p->nhosts; i++)
		if (slice_is(h, p->hosts[i], strlen(p->hosts[i])))
			return true;
	return false;
}

/* The authority of a URL ("scheme://AUTHORITY/..."): what a browser's
 * Origin and Referer carry of the page that sent the request. */
static bool authority_of(struct dbk_http_slice url, struct dbk_http_slice *a)
{
	const char *sep = NULL;

	for (size_t i = 0; i + 2 < url.n; i++)
		if (url.p[i] == ':' && url.p[i + 1] == '/' && url.p[i + 2] == '/') {
			sep = url.p + i + 3;
			break;
		}
	if (!sep)
		return false;
	a->p = sep;
	a->n = 0;
	while (sep + a->n < url.p + url.n && !strchr("/?#", sep[a->n]))
		a->n++;
	return a->n > 0;
}

/* A browser's page at another origin (or rebinding: then Host is
 * refused already) is refused; a request a browser did not send carries
 * none of these headers. */
static const char *cross_site(const struct dbk_http_request *req, const struct dbk_http_slice *host)
{
	const struct dbk_http_slice *site = dbk_http_header(req, "Sec-Fetch-Site");
	const struct dbk_http_slice *origin = dbk_http_header(req, "Origin");
	const struct dbk_http_slice *referer = dbk_http_header(req, "Referer");
	struct dbk_http_slice a;

	if (site && !slice_is(*site, "same-origin", 11) && !slice_is(*site, "none", 4))
		return "cross-site request (Sec-Fetch-Site)";
	if (origin) {
		if (!host || !authority_of(*origin, &a) || !slice_is(a, host->p, host->n))
			return "cross-site request (Origin is not this endpoint)";
	} else if (referer) {
		if (!host || !authority_of(*referer, &a) || !slice_is(a, host->p, host->n))
			return "cross-site request (Referer is not this endpoint)";
	}
	return NULL;
}

/* Compares in a time that tells nothing of where a guess goes wrong. */
static bool token_eq(const char *want, size_t want_len, const char *got, size_t got_len)
{
	unsigned char d = want_len != got_len;

	for (size_t i = 0; i < want_len; i++)
		d |= (unsigned char)(want[i] ^ (i < got_len ? got[i] : 0));
	return d == 0;
}

static bool has_token(const struct dbk_admin_policy *p, const struct dbk_http_request *req)
{
	const struct dbk_http_slice *auth = dbk_http_header(req, "Authorization");

	if (!p->token || !auth || auth->n < 7 || strncasecmp(auth->p, "Bearer ", 7) != 0)
		return false;
	struct dbk_http_slice t = { auth->p + 7, auth->n - 7 };
	while (t.n && t.p[0] == ' ') {
		t.p++;
		t.n--;
	}
	return token_eq(p->token, p->token_len, t.p, t.n);
}

static enum what what_of(const struct dbk_http_request *req)
{
	const char *q = memchr(req->target.p, '?', req->target.n);
	struct dbk_http_slice path = { req->target.p,
		                       q ? (size_t)(q - req->target.p) : req->target.n };

	if (dbk_http_slice_eq(req->method, "POST") && dbk_http_slice_eq(path, "/config"))
		return WRITE;
	return dbk_http_slice_eq(path, "/metrics") ? READ_METRICS : READ_STATUS;
}

int dbk_admin_guard(const struct dbk_admin_policy *p, const struct dbk_admin_via *via,
                    const struct dbk_http_request *req, const char **why)
{
	enum what w = what_of(req);

	if (w == WRITE && p->read_only) {
		*why = "the admin endpoint is read-only (--admin-read-only)";
		return 403;
	}
	/* No browser reaches a unix socket; its permissions decide. */
	if (via->unix_socket)
		return 0;
	const struct dbk_http_slice *host = dbk_http_header(req, "Host");
	if (host && !host_ok(p, via, *host)) {
		*why = "Host is not a name of this endpoint (see --admin-host)";
		return 403;
	}
	if ((*why = cross_site(req, host)))
		return 403;
	if (w == READ_METRICS && (p->public_mask & DBK_ADMIN_PUBLIC_METRICS))
		return 0;
	if (w == READ_STATUS && (p->public_mask & DBK_ADMIN_PUBLIC_STATUS))
		return 0;
	if (!p->token) {
		*why = w == WRITE
		               ? "changes need the token of --admin-token-file, or the unix socket"
		               : "not public (--admin-public) and no --admin-token-file";
		return 403;
	}
	if (!has_token(p, req)) {
		*why = "needs the bearer token of --admin-token-file";
		return 401;
	}
	return 0;
}

int dbk_admin_public_parse(const char *v, unsigned *mask, char *err, size_t errlen)
{
	*mask = 0;
	if (strcmp(v, "none") == 0)
		return 0;
	while (*v) {
		size_t n = strcspn(v, ",");

		if (n == 7 && strncmp(v, "metrics", 7) == 0)
			*mask |= DBK_ADMIN_PUBLIC_METRICS;
		else if (n == 6 && strncmp(v, "status", 6) == 0)
			*mask |= DBK_ADMIN_PUBLIC_STATUS;
		else {
			dbk_errf(err, errlen,
			         "--admin-public: '%.*s' is not metrics or status (or none)",
			         (int)n, v);
			return -1;
		}
		v += n;
		if (*v == ',' && *++v == '\0') {
			dbk_errf(err, errlen, "--admin-public: a trailing comma");
			return -1;
		}
	}
	return 0;
}
