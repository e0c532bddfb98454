/* Fuzzes the URL parser (lib/url.h).
 *
 * Input: a URL, any bytes (cut at the first NUL).
 *
 * Checked:
 * - dbk_url_split returns 0 or -1; on -1 a non-empty one-line reason;
 * - on 0: every field is a NUL-terminated string of its array; the host
 *   is not empty and the port 1..65535 (443 or 80 when not given, by the
 *   scheme); the authority, the host and the path appear in the input, in
 *   that order, the path being its tail; the address is HOST:PORT, the
 *   host bracketed when it holds a colon. */
#include "fuzz.h"
#include "lib/url.h"

static bool terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1);
	struct dbk_url u;
	char err[160], addr[300];

	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	err[0] = '\0';
	int rc = dbk_url_split(url, &u, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
		free(url);
		return 0;
	}
	FUZZ_CHECK(terminated(u.host, sizeof(u.host)) && terminated(u.port, sizeof(u.port)));
	FUZZ_CHECK(terminated(u.authority, sizeof(u.authority)));
	FUZZ_CHECK(terminated(u.addr, sizeof(u.addr)) && terminated(u.path, sizeof(u.path)));
	FUZZ_CHECK(u.host[0]);
	long port = strtol(u.port, NULL, 10);
	FUZZ_CHECK(port >= 1 && port <= 65535);
	const char *a = url + (u.https ? 8 : 7);
	FUZZ_CHECK(strncmp(url, u.https ? "https://" : "http://", u.https ? 8 : 7) == 0);
	FUZZ_CHECK(strncmp(a, u.authority, strlen(u.authority)) == 0);
	FUZZ_CHECK(strstr(u.authority, u.host) != NULL);
	FUZZ_CHECK(strcmp(a + strlen(u.authority), u.path) == 0);
	if (!strchr(u.authority + strlen(u.host) + (u.authority[0] == '[' ? 2 : 0), ':'))
		FUZZ_CHECK(port == (u.https ? 443 : 80));
	snprintf(addr, sizeof(addr), strchr(u.host, ':') ? "[%s]:%s" : "%s:%s", u.host, u.port);
	FUZZ_CHECK(strcmp(addr, u.addr) == 0);
	free(url);
	return 0;
}
