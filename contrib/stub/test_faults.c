/* Unit tests of the stub's fault and sleep modes: --completion-fault's
 * value, and vllm:engine_sleep_state as /metrics renders it asleep. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "opts.h"
#include "prom.h"

static void test_parse_fault(void)
{
	int st = -1;
	double r = -1;

	CHECK(dbk_stub_parse_fault("500", &st, &r) == 0);
	CHECK(st == 500 && r == 1.0);
	CHECK(dbk_stub_parse_fault("503:0.5", &st, &r) == 0);
	CHECK(st == 503 && r == 0.5);
	CHECK(dbk_stub_parse_fault("none", &st, &r) == 0);
	CHECK(st == 0);
	static const char *const bad[] = { "",     "499",  "600", "500:0",      "500:1.5",
		                           "500:", ":0.5", "abc", "5000000000", "500:x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(dbk_stub_parse_fault(bad[i], &st, &r) < 0);
}

static void test_sleep_gauge(void)
{
	struct dbk_prom_outcomes o;
	struct dbk_prom_stats m;
	struct dbk_buf b;

	dbk_prom_outcomes_init(&o, 1024);
	memset(&m, 0, sizeof(m));
	m.out = &o;
	m.model = "m";
	m.sleep_level = 2;
	dbk_buf_init(&b);
	dbk_prom_render(&b, &m);
	dbk_buf_add(&b, "", 1);
	CHECK(strstr(b.p, "vllm:engine_sleep_state{engine=\"0\",model_name=\"m\","
	                  "sleep_state=\"awake\"} 0.0\n") != NULL);
	CHECK(strstr(b.p, "sleep_state=\"weights_offloaded\"} 0.0\n") != NULL);
	CHECK(strstr(b.p, "sleep_state=\"discard_all\"} 1.0\n") != NULL);
	dbk_buf_free(&b);
}

int main(void)
{
	RUN(test_parse_fault);
	RUN(test_sleep_gauge);
	return CHECK_DONE();
}
