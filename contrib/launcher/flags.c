/* The reference's command line, parsed as Python 3.11's argparse parses
 * it (the reference's parser: default prefix "-", abbreviations allowed,
 * no positionals), then checked as the reference checks it, then checked
 * for what dbucket-spoa and HAProxy would refuse later.
 *
 * argparse works in two passes, and the order of its errors follows from
 * them: first every argument is classified as an option ('O'), a value
 * ('A') or the "--" marker ('-'), which is where an ambiguous abbreviation
 * fails; then options are taken left to right with the values that follow
 * them, converting each value as it goes (so the first bad value fails,
 * and -h prints the help only if nothing before it failed); what no option
 * took is "unrecognized", reported at the end. */
#include "flags_parts.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyval.h"
#include "lib/log.h"
#include "lib/numparse.h"
#include "lib/bounds.h"

enum opt_id {
	O_UNKNOWN = -1,
	O_HELP,
	O_PORT,
	O_HOST,
	O_SERVER_HOSTS,
	O_SERVER_PORTS,
	O_MAX_RETRIES,
	O_RETRY_DELAY,
	O_THRESHOLD,
	O_MAX_TOKENS,
	O_DYNAMIC,
	O_PRINT_CONFIG,
	O_RUNTIME_DIR,
	O_AGENT,
	O_HAPROXY,
	O_ACCESS_LOG,
	O_ADMISSION,
	O_VERSION,
	O_FORCE,
	O_POLICY,
	O_SCRAPE_INTERVAL,
	O_SCRAPE_TIMEOUT,
	O_LAYOUT,
	O_SERVER_MODELS,
	O_TRUSTED_CLASS_SRC,
};

enum nargs { N_ZERO, N_ONE, N_PLUS };
enum vtype { T_NONE, T_STR, T_INT, T_FLOAT };

struct opt {
	const char *str; /* one option string */
	enum opt_id id;
	bool ours; /* not the reference's */
};

/* In the reference's registration order: argparse lists ambiguous
 * matches in this order. */
static const struct opt opts[] = {
	{ "-h", O_HELP, false },
	{ "--help", O_HELP, false },
	{ "--port", O_PORT, false },
	{ "--host", O_HOST, false },
	{ "--server-hosts", O_SERVER_HOSTS, false },
	{ "--server-ports", O_SERVER_PORTS, false },
	{ "--max-retries", O_MAX_RETRIES, false },
	{ "--retry-delay", O_RETRY_DELAY, false },
	{ "--server-group-threshold", O_THRESHOLD, false },
	{ "--max-request-tokens", O_MAX_TOKENS, false },
	{ "--enable-dynamic-bucket", O_DYNAMIC, false },
	{ "--print-config", O_PRINT_CONFIG, true },
	{ "--runtime-dir", O_RUNTIME_DIR, true },
	{ "--agent", O_AGENT, true },
	{ "--haproxy", O_HAPROXY, true },
	{ "--access-log", O_ACCESS_LOG, true },
	{ "--version", O_VERSION, true },
	{ "--force", O_FORCE, true },
	{ "--policy", O_POLICY, true },
	{ "--scrape-interval", O_SCRAPE_INTERVAL, true },
	{ "--scrape-timeout", O_SCRAPE_TIMEOUT, true },
	{ "--admission", O_ADMISSION, true },
	{ "--trusted-class-src", O_TRUSTED_CLASS_SRC, true },
	{ "--layout", O_LAYOUT, true },
	{ "--server-models", O_SERVER_MODELS, true },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static enum nargs nargs_of(enum opt_id id)
{
	switch (id) {
	case O_HELP:
	case O_VERSION:
	case O_DYNAMIC:
	case O_FORCE:
	case O_ACCESS_LOG:
	case O_ADMISSION: return N_ZERO;
	case O_SERVER_HOSTS:
	case O_SERVER_PORTS:
	case O_SERVER_MODELS:
	case O_TRUSTED_CLASS_SRC: return N_PLUS;
	default: return N_ONE;
	}
}

static enum vtype type_of(enum opt_id id)
{
	switch (id) {
	case O_PORT:
	case O_SERVER_PORTS:
	case O_MAX_RETRIES:
	case O_THRESHOLD:
	case O_MAX_TOKENS: return T_INT;
	case O_RETRY_DELAY: return T_FLOAT;
	case O_HELP:
	case O_VERSION:
	case O_DYNAMIC:
	case O_FORCE:
	case O_ACCESS_LOG:
	case O_ADMISSION: return T_NONE;
	default: return T_STR;
	}
}

/* argparse names an option in its messages by all its strings. */
static const char *display_name(enum opt_id id)
{
	if (id == O_HELP)
		return "-h/--help";
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].id == id)
			return opts[i].str;
	return "?";
}

