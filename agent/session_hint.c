#include "session_hint.h"

#include <string.h>
#include <zlib.h>

/* zlib's crc32 is HAProxy's converter (its hash_crc32: IEEE 802.3,
 * reflected, initial and final ~0), and a library Debian keeps. Every
 * hinted request hashes server names until one matches (a cache by slot
 * would need the route's members to keep it current), so this is paid
 * per request times servers. */
uint32_t dbk_shint_crc32(const void *p, size_t n) { return (uint32_t)crc32_z(0, p, n); }

int dbk_shint_server(const char *const *names, unsigned n, uint32_t crc)
{
	if (!crc || !names)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if (names[i] && names[i][0] && dbk_shint_crc32(names[i], strlen(names[i])) == crc)
			return (int)i;
	return -1;
}

bool dbk_shint_apply(const struct dbk_policy *p, const char *const *names, unsigned n,
                     const struct dbk_spop_data *srv, const struct dbk_spop_data *tok,
                     const struct dbk_policy_request *r)
{
	int64_t crc, tokens;

	if (!p || !p->ops->hint || !r->has_session || !srv || !tok ||
	    !dbk_spop_data_to_i64(srv, &crc) || !dbk_spop_data_to_i64(tok, &tokens) || crc <= 0 ||
	    crc > UINT32_MAX || tokens <= 0 || tokens > UINT32_MAX)
		return false;
	int i = dbk_shint_server(names, n, (uint32_t)crc);
	if (i < 0)
		return false;
	p->ops->hint(p->st, r, (unsigned)i, (uint32_t)tokens);
	return true;
}
