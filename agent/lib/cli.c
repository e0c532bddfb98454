#include "lib/cli.h"
#include "lib/log.h"
#include "lib/numparse.h"

#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* getopt_long's table is built on the stack: no program has more. */
#define MAX_OPTS 128
/* getopt_long returns this plus the option's index for a long option, so
 * that no index collides with a short option character. */
#define LONG_BASE 256

static size_t count_opts(const struct dbk_opt *opts)
{
	size_t n = 0;

	while (opts[n].name)
		n++;
	return n;
}

static bool parse_integer(const struct dbk_opt *o, const char *v, long long *out)
{
	unsigned long long u;

	if (!(o->flags & DBK_OPT_STRICT))
		return dbk_parse_ll(v, (long long)o->lo, (long long)o->hi, out);
	if (o->lo < 0 ||
	    !dbk_parse_uint(v, (unsigned long long)o->lo, (unsigned long long)o->hi, &u))
		return false;
	*out = (long long)u;
	return true;
}

static bool parse_number(const struct dbk_opt *o, const char *v, double *out)
{
	if (o->flags & DBK_OPT_STRICT)
		return dbk_parse_decimal(v, o->lo, o->hi, out);
	return dbk_parse_double(v, o->lo, o->hi, out);
}

static int set_choice(const struct dbk_opt *o, const char *v, char *err, size_t errlen)
{
	char list[256] = "";
	size_t used = 0;

	for (int i = 0; o->choices[i]; i++) {
		if (strcmp(v, o->choices[i]) == 0) {
			*(int *)o->dst = i;
			return 0;
		}
		int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
		                 o->choices[i]);

		if (n > 0 && (size_t)n < sizeof(list) - used)
			used += (size_t)n;
	}
	dbk_errf(err, errlen, "--%s wants one of %s, got '%s'", o->name, list, v);
	return -1;
}

#define DURATION_FORMS "500ms, 2s, 1m"

static const char *duration_unit(const struct dbk_opt *o)
{
	return o->kind == DBK_OPT_MS ? "ms" : "s";
}

/* Stores one option's value where the table says. */
static int set_value(const struct dbk_opt *o, const char *v, void *ctx, char *err, size_t errlen)
{
	long long ll;
	double d;

	switch (o->kind) {
	case DBK_OPT_FLAG: *(bool *)o->dst = true; return 0;
	case DBK_OPT_STR: *(const char **)o->dst = v; return 0;
	case DBK_OPT_CHOICE: return set_choice(o, v, err, errlen);
	case DBK_OPT_CALL: return o->fn(ctx, v, err, errlen);
	case DBK_OPT_DOUBLE:
		if (!parse_number(o, v, &d)) {
			dbk_errf(err, errlen, "--%s wants a number from %g to %g, got '%s'",
			         o->name, o->lo, o->hi, v);
			return -1;
		}
		*(double *)o->dst = d;
		return 0;
	case DBK_OPT_MS:
	case DBK_OPT_SECONDS:
		if (!dbk_parse_duration(v, o->kind == DBK_OPT_MS ? 1 : 1000, (long long)o->lo,
		                        (long long)o->hi, &ll)) {
			dbk_errf(err, errlen,
			         "--%s wants a duration from %.0f to %.0f %s (%s), got '%s'",
			         o->name, o->lo, o->hi, duration_unit(o), DURATION_FORMS, v);
			return -1;
		}
		*(long long *)o->dst = ll;
		return 0;
	case DBK_OPT_INT:
	case DBK_OPT_LL:
	case DBK_OPT_SIZE:
		if (!parse_integer(o, v, &ll)) {
			dbk_errf(err, errlen, "--%s wants an integer from %.0f to %.0f, got '%s'",
			         o->name, o->lo, o->hi, v);
			return -1;
		}
		if (o->kind == DBK_OPT_INT)
			*(int *)o->dst = (int)ll;
		else if (o->kind == DBK_OPT_LL)
			*(long long *)o->dst = ll;
		else
			*(size_t *)o->dst = (size_t)ll;
		return 0;
	}
	dbk_errf(err, errlen, "--%s: option kind %d unknown", o->name, (int)o->kind);
	return -1;
}

/* Checks what the compiler cannot: bounds an integer kind can hold. */
static int check_table(const struct dbk_opt *opts, size_t n, char *err, size_t errlen)
{
	if (n > MAX_OPTS) {
		dbk_errf(err, errlen, "more than %d options", MAX_OPTS);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dbk_opt *o = &opts[i];
		bool bad = false;

		if (o->kind == DBK_OPT_INT)
			bad = o->lo < INT_MIN || o->hi > INT_MAX;
		else if (o->kind == DBK_OPT_SIZE)
			bad = o->lo < 0 || o->hi > (double)SIZE_MAX;
		else if (o->kind == DBK_OPT_CHOICE)
			bad = !o->choices;
		else if (o->kind == DBK_OPT_CALL)
			bad = !o->fn;
		if (bad || (o->kind != DBK_OPT_CALL && !o->dst)) {
			dbk_errf(err, errlen, "--%s: bad option table entry", o->name);
			return -1;
		}
	}
	return 0;
}

