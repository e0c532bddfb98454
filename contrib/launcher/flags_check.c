/* The parsed flags checked as the reference checks them after argparse,
 * then for what dbucket-spoa and HAProxy would refuse later, in the words
 * of the flag concerned (flags_parts.h); and what they become in HAProxy's
 * terms. */
#include "flags_parts.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "pyval.h"
#include "lib/bounds.h"
#include "lib/log.h"

#define FAIL(...)                                   \
	do {                                        \
		dbk_errf(err, errlen, __VA_ARGS__); \
		return -1;                          \
	} while (0)

bool dbk_flags_host_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_' || c == ':' || c == '%' || c == '[' ||
		      c == ']'))
			return false;
	}
	return true;
}

bool dbk_flags_network_ok(const char *s)
{
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char bin[16];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	int bits = inet_pton(AF_INET, addr, bin) == 1    ? 32
	           : inet_pton(AF_INET6, addr, bin) == 1 ? 128
	                                                 : 0;
	if (!bits)
		return false;
	if (!slash)
		return true;
	/* Digits only (strtol would take a sign or spaces), at most 3. */
	size_t k = strspn(slash + 1, "0123456789");
	return k >= 1 && k <= 3 && slash[1 + k] == '\0' && atoi(slash + 1) <= bits;
}

/* One check per kind of value, worded once for every flag that takes it. */
static int check_host(const char *flag, const char *host, char *err, size_t errlen)
{
	char r[160];

	if (dbk_flags_host_ok(host))
		return 0;
	dbk_py_repr(host, r, sizeof(r));
	FAIL("argument %s: invalid host %s (a name, an IPv4 or an IPv6 address)", flag, r);
}

static int check_port(const char *flag, long port, char *err, size_t errlen)
{
	if (port < 1 || port > 65535)
		FAIL("argument %s: %ld is not a TCP port (1 to 65535)", flag, port);
	return 0;
}

static int check_tokens(const char *flag, long long n, char *err, size_t errlen)
{
	if (n < 1 || n > DBK_MAX_TOKENS)
		FAIL("argument %s: %lld is not from 1 to %lld", flag, n, DBK_MAX_TOKENS);
	return 0;
}

int dbk_flags_check(const struct dbk_launch_flags *f, char *err, size_t errlen)
{
	if (f->nhosts != f->nports)
		FAIL("Number of dp hosts must match number of dp ports "
		     "(%u --server-hosts, %u --server-ports)",
		     f->nhosts, f->nports);
	if (f->nhosts > DBK_MAX_SERVERS)
		FAIL("argument --server-hosts: at most %d servers, got %u", DBK_MAX_SERVERS,
		     f->nhosts);
	if (check_port("--port", f->port, err, errlen) < 0)
		return -1;
	/* "" is every address, as uvicorn takes it. */
	if (f->host[0] != '\0' && check_host("--host", f->host, err, errlen) < 0)
		return -1;
	for (unsigned i = 0; i < f->nhosts; i++)
		if (check_host("--server-hosts", f->server_hosts[i], err, errlen) < 0 ||
		    check_port("--server-ports", f->server_ports[i], err, errlen) < 0)
			return -1;
	if (f->dynamic && f->nhosts < 2)
		FAIL("argument --enable-dynamic-bucket: the short and the long group need at least "
		     "2 servers, got %u",
		     f->nhosts);
	if (check_tokens("--server-group-threshold", f->threshold, err, errlen) < 0 ||
	    check_tokens("--max-request-tokens", f->max_request_tokens, err, errlen) < 0)
		return -1;
	/* dbucket-spoa checks this in plain mode too. */
	if (f->threshold >= f->max_request_tokens)
		FAIL("argument --server-group-threshold: %lld must be below --max-request-tokens "
		     "(%lld)",
		     f->threshold, f->max_request_tokens);
	if ((f->scrape_interval_ms || f->scrape_timeout_ms) && !dbk_flags_scrapes(f))
		FAIL("argument --scrape-interval/--scrape-timeout: --policy %s scrapes nothing "
		     "(ttft and p2ttft do)",
		     f->policy);
	if (dbk_flags_check_models(f, err, errlen) < 0)
		return -1;
	for (unsigned i = 0; i < f->ntrusted; i++)
		if (!dbk_flags_network_ok(f->trusted_src[i])) {
			char r[160];

			dbk_py_repr(f->trusted_src[i], r, sizeof(r));
			FAIL("argument --trusted-class-src: invalid address %s (an IPv4 or IPv6 "
			     "address, or a network such as 10.0.0.0/8)",
			     r);
		}
	if (f->force && !f->print_config)
		FAIL("argument --force: only with --print-config");
	if (f->max_retries > DBK_LAUNCH_MAX_RETRIES)
		FAIL("argument --max-retries: at most %d, got %lld", DBK_LAUNCH_MAX_RETRIES,
		     f->max_retries);
	const char *paths[] = { f->print_config, f->runtime_dir, f->agent, f->haproxy };
	const char *names[] = { "--print-config", "--runtime-dir", "--agent", "--haproxy" };
	for (size_t i = 0; i < 4; i++)
		if (paths[i] && paths[i][0] == '\0')
			FAIL("argument %s: expected a path, got ''", names[i]);
	return 0;
}

unsigned dbk_flags_haproxy_retries(const struct dbk_launch_flags *f)
{
	if (f->max_retries <= 1)
		return 0;
	return (unsigned)(f->max_retries - 1);
}
