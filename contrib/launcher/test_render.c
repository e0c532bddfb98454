/* The generated configuration: the sample's data path with the flags'
 * values in place. Whether HAProxy accepts it is checked by
 * tests/e2e/launcher.bats (haproxy -c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flags.h"
#include "render.h"

static struct dbk_launch_flags F;
static struct dbk_render_addrs A;
static char ERR[512];

static int parse(const char *first, ...)
{
	static char *argv[64];
	int argc = 0;
	va_list ap;

	dbk_flags_free(&F);
	argv[argc++] = "dbucket";
	va_start(ap, first);
	for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return dbk_flags_parse(&F, argc, argv, ERR, sizeof(ERR)) == DBK_FLAGS_OK ? 0 : -1;
}

enum what { CFG, SPOE, ENV, README };

/* Renders into a string (to free). */
static char *render(enum what w)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = -1;

	if (!out)
		return NULL;
	switch (w) {
	case CFG: rc = dbk_render_haproxy_cfg(out, &F, &A, "/opt/sbin/dbucket-spoa"); break;
	case SPOE: rc = dbk_render_spoe_conf(out, &F); break;
	case ENV: rc = dbk_render_agent_env(out, &F, &A, "/opt/sbin/dbucket-spoa"); break;
	case README:
		rc = dbk_render_readme(out, &F, &A, "/etc/dbk", "/opt/sbin/dbucket-spoa");
		break;
	}
	fclose(out);
	if (rc != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

#define CHECK_HAS(text, part)                                                                     \
	do {                                                                                      \
		if (!(text) || !strstr((text), (part))) {                                         \
			dbk_check_cur_failed++;                                                   \
			fprintf(stderr, "  %s:%d: no \"%s\" in the output\n", __FILE__, __LINE__, \
			        (part));                                                          \
		}                                                                                 \
	} while (0)

#define CHECK_HASNT(text, part)                                                                \
	do {                                                                                   \
		if ((text) && strstr((text), (part))) {                                        \
			dbk_check_cur_failed++;                                                \
			fprintf(stderr, "  %s:%d: \"%s\" in the output\n", __FILE__, __LINE__, \
			        (part));                                                       \
		}                                                                              \
	} while (0)

/* Number of lines of text that start with prefix. */
static unsigned count_lines(const char *text, const char *prefix)
{
	unsigned n = 0;

	for (const char *l = text; l && *l;) {
		if (strncmp(l, prefix, strlen(prefix)) == 0)
			n++;
		const char *nl = strchr(l, '\n');
		l = nl ? nl + 1 : NULL;
	}
	return n;
}

static size_t longest_comment(const char *text)
{
	size_t max = 0;

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (l[0] == '#' && n > max)
			max = n;
		l = nl ? nl + 1 : NULL;
	}
	return max;
}

