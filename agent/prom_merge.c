#include "prom_merge.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

/* A family's lines in one text: from its first header to the next
 * family's. */
struct block {
	const char *name;
	size_t nlen;
	const char *start, *end;
	unsigned text;
};

/* The bytes of [p, p + len) before the first of stops (or len). */
static size_t span(const char *p, size_t len, const char *stops)
{
	size_t n = 0;

	while (n < len && !strchr(stops, p[n]))
		n++;
	return n;
}

/* A family's name: the word after "# HELP " or "# TYPE ". */
static bool header(const char *line, size_t len, const char **name, size_t *nlen)
{
	if (len < 8 || (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0))
		return false;
	*name = line + 7;
	*nlen = span(*name, len - 7, " \n");
	return true;
}

static size_t line_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
}

/* The sample line with pool="name" first among its labels. */
static void labelled(struct dbk_buf *o, const char *line, size_t len, const char *pool)
{
	size_t metric = span(line, len, "{ \n");

	if (metric == 0 || metric >= len || line[metric] == '\n')
		return;
	dbk_buf_add(o, line, metric);
	dbk_buf_printf(o, "{pool=\"%s\"", pool);
	if (line[metric] == '{') {
		/* "name{}" has no labels to follow a comma. */
		if (metric + 1 >= len || line[metric + 1] != '}')
			dbk_buf_add(o, ",", 1);
		dbk_buf_add(o, line + metric + 1, len - metric - 1);
	} else {
		dbk_buf_add(o, "}", 1);
		dbk_buf_add(o, line + metric, len - metric);
	}
}

/* Cuts text k into its families' blocks, appended to *b. */
static int cut(const struct dbk_buf *text, unsigned k, struct block **b, size_t *n, size_t *cap)
{
	const char *p = text->p, *end = text->p + text->len;

	while (p < end) {
		size_t len = line_len(p, end), fl;
		const char *fn;

		if (header(p, len, &fn, &fl) &&
		    !(*n && (*b)[*n - 1].text == k && (*b)[*n - 1].nlen == fl &&
		      memcmp((*b)[*n - 1].name, fn, fl) == 0)) {
			struct block *r = dbk_array_room(*b, cap, *n, sizeof(**b), 64);
			if (!r)
				return -1;
			*b = r;
			r[*n] = (struct block){ fn, fl, p, end, k };
			if (*n && r[*n - 1].text == k)
				r[*n - 1].end = p;
			(*n)++;
		}
		p += len;
	}
	return 0;
}

static bool same(const struct block *x, const struct block *y)
{
	return x->nlen == y->nlen && memcmp(x->name, y->name, x->nlen) == 0;
}

/* Block x's lines: headers only when with_head, samples labelled. */
static void emit(struct dbk_buf *o, const struct block *x, const char *pool, bool with_head)
{
	for (const char *p = x->start; p < x->end;) {
		size_t len = line_len(p, x->end);

		size_t before = o->len;

		if (p[0] == '#') {
			if (with_head)
				dbk_buf_add(o, p, len);
		} else {
			labelled(o, p, len, pool);
		}
		/* A text's last line may lack its newline: the next must
		 * not run on from it. */
		if (o->len > before && o->p[o->len - 1] != '\n')
			dbk_buf_add(o, "\n", 1);
		p += len;
	}
}

void dbk_prom_merge(const struct dbk_buf *texts, const char *const *names, unsigned n,
                    struct dbk_buf *o)
{
	struct block *b = NULL;
	size_t nb = 0, cap = 0;
	bool *done;

	for (unsigned k = 0; k < n; k++)
		if (cut(&texts[k], k, &b, &nb, &cap) < 0)
			goto out;
	done = calloc(nb ? nb : 1, sizeof(*done));
	if (!done)
		goto out;
	/* Blocks are in text order: a family's first block comes first. */
	for (size_t i = 0; i < nb; i++) {
		if (done[i])
			continue;
		emit(o, &b[i], names[b[i].text], true);
		for (size_t j = i + 1; j < nb; j++)
			if (!done[j] && same(&b[i], &b[j])) {
				emit(o, &b[j], names[b[j].text], false);
				done[j] = true;
			}
	}
	free(done);
out:
	free(b);
}
