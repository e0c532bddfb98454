/* The shared layer's small containers: the intrusive list and whole-file
 * reading. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "lib/fileio.h"
#include "lib/list.h"

struct item {
	int v;
	struct dbk_list link;
};

static void test_list_keeps_order_and_deletes_in_place(void)
{
	struct dbk_list head, *it, *nx;
	struct item a = { .v = 1 }, b = { .v = 2 }, c = { .v = 3 };
	int seen[3], n = 0;

	dbk_list_init(&head);
	CHECK(dbk_list_empty(&head));
	CHECK(dbk_list_first(&head, struct item, link) == NULL);
	dbk_list_append(&head, &b.link);
	dbk_list_append(&head, &c.link);
	dbk_list_push(&head, &a.link);
	CHECK(dbk_list_first(&head, struct item, link) == &a);
	/* Deleting the element being visited must not stop the walk. */
	dbk_list_for_each_safe(it, nx, &head)
	{
		struct item *x = dbk_list_elem(it, struct item, link);

		seen[n++] = x->v;
		if (x->v == 2)
			dbk_list_del(it);
	}
	CHECK_EQ_U(n, 3);
	CHECK(seen[0] == 1 && seen[1] == 2 && seen[2] == 3);
	CHECK(head.next == &a.link && a.link.next == &c.link && c.link.prev == &a.link);
	/* A deleted element is detached: deleting it again changes nothing. */
	dbk_list_del(&b.link);
	CHECK(head.next == &a.link && head.prev == &c.link);
	dbk_list_del(&a.link);
	dbk_list_del(&c.link);
	CHECK(dbk_list_empty(&head));
}

static void test_read_file_whole_and_capped(void)
{
	char path[] = "/tmp/dbk-test-fileio-XXXXXX";
	char err[256] = "";
	size_t len = 0, i;
	int fd = mkstemp(path);
	char *big = malloc(10000), *got;

	CHECK(fd >= 0 && big);
	if (fd < 0 || !big) {
		free(big);
		return;
	}
	for (i = 0; i < 10000; i++)
		big[i] = (char)('a' + i % 26);
	big[5000] = '\0'; /* content may hold NULs */
	CHECK(write(fd, big, 10000) == 10000);
	close(fd);

	got = dbk_read_file(path, 10000, &len, err, sizeof(err));
	CHECK(got != NULL);
	CHECK_EQ_U(len, 10000);
	CHECK(got && memcmp(got, big, 10000) == 0 && got[10000] == '\0');
	free(got);

	got = dbk_read_file(path, 9999, &len, err, sizeof(err));
	CHECK(got == NULL);
	CHECK(strstr(err, "larger than 9999 bytes") != NULL);

	unlink(path);
	got = dbk_read_file(path, 10000, &len, err, sizeof(err));
	CHECK(got == NULL);
	CHECK(strstr(err, "No such file") != NULL);
	free(big);
}

int main(void)
{
	RUN(test_list_keeps_order_and_deletes_in_place);
	RUN(test_read_file_whole_and_capped);
	return CHECK_DONE();
}
