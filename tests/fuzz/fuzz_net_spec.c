/* Fuzzes the address syntax of every listening and connecting option
 * (dbk_net_spec_parse, lib/net.h): HAProxy's spellings and the agent's.
 *
 * Input: an address, any bytes (cut at the first NUL).
 *
 * Checked:
 * - 0 or -1; on -1 a non-empty one-line reason;
 * - on 0: rest is the input's tail (the prefix, if any, stripped); a
 *   unix socket's path is not empty and fits sun_path, its family
 *   AF_UNIX; any other has a family of AF_UNSPEC, AF_INET or AF_INET6,
 *   and its port (after the last ':') is digits up to 65535;
 * - dbk_net_unix_path agrees on which specs are unix sockets. */
#include <sys/socket.h>
#include <sys/un.h>

#include "fuzz.h"
#include "lib/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	struct dbk_net_spec s;
	char err[200];

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	err[0] = '\0';
	int rc = dbk_net_spec_parse(spec, &s, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		FUZZ_CHECK(err[0] && memchr(err, '\0', sizeof(err)));
		FUZZ_CHECK(!dbk_net_unix_path(spec));
		free(spec);
		return 0;
	}
	size_t n = strlen(spec), r = strlen(s.rest);
	FUZZ_CHECK(r <= n && s.rest == spec + (n - r));
	if (s.kind == DBK_NET_UNIX) {
		FUZZ_CHECK(s.family == AF_UNIX);
		FUZZ_CHECK(r > 0 && r < sizeof(((struct sockaddr_un *)0)->sun_path));
		FUZZ_CHECK(dbk_net_unix_path(spec) == s.rest);
	} else {
		const char *port = strrchr(s.rest, ':');

		FUZZ_CHECK(s.kind == DBK_NET_STREAM || s.kind == DBK_NET_DGRAM);
		FUZZ_CHECK(s.family == AF_UNSPEC || s.family == AF_INET || s.family == AF_INET6);
		FUZZ_CHECK(port && port[1] && strlen(port + 1) <= 5);
		FUZZ_CHECK(strspn(port + 1, "0123456789") == strlen(port + 1));
		FUZZ_CHECK(atol(port + 1) <= 65535);
		FUZZ_CHECK(!dbk_net_unix_path(spec));
	}
	free(spec);
	return 0;
}
