/* Fuzzes the admin endpoint's guard (agent/admin_guard.h) on the parsed
 * requests it sees, and --admin-public's parser.
 *
 * Input: one byte choosing the policy and the connection (bit 0: a token
 * is configured, bit 1: a unix socket, bit 2: read-only, bits 3-4: the
 * public classes), then the bytes of a request, also read (to the first
 * NUL) as an --admin-public value.
 *
 * Checked:
 * - the guard answers 0, 401 or 403, with a non-empty one-line reason
 *   when it refuses, and 401 only when a token is configured;
 * - a read-only policy refuses POST /config whatever else the request
 *   says; a unix socket is refused nothing else;
 * - the same request and policy get the same answer twice;
 * - dbk_admin_public_parse returns 0 or -1; on 0 a mask of known bits,
 *   on -1 a one-line reason. */
#include "admin_guard.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct dbk_http_limits lim = { .max_head_bytes = 4096,
		                                    .max_body_bytes = 4096 };
	static const char *const hosts[] = { "agent.internal" };
	struct dbk_http_request req;
	char err[160];

	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	struct dbk_admin_policy p = {
		.token = (sel & 1) ? "s3cret" : NULL,
		.token_len = (sel & 1) ? 6 : 0,
		.read_only = (sel & 4) != 0,
		.public_mask = (sel >> 3) & 3u,
		.hosts = hosts,
		.nhosts = 1,
	};
	struct dbk_admin_via via = { .unix_socket = (sel & 2) != 0, .local_addr = "10.0.0.5" };

	if (dbk_http_parse(buf, len, &lim, &req) == DBK_HTTP_COMPLETE) {
		const char *why = NULL, *why2 = NULL;
		int rc = dbk_admin_guard(&p, &via, &req, &why);

		FUZZ_CHECK(rc == 0 || rc == 401 || rc == 403);
		FUZZ_CHECK(rc == 0 || (why && why[0] && !strchr(why, '\n')));
		FUZZ_CHECK(rc != 401 || p.token);
		FUZZ_CHECK(dbk_admin_guard(&p, &via, &req, &why2) == rc);
		bool post_config = dbk_http_slice_eq(req.method, "POST") && req.target.n >= 7 &&
		                   memcmp(req.target.p, "/config", 7) == 0 &&
		                   (req.target.n == 7 || req.target.p[7] == '?');
		if (p.read_only && post_config)
			FUZZ_CHECK(rc == 403);
		if (via.unix_socket && !(p.read_only && post_config))
			FUZZ_CHECK(rc == 0);
	}

	char *v = malloc(len + 1);
	unsigned mask = 99;
	if (!v)
		return 0;
	memcpy(v, buf, len);
	v[len] = '\0';
	err[0] = '\0';
	int rc = dbk_admin_public_parse(v, &mask, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc == 0)
		FUZZ_CHECK((mask & ~(unsigned)DBK_ADMIN_PUBLIC_DEFAULT) == 0);
	else
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
	free(v);
	return 0;
}
