/* Fuzzes the shared books' `show table` reader (agent/books_share.h):
 * dbk_share_parse, and dbk_share_read charging the other nodes' rows to
 * a policy that counts what it is told.
 *
 * Input: the text of one or more answers, split at NUL bytes, read one
 * after the other as successive polls.
 *
 * Checked:
 * - dbk_share_parse returns -1 (err a NUL-terminated reason) or the
 *   rows it passed, each key within the text, and the same again;
 * - after every read the books balance: the requests charged less those
 *   released are what the share says it holds, and the policy was told
 *   exactly that; a row never holds more than DBK_SHARE_MAX_ROW_INFLIGHT;
 * - an empty table read last releases every one of them. */
#include "fuzz.h"
#include "books_share.h"

#define ERRLEN 160

struct counts {
	uint64_t seen, released;
};

static void *c_create(const struct dbk_policy_env *env)
{
	(void)env;
	return calloc(1, sizeof(struct counts));
}
static void c_destroy(void *st) { free(st); }
static void c_commit(void *st, const struct dbk_policy_choice *c, uint64_t now_ms,
                     uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	(void)st, (void)c, (void)now_ms;
	memset(slot, 0, DBK_BAL_SLOT_WORDS * sizeof(*slot));
}
static void c_seen(void *st, const struct dbk_policy_request *r, unsigned server, bool prefix,
                   uint64_t now_ms, uint32_t slot[DBK_BAL_SLOT_WORDS])
{
	(void)prefix, (void)now_ms;
	FUZZ_CHECK(server < 4);
	FUZZ_CHECK(r->est->body_bytes >= 0 && r->est->max_tokens >= 0);
	((struct counts *)st)->seen++;
	slot[0] = (uint32_t)(r->est->body_bytes / 4);
	slot[1] = 0;
	slot[2] = slot[0];
}
static void c_release(void *st, const struct dbk_bal_lease *l, uint64_t now_ms)
{
	(void)l, (void)now_ms;
	struct counts *c = st;
	FUZZ_CHECK(c->released < c->seen);
	c->released++;
}
static const struct dbk_policy_ops ops = {
	.name = "counts",
	.create = c_create,
	.destroy = c_destroy,
	.commit = c_commit,
	.seen = c_seen,
	.release = c_release,
};
static const char *const names[] = { "vllm0", "vllm1", "a", "" };

struct walk {
	const char *buf;
	size_t len;
	int rows;
};
static void on_row(void *arg, const struct dbk_share_row *r)
{
	struct walk *w = arg;
	FUZZ_CHECK(r->key >= w->buf && r->key + r->key_len <= w->buf + w->len);
	w->rows++;
}

static void check_read(struct dbk_share *s, struct counts *c, const char *buf, size_t len,
                       uint64_t now)
{
	char err[ERRLEN];
	struct walk w = { buf, len, 0 }, w2 = { buf, len, 0 };
	int rows = dbk_share_parse(buf, len, on_row, &w, err, sizeof(err));

	if (rows < 0)
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	else
		FUZZ_CHECK(rows == w.rows);
	FUZZ_CHECK(dbk_share_parse(buf, len, on_row, &w2, err, sizeof(err)) == rows);
	int rc = dbk_share_read(s, buf, len, names, 4, now, err, sizeof(err));
	FUZZ_CHECK(rc == (rows < 0 ? -1 : 0));
	const struct dbk_share_stats *x = dbk_share_stats(s);
	FUZZ_CHECK(x->seen - x->released == c->seen - c->released);
	if (rc == 0) {
		FUZZ_CHECK(x->others_inflight == c->seen - c->released);
		FUZZ_CHECK(x->others_inflight <= (uint64_t)rows * DBK_SHARE_MAX_ROW_INFLIGHT);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dbk_policy p;
	struct dbk_policy_env env = { .nservers = 4 };
	char err[ERRLEN];
	const char *t = (const char *)data, *end = t + size;
	uint64_t now = 1000;

	FUZZ_CHECK(dbk_policy_start(&p, &ops, &env, err, sizeof(err)) == 0);
	struct dbk_share *s = dbk_share_wrap(&p, 4, "n1", err, sizeof(err));
	FUZZ_CHECK(s != NULL);
	struct counts *c = ((struct dbk_policy *)p.st)->st;
	for (unsigned k = 0; k < 8 && t <= end; k++) {
		const char *nul = memchr(t, '\0', (size_t)(end - t));
		const char *e = nul ? nul : end;
		/* Copied: an answer's bytes past its length are not its own. */
		char *a = malloc((size_t)(e - t) + 1);
		FUZZ_CHECK(a != NULL);
		memcpy(a, t, (size_t)(e - t));
		check_read(s, c, a, (size_t)(e - t), now);
		free(a);
		now += 10;
		t = e + 1;
	}
	static const char empty[] = "# table: t, type: string, size:4096, used:0\n\n";
	check_read(s, c, empty, sizeof(empty) - 1, now);
	FUZZ_CHECK(c->seen == c->released);
	dbk_policy_stop(&p);
	return 0;
}
