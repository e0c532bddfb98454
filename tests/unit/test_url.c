/* lib/url: the parts of http:// and https:// URLs (host without
 * brackets, default ports, the authority as written, the address lib/net
 * resolves, the path as given), and what is refused. The bench's endpoint
 * paths over it are contrib/bench/test_request.c's. */
#include "check.h"
#include "lib/url.h"

static void test_parts(void)
{
	struct dbk_url u;
	char err[128];

	CHECK(dbk_url_split("http://127.0.0.1:8000", &u, err, sizeof(err)) == 0);
	CHECK(!u.https);
	CHECK(strcmp(u.host, "127.0.0.1") == 0 && strcmp(u.port, "8000") == 0);
	CHECK(strcmp(u.authority, "127.0.0.1:8000") == 0);
	CHECK(strcmp(u.addr, "127.0.0.1:8000") == 0);
	CHECK(strcmp(u.path, "") == 0);

	CHECK(dbk_url_split("http://[::1]:9/v1/", &u, err, sizeof(err)) == 0);
	CHECK(strcmp(u.host, "::1") == 0 && strcmp(u.port, "9") == 0);
	CHECK(strcmp(u.authority, "[::1]:9") == 0);
	CHECK(strcmp(u.addr, "[::1]:9") == 0);
	CHECK(strcmp(u.path, "/v1/") == 0);

	CHECK(dbk_url_split("http://vllm-0.local/base", &u, err, sizeof(err)) == 0);
	CHECK(strcmp(u.port, "80") == 0 && strcmp(u.authority, "vllm-0.local") == 0);
	CHECK(strcmp(u.addr, "vllm-0.local:80") == 0 && strcmp(u.path, "/base") == 0);

	CHECK(dbk_url_split("https://h", &u, err, sizeof(err)) == 0);
	CHECK(u.https && strcmp(u.port, "443") == 0);
}

static bool refused(const char *url, const char *why)
{
	struct dbk_url u;
	char err[128] = "";

	return dbk_url_split(url, &u, err, sizeof(err)) == -1 && strstr(err, why);
}

static void test_refused(void)
{
	char long_path[1100];

	CHECK(refused("127.0.0.1:8000", "http://"));
	CHECK(refused("ftp://h/", "http://"));
	CHECK(refused("http://", "host"));
	CHECK(refused("http://:80", "host"));
	CHECK(refused("http://h:0", "port"));
	CHECK(refused("http://h:65536", "port"));
	CHECK(refused("http://h:", "port"));
	CHECK(refused("http://h:80x", "port"));
	CHECK(refused("http://[::1", "']'"));
	CHECK(refused("http://[::1]x/", "after the host"));
	CHECK(refused("http://h/a b", "path"));
	CHECK(refused("http://h/a?x=1", "path"));
	CHECK(refused("http://h/a#f", "path"));
	CHECK(refused("http://user@h/", "character"));
	memset(long_path, 'a', sizeof(long_path));
	memcpy(long_path, "http://h/", 9);
	long_path[sizeof(long_path) - 1] = '\0';
	CHECK(refused(long_path, "too long"));
}

int main(void)
{
	RUN(test_parts);
	RUN(test_refused);
	return CHECK_DONE();
}