int dbk_cli_parse(const struct dbk_opt *opts, int argc, char **argv, void *ctx, int *first_arg,
                  char *err, size_t errlen)
{
	struct option lo[MAX_OPTS + 1];
	unsigned char seen[MAX_OPTS] = { 0 };
	char shorts[2 * MAX_OPTS + 3] = "+:";
	size_t n = count_opts(opts), ns = 2;
	int c;

	if (check_table(opts, n, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		bool arg = opts[i].kind != DBK_OPT_FLAG;

		lo[i] = (struct option){ opts[i].name, arg ? required_argument : no_argument, NULL,
			                 LONG_BASE + (int)i };
		if (opts[i].short_name) {
			shorts[ns++] = opts[i].short_name;
			if (arg)
				shorts[ns++] = ':';
		}
	}
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = '\0';

	opterr = 0;
	/* 0, not 1: glibc and musl then also forget where they were inside
	 * a cluster of short options ("-fz"), which a parse that stopped
	 * there with an error left pointing into the old argv (fuzz_cli
	 * found it reading freed memory on the next parse). */
	optind = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct dbk_opt *o = NULL;
		const char *bad = argv[optind - 1];

		if (c == '?' || c == ':') {
			if (c == ':')
				dbk_errf(err, errlen, "%s needs a value", bad);
			else if (optopt)
				dbk_errf(err, errlen, "unknown option '-%c'", optopt);
			else
				dbk_errf(err, errlen, "unknown option '%s'", bad);
			return -1;
		}
		if (c >= LONG_BASE) {
			o = &opts[c - LONG_BASE];
		} else {
			for (size_t i = 0; i < n && !o; i++)
				if (opts[i].short_name == c)
					o = &opts[i];
		}
		if (!o)
			continue; /* unreachable: getopt only returns what the table holds */
		size_t idx = (size_t)(o - opts);

		if ((o->flags & DBK_OPT_ONCE) && seen[idx]) {
			dbk_errf(err, errlen, "--%s given twice", o->name);
			return -1;
		}
		seen[idx] = 1;
		if (set_value(o, optarg, ctx, err, errlen) < 0)
			return -1;
	}
	if (first_arg)
		*first_arg = optind;
	return 0;
}

void dbk_cli_usage(FILE *out, const struct dbk_opt *opts)
{
	char head[128];
	int width = 0;
	bool shorts = false;

	/* The short-option column only when some option has one, so that a
	 * long-only program's lines start "  --name" as its man page does. */
	for (const struct dbk_opt *o = opts; o->name; o++)
		shorts |= o->short_name != 0;

	/* Two passes: the widest "-s, --name METAVAR" sets the help column. */
	for (int pass = 0; pass < 2; pass++) {
		for (const struct dbk_opt *o = opts; o->name; o++) {
			char sh[5] = "";
			int n;

			if (shorts)
				strcpy(sh, "    ");
			if (o->short_name)
				snprintf(sh, sizeof(sh), "-%c, ", o->short_name);
			n = snprintf(head, sizeof(head), "%s--%s%s%s", sh, o->name,
			             o->metavar ? " " : "", o->metavar ? o->metavar : "");

			if (n < 0)
				continue;
			if (pass == 0) {
				if (n > width)
					width = n;
				continue;
			}
			const char *h = o->help ? o->help : "";

			if (o->section)
				fprintf(out, "%s\n", o->section);

			if (!*h) {
				fprintf(out, "  %s\n", head);
				continue;
			}
			fprintf(out, "  %-*s  ", width, head);
			for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
				fprintf(out, "%.*s\n  %-*s  ", (int)(nl - h), h, width, "");
			fprintf(out, "%s\n", h);
			if (o->kind == DBK_OPT_MS || o->kind == DBK_OPT_SECONDS)
				fprintf(out, "  %-*s  (%s; a bare number is %s)\n", width, "",
				        DURATION_FORMS, duration_unit(o));
		}
	}
}

int dbk_cli_append(const char **list, unsigned *n, unsigned max, const char *what, const char *v,
                   char *err, size_t errlen)
{
	if (*n >= max) {
		dbk_errf(err, errlen, "at most %u %s", max, what);
		return -1;
	}
	list[(*n)++] = v;
	return 0;
}
