/* The flags whose value is one of a few names (argparse's `choices`,
 * checked as it converts the value), and what each name implies. */
#include "flags_parts.h"

#include <string.h>

#include "pyval.h"
#include "lib/log.h"

/* dbucket-spoa's policies, in its --help's order; which of them route on
 * the servers' own numbers. */
static const struct {
	const char *name;
	bool scraped;
} policies[] = { { "reference", false }, { "ttft", true }, { "p2ttft", true } };
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

int dbk_flags_take_policy(struct dbk_launch_flags *f, const char *v, char *err, size_t errlen)
{
	char r[160];

	for (size_t i = 0; i < NPOLICIES; i++)
		if (strcmp(v, policies[i].name) == 0) {
			f->policy = policies[i].name;
			return 0;
		}
	dbk_py_repr(v, r, sizeof(r));
	dbk_errf(err, errlen, "argument --policy: invalid choice: %s (choose from", r);
	for (size_t i = 0; i < NPOLICIES; i++)
		dbk_errf_append(err, errlen, "%s '%s'", i ? "," : "", policies[i].name);
	dbk_errf_append(err, errlen, ")");
	return -1;
}

bool dbk_flags_scraped(const struct dbk_launch_flags *f)
{
	for (size_t i = 0; i < NPOLICIES; i++)
		if (strcmp(f->policy, policies[i].name) == 0)
			return policies[i].scraped;
	return false;
}