/* ---- classification ---------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct token {
	char kind;            /* 'O' option, 'A' value, '-' the "--" marker */
	enum opt_id id;       /* for 'O'; O_UNKNOWN for an unknown option */
	const char *optstr;   /* the option string it matched */
	const char *explicit; /* the value after '=' (or after -h), or NULL */
};

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* argparse's _negative_number_matcher: ^-\d+$|^-\d*\.\d+$ */
static bool negative_number(const char *s)
{
	const char *p = s + 1;
	size_t a = 0, b = 0;

	while (is_digit(*p)) {
		p++;
		a++;
	}
	if (*p == '\0')
		return a > 0;
	if (*p != '.')
		return false;
	p++;
	while (is_digit(*p)) {
		p++;
		b++;
	}
	return *p == '\0' && b > 0;
}

#define FAIL(...)                                   \
	do {                                        \
		dbk_errf(err, errlen, __VA_ARGS__); \
		return -1;                          \
	} while (0)

/* argparse's _parse_optional and _get_option_tuples for one argument.
 * A prefix is first looked up among the reference's options, so that an
 * abbreviation the reference accepts means the same here even where one
 * of our options shares it (--p is --port, as there). */
static void set_token(struct token *t, size_t i, const char *explicit)
{
	t->kind = 'O';
	t->id = opts[i].id;
	t->optstr = opts[i].str;
	t->explicit = explicit;
}

/* The options arg abbreviates, as argparse finds them: the reference's
 * first, ours only when none of its options matches. "-hX" is -h with X
 * attached. Fills match[] and explicit[] (NOPTS each); returns the count. */
static size_t prefix_matches(const char *arg, const char *eq, size_t *match, const char **explicit)
{
	size_t nmatch = 0;
	char prefix[256];

	for (int pass = 0; pass < 2 && nmatch == 0; pass++) {
		bool ours = pass == 1;
		if (arg[1] == '-') {
			size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
			if (n >= sizeof(prefix))
				n = sizeof(prefix) - 1;
			memcpy(prefix, arg, n);
			prefix[n] = '\0';
			for (size_t i = 0; i < NOPTS; i++)
				if (opts[i].ours == ours && starts_with(opts[i].str, prefix)) {
					explicit[nmatch] = eq ? eq + 1 : NULL;
					match[nmatch++] = i;
				}
			continue;
		}
		for (size_t i = 0; i < NOPTS; i++) {
			if (opts[i].ours != ours)
				continue;
			if (strncmp(opts[i].str, arg, 2) == 0 && opts[i].str[2] == '\0') {
				explicit[nmatch] = arg + 2;
				match[nmatch++] = i;
			} else if (starts_with(opts[i].str, arg)) {
				explicit[nmatch] = NULL;
				match[nmatch++] = i;
			}
		}
	}
	return nmatch;
}

static int classify(const char *arg, struct token *t, char *err, size_t errlen)
{
	size_t match[NOPTS], nmatch;
	const char *explicit[NOPTS];

	t->kind = 'A';
	t->id = O_UNKNOWN;
	t->optstr = NULL;
	t->explicit = NULL;
	if (arg[0] != '-')
		return 0;
	for (size_t i = 0; i < NOPTS; i++)
		if (strcmp(arg, opts[i].str) == 0) {
			set_token(t, i, NULL);
			return 0;
		}
	if (arg[1] == '\0')
		return 0; /* "-" alone is a value */
	const char *eq = strchr(arg, '=');
	if (eq) {
		size_t n = (size_t)(eq - arg);
		for (size_t i = 0; i < NOPTS; i++)
			if (strlen(opts[i].str) == n && strncmp(arg, opts[i].str, n) == 0) {
				set_token(t, i, eq + 1);
				return 0;
			}
	}
	nmatch = prefix_matches(arg, eq, match, explicit);
	if (nmatch > 1) {
		dbk_errf(err, errlen, "ambiguous option: %s could match", arg);
		for (size_t k = 0; k < nmatch; k++)
			dbk_errf_append(err, errlen, "%s %s", k ? "," : "", opts[match[k]].str);
		return -1;
	}
	if (nmatch == 1) {
		set_token(t, match[0], explicit[0]);
		return 0;
	}
	/* No option: a negative number or anything with a space is a value,
	 * the rest an unknown option. */
	if (negative_number(arg) || strchr(arg, ' '))
		return 0;
	t->kind = 'O';
	return 0;
}

