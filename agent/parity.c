/* dbucket-parity: replays a parity-vector file (agent/ALGORITHM.md,
 * "Parity vectors") through the balancer and reports every operation
 * whose outcome differs from the reference's.
 *
 * Exit status: 0 when every operation matches, 1 when some do not,
 * 2 when the file cannot be read or is not a parity file.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "balancer.h"
#include "lib/log.h"
#include "lib/version.h"
#include "lib/bounds.h"

#define MAX_SHOWN 20

struct replay {
	const char *path;
	unsigned long line;
	struct dbk_balancer *bal;
	uint64_t ops, mismatches;
	bool exact;     /* --exact: no tolerance at all */
	bool predict;   /* --predict: print decisions, expect nothing */
	char err[256];  /* set when the file is malformed */
	char diff[512]; /* the first difference of the current op */
	unsigned ndiff; /* differences in the current op */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: dbucket-parity [--exact | --predict] FILE | --help | --version\n"
	        "Replays a parity-vector file (JSON lines: {\"config\": ...} starts a\n"
	        "scenario, {\"op\": \"dispatch\"|\"release\", ...} follow) through the\n"
	        "balancer and compares each decision and the loads after it.\n"
	        "Prints one line per mismatch (at most %d) on stderr and\n"
	        "\"ops=N mismatches=M\" last on stdout.\n"
	        "Loads match within 1e-9 relative (absolute near 0); --exact wants\n"
	        "them bit for bit (the reference's doubles print round-trip).\n"
	        "--predict takes the same file without \"expect\" and \"after\" and\n"
	        "prints each dispatch's decision as \"ID GROUP SERVER SCORE\" instead\n"
	        "(the score as the agent's txn.dbucket.score spells it).\n"
	        "Exit: 0 all match, 1 mismatches, 2 unreadable or malformed file.\n",
	        MAX_SHOWN);
}

/* The file is malformed: the reason, and -1 for the caller to return. */
#define FAIL(rp, ...) (dbk_errf((rp)->err, sizeof((rp)->err), __VA_ARGS__), -1)

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
differ(struct replay *rp, const char *fmt, ...)
{
	va_list ap;

	if (rp->ndiff++)
		return;
	va_start(ap, fmt);
	vsnprintf(rp->diff, sizeof(rp->diff), fmt, ap);
	va_end(ap);
}

/* The reference's loads went through the same double arithmetic, so
 * they should be equal; the tolerance only absorbs printing round-off,
 * with an absolute floor for loads that cancel to about 0. */
static bool near(const struct replay *rp, double got, double want)
{
	double m = fmax(1.0, fmax(fabs(got), fabs(want)));

	if (rp->exact)
		return got == want;
	return fabs(got - want) <= 1e-9 * m;
}

static int get_number(struct replay *rp, const cJSON *obj, const char *key, double *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	*out = 0;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return FAIL(rp, "\"%s\" must be a number", key);
	*out = it->valuedouble;
	return 0;
}

static int get_index(struct replay *rp, const cJSON *obj, const char *key, unsigned *out)
{
	double v;

	*out = 0;
	if (get_number(rp, obj, key, &v) < 0)
		return -1;
	if (v < 0 || v > UINT32_MAX || v != floor(v))
		return FAIL(rp, "\"%s\" must be a non-negative integer", key);
	*out = (unsigned)v;
	return 0;
}

static int get_bool(struct replay *rp, const cJSON *obj, const char *key, bool dflt, bool *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	*out = dflt;
	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsBool(it))
		return FAIL(rp, "\"%s\" must be a boolean", key);
	*out = cJSON_IsTrue(it);
	return 0;
}

static int start_scenario(struct replay *rp, const cJSON *cfg)
{
	struct dbk_bal_config c;
	double servers, threshold, maxtok;
	bool dynamic;
	char why[200];

	if (!cJSON_IsObject(cfg))
		return FAIL(rp, "\"config\" must be an object");
	if (get_number(rp, cfg, "servers", &servers) < 0 ||
	    get_bool(rp, cfg, "enable_dynamic_bucket", false, &dynamic) < 0 ||
	    get_number(rp, cfg, "server_group_threshold", &threshold) < 0 ||
	    get_number(rp, cfg, "max_request_tokens", &maxtok) < 0)
		return -1;
	if (servers < 1 || servers > DBK_MAX_SERVERS || servers != floor(servers))
		return FAIL(rp, "\"servers\" must be an integer in [1, %u]", DBK_MAX_SERVERS);
	dbk_bal_config_default(&c, (unsigned)servers, dynamic, threshold, maxtok);
	if (dbk_bal_config_check(&c, why, sizeof(why)) < 0)
		return FAIL(rp, "bad config: %s", why);
	dbk_bal_free(rp->bal);
	rp->bal = dbk_bal_new(&c);
	if (!rp->bal)
		return FAIL(rp, "out of memory");
	return 0;
}

