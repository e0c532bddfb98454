/* Prefix keys from body samples (agent/prefix_key.h): one text gives the
 * same keys whatever the request's shape, field order or cut. */
#include <stdlib.h>

#include "check.h"
#include "prefix_key.h"

#define B DBK_PKEY_BLOCK_BYTES

/* n bytes of text: block i starts with its own tag, so blocks differ. */
static char *text(size_t n, unsigned tag)
{
	char *t = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		t[i] = (char)('a' + (i / B + tag) % 26);
	t[n] = 0;
	return t;
}

static size_t derive(const char *body, size_t len, uint64_t *keys, struct dbk_pkey *pk)
{
	return dbk_pkey_derive((const uint8_t *)body, len, keys, DBK_PKEY_MAX_KEYS, pk);
}

static void test_prompt_blocks_are_chained(void)
{
	char *t = text(10 * B + 17, 0), body[16384];
	uint64_t k1[DBK_PKEY_MAX_KEYS], k2[DBK_PKEY_MAX_KEYS];
	struct dbk_pkey pk;

	snprintf(body, sizeof(body), "{\"model\":\"m\",\"prompt\":\"%s\",\"max_tokens\":5}", t);
	CHECK_EQ_U(derive(body, strlen(body), k1, &pk), 10);
	CHECK(pk.source == DBK_PKEY_PROMPT);
	CHECK(!pk.cut);
	CHECK_EQ_U(pk.text_bytes, 10 * B + 17);
	for (size_t i = 0; i < 10; i++)
		CHECK(k1[i] != 0);
	/* Change block 6: keys 0..5 stay, 6.. all change (chained). */
	t[6 * B + 3] = 'Z';
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\"}", t);
	CHECK_EQ_U(derive(body, strlen(body), k2, &pk), 10);
	for (size_t i = 0; i < 6; i++)
		CHECK(k1[i] == k2[i]);
	for (size_t i = 6; i < 10; i++)
		CHECK(k1[i] != k2[i]);
	free(t);
}

static void test_chat_contents_key_as_the_prompt(void)
{
	char *t = text(4 * B, 3), body[8192];
	uint64_t kp[DBK_PKEY_MAX_KEYS], kc[DBK_PKEY_MAX_KEYS], kq[DBK_PKEY_MAX_KEYS];
	struct dbk_pkey pk;
	size_t half = 2 * B + 10;

	snprintf(body, sizeof(body), "{\"prompt\":\"%s\"}", t);
	CHECK_EQ_U(derive(body, strlen(body), kp, &pk), 4);
	/* Two messages, roles and names between them, any field order. */
	snprintf(body, sizeof(body),
	         "{\"messages\":[{\"role\":\"system\",\"content\":\"%.*s\"},"
	         "{\"content\":\"%s\",\"role\":\"user\",\"name\":\"x\\\"}\"}],"
	         "\"stream\":true}",
	         (int)half, t, t + half);
	CHECK_EQ_U(derive(body, strlen(body), kc, &pk), 4);
	CHECK(pk.source == DBK_PKEY_MESSAGES);
	CHECK(memcmp(kp, kc, 4 * sizeof(uint64_t)) == 0);
	/* Content parts: the texts of each part, images skipped. */
	snprintf(body, sizeof(body),
	         "{\"model\":{\"a\":[1,{\"b\":\"]\"}]},\"messages\":[{\"role\":\"user\","
	         "\"content\":["
	         "{\"type\":\"text\",\"text\":\"%.*s\"},{\"type\":\"image_url\",\"image_url\":"
	         "{\"url\":\"data:xyz\"}},{\"text\":\"%s\",\"type\":\"text\"}]}]}",
	         (int)half, t, t + half);
	CHECK_EQ_U(derive(body, strlen(body), kq, &pk), 4);
	CHECK(memcmp(kp, kq, 4 * sizeof(uint64_t)) == 0);
	free(t);
}

