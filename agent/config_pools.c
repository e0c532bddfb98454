/* The --pool grammar (config.h's dbk_config_parse_pools): the command
 * line cut into one per pool, each parsed by dbk_config_parse from the
 * options before the first --pool followed by the pool's own. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lib/log.h"

/* What may follow --pool NAME: the options of one backend's books. */
static const char *const pool_options[] = {
	"enable-dynamic-bucket",
	"server-group-threshold",
	"max-request-tokens",
	"config",
	"policy",
	"engine-speed",
	"lora-load",
	"max-num-batched-tokens",
	"scrape",
	"scrape-interval",
	"scrape-timeout",
	"scrape-ca",
	"scrape-cert",
	"scrape-key",
	"scrape-insecure",
	"hold-partial-bodies",
	"engine",
	"metric",
	"outlier",
	"outlier-consecutive",
	"outlier-ratio",
	"outlier-min-requests",
	"outlier-window",
	"outlier-base-ejection",
	"outlier-max-ejection",
	"outlier-max-ejected-percent",
	"admission",
	"admit-ttft",
	"admit-tpot",
	"admit-headroom-standard",
	"admit-headroom-sheddable",
	"saturation-queue",
	"saturation-kv",
	"lease-ttl",
	"max-leases",
	"poll-interval",
	"reclaim-after",
	"max-servers",
	NULL,
};

/* "--NAME" or "--NAME=VALUE" (len: of NAME). */
static bool is_option(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, name, n) == 0 &&
	       (arg[2 + n] == '\0' || arg[2 + n] == '=');
}

/* argv[from..to) holds a pool's own options: none agent-wide. */
static int check_pool_options(char **argv, int from, int to, char *err, size_t errlen)
{
	for (int i = from; i < to; i++) {
		bool ok = argv[i][0] != '-' || strcmp(argv[i], "--help") == 0 ||
		          strcmp(argv[i], "-h") == 0;

		for (const char *const *o = pool_options; !ok && *o; o++)
			ok = is_option(argv[i], *o);
		if (!ok) {
			dbk_errf(err, errlen,
			         "%s is agent-wide (or not an option): give it before the first "
			         "--pool",
			         argv[i]);
			return -1;
		}
	}
	return 0;
}

/* The index in argv of the next --pool at or after from, or argc. */
static int next_pool(int argc, char **argv, int from)
{
	while (from < argc && !is_option(argv[from], "pool"))
		from++;
	return from;
}

enum dbk_config_result dbk_config_parse_pools(struct dbk_config *const *pools, unsigned max,
                                              unsigned *n, int argc, char **argv, char *err,
                                              size_t errlen)
{
	int first = next_pool(argc, argv, 1);
	enum dbk_config_result rc = DBK_CONFIG_OK;

	*n = 1;
	if (first == argc)
		return dbk_config_parse(pools[0], argc, argv, err, errlen);
	char **v = calloc((size_t)argc + 1, sizeof(*v));
	if (!v) {
		dbk_errf(err, errlen, "out of memory");
		return DBK_CONFIG_ERROR;
	}
	*n = 0;
	for (int i = first; i < argc && rc == DBK_CONFIG_OK;) {
		/* "--pool NAME" is two words, "--pool=NAME" one. */
		const char *eq = strchr(argv[i], '=');
		int own = i + (eq ? 1 : 2);
		const char *name = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : "";
		int end = next_pool(argc, argv, own < argc ? own : argc);
		int m = 0;
		char why[256];

		if (*n == max) {
			dbk_errf(err, errlen, "at most %u --pool", max);
			rc = DBK_CONFIG_ERROR;
			break;
		}
		if (check_pool_options(argv, own, end, err, errlen) < 0) {
			rc = DBK_CONFIG_ERROR;
			break;
		}
		for (int k = 0; k < first; k++)
			v[m++] = argv[k];
		for (int k = i; k < end; k++)
			v[m++] = argv[k];
		v[m] = NULL;
		rc = dbk_config_parse(pools[*n], m, v, why, sizeof(why));
		if (rc == DBK_CONFIG_ERROR)
			dbk_errf(err, errlen, "--pool %s: %s",
			         pools[*n]->pool ? pools[*n]->pool : "", why);
		/* The words before the first --pool are parsed again in front of
		 * each pool's: an option there without its value takes this
		 * "--pool" as its value, and the pool would quietly be the
		 * default backend beside the others. */
		if (rc == DBK_CONFIG_OK &&
		    (!pools[*n]->pool || strcmp(pools[*n]->pool, name) != 0)) {
			dbk_errf(err, errlen,
			         "--pool %s was read as the value of the option before it: give "
			         "every option before the first --pool its value",
			         name);
			rc = DBK_CONFIG_ERROR;
		}
		for (unsigned k = 0; rc == DBK_CONFIG_OK && k < *n; k++)
			if (strcmp(pools[k]->backend, pools[*n]->backend) == 0) {
				dbk_errf(err, errlen, "--pool %s given twice", pools[k]->backend);
				rc = DBK_CONFIG_ERROR;
			}
		if (rc == DBK_CONFIG_OK)
			(*n)++;
		i = end;
	}
	free(v);
	/* The table's rows are NODE/SERVER: several pools' servers would
	 * share rows. */
	if (rc == DBK_CONFIG_OK && *n > 1 && pools[0]->share_books) {
		dbk_errf(err, errlen,
		         "--share-books shares one pool's books: give one --pool at most");
		rc = DBK_CONFIG_ERROR;
	}
	return rc;
}
