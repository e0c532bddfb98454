/* agent/admin_guard: which admin requests pass, by a table of requests
 * under policies (Host against DNS rebinding, Origin/Referer/Sec-Fetch-Site
 * against other pages, the token for changes and non-public reads, a unix
 * socket, read-only), and --admin-public's values. Also lib/net's CIDR
 * allow-list entries, which decide who may connect, and the command-line
 * block of these options. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "admin_guard.h"
#include "check.h"
#include "config.h"
#include "lib/net.h"

#define TOK "s3cret"

static const char *const hosts[] = { "agent.internal" };

struct policy_case {
	bool token, unix_socket, read_only;
	unsigned public_mask;
};

/* The status of request text under pc (0: passes). */
static int guard(const struct policy_case *pc, const char *text)
{
	static const struct dbk_http_limits lim = { .max_head_bytes = 4096,
		                                    .max_body_bytes = 4096 };
	struct dbk_http_request req;
	struct dbk_admin_policy p = { .token = pc->token ? TOK : NULL,
		                      .token_len = pc->token ? strlen(TOK) : 0,
		                      .read_only = pc->read_only,
		                      .public_mask = pc->public_mask,
		                      .hosts = hosts,
		                      .nhosts = 1 };
	struct dbk_admin_via via = { .unix_socket = pc->unix_socket, .local_addr = "10.0.0.5" };
	const char *why = NULL;

	if (dbk_http_parse(text, strlen(text), &lim, &req) != DBK_HTTP_COMPLETE)
		return -1;
	int rc = dbk_admin_guard(&p, &via, &req, &why);
	CHECK(rc == 0 || (why && *why));
	return rc;
}

static void test_guard_table(void)
{
	static const struct policy_case dflt = { .token = true,
		                                 .public_mask = DBK_ADMIN_PUBLIC_DEFAULT },
	                                notok = { .public_mask = DBK_ADMIN_PUBLIC_DEFAULT },
	                                closed = { .token = true },
	                                unix_ro = { .unix_socket = true, .read_only = true },
	                                unix_rw = { .unix_socket = true };
	static const struct {
		const struct policy_case *p;
		const char *req;
		int want;
	} cases[] = {
		/* Reads: public by default, whatever Host the agent answers to. */
		{ &dflt, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:12347\r\n\r\n", 0 },
		{ &dflt, "GET /state HTTP/1.1\r\nHost: localhost:8080\r\n\r\n", 0 },
		{ &dflt, "GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", 0 },
		{ &dflt, "GET / HTTP/1.1\r\nHost: 10.0.0.5:12347\r\n\r\n", 0 },
		{ &dflt, "GET / HTTP/1.1\r\nHost: AGENT.internal\r\n\r\n", 0 },
		{ &dflt, "GET / HTTP/1.0\r\n\r\n", 0 },
		/* DNS rebinding: a name the agent does not answer to. */
		{ &dflt, "GET /state HTTP/1.1\r\nHost: attacker.example\r\n\r\n", 403 },
		{ &dflt, "GET /metrics HTTP/1.1\r\nHost: localhost.attacker.example\r\n\r\n", 403 },
		{ &dflt, "GET / HTTP/1.1\r\nHost: 10.0.0.6\r\n\r\n", 403 },
		{ &dflt, "GET / HTTP/1.1\r\nHost: :80\r\n\r\n", 403 },
		/* Another page. */
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.example\r\n\r\n",
		  403 },
		{ &dflt, "GET /state HTTP/1.1\r\nHost: localhost\r\nOrigin: null\r\n\r\n", 403 },
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost:1\r\nOrigin: http://localhost:2\r\n\r\n",
		  403 },
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost\r\nReferer: http://e.x/localhost\r\n\r\n",
		  403 },
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost\r\nSec-Fetch-Site: same-site\r\n\r\n",
		  403 },
		{ &dflt, "GET /state HTTP/1.1\r\nOrigin: http://localhost\r\n\r\n", 403 },
		/* The endpoint's own page. */
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost:8080\r\nOrigin: http://LOCALHOST:8080\r\n"
		  "Sec-Fetch-Site: same-origin\r\n\r\n",
		  0 },
		{ &dflt,
		  "GET /state HTTP/1.1\r\nHost: localhost:8080\r\nReferer: "
		  "http://localhost:8080/?refresh=5\r\nSec-Fetch-Site: none\r\n\r\n",
		  0 },
		/* Changes: the token, in full. */
		{ &dflt, "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\n\r\n", 401 },
		{ &dflt,
		  "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
		  "s3cre\r\n\r\n",
		  401 },
		{ &dflt,
		  "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
		  "s3cretX\r\n\r\n",
		  401 },
		{ &dflt,
		  "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic "
		  "s3cret\r\n\r\n",
		  401 },
		{ &dflt,
		  "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: bearer "
		  "s3cret\r\n\r\n",
		  0 },
		{ &dflt,
		  "POST /config HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
		  "s3cret\r\nOrigin: "
		  "http://evil.example\r\n\r\n",
		  403 },
		/* POST elsewhere writes nothing: the handler answers 405. */
		{ &dflt, "POST / HTTP/1.1\r\nHost: localhost\r\n\r\n", 0 },
		{ &notok, "POST /config HTTP/1.1\r\nHost: localhost\r\n\r\n", 403 },
		/* --admin-public none: the token for reads too. */
		{ &closed, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", 401 },
		{ &closed,
		  "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
		  "s3cret\r\n\r\n",
		  0 },
		/* A unix socket: its permissions decided; read-only still holds. */
		{ &unix_rw, "POST /config HTTP/1.1\r\nHost: anything\r\n\r\n", 0 },
		{ &unix_rw, "GET /state HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n\r\n",
		  0 },
		{ &unix_ro, "POST /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\n\r\n", 403 },
		{ &unix_ro, "GET /config?max-leases=1 HTTP/1.1\r\nHost: localhost\r\n\r\n", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = guard(cases[i].p, cases[i].req);

		if (got != cases[i].want)
			fprintf(stderr, "  case %zu: %d, want %d: %s\n", i, got, cases[i].want,
			        cases[i].req);
		CHECK(got == cases[i].want);
	}
}