static void test_cut_sample_gives_the_leading_keys(void)
{
	char *t = text(40 * B, 1), *body = malloc(41 * B + 100);
	uint64_t whole[DBK_PKEY_MAX_KEYS], cut[DBK_PKEY_MAX_KEYS];
	struct dbk_pkey pk;

	sprintf(body, "{\"user\":\"conv-7\",\"prompt\":\"%s\"}", t);
	CHECK_EQ_U(derive(body, strlen(body), whole, &pk), 40);
	CHECK(pk.session == dbk_pkey_session("conv-7", 6));
	CHECK(pk.session != 0);
	/* Every cut inside the prompt keys the full blocks before it. */
	size_t head = strlen("{\"user\":\"conv-7\",\"prompt\":\"");
	for (size_t len = head; len < head + 12 * B; len += 97) {
		size_t n = derive(body, len, cut, &pk);
		CHECK_EQ_U(n, (len - head) / B);
		CHECK(pk.cut);
		CHECK(n == 0 || memcmp(whole, cut, n * sizeof(uint64_t)) == 0);
	}
	/* max_keys caps the count and says the text goes on. */
	CHECK_EQ_U(dbk_pkey_derive((const uint8_t *)body, strlen(body), cut, 5, &pk), 5);
	CHECK(pk.cut);
	free(t);
	free(body);
}

static void test_what_is_no_prompt(void)
{
	static const char *const bodies[] = {
		"",
		"[]",
		"nonsense",
		"{",
		"{\"prompt\":12}",
		"{\"prompt\":null}",
		"{\"messages\":\"x\"}",
		"{\"prompt\"",
		"{\"a\":\"prompt\"}",
		"{\"x\":{\"prompt\":\""
		"0123456789012345678901234567890123456789"
		"012345678901234567890123456789012345678901234567890123456789"
		"012345678901234567890123456789012345678901234567890123456789"
		"012345678901234567890123456789012345678901234567890123456789"
		"012345678901234567890123456789012345678901234567890123456789\"}}",
	};
	uint64_t keys[DBK_PKEY_MAX_KEYS];
	struct dbk_pkey pk;

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		CHECK_EQ_U(derive(bodies[i], strlen(bodies[i]), keys, &pk), 0);
		CHECK(pk.session == 0);
	}
	CHECK_EQ_U(dbk_pkey_derive(NULL, 0, keys, DBK_PKEY_MAX_KEYS, &pk), 0);
	CHECK(dbk_pkey_session("", 0) == 0);
	CHECK(dbk_pkey_session("a", 1) != dbk_pkey_session("b", 1));
}

static void test_escapes_stay_inside_the_text(void)
{
	char *t = text(3 * B, 2), body[4096];
	uint64_t a[DBK_PKEY_MAX_KEYS], b[DBK_PKEY_MAX_KEYS];
	struct dbk_pkey pk;

	memcpy(t + 10, "\\\"}]\\\\", 6); /* \"}]\\ inside the string */
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\",\"user\":\"u\"}", t);
	CHECK_EQ_U(derive(body, strlen(body), a, &pk), 3);
	CHECK(pk.session == dbk_pkey_session("u", 1));
	snprintf(body, sizeof(body), "{\"prompt\":[\"%s\",\"other\"]}", t);
	CHECK_EQ_U(derive(body, strlen(body), b, &pk), 3);
	CHECK(memcmp(a, b, 3 * sizeof(uint64_t)) == 0);
	/* An escaped backslash right before the closing quote ends it. */
	snprintf(body, sizeof(body), "{\"prompt\":\"%s\\\\\",\"user\":\"v\"}", t);
	CHECK_EQ_U(derive(body, strlen(body), b, &pk), 3);
	CHECK(!pk.cut);
	CHECK(pk.session == dbk_pkey_session("v", 1));
	CHECK_EQ_U(pk.text_bytes, 3 * DBK_PKEY_BLOCK_BYTES + 2);
	free(t);
}

int main(void)
{
	RUN(test_prompt_blocks_are_chained);
	RUN(test_chat_contents_key_as_the_prompt);
	RUN(test_cut_sample_gives_the_leading_keys);
	RUN(test_what_is_no_prompt);
	RUN(test_escapes_stay_inside_the_text);
	return CHECK_DONE();
}
