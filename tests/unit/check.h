/* Minimal unit-test harness: one binary per module, TAP-like lines, and
 * the closing "N passed, N failed" line that tests/run aggregates. Each
 * CHECK counts as one assertion; a test function is a group of them. */
#ifndef DBK_CHECK_H
#define DBK_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int dbk_check_passed, dbk_check_failed;
static int dbk_check_cur_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			dbk_check_cur_failed++;                                                    \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U(a, b)                                                                        \
	do {                                                                                    \
		unsigned long long va_ = (unsigned long long)(a);                               \
		unsigned long long vb_ = (unsigned long long)(b);                               \
		if (va_ != vb_) {                                                               \
			dbk_check_cur_failed++;                                                 \
			fprintf(stderr, "  %s:%d: %s == %llu, want %llu\n", __FILE__, __LINE__, \
			        #a, va_, vb_);                                                  \
		}                                                                               \
	} while (0)

#define CHECK_NEAR(a, b, rel)                                                                     \
	do {                                                                                      \
		double va_ = (a), vb_ = (b);                                                      \
		double d_ = fabs(va_ - vb_);                                                      \
		double m_ = fmax(fabs(va_), fabs(vb_));                                           \
		if (d_ > (rel) * (m_ > 1.0 ? m_ : 1.0)) {                                         \
			dbk_check_cur_failed++;                                                   \
			fprintf(stderr, "  %s:%d: %s == %.17g, want %.17g\n", __FILE__, __LINE__, \
			        #a, va_, vb_);                                                    \
		}                                                                                 \
	} while (0)

/* Runs one test function and reports it as one passed or failed test. */
#define RUN(fn)                                       \
	do {                                          \
		dbk_check_cur_failed = 0;             \
		fn();                                 \
		if (dbk_check_cur_failed) {           \
			dbk_check_failed++;           \
			printf("not ok - %s\n", #fn); \
		} else {                              \
			dbk_check_passed++;           \
			printf("ok - %s\n", #fn);     \
		}                                     \
	} while (0)

#define CHECK_DONE()                                                           \
	(printf("%d passed, %d failed\n", dbk_check_passed, dbk_check_failed), \
	 dbk_check_failed ? 1 : 0)

#endif