/* ---- actions ----------------------------------------------------------- */

/* A scrape period: a duration as the agent takes it (500ms, 2s, 1m; a
 * bare number is ms), or any integer Python's int() reads, as before it
 * had units. Range-checked as it is converted (as an argparse `type`
 * would), so that 0 stays "not given": the agent's default. */
static int take_ms(long long *to, enum opt_id id, const char *v, char *err, size_t errlen)
{
	long long max = id == O_SCRAPE_INTERVAL ? DBK_LAUNCH_SCRAPE_INTERVAL_MS_MAX
	                                        : DBK_LAUNCH_SCRAPE_TIMEOUT_MS_MAX;
	long long ms;
	char r[160];

	if (!dbk_parse_duration(v, 1, 0, LLONG_MAX, &ms) && dbk_py_int(v, &ms) < 0) {
		dbk_py_repr(v, r, sizeof(r));
		FAIL("argument %s: invalid duration value: %s (500ms, 2s, 1m; a bare number is "
		     "ms)",
		     display_name(id), r);
	}
	if (ms < DBK_LAUNCH_SCRAPE_MS_MIN || ms > max)
		FAIL("argument %s: %lld is not from %d to %lld (milliseconds)", display_name(id),
		     ms, DBK_LAUNCH_SCRAPE_MS_MIN, max);
	*to = ms;
	return 0;
}

/* A list of strings (nargs "+") into buf, and *to pointed at it; returns
 * their count. Repeated, the last one wins, as with argparse's "store". */
static unsigned take_strings(const char **buf, const char ***to, char **vals, unsigned nvals)
{
	for (unsigned k = 0; k < nvals; k++)
		buf[k] = vals[k];
	*to = buf;
	return nvals;
}

/* Stores the values of one option. Converts each in turn: the first that
 * Python's int()/float() refuses is the error. */
static int take(struct dbk_launch_flags *f, enum opt_id id, char **vals, unsigned nvals, char *err,
                size_t errlen)
{
	enum vtype ty = type_of(id);
	long long iv = 0;
	double fv = 0;
	char r[160];

	for (unsigned k = 0; k < nvals; k++) {
		if ((ty == T_INT && dbk_py_int(vals[k], &iv) < 0) ||
		    (ty == T_FLOAT && dbk_py_float(vals[k], &fv) < 0)) {
			dbk_py_repr(vals[k], r, sizeof(r));
			FAIL("argument %s: invalid %s value: %s", display_name(id),
			     ty == T_INT ? "int" : "float", r);
		}
		if (id == O_SERVER_PORTS)
			/* Out of long's range is out of the port range too: the
			 * range check says so later. */
			f->ports_buf[k] = iv > INT32_MAX   ? INT32_MAX
			                  : iv < INT32_MIN ? INT32_MIN
			                                   : (long)iv;
	}
	switch (id) {
	case O_PORT:
		f->port = iv > INT32_MAX ? INT32_MAX : iv < INT32_MIN ? INT32_MIN : (long)iv;
		break;
	case O_HOST: f->host = vals[0]; break;
	case O_SERVER_HOSTS:
		f->nhosts = take_strings(f->hosts_buf, &f->server_hosts, vals, nvals);
		break;
	case O_SERVER_PORTS:
		f->server_ports = f->ports_buf;
		f->nports = nvals;
		break;
	case O_MAX_RETRIES: f->max_retries = iv; break;
	case O_RETRY_DELAY: f->retry_delay = fv; break;
	case O_THRESHOLD: f->threshold = iv; break;
	case O_MAX_TOKENS: f->max_request_tokens = iv; break;
	case O_DYNAMIC: f->dynamic = true; break;
	case O_ACCESS_LOG: f->access_log = true; break;
	case O_ADMISSION: f->admission = true; break;
	case O_FORCE: f->force = true; break;
	case O_SERVER_MODELS:
		f->nmodels = take_strings(f->models_buf, &f->server_models, vals, nvals);
		break;
	case O_TRUSTED_CLASS_SRC:
		f->ntrusted = take_strings(f->trusted_buf, &f->trusted_src, vals, nvals);
		break;
	case O_LAYOUT: return dbk_flags_take_layout(f, vals[0], err, errlen);
	case O_POLICY: return dbk_flags_take_policy(f, vals[0], err, errlen);
	case O_SCRAPE_INTERVAL: return take_ms(&f->scrape_interval_ms, id, vals[0], err, errlen);
	case O_SCRAPE_TIMEOUT: return take_ms(&f->scrape_timeout_ms, id, vals[0], err, errlen);
	case O_PRINT_CONFIG: f->print_config = vals[0]; break;
	case O_RUNTIME_DIR: f->runtime_dir = vals[0]; break;
	case O_AGENT: f->agent = vals[0]; break;
	case O_HAPROXY: f->haproxy = vals[0]; break;
	case O_HELP:
	case O_VERSION:
	case O_UNKNOWN: break;
	}
	return 0;
}

