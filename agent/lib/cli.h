/* Command lines, table-driven: a program lists its options once (name,
 * kind, where the value goes, bounds, help text) and gets getopt_long
 * parsing, whole-string bounded numbers, one wording of every error and
 * its --help option lines from the same table, so the parser, the
 * errors and the help cannot drift apart.
 *
 * Pure apart from getopt_long's globals (reset on every call): no I/O
 * but the FILE dbk_cli_usage is given. */
#ifndef DBK_CLI_H
#define DBK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum dbk_opt_kind {
	DBK_OPT_FLAG,   /* no value: *(bool *)dst = true */
	DBK_OPT_STR,    /* *(const char **)dst = the value (argv's own storage) */
	DBK_OPT_INT,    /* *(int *)dst, an integer in [lo, hi] */
	DBK_OPT_LL,     /* *(long long *)dst, an integer in [lo, hi] */
	DBK_OPT_SIZE,   /* *(size_t *)dst, an integer in [lo, hi] (lo >= 0) */
	DBK_OPT_DOUBLE, /* *(double *)dst, a finite number in [lo, hi] */
	DBK_OPT_CHOICE, /* *(int *)dst = index of the value in choices */
	DBK_OPT_CALL,   /* fn(ctx, value, err, errlen): anything else */
	/* Durations, *(long long *)dst in [lo, hi] of the kind's unit:
	 * "500ms", "2s", "1m", or a bare number in that unit (what the
	 * option took before it had units). --help says so under them. */
	DBK_OPT_MS,
	DBK_OPT_SECONDS,
};

/* Numbers in the settings grammar of lib/numparse.h (plain digits, no
 * sign, no exponent: what the agent's --config and /config take), for
 * the options an operator may also set there. Otherwise strtoll/strtod
 * syntax, whole string. */
#define DBK_OPT_STRICT 0x1u
/* The option may not be given twice (the default is: the last wins). */
#define DBK_OPT_ONCE 0x2u

struct dbk_opt {
	const char *name; /* long name, without "--"; NULL ends the table */
	char short_name;  /* 0 for none */
	enum dbk_opt_kind kind;
	void *dst;
	double lo, hi;              /* numbers: inclusive bounds */
	const char *const *choices; /* CHOICE: NULL-terminated */
	int (*fn)(void *ctx, const char *value, char *err, size_t errlen); /* CALL */
	unsigned flags;      /* DBK_OPT_STRICT, DBK_OPT_ONCE */
	const char *metavar; /* "N", "HOST:PORT", ...; NULL for FLAG */
	const char *help;    /* may hold '\n' for more lines */
	const char *section; /* a heading --help prints before it */
};

/* Parses argv[1..] against opts; options end at the first non-option
 * argument or "--", whose index goes to *first_arg (argc when none).
 * ctx is passed to CALL options. Returns 0, or -1 with a one-line
 * reason in err (unknown option, missing or bad value). Values are
 * written as they are read: on error some may already be set. */
int dbk_cli_parse(const struct dbk_opt *opts, int argc, char **argv, void *ctx, int *first_arg,
                  char *err, size_t errlen);

/* Writes one aligned "  -s, --name METAVAR  help" entry per option,
 * each option's section heading (if any) on a line of its own before it. */
void dbk_cli_usage(FILE *out, const struct dbk_opt *opts);

/* For a repeatable CALL option that collects values: list[(*n)++] = v
 * while *n < max, else -1 with "at most MAX WHAT" in err. v is kept as
 * given (argv's own storage). */
int dbk_cli_append(const char **list, unsigned *n, unsigned max, const char *what, const char *v,
                   char *err, size_t errlen);

#endif