static int compare_loads(struct replay *rp, const cJSON *after, const char *key, unsigned n,
                         double (*load)(const struct dbk_balancer *, unsigned))
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(after, key);
	const cJSON *it;
	unsigned i = 0;

	if (!cJSON_IsArray(arr))
		return FAIL(rp, "\"after.%s\" must be an array", key);
	cJSON_ArrayForEach(it, arr)
	{
		if (!cJSON_IsNumber(it))
			return FAIL(rp, "\"after.%s[%u]\" must be a number", key, i);
		if (i < n && !near(rp, load(rp->bal, i), it->valuedouble))
			differ(rp, "%s[%u]: got %.17g, want %.17g", key, i, load(rp->bal, i),
			       it->valuedouble);
		i++;
	}
	if (i != n)
		differ(rp, "%s: got %u entries, want %u", key, n, i);
	return 0;
}

static int check_after(struct replay *rp, const cJSON *op)
{
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(op, "after");
	const struct dbk_bal_config *c = dbk_bal_config(rp->bal);

	if (!cJSON_IsObject(after))
		return FAIL(rp, "\"after\" must be an object");
	if (compare_loads(rp, after, "server_load", c->nservers, dbk_bal_server_load) < 0)
		return -1;
	/* The reference reports bucket loads in dynamic mode only. */
	if (cJSON_GetObjectItemCaseSensitive(after, "bucket_load") &&
	    compare_loads(rp, after, "bucket_load", c->nbuckets, dbk_bal_bucket_load) < 0)
		return -1;
	return 0;
}

static int get_id(struct replay *rp, const cJSON *op, const char **id)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(op, "id");

	*id = "";
	if (!cJSON_IsString(it))
		return FAIL(rp, "\"id\" must be a string");
	*id = it->valuestring;
	return 0;
}

static int dispatch(struct replay *rp, const cJSON *op)
{
	const cJSON *expect = cJSON_GetObjectItemCaseSensitive(op, "expect");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(op, "max_tokens");
	struct dbk_bal_request req = { .max_tokens = 16.0 };
	struct dbk_bal_decision d;
	unsigned want_group, want_server;
	double want_score;
	const char *id;
	enum dbk_bal_result r;

	if (get_id(rp, op, &id) < 0 || get_number(rp, op, "body_bytes", &req.body_bytes) < 0 ||
	    get_bool(rp, op, "ignore_eos", false, &req.ignore_eos) < 0)
		return -1;
	if (mt && !cJSON_IsNull(mt)) {
		if (get_number(rp, op, "max_tokens", &req.max_tokens) < 0)
			return FAIL(rp, "\"max_tokens\" must be a number or null");
	}
	if (rp->predict) {
		r = dbk_bal_dispatch(rp->bal, id, strlen(id), &req, rp->ops, &d);
		if (r != DBK_BAL_OK)
			return FAIL(rp, "dispatch %s: %s", id, dbk_bal_result_str(r));
		printf("%s %u %u %.10g\n", id, d.group, d.server, d.score);
		return 0;
	}
	if (!cJSON_IsObject(expect))
		return FAIL(rp, "\"expect\" must be an object");
	if (get_index(rp, expect, "group", &want_group) < 0 ||
	    get_index(rp, expect, "server", &want_server) < 0 ||
	    get_number(rp, expect, "score", &want_score) < 0)
		return -1;

	r = dbk_bal_dispatch(rp->bal, id, strlen(id), &req, rp->ops, &d);
	if (r != DBK_BAL_OK) {
		differ(rp, "dispatch %s: got \"%s\", want ok", id, dbk_bal_result_str(r));
	} else {
		if (d.group != want_group)
			differ(rp, "group: got %u, want %u", d.group, want_group);
		if (d.server != want_server)
			differ(rp, "server: got %u, want %u", d.server, want_server);
		if (!near(rp, d.score, want_score))
			differ(rp, "score: got %.17g, want %.17g", d.score, want_score);
	}
	return check_after(rp, op);
}

