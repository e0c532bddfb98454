/* Helpers shared by the unit tests that read captured fixtures: exact
 * copies of byte strings (malloc'd to their length, so that ASan sees any
 * overread) and tests/unit/fixtures/ files. */
#ifndef DBK_TEST_FIXTURE_H
#define DBK_TEST_FIXTURE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lib/fileio.h"

#define FIX_MAX 65536

struct text {
	char *s; /* exactly len bytes, malloc'd */
	size_t len;
};

static inline struct text text_dup(const char *s, size_t len)
{
	struct text t = { malloc(len ? len : 1), len };

	if (len)
		memcpy(t.s, s, len);
	return t;
}

static inline struct text text_of(const char *z) { return text_dup(z, strlen(z)); }

static inline void text_free(struct text *t)
{
	free(t->s);
	t->s = NULL;
	t->len = 0;
}

/* The file at path, at most max bytes. A missing or empty one fails the
 * current test and gives "". */
static inline struct text read_text(const char *path, size_t max)
{
	char err[160];
	size_t n = 0;
	char *buf = dbk_read_file(path, max, &n, err, sizeof(err));
	struct text t;

	if (!buf) {
		fprintf(stderr, "  cannot read: %s\n", err);
		dbk_check_cur_failed++;
		return text_of("");
	}
	CHECK(n > 0);
	t = text_dup(buf, n);
	free(buf);
	return t;
}

/* tests/unit/fixtures/name, or $DBK_FIXTURES/name: the directory is found
 * from this header's path as compiled, so tests run from the repository
 * root (as tests/run does) or with DBK_FIXTURES set. */
static inline struct text fixture(const char *name)
{
	char path[512], dir[400];
	const char *env = getenv("DBK_FIXTURES");

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s/", env);
	} else {
		const char *slash = strrchr(__FILE__, '/');
		size_t dl = slash ? (size_t)(slash - __FILE__) + 1 : 0;
		snprintf(dir, sizeof(dir), "%.*sfixtures/", (int)dl, __FILE__);
	}
	snprintf(path, sizeof(path), "%s%s", dir, name);
	return read_text(path, FIX_MAX - 1);
}

/* A file named from the repository's root (where tests/run runs), such
 * as another program's fixture. */
static inline struct text repo_file(const char *path) { return read_text(path, 1 << 20); }

static inline bool has(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

#endif
