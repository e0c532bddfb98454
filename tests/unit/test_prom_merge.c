/* Several pools' /metrics in one exposition: one header per family,
 * every sample with its pool's label, each family's samples together. */
#include "check.h"
#include "prom_merge.h"

/* Whether merging pools p (text a) and q (text b) gives want. */
static bool merges_to(const char *a, const char *b, const char *want)
{
	struct dbk_buf t[2], o;
	const char *names[] = { "p", "q" };

	dbk_buf_init(&t[0]);
	dbk_buf_init(&t[1]);
	dbk_buf_init(&o);
	dbk_buf_adds(&t[0], a);
	dbk_buf_adds(&t[1], b);
	dbk_prom_merge(t, names, 2, &o);
	dbk_buf_add(&o, "", 1);
	bool same = strcmp(o.p, want) == 0;
	if (!same)
		fprintf(stderr, "got:\n%s", o.p);
	dbk_buf_free(&t[0]);
	dbk_buf_free(&t[1]);
	dbk_buf_free(&o);
	return same;
}

static void test_merge(void)
{
	CHECK(merges_to("# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n"
	                "# HELP y Y.\n# TYPE y gauge\ny{server=\"s\"} 2\ny{} 3\n",
	                "# HELP z Z.\n# TYPE z gauge\nz 9\n"
	                "# HELP x_total X.\n# TYPE x_total counter\nx_total 4\n"
	                "# HELP y Y.\n# TYPE y gauge\ny{server=\"s\"} 5\n",
	                "# HELP x_total X.\n# TYPE x_total counter\n"
	                "x_total{pool=\"p\"} 1\nx_total{pool=\"q\"} 4\n"
	                "# HELP y Y.\n# TYPE y gauge\n"
	                "y{pool=\"p\",server=\"s\"} 2\ny{pool=\"p\"} 3\n"
	                "y{pool=\"q\",server=\"s\"} 5\n"
	                "# HELP z Z.\n# TYPE z gauge\nz{pool=\"q\"} 9\n"));
}

/* A text whose last line has no newline does not run on into the next. */
static void test_last_line_without_newline(void)
{
	CHECK(merges_to("# TYPE a gauge\na 1", "# TYPE b gauge\nb 2\n",
	                "# TYPE a gauge\na{pool=\"p\"} 1\n# TYPE b gauge\nb{pool=\"q\"} 2\n"));
}

int main(void)
{
	RUN(test_merge);
	RUN(test_last_line_without_newline);
	return CHECK_DONE();
}
