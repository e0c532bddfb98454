/* Fuzzes what pools add: the command line's --pool grammar
 * (dbk_config_parse_pools) and the merge of several pools' /metrics
 * (dbk_prom_merge).
 *
 * Input: one selector byte, then NUL-separated words.
 *   0: the words are argv[1..] (at most 64);
 *   1: the words are the pools' /metrics texts (at most 4).
 *
 * Checked:
 * - parse_pools returns a known result; on OK, 1 to DBK_MAX_POOLS pools,
 *   each with a backend, named by --pool when there are several, no
 *   name twice, and every pool's agent-wide listeners the first's;
 * - the merge keeps each family's lines together (a family's header never
 *   comes back after another's), and every sample line starts with a
 *   metric name followed by {pool=". */
#include "config.h"
#include "fuzz.h"
#include "lib/log.h"
#include "prom_merge.h"

#define MAX_WORDS 64

static struct dbk_config cfg[DBK_MAX_POOLS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dbk_log_set_level(DBK_LOG_ERROR);
	return 0;
}

/* Cuts [p, p + n) at NULs into at most max heap strings. */
static int words(const uint8_t *p, size_t n, char **w, int max)
{
	int k = 0;

	while (k < max) {
		const uint8_t *z = memchr(p, 0, n);
		size_t len = z ? (size_t)(z - p) : n;

		w[k] = malloc(len + 1);
		memcpy(w[k], p, len);
		w[k++][len] = '\0';
		if (!z)
			break;
		n -= len + 1;
		p = z + 1;
	}
	return k;
}

static void fuzz_parse(char **w, int nw)
{
	char *argv[MAX_WORDS + 2];
	struct dbk_config *c[DBK_MAX_POOLS];
	char err[256];
	unsigned n = 0;

	argv[0] = "dbucket-spoa";
	for (int i = 0; i < nw; i++)
		argv[i + 1] = w[i];
	argv[nw + 1] = NULL;
	for (unsigned i = 0; i < DBK_MAX_POOLS; i++)
		c[i] = &cfg[i];
	enum dbk_config_result r = dbk_config_parse_pools(c, DBK_MAX_POOLS, &n, nw + 1, argv, err,
	                                                  sizeof(err));
	FUZZ_CHECK(r == DBK_CONFIG_OK || r == DBK_CONFIG_HELP || r == DBK_CONFIG_VERSION ||
	           r == DBK_CONFIG_ERROR);
	if (r != DBK_CONFIG_OK)
		return;
	FUZZ_CHECK(n >= 1 && n <= DBK_MAX_POOLS);
	for (unsigned i = 0; i < n; i++) {
		FUZZ_CHECK(cfg[i].backend && cfg[i].backend[0]);
		FUZZ_CHECK(n == 1 || (cfg[i].pool && strcmp(cfg[i].pool, cfg[i].backend) == 0));
		FUZZ_CHECK(cfg[i].nlisten == cfg[0].nlisten);
		for (unsigned j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(cfg[i].backend, cfg[j].backend) != 0);
	}
}

static void fuzz_merge(char **w, int nw)
{
	struct dbk_buf t[4], o;
	const char *names[4] = { "a", "b", "c", "d" };

	for (int i = 0; i < nw; i++) {
		dbk_buf_init(&t[i]);
		dbk_buf_add(&t[i], w[i], strlen(w[i]));
	}
	dbk_buf_init(&o);
	dbk_prom_merge(t, names, (unsigned)nw, &o);
	dbk_buf_add(&o, "", 1);
	/* Each family's lines together: a header's name, once another
	 * family's header came, never comes back. */
	const char *closed[4096], *cur = NULL;
	size_t nclosed = 0, curlen = 0;
	for (char *line = o.p, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len >= 8 &&
		    (strncmp(line, "# TYPE ", 7) == 0 || strncmp(line, "# HELP ", 7) == 0)) {
			const char *name = line + 7;
			size_t nlen = strcspn(name, " \n");
			if (cur && curlen == nlen && memcmp(cur, name, nlen) == 0)
				continue;
			for (size_t k = 0; k < nclosed; k++)
				FUZZ_CHECK(!(strcspn(closed[k], " \n") == nlen &&
				             memcmp(closed[k], name, nlen) == 0));
			if (cur && nclosed < 4096)
				closed[nclosed++] = cur;
			cur = name;
			curlen = nlen;
		} else if (line[0] != '#') {
			size_t m = strcspn(line, "{ \n");
			FUZZ_CHECK(m < len && strncmp(line + m, "{pool=\"", 7) == 0);
		}
	}
	dbk_buf_free(&o);
	for (int i = 0; i < nw; i++)
		dbk_buf_free(&t[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *w[MAX_WORDS];

	if (size < 1)
		return 0;
	bool merge = data[0] & 1;
	int nw = words(data + 1, size - 1, w, merge ? 4 : MAX_WORDS);
	if (merge)
		fuzz_merge(w, nw);
	else
		fuzz_parse(w, nw);
	for (int i = 0; i < nw; i++)
		free(w[i]);
	return 0;
}