static int release(struct replay *rp, const cJSON *op)
{
	const char *id;
	enum dbk_bal_result r;

	if (get_id(rp, op, &id) < 0)
		return -1;
	r = dbk_bal_release(rp->bal, id, strlen(id), NULL);
	if (r != DBK_BAL_OK)
		differ(rp, "release %s: got \"%s\", want ok", id, dbk_bal_result_str(r));
	return rp->predict ? 0 : check_after(rp, op);
}

static int replay_line(struct replay *rp, const char *text, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	const cJSON *cfg, *op;
	int ret;

	if (!root)
		return FAIL(rp, "not JSON");
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return FAIL(rp, "not a JSON object");
	}
	cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
	op = cJSON_GetObjectItemCaseSensitive(root, "op");
	rp->ndiff = 0;
	if (cfg) {
		ret = start_scenario(rp, cfg);
	} else if (!cJSON_IsString(op)) {
		ret = FAIL(rp, "neither a \"config\" nor an \"op\" line");
	} else if (!rp->bal) {
		ret = FAIL(rp, "operation before the first \"config\" line");
	} else if (strcmp(op->valuestring, "dispatch") == 0) {
		ret = dispatch(rp, root);
	} else if (strcmp(op->valuestring, "release") == 0) {
		ret = release(rp, root);
	} else {
		ret = FAIL(rp, "unknown op \"%.40s\"", op->valuestring);
	}
	if (ret == 0 && !cfg) {
		rp->ops++;
		if (rp->ndiff) {
			if (rp->mismatches < MAX_SHOWN) {
				fprintf(stderr, "%s:%lu: %s", rp->path, rp->line, rp->diff);
				if (rp->ndiff > 1)
					fprintf(stderr, " (and %u more differences)",
					        rp->ndiff - 1);
				fputc('\n', stderr);
			}
			rp->mismatches++;
		}
	}
	cJSON_Delete(root);
	return ret;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

int main(int argc, char **argv)
{
	struct replay rp = { 0 };
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int status = 0;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("dbucket-parity %s\n", DBK_VERSION);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--exact") == 0) {
		rp.exact = true;
		argv++;
		argc--;
	} else if (argc == 3 && strcmp(argv[1], "--predict") == 0) {
		rp.predict = true;
		argv++;
		argc--;
	}
	if (argc != 2 || (argv[1][0] == '-' && argv[1][1])) {
		fprintf(stderr,
		        "usage: dbucket-parity [--exact | --predict] FILE (--help for more)\n");
		return 2;
	}
	rp.path = argv[1];
	f = strcmp(rp.path, "-") == 0 ? stdin : fopen(rp.path, "r");
	if (!f) {
		fprintf(stderr, "dbucket-parity: %s: %s\n", rp.path, strerror(errno));
		return 2;
	}
	while ((n = getline(&buf, &cap, f)) >= 0) {
		rp.line++;
		if (blank(buf, (size_t)n))
			continue;
		if (replay_line(&rp, buf, (size_t)n) < 0) {
			fprintf(stderr, "dbucket-parity: %s:%lu: %s\n", rp.path, rp.line, rp.err);
			status = 2;
			break;
		}
	}
	if (status == 0 && ferror(f)) {
		fprintf(stderr, "dbucket-parity: %s: read error\n", rp.path);
		status = 2;
	}
	if (status == 0 && rp.ops == 0) {
		fprintf(stderr, "dbucket-parity: %s: no operations\n", rp.path);
		status = 2;
	}
	free(buf);
	if (f != stdin)
		fclose(f);
	dbk_bal_free(rp.bal);
	if (status)
		return status;
	if (rp.mismatches > MAX_SHOWN)
		fprintf(stderr, "(%" PRIu64 " more mismatches not shown)\n",
		        rp.mismatches - MAX_SHOWN);
	printf("ops=%" PRIu64 " mismatches=%" PRIu64 "\n", rp.ops, rp.mismatches);
	return rp.mismatches ? 1 : 0;
}