static void test_public_parse(void)
{
	unsigned m;
	char err[128];

	CHECK(dbk_admin_public_parse("metrics,status", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U(m, DBK_ADMIN_PUBLIC_DEFAULT);
	CHECK(dbk_admin_public_parse("status", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U(m, DBK_ADMIN_PUBLIC_STATUS);
	CHECK(dbk_admin_public_parse("none", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U(m, 0);
	CHECK(dbk_admin_public_parse("metrics,", &m, err, sizeof(err)) == -1);
	CHECK(dbk_admin_public_parse("metrics,state", &m, err, sizeof(err)) == -1);
	CHECK(strstr(err, "'state'") != NULL);
	CHECK(dbk_admin_public_parse(",metrics", &m, err, sizeof(err)) == -1);
}

static bool cidr_has(const char *cidr, int family, const char *addr)
{
	struct dbk_net_cidr c;
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
	char err[128];

	CHECK(dbk_net_cidr_parse(cidr, &c, err, sizeof(err)) == 0);
	if (family == AF_INET)
		CHECK(inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1);
	else
		CHECK(inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1);
	return dbk_net_cidr_match(&c, (const struct sockaddr *)&ss);
}

static void test_cidr(void)
{
	struct dbk_net_cidr c;
	char err[128];

	CHECK(cidr_has("127.0.0.1", AF_INET, "127.0.0.1"));
	CHECK(!cidr_has("127.0.0.1", AF_INET, "127.0.0.2"));
	CHECK(cidr_has("127.0.0.0/8", AF_INET, "127.9.8.7"));
	CHECK(cidr_has("10.1.2.0/23", AF_INET, "10.1.3.255"));
	CHECK(!cidr_has("10.1.2.0/23", AF_INET, "10.1.4.0"));
	CHECK(cidr_has("0.0.0.0/0", AF_INET, "192.0.2.1"));
	CHECK(cidr_has("::1", AF_INET6, "::1"));
	CHECK(!cidr_has("::1", AF_INET, "127.0.0.1"));
	/* An IPv4 peer on a dual-stack socket is an IPv4 address. */
	CHECK(cidr_has("127.0.0.1/32", AF_INET6, "::ffff:127.0.0.1"));
	CHECK(cidr_has("fd00::/8", AF_INET6, "fd12::3"));
	CHECK(dbk_net_cidr_parse("127.0.0.1/33", &c, err, sizeof(err)) == -1);
	CHECK(dbk_net_cidr_parse("localhost", &c, err, sizeof(err)) == -1);
	CHECK(dbk_net_cidr_parse("::1/-1", &c, err, sizeof(err)) == -1);
	CHECK(dbk_net_cidr_parse("", &c, err, sizeof(err)) == -1);
}

static enum dbk_config_result parse(struct dbk_config *c, char **argv, char *err, size_t n)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return dbk_config_parse(c, argc, argv, err, n);
}

static void test_options(void)
{
	static struct dbk_config c;
	char err[256];
	char *dflt[] = { "dbucket-spoa", "a", NULL };
	char *all[] = { "dbucket-spoa",
		        "--allow-from",
		        "127.0.0.1,10.0.0.0/8",
		        "--allow-from",
		        "::1",
		        "--admin-token-file",
		        "/t",
		        "--admin-read-only",
		        "--admin-public",
		        "none",
		        "--admin-host",
		        "agent.internal",
		        "a",
		        NULL };
	char *bad_cidr[] = { "dbucket-spoa", "--allow-from", "127.0.0.1,,::1", "a", NULL };
	char *bad_host[] = { "dbucket-spoa", "--admin-host", "x:80", "a", NULL };
	char *bad_public[] = { "dbucket-spoa", "--admin-public", "all", "a", NULL };

	CHECK(parse(&c, dflt, err, sizeof(err)) == DBK_CONFIG_OK);
	CHECK_EQ_U(c.nallow, 0);
	CHECK(!c.admin_token_file && !c.admin_read_only);
	CHECK_EQ_U(c.admin_public, DBK_ADMIN_PUBLIC_DEFAULT);
	CHECK(parse(&c, all, err, sizeof(err)) == DBK_CONFIG_OK);
	CHECK_EQ_U(c.nallow, 3);
	CHECK_EQ_U(c.allow[1].bits, 8);
	CHECK(c.allow[2].family == AF_INET6);
	CHECK(c.admin_token_file && strcmp(c.admin_token_file, "/t") == 0);
	CHECK(c.admin_read_only);
	CHECK_EQ_U(c.admin_public, 0);
	CHECK(c.nadmin_hosts == 1 && strcmp(c.admin_hosts[0], "agent.internal") == 0);
	CHECK(parse(&c, bad_cidr, err, sizeof(err)) == DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--allow-from") != NULL);
	CHECK(parse(&c, bad_host, err, sizeof(err)) == DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--admin-host") != NULL);
	CHECK(parse(&c, bad_public, err, sizeof(err)) == DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--admin-public") != NULL);
}

int main(void)
{
	RUN(test_guard_table);
	RUN(test_public_parse);
	RUN(test_cidr);
	RUN(test_options);
	return CHECK_DONE();
}