void dbk_flags_free(struct dbk_launch_flags *f)
{
	free(f->hosts_buf);
	free(f->ports_buf);
	free(f->models_buf);
	free(f->trusted_buf);
	f->hosts_buf = NULL;
	f->ports_buf = NULL;
	f->models_buf = NULL;
	f->trusted_buf = NULL;
	f->server_models = NULL;
	f->nmodels = 0;
	f->trusted_src = NULL;
	f->ntrusted = 0;
	f->server_hosts = NULL;
	f->server_ports = NULL;
	f->nhosts = f->nports = 0;
}

static const char *const default_hosts[1] = { DBK_LAUNCH_DEFAULT_SERVER_HOST };

/* The reference's defaults, and room for every argument. */
static int set_defaults(struct dbk_launch_flags *f, size_t n, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	err[0] = '\0';
	f->host = DBK_LAUNCH_DEFAULT_HOST;
	f->port = DBK_LAUNCH_DEFAULT_PORT;
	f->dynamic = false;
	f->access_log = false;
	f->admission = false;
	f->policy = DBK_LAUNCH_DEFAULT_POLICY;
	f->layout = DBK_LAUNCH_LAYOUT_SHARED;
	f->threshold = DBK_LAUNCH_DEFAULT_THRESHOLD;
	f->max_request_tokens = DBK_LAUNCH_DEFAULT_MAX_REQUEST_TOKENS;
	f->max_retries = DBK_LAUNCH_DEFAULT_MAX_RETRIES;
	f->retry_delay = DBK_LAUNCH_DEFAULT_RETRY_DELAY;
	f->hosts_buf = calloc(n + 1, sizeof(*f->hosts_buf));
	f->ports_buf = calloc(n + 1, sizeof(*f->ports_buf));
	f->models_buf = calloc(n + 1, sizeof(*f->models_buf));
	f->trusted_buf = calloc(n + 1, sizeof(*f->trusted_buf));
	if (!f->hosts_buf || !f->ports_buf || !f->models_buf || !f->trusted_buf) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	f->hosts_buf[0] = default_hosts[0];
	f->server_hosts = f->hosts_buf;
	f->nhosts = 1;
	f->ports_buf[0] = DBK_LAUNCH_DEFAULT_SERVER_PORT;
	f->server_ports = f->ports_buf;
	f->nports = 1;
	return 0;
}

/* Pass 1: classify every argument. After "--", everything is a value. */
static int classify_all(char **args, size_t n, struct token *tok, char *err, size_t errlen)
{
	size_t marker = n;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(args[i], "--") == 0) {
			tok[i].kind = '-';
			marker = i;
			break;
		}
		if (classify(args[i], &tok[i], err, errlen) < 0)
			return -1;
	}
	for (size_t i = marker + 1; i < n; i++)
		tok[i].kind = 'A';
	return 0;
}

static int ignored_explicit(const struct token *t, const char *x, char *err, size_t errlen)
{
	char r[160];

	dbk_py_repr(x, r, sizeof(r));
	dbk_errf(err, errlen, "argument %s: ignored explicit argument %s", display_name(t->id), r);
	return -1;
}

