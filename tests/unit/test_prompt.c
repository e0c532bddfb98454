/* Unit tests of the bench's prompt text (model/prompt.c); the request
 * around it is contrib/bench/test_request.c's. */
#include "model/prompt.h"

#include <string.h>

#include "check.h"

static void prompt(struct dbk_buf *b, uint32_t input, const uint64_t *hash, uint32_t n_hash,
                   uint64_t index)
{
	struct dbk_req_spec s;

	memset(&s, 0, sizeof(s));
	s.input = input;
	s.hash = hash;
	s.n_hash = n_hash;
	s.index = index;
	dbk_buf_reset(b);
	dbk_prompt_write(b, &s);
}

static void test_prompt(void)
{
	static const uint32_t sizes[] = { 1, 2, 511, 512, 513, 1024, 6758, 90000 };
	static const uint64_t h1[] = { 0, 14, 15 }, h2[] = { 0, 14, 99 };
	struct dbk_buf a = { 0 }, b = { 0 };
	size_t i, k;
	bool clean = true;

	/* Exactly 4 bytes per token, JSON-safe. */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		prompt(&a, sizes[i], h1, 3, 12345678901ull);
		CHECK_EQ_U(a.len, (size_t)sizes[i] * 4);
		for (k = 0; k < a.len; k++)
			if (a.p[k] < 0x20 || a.p[k] > 0x7e || a.p[k] == '"' || a.p[k] == '\\')
				clean = false;
	}
	CHECK(clean);

	/* Equal hash ids: equal blocks; then they differ. */
	prompt(&a, 2000, h1, 3, 1);
	prompt(&b, 2000, h2, 3, 2);
	CHECK(memcmp(a.p, b.p, 2 * 2048) == 0);
	CHECK(memcmp(a.p + 2 * 2048, b.p + 2 * 2048, 2048) != 0);
	/* Blocks past the ids are unique to the request. */
	CHECK(memcmp(a.p + 3 * 2048, b.p + 3 * 2048, 2000 * 4 - 3 * 2048) != 0);
	/* Without ids: nothing shared, even the first block. */
	prompt(&a, 600, NULL, 0, 1);
	prompt(&b, 600, NULL, 0, 2);
	CHECK(memcmp(a.p, b.p, 16) != 0);
	/* Stable: the same request gives the same bytes. */
	prompt(&b, 600, NULL, 0, 1);
	CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
	CHECK(strncmp(a.p, "r1.0 bc abc ", 12) == 0);
	dbk_buf_free(&a);
	dbk_buf_free(&b);
}

int main(void)
{
	RUN(test_prompt);
	return CHECK_DONE();
}
