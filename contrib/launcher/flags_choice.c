/* The flags whose value is one of a few names (argparse's `choices`,
 * checked as it converts the value: --policy, --layout), and what each
 * name implies. */
#include "flags_parts.h"

#include <string.h>

#include "pyval.h"
#include "lib/log.h"

/* dbucket-spoa's policies, in its --help's order; which of them route on
 * the servers' own numbers. */
static const char *const policies[] = { "reference", "ttft", "p2ttft" };
static const bool policy_scraped[] = { false, true, true };
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

/* The launcher's layouts: one shared backend of mixed servers, or one
 * backend (and agent pool) per model. */
static const char *const layouts[] = { DBK_LAUNCH_LAYOUT_SHARED, DBK_LAUNCH_LAYOUT_PER_MODEL };
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/* The index of v among names, or -1 with argparse's message. */
static int choose(const char *flag, const char *const *names, size_t n, const char *v, char *err,
                  size_t errlen)
{
	char r[160];

	for (size_t i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return (int)i;
	dbk_py_repr(v, r, sizeof(r));
	dbk_errf(err, errlen, "argument %s: invalid choice: %s (choose from", flag, r);
	for (size_t i = 0; i < n; i++)
		dbk_errf_append(err, errlen, "%s '%s'", i ? "," : "", names[i]);
	dbk_errf_append(err, errlen, ")");
	return -1;
}

int dbk_flags_take_policy(struct dbk_launch_flags *f, const char *v, char *err, size_t errlen)
{
	int i = choose("--policy", policies, NPOLICIES, v, err, errlen);

	if (i < 0)
		return -1;
	f->policy = policies[i];
	return 0;
}

int dbk_flags_take_layout(struct dbk_launch_flags *f, const char *v, char *err, size_t errlen)
{
	int i = choose("--layout", layouts, NLAYOUTS, v, err, errlen);

	if (i < 0)
		return -1;
	f->layout = layouts[i];
	f->per_model = strcmp(f->layout, DBK_LAUNCH_LAYOUT_PER_MODEL) == 0;
	return 0;
}

bool dbk_flags_scraped(const struct dbk_launch_flags *f)
{
	for (size_t i = 0; i < NPOLICIES; i++)
		if (strcmp(f->policy, policies[i]) == 0)
			return policy_scraped[i];
	return false;
}

bool dbk_flags_scrapes(const struct dbk_launch_flags *f)
{
	return dbk_flags_scraped(f) || f->per_model;
}
