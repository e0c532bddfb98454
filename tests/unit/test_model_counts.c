/* Requests routed per model (agent/model_counts.h): one counter an id,
 * at most DBK_MODEL_COUNTS_MAX of them, the rest as other. */
#include <stdio.h>

#include "check.h"
#include "model_counts.h"

static struct dbk_model_counts c;

static void add(const char *id) { dbk_model_counts_add(&c, (const uint8_t *)id, strlen(id)); }

static void test_counts_by_id(void)
{
	memset(&c, 0, sizeof(c));
	add("model-a");
	add("model-b");
	add("model-a");
	CHECK_EQ_U(c.n, 2);
	CHECK(strcmp(c.id[0], "model-a") == 0);
	CHECK_EQ_U(c.routed[0], 2);
	CHECK_EQ_U(c.routed[1], 1);
	CHECK_EQ_U(c.other, 0);
}

static void test_bounded(void)
{
	char id[32];

	memset(&c, 0, sizeof(c));
	for (unsigned i = 0; i < DBK_MODEL_COUNTS_MAX + 5; i++) {
		snprintf(id, sizeof(id), "m%u", i);
		add(id);
	}
	add("m0");
	CHECK_EQ_U(c.n, DBK_MODEL_COUNTS_MAX);
	CHECK_EQ_U(c.other, 5);
	CHECK_EQ_U(c.routed[0], 2);
	/* An id longer than a model id can be is other too. */
	static char longid[DBK_VM_MODEL_ID_MAX + 2];
	memset(longid, 'x', sizeof(longid) - 1);
	memset(&c, 0, sizeof(c));
	add(longid);
	CHECK_EQ_U(c.n, 0);
	CHECK_EQ_U(c.other, 1);
}

int main(void)
{
	RUN(test_counts_by_id);
	RUN(test_bounded);
	return CHECK_DONE();
}