/* "--opt=value" or "-oVALUE": one value for an option that takes some;
 * for -h only more single-letter flags ("-hh"), and -h is the only one.
 * Sets *help for -h. */
static int take_explicit(struct dbk_launch_flags *f, const struct token *t, bool *help, char *err,
                         size_t errlen)
{
	if (nargs_of(t->id) != N_ZERO) {
		char *one = (char *)t->explicit;

		return take(f, t->id, &one, 1, err, errlen);
	}
	if (t->optstr[1] == '-' || t->explicit[0] == '\0')
		return ignored_explicit(t, t->explicit, err, errlen);
	const char *x = t->explicit;
	while (*x == 'h')
		x++;
	if (*x)
		return ignored_explicit(t, x, err, errlen);
	*help = true;
	return 0;
}

/* An option at tok[i] whose values are the run of 'A' that follows: one,
 * or all of them for nargs "+". Returns the index after them, or 0 on an
 * error; sets *help for -h and --version (f->version tells which). */
static size_t take_values(struct dbk_launch_flags *f, char **args, const struct token *tok,
                          size_t n, size_t i, bool *help, char *err, size_t errlen)
{
	enum nargs na = nargs_of(tok[i].id);
	size_t k = i + 1;

	if (na == N_ONE && k < n && tok[k].kind == 'A')
		k++;
	else if (na == N_PLUS)
		while (k < n && tok[k].kind == 'A')
			k++;
	size_t nv = k - i - 1;
	if (na == N_ONE && nv != 1) {
		dbk_errf(err, errlen, "argument %s: expected one argument",
		         display_name(tok[i].id));
		return 0;
	}
	if (na == N_PLUS && nv == 0) {
		dbk_errf(err, errlen, "argument %s: expected at least one argument",
		         display_name(tok[i].id));
		return 0;
	}
	if (tok[i].id == O_HELP || tok[i].id == O_VERSION) {
		*help = true;
		f->version = tok[i].id == O_VERSION;
		return k;
	}
	return take(f, tok[i].id, args + i + 1, (unsigned)nv, err, errlen) < 0 ? 0 : k;
}

/* Pass 2: take the options in order; what is not one goes to extras.
 * Stops at -h or --version, as argparse prints the help or the version at
 * once. */
static int take_all(struct dbk_launch_flags *f, char **args, const struct token *tok, size_t n,
                    size_t *extras, size_t *nextras, bool *help, char *err, size_t errlen)
{
	size_t i = 0;

	while (i < n && !*help) {
		const struct token *t = &tok[i];

		if (t->kind != 'O' || t->id == O_UNKNOWN) {
			extras[(*nextras)++] = i++;
		} else if (t->explicit) {
			if (take_explicit(f, t, help, err, errlen) < 0)
				return -1;
			i++;
		} else if ((i = take_values(f, args, tok, n, i, help, err, errlen)) == 0) {
			return -1;
		}
	}
	return 0;
}

enum dbk_flags_result dbk_flags_parse(struct dbk_launch_flags *f, int argc, char **argv, char *err,
                                      size_t errlen)
{
	enum dbk_flags_result rc = DBK_FLAGS_ERROR;
	size_t n = argc > 1 ? (size_t)argc - 1 : 0;
	char **args = argv + 1;
	struct token *tok = calloc(n + 1, sizeof(*tok));
	size_t *extras = calloc(n + 1, sizeof(*extras)), nextras = 0;
	bool help = false;

	if (set_defaults(f, n, err, errlen) < 0)
		goto out;
	if (!tok || !extras) {
		dbk_errf(err, errlen, "out of memory");
		goto out;
	}
	if (classify_all(args, n, tok, err, errlen) < 0 ||
	    take_all(f, args, tok, n, extras, &nextras, &help, err, errlen) < 0)
		goto out;
	if (help) {
		rc = f->version ? DBK_FLAGS_VERSION : DBK_FLAGS_HELP;
		goto out;
	}
	if (nextras) {
		dbk_errf(err, errlen, "unrecognized arguments:");
		for (size_t k = 0; k < nextras; k++)
			dbk_errf_append(err, errlen, " %s", args[extras[k]]);
		goto out;
	}
	if (dbk_flags_check(f, err, errlen) < 0)
		goto out;
	rc = DBK_FLAGS_OK;
out:
	free(tok);
	free(extras);
	return rc;
}