static void test_run_config(void)
{
	CHECK(parse("--host", "0.0.0.0", "--port", "8000", "--server-hosts", "127.0.0.1",
	            "127.0.0.1", "10.0.0.7", "vllm-3.lan", "--server-ports", "8100", "8101", "8102",
	            "8103", "--enable-dynamic-bucket", NULL) == 0);
	CHECK(dbk_render_addrs_run(&A, "/run/user/1000/dbucket.abc", 12346, ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK(cfg != NULL);
	CHECK_HAS(cfg, "    bind \"0.0.0.0:8000\"\n");
	CHECK_HAS(cfg, "    server vllm0 \"127.0.0.1:8100\" check inter 2s observe layer7 "
	               "error-limit 10 on-error mark-down\n");
	CHECK_HAS(cfg, "    server vllm1 \"127.0.0.1:8101\" check inter 2s observe layer7 "
	               "error-limit 10 on-error mark-down\n");
	CHECK_HAS(cfg, "    server vllm2 \"10.0.0.7:8102\" check inter 2s observe layer7 "
	               "error-limit 10 on-error mark-down\n");
	CHECK_HAS(cfg, "    server vllm3 \"vllm-3.lan:8103\" check inter 2s observe layer7 "
	               "error-limit 10 on-error mark-down\n");
	CHECK_EQ_U(count_lines(cfg, "    server vllm"), 4);
	/* The reference's 3 attempts are HAProxy's first try and 2 retries. */
	CHECK_HAS(cfg, "    retries 2\n");
	CHECK_HAS(cfg, "    retry-on conn-failure empty-response 503\n");
	CHECK_HAS(cfg, "    option redispatch 1\n");
	CHECK_HAS(cfg, "--retry-delay 0.001 has no");
	/* Everything between HAProxy and the agent in the runtime dir. */
	CHECK_HAS(cfg, "    stats socket \"/run/user/1000/dbucket.abc/haproxy.sock\" mode 600 "
	               "level admin\n");
	/* Completion lines on loopback: no ring server may be unix@ since
	 * HAProxy 3.3, and the datagrams need UDP. */
	CHECK_HAS(cfg, "    server agent \"127.0.0.1:12346\" log-proto octet-count\n");
	CHECK_HAS(cfg, "    log \"127.0.0.1:12346\" format raw local0 info\n");
	CHECK_HASNT(cfg, "events.sock");
	CHECK_HAS(cfg, "    server agent1 \"unix@/run/user/1000/dbucket.abc/spoa.sock\" check");
	CHECK_HAS(cfg, "    filter spoe engine dbucket config "
	               "\"/run/user/1000/dbucket.abc/dbucket.spoe.conf\"\n");
	/* The data path of the sample, unchanged. */
	CHECK_HAS(cfg,
	          "log-format \"dbk1 %{+Q,+E}ID %[var(txn.dbucket.server)] %s %ST %tsc %Tt %B %rc "
	          "%[date(0,ms)] ");
	CHECK_HAS(cfg, "    log ring@dbucket-completions format raw local0 info\n");
	CHECK_HAS(cfg, "    unique-id-format %{+X}o%pid-%Ts%ms-%rt\n");
	CHECK_HAS(cfg,
	          "    http-request send-spoe-group dbucket dbucket-route-group if METH_POST\n");
	CHECK_HAS(cfg, "dbucket-moved-group if { var(txn.dbucket.server) -m found }");
	CHECK_HAS(cfg, "    use-server %[var(txn.dbucket.server)] if { var(txn.dbucket.server) "
	               "-m found }\n");
	CHECK_HAS(cfg, "    balance leastconn\n");
	CHECK_HAS(cfg, "frontend stats\n    bind \"unix@/run/user/1000/dbucket.abc/stats.sock\"\n");
	CHECK_HAS(cfg, "    http-request use-service prometheus-exporter if { path /metrics }\n");
	CHECK_HAS(cfg, "\\\"server_instances\\\": %[nbsrv(vllm)]}\" if METH_GET "
	               "{ path /healthcheck }");
	CHECK_HAS(cfg, "X-Dbucket-Bucket %[var(txn.dbucket.bucket)] if "
	               "{ env(DBK_DEBUG_HEADERS) -m str 1 }");
	CHECK_HAS(cfg, "# Dynamic buckets: short group vllm0..vllm1 (below 32768 tokens),\n"
	               "#   long group vllm2..vllm3.\n");
	/* The agent's command line is in the header, names and all. */
	CHECK_HAS(cfg, "/opt/sbin/dbucket-spoa --listen unix:/run/user/1000/dbucket.abc/spoa.sock");
	CHECK_HAS(cfg, "vllm0 vllm1 vllm2 vllm3\n");
	/* Concrete: no environment variable left to set, no production
	 * user. */
	CHECK_HASNT(cfg, "${");
	CHECK_HASNT(cfg, "user haproxy");
	CHECK(longest_comment(cfg) <= 80);
	free(cfg);
}

static void test_production_config(void)
{
	CHECK(parse("--host", "0.0.0.0", "--server-hosts", "a", "b", "c", "--server-ports", "1",
	            "2", "3", "--enable-dynamic-bucket", "--server-group-threshold", "1000",
	            "--max-retries", "1", NULL) == 0);
	CHECK(dbk_render_addrs_production(&A, "/etc/dbk", ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK_HAS(cfg, "    user haproxy\n    group haproxy\n");
	CHECK_HAS(cfg, "    stats socket \"/run/haproxy/admin.sock\" mode 660 level admin group "
	               "haproxy\n");
	CHECK_HAS(cfg, "    server agent \"127.0.0.1:12346\" log-proto octet-count\n");
	CHECK_HAS(cfg, "    server agent1 \"127.0.0.1:12345\" check");
	CHECK_HAS(cfg, "frontend stats\n    bind \"127.0.0.1:8404\"\n");
	CHECK_HAS(cfg, "    filter spoe engine dbucket config \"/etc/dbk/dbucket.spoe.conf\"\n");
	CHECK_HAS(cfg, "    retries 0\n");
	/* Odd count: the short group gets the extra server. */
	CHECK_HAS(cfg, "short group vllm0..vllm1 (below 1000 tokens),\n#   long group vllm2.\n");
	/* Production discovers the names from HAProxy. */
	CHECK_HASNT(cfg, " vllm0 vllm1 vllm2\n");
	CHECK_HAS(cfg, "--haproxy-socket /run/haproxy/admin.sock");
	free(cfg);

	char *env = render(ENV);
	CHECK_HAS(env, "\nDBUCKET_SPOA_OPTS=\"--policy ttft --enable-dynamic-bucket "
	               "--server-group-threshold 1000 "
	               "--max-request-tokens 131072 --listen 127.0.0.1:12345 --completion-listen "
	               "127.0.0.1:12346 --completion-listen udp@127.0.0.1:12346 "
	               "--admin-listen 127.0.0.1:12347\"\n");
	CHECK_HAS(env, "#   /opt/sbin/dbucket-spoa --haproxy-socket /run/haproxy/admin.sock "
	               "$DBUCKET_SPOA_OPTS\n");
	CHECK_EQ_U(count_lines(env, "DBUCKET_SPOA_OPTS="), 1);
	free(env);

	char *readme = render(README);
	CHECK_HAS(readme, "haproxy -c -f /etc/dbk/haproxy.cfg\n");
	CHECK_HAS(readme, "install -m 644 /etc/dbk/dbucket-spoa.env /etc/default/dbucket-spoa\n");
	CHECK_HAS(readme, "  /opt/sbin/dbucket-spoa --haproxy-socket /run/haproxy/admin.sock "
	                  "--policy ttft --enable-dynamic-bucket");
	CHECK_HAS(readme, "3 vLLM servers");
	/* The advice is a new directory, never HAProxy's own. */
	CHECK_HASNT(readme, "--print-config /etc/haproxy ");
	CHECK_HAS(readme, "cp --backup=numbered /etc/dbk/haproxy.cfg /etc/haproxy/haproxy.cfg");
	free(readme);

	/* The reference policy, and scrape settings, reach the unit's options. */
	CHECK(parse("--server-hosts", "a", "b", "--server-ports", "1", "2", "--policy", "reference",
	            NULL) == 0);
	env = render(ENV);
	CHECK_HAS(env, "DBUCKET_SPOA_OPTS=\"--policy reference --server-group-threshold ");
	CHECK_HASNT(env, "--scrape");
	free(env);
	CHECK(parse("--server-hosts", "a", "b", "--server-ports", "1", "2", "--scrape-interval",
	            "250", "--scrape-timeout", "900", NULL) == 0);
	env = render(ENV);
	CHECK_HAS(env, "DBUCKET_SPOA_OPTS=\"--policy ttft --scrape-interval 250 --scrape-timeout "
	               "900 --server-group-threshold ");
	/* Production scrapes where HAProxy says each server is. */
	CHECK_HASNT(env, "--scrape vllm");
	free(env);
}

static void test_plain_and_addresses(void)
{
	/* The reference's defaults: one server, localhost. */
	CHECK(parse(NULL) == 0);
	CHECK(dbk_render_addrs_run(&A, "/tmp/d", 12346, ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK_HAS(cfg, "    bind \"localhost:8000\"\n");
	CHECK_HAS(cfg, "    server vllm0 \"localhost:8001\" check inter 2s observe layer7 "
	               "error-limit 10 on-error mark-down\n");
	CHECK_EQ_U(count_lines(cfg, "    server vllm"), 1);
	CHECK_HAS(cfg, "# Plain mode: one group of 1 server, the least loaded wins.\n");
	CHECK_HAS(cfg, "    retries 2\n");
	free(cfg);

	/* IPv6 in brackets; "" binds every address. */
	CHECK(parse("--host", "", "--server-hosts", "::1", "[::1]", "fe80::1%eth0",
	            "--server-ports", "1", "2", "3", NULL) == 0);
	cfg = render(CFG);
	CHECK_HAS(cfg, "    bind \":8000\"\n");
	CHECK_HAS(cfg, "    server vllm0 \"[::1]:1\"");
	CHECK_HAS(cfg, "    server vllm1 \"[::1]:2\"");
	CHECK_HAS(cfg, "    server vllm2 \"[fe80::1%eth0]:3\"");
	CHECK_HAS(cfg, "dbucket --host '' --port 8000");
	free(cfg);

	CHECK(parse("--host", "::", "--port", "9", NULL) == 0);
	cfg = render(CFG);
	CHECK_HAS(cfg, "    bind \"[::]:9\"\n");
	free(cfg);
}

static void test_spoe(void)
{
	CHECK(parse(NULL) == 0);
	char *spoe = render(SPOE);
	CHECK_HAS(spoe, "[dbucket]\nspoe-agent dbucket-agent\n");
	CHECK_HAS(spoe, "    option var-prefix      dbucket\n");
	CHECK_HAS(spoe, "    no option send-frag-payload\n");
	CHECK_HAS(spoe, "    use-backend dbucket-agents\n");
	CHECK_HAS(spoe, "    args id=unique-id blen=req.body_size arrived=req.body_len "
	                "clen=req.hdr_cnt(content-length) body=req.body,bytes(0,15000) "
	                "details=env(DBK_DEBUG_HEADERS) session=var(txn.dbk_session) "
	                "class=var(txn.dbk_class)\n");
	CHECK_HAS(spoe, "    args id=unique-id server=srv_name\n");
	CHECK_HAS(spoe, "    timeout processing \"${DBK_SPOE_PROCESSING-50ms}\"\n");
	free(spoe);
}

/* --admission: the agent is told, in a run and in production; the class
 * rules and the 429 answer are there either way, as in the sample. */
static void test_admission(void)
{
	CHECK(parse("--admission", NULL) == 0);
	CHECK(F.admission);
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	char **v = dbk_render_agent_argv(&F, &A, "/x/dbucket-spoa");
	bool told = false;
	for (size_t i = 0; v && v[i]; i++)
		told |= strcmp(v[i], "--admission") == 0;
	CHECK(told);
	dbk_render_argv_free(v);
	CHECK(dbk_render_addrs_production(&A, "/etc", ERR, sizeof(ERR)) == 0);
	char *env = render(ENV);
	CHECK_HAS(env, "DBUCKET_SPOA_OPTS=\"--policy ttft --admission ");
	free(env);
	/* Production keeps the sample's two knobs of HAProxy's environment. */
	char *prod = render(CFG);
	CHECK_HAS(prod, ".if defined(DBK_CLASSES_MAP)\n");
	CHECK_HAS(prod, ".if defined(DBK_TRUSTED_CLASS_SRC)\n"
	                "    http-request set-var(txn.dbk_class) req.hdr(x-request-class) if "
	                "{ req.hdr(x-request-class) -m found } { src -f "
	                "\"${DBK_TRUSTED_CLASS_SRC}\" }\n");
	CHECK_HAS(prod, "\" maxconn \"${DBK_SERVER_MAXCONN-0}\" check inter 2s observe layer7 "
	                "error-limit 10 on-error mark-down\n");
	/* ... and the priority filter, loaded and placed as there. */
	CHECK_HAS(prod, ".if defined(DBK_PRIORITY_LUA)\n    lua-load \"${DBK_PRIORITY_LUA}\"\n");
	CHECK_HAS(prod,
	          ".if defined(DBK_PRIORITY_LUA)\n    filter lua.dbucket_priority\n"
	          "    http-request set-header Content-Length "
	          "%[req.hdr(content-length),add(13)] if { req.hdr_val(content-length) gt 0 }\n");
	free(prod);
	CHECK(parse(NULL) == 0);
	CHECK(!F.admission);
	char *cfg = render(CFG);
	CHECK_HAS(cfg, "    http-request set-var(txn.dbk_class) str(sheddable) if "
	               "{ req.hdr(x-request-class) -m str -i sheddable 2 }\n");
	CHECK_HAS(cfg, "    http-request set-var(txn.dbk_class) str(standard) if "
	               "{ req.hdr(x-request-class) -m str -i standard 1 } "
	               "{ var(txn.dbk_class) -m str -i critical 0 }\n");
	CHECK_HAS(cfg, "    http-request set-priority-class int(0) if { var(txn.dbk_class) -m str "
	               "-i critical 0 }\n");
	CHECK_HAS(cfg, "    http-request return status 429 content-type application/json hdr "
	               "Retry-After \"%[var(txn.dbucket.retry_after)]\"");
	free(cfg);
	env = render(ENV);
	CHECK(env && !strstr(env, "--admission"));
	free(env);
	/* A run trusts no client: there the header only lowers the class... */
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	cfg = render(CFG);
	CHECK(cfg && !strstr(cfg, "set-var(txn.dbk_class) req.hdr(x-request-class)"));
	CHECK_HAS(cfg, "{ req.hdr(x-request-class) -m str -i sheddable 2 }\n");
	free(cfg);
	/* ... unless --trusted-class-src names the clients whose header may
	 * set any class, before the lowering rules (and the map's, in
	 * production). */
	CHECK(parse("--trusted-class-src", "127.0.0.2", "10.0.0.0/8", "::1", NULL) == 0);
	cfg = render(CFG);
	const char *trusted = "    http-request set-var(txn.dbk_class) req.hdr(x-request-class) if "
	                      "{ req.hdr(x-request-class) -m found } { src 127.0.0.2 10.0.0.0/8 "
	                      "::1 }\n";
	CHECK_HAS(cfg, trusted);
	CHECK(cfg && strstr(cfg, trusted) < strstr(cfg, "-m str -i sheddable 2 }"));
	free(cfg);
	CHECK(dbk_render_addrs_production(&A, "/etc", ERR, sizeof(ERR)) == 0);
	cfg = render(CFG);
	CHECK_HAS(cfg, trusted);
	CHECK(cfg && strstr(cfg, trusted) < strstr(cfg, ".if defined(DBK_CLASSES_MAP)"));
	free(cfg);
}

/* v from index `from` on is want, to its end. */
static void check_argv_tail(char **v, size_t from, const char *const *want)
{
	size_t i = from;

	for (size_t k = 0; v && want[k]; k++, i++)
		if (!v[i] || strcmp(v[i], want[k]) != 0) {
			dbk_check_cur_failed++;
			fprintf(stderr, "  argv[%zu] = %s, want %s\n", i, v[i] ? v[i] : "NULL",
			        want[k]);
			return;
		}
	CHECK(v && v[i] == NULL);
}

static void test_agent_argv(void)
{
	const char *want[] = { "/x/dbucket-spoa",
		               "--listen",
		               "unix:/r/spoa.sock",
		               "--completion-listen",
		               "127.0.0.1:12346",
		               "--completion-listen",
		               "udp@127.0.0.1:12346",
		               "--admin-listen",
		               "unix:/r/admin.sock",
		               "--haproxy-socket",
		               "unix:/r/haproxy.sock",
		               "--server-group-threshold",
		               "100",
		               "--max-request-tokens",
		               "200",
		               "--enable-dynamic-bucket",
		               "--policy",
		               "ttft",
		               "--scrape",
		               "vllm0=http://a:1",
		               "--scrape",
		               "vllm1=http://[::1]:2",
		               "vllm0",
		               "vllm1",
		               NULL };

	CHECK(parse("--server-hosts", "a", "::1", "--server-ports", "1", "2",
	            "--enable-dynamic-bucket", "--server-group-threshold", "100",
	            "--max-request-tokens", "200", NULL) == 0);
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	char **v = dbk_render_agent_argv(&F, &A, "/x/dbucket-spoa");
	CHECK(v != NULL);
	check_argv_tail(v, 0, want);
	dbk_render_argv_free(v);
	size_t i;

	/* Plain mode: no --enable-dynamic-bucket; production: no names. */
	CHECK(parse(NULL) == 0);
	CHECK(dbk_render_addrs_production(&A, "/etc", ERR, sizeof(ERR)) == 0);
	v = dbk_render_agent_argv(&F, &A, "dbucket-spoa");
	CHECK(v != NULL);
	for (i = 0; v && v[i]; i++) {
		CHECK(strcmp(v[i], "--enable-dynamic-bucket") != 0);
		CHECK(strncmp(v[i], "vllm", 4) != 0);
	}
	CHECK_EQ_U(i, 17);
	dbk_render_argv_free(v);

	/* --policy reference in a run: the reference's flags, nothing
	 * scraped. */
	CHECK(parse("--server-hosts", "a", "b", "--server-ports", "1", "2", "--policy", "reference",
	            NULL) == 0);
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	v = dbk_render_agent_argv(&F, &A, "dbucket-spoa");
	CHECK(v != NULL);
	bool reference = false;
	for (i = 0; v && v[i]; i++) {
		CHECK(strncmp(v[i], "--scrape", 8) != 0);
		if (i && strcmp(v[i - 1], "--policy") == 0)
			reference = strcmp(v[i], "reference") == 0;
	}
	CHECK(reference);
	dbk_render_argv_free(v);
}

static void test_dirs(void)
{
	char dir[200];

	CHECK(dbk_render_path_ok("/tmp/dbucket.Ab_c-1+2,3=4@5~6"));
	CHECK(!dbk_render_path_ok("relative/dir"));
	CHECK(!dbk_render_path_ok("/with space"));
	CHECK(!dbk_render_path_ok("/with\"quote"));
	CHECK(!dbk_render_path_ok("/with$var"));
	CHECK(!dbk_render_path_ok("/with#hash"));
	CHECK(!dbk_render_path_ok("/with\nnewline"));
	CHECK(!dbk_render_path_ok("/"));
	CHECK(dbk_render_addrs_run(&A, "/a b", 12346, ERR, sizeof(ERR)) < 0);
	CHECK(strstr(ERR, "cannot be used") != NULL);
	CHECK(dbk_render_addrs_production(&A, "/a$b", ERR, sizeof(ERR)) < 0);
	/* sun_path holds 107 bytes: DIR + "/haproxy.sock" must fit. */
	memset(dir, 'd', sizeof(dir));
	dir[0] = '/';
	dir[107 - strlen("/haproxy.sock")] = '\0';
	CHECK(dbk_render_addrs_run(&A, dir, 12346, ERR, sizeof(ERR)) == 0);
	CHECK(strlen(A.stats_socket) == 107);
	memset(dir, 'd', sizeof(dir));
	dir[0] = '/';
	dir[108 - strlen("/haproxy.sock")] = '\0';
	CHECK(dbk_render_addrs_run(&A, dir, 12346, ERR, sizeof(ERR)) < 0);
	CHECK(strstr(ERR, "too long for unix sockets") != NULL);
	CHECK(dbk_render_addrs_run(&A, "/r", 0, ERR, sizeof(ERR)) < 0);
	CHECK(dbk_render_addrs_run(&A, "/r", 65536, ERR, sizeof(ERR)) < 0);
	/* A run's agent takes the sockets the launcher bound; HAProxy still
	 * sends to their port. */
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	CHECK(dbk_render_addrs_inherit(&A, 5, 6, ERR, sizeof(ERR)) == 0);
	CHECK(!strcmp(A.agent_completions, "fd@5") && !strcmp(A.agent_completions_udp, "fd@6"));
	CHECK(!strcmp(A.completions, "127.0.0.1:12346"));
	CHECK(dbk_render_addrs_inherit(&A, -1, 6, ERR, sizeof(ERR)) < 0);
}

/* Hundreds of servers: comments wrap, every server has its line. */
static void test_many_servers(void)
{
	static char *argv[1000];
	static char ports[400][8];
	int argc = 0;

	dbk_flags_free(&F);
	argv[argc++] = "dbucket";
	argv[argc++] = "--server-hosts";
	for (int i = 0; i < 400; i++)
		argv[argc++] = "vllm-host.example.internal";
	argv[argc++] = "--server-ports";
	for (int i = 0; i < 400; i++) {
		snprintf(ports[i], sizeof(ports[i]), "%d", 9000 + i);
		argv[argc++] = ports[i];
	}
	argv[argc++] = "--enable-dynamic-bucket";
	argv[argc] = NULL;
	CHECK(dbk_flags_parse(&F, argc, argv, ERR, sizeof(ERR)) == DBK_FLAGS_OK);
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK_EQ_U(count_lines(cfg, "    server vllm"), 400);
	CHECK_HAS(cfg, "    server vllm399 \"vllm-host.example.internal:9399\" check inter 2s "
	               "observe layer7 error-limit 10 on-error mark-down\n");
	CHECK_HAS(cfg, "short group vllm0..vllm199 (below 32768 tokens),\n"
	               "#   long group vllm200..vllm399.\n");
	CHECK(longest_comment(cfg) <= 80);
	free(cfg);
}

/* The error files the configuration names: one per status, each a whole
 * HTTP response whose Content-Length is its body's size (HAProxy refuses
 * the configuration otherwise) and whose body is vLLM's error shape. */
static void test_error_files(void)
{
	CHECK(parse("--server-hosts", "a", "--server-ports", "1", NULL) == 0);
	CHECK(dbk_render_addrs_production(&A, "/etc/dbk", ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK_HAS(cfg, "    timeout queue 60s\n"
	               "    # OpenAI clients show the message of a JSON error, not HTML.\n"
	               "    errorfiles dbucket-json\n");
	CHECK_HAS(cfg, "\nhttp-errors dbucket-json\n");
	CHECK_HAS(cfg, "    errorfile 503 \"/etc/dbk/error-503.http\"\n");
	CHECK_EQ_U(count_lines(cfg, "    errorfile "), 8);
	CHECK_EQ_U(dbk_render_error_count(), 8);
	free(cfg);

	for (size_t i = 0; i < dbk_render_error_count(); i++) {
		char name[DBK_RENDER_ERROR_NAME], want[64], *text = NULL;
		size_t len = 0;
		dbk_render_error_name(i, name, sizeof(name));
		FILE *out = open_memstream(&text, &len);
		CHECK(out && dbk_render_error_file(out, name) == 0);
		if (out)
			fclose(out);
		if (!text)
			continue;
		const char *status = name + strlen(DBK_RENDER_ERROR_PREFIX);
		snprintf(want, sizeof(want), "HTTP/1.1 %.3s ", status);
		CHECK(strncmp(text, want, strlen(want)) == 0);
		CHECK_HAS(text, "\nContent-Type: application/json\n");
		snprintf(want, sizeof(want), ",\"param\":null,\"code\":%.3s}}\n", status);
		CHECK_HAS(text, want);
		const char *cl = strstr(text, "\nContent-Length: ");
		const char *body = strstr(text, "\n\n");
		CHECK(cl && body);
		if (cl && body)
			CHECK_EQ_U(strtoul(cl + 17, NULL, 10), strlen(body + 2));
		if (strncmp(status, "429", 3) == 0)
			CHECK_HAS(text, "\nRetry-After: ");
		free(text);
	}
	FILE *out = fopen("/dev/null", "w");
	CHECK(out && dbk_render_error_file(out, "error-200.http") < 0);
	if (out)
		fclose(out);
}

/* --layout per-model: a backend and an agent pool per model, the model
 * map choosing it, as haproxy/models-per-backend.cfg with models.map. */
static void test_per_model(void)
{
	CHECK(parse("--server-hosts", "a", "b", "c", "--server-ports", "1", "2", "3", "--layout",
	            "per-model", "--server-models", "m-a", "org/m-b", "m-a", NULL) == 0);
	CHECK(dbk_render_addrs_run(&A, "/r", 12346, ERR, sizeof(ERR)) == 0);
	char *cfg = render(CFG);
	CHECK_HAS(cfg, "req.body,json_query('$.model'),map(\"/r/models.map\") if METH_POST\n");
	CHECK_HAS(cfg, "\nbackend m-a\n");
	CHECK_HAS(cfg, "\nbackend org-m-b\n");
	/* Every server in the shared backend, each in its model's. */
	CHECK_EQ_U(count_lines(cfg, "    server vllm0 "), 2);
	CHECK_EQ_U(count_lines(cfg, "    server vllm1 "), 2);
	CHECK_EQ_U(count_lines(cfg, "    retries "), 3);
	/* A model's backend with no usable server answers the agent's 503
	 * itself (the agent down or no /v1/models read yet); the shared
	 * backend leaves that to the frontend and HAProxy's own 503. */
	CHECK_EQ_U(count_lines(cfg, "    http-request return status 503 "), 3);
	const char *ma = cfg ? strstr(cfg, "\nbackend m-a\n") : NULL;
	const char *nb = ma ? strstr(ma, "if { nbsrv eq 0 }\n") : NULL;
	CHECK(nb && nb < strstr(ma, "    server vllm0 "));
	const char *b = cfg ? strstr(cfg, "\nbackend org-m-b\n") : NULL;
	CHECK(b && strstr(b, "    server vllm1 \"b:2\"") && !strstr(b, "server vllm0 "));
	free(cfg);

	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	CHECK(out && dbk_render_models_map(out, &F) == 0);
	if (out)
		fclose(out);
	CHECK_HAS(buf, "\nm-a m-a\norg/m-b org-m-b\n");
	free(buf);

	const char *want[] = {
		"--pool", "m-a",   "--scrape", "vllm0=http://a:1", "--scrape", "vllm2=http://c:3",
		"vllm0",  "vllm2", "--pool",   "org-m-b",          "--scrape", "vllm1=http://b:2",
		"vllm1",  NULL
	};
	char **v = dbk_render_agent_argv(&F, &A, "dbucket-spoa");
	size_t i = 0;
	while (v && v[i] && strcmp(v[i], "--pool") != 0)
		i++;
	check_argv_tail(v, i, want);
	dbk_render_argv_free(v);

	/* Production: the pools read their servers from HAProxy. */
	CHECK(dbk_render_addrs_production(&A, "/etc", ERR, sizeof(ERR)) == 0);
	const struct {
		enum what w;
		const char *part;
	} has[] = { { ENV, " --pool m-a --pool org-m-b\"\n" },
		    { README, "--layout per-model: /etc/models.map is the model map" },
		    { CFG, "map(\"/etc/models.map\")" } };
	for (size_t k = 0; k < sizeof(has) / sizeof(has[0]); k++) {
		char *text = render(has[k].w);
		CHECK_HAS(text, has[k].part);
		free(text);
	}
	cfg = render(CFG);
	CHECK_HASNT(cfg, "DBK_MODELS_MAP");
	free(cfg);
}

int main(void)
{
	RUN(test_run_config);
	RUN(test_production_config);
	RUN(test_plain_and_addresses);
	RUN(test_spoe);
	RUN(test_agent_argv);
	RUN(test_admission);
	RUN(test_dirs);
	RUN(test_many_servers);
	RUN(test_error_files);
	RUN(test_per_model);
	dbk_flags_free(&F);
	return CHECK_DONE();
}
