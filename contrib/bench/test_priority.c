/* Unit tests of the priority mix (priority.c). */
#include "priority.h"

#include <string.h>

#include "check.h"

static void test_priority_parse_and_draw(void)
{
	struct dbk_prio_mix m;
	char err[256];
	size_t count[3] = { 0, 0, 0 };

	CHECK_EQ_U(dbk_prio_parse("critical=0.3,standard=0.5,sheddable=0.2", &m, err, sizeof(err)),
	           0);
	CHECK_EQ_U(m.n, 3);
	CHECK(strcmp(m.name[2], "sheddable") == 0);
	CHECK(dbk_prio_parse("critical", &m, err, sizeof(err)) != 0);
	CHECK(dbk_prio_parse("critical=0", &m, err, sizeof(err)) != 0);
	CHECK(dbk_prio_parse("crit ical=1", &m, err, sizeof(err)) != 0);
	CHECK(dbk_prio_parse("a=1,", &m, err, sizeof(err)) != 0);
	CHECK(dbk_prio_parse("a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1", &m, err, sizeof(err)) != 0);
	CHECK_EQ_U(dbk_prio_parse("critical=3,standard=5,sheddable=2", &m, err, sizeof(err)), 0);
	/* By weight, and the same class for the same seed and index. */
	for (size_t i = 0; i < 10000; i++) {
		uint8_t k = dbk_prio_of(&m, 1, i);
		CHECK(k < 3);
		if (k < 3)
			count[k]++;
		CHECK_EQ_U(dbk_prio_of(&m, 1, i), k);
	}
	CHECK(count[0] > 2800 && count[0] < 3200);
	CHECK(count[1] > 4800 && count[1] < 5200);
	CHECK(count[2] > 1800 && count[2] < 2200);
	memset(&m, 0, sizeof(m));
	CHECK_EQ_U(dbk_prio_of(&m, 1, 0), DBK_PRIO_NONE);
}

int main(void)
{
	RUN(test_priority_parse_and_draw);
	return CHECK_DONE();
}
