/* Fuzzes the command-line parser (lib/cli.h) with a table that has an
 * option of every kind, short and long, strict and not, once-only.
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most
 * 64), each in a heap block of its own.
 *
 * Checked:
 * - dbk_cli_parse returns 0 or -1; on -1 a non-empty one-line reason;
 * - on 0: the first operand's index within [1, argc]; every number
 *   within its option's bounds (finite, whole where the kind is), a
 *   choice an index of its list, a string one of the arguments (or a
 *   tail of one, as "-sVALUE" gives), a once-only option set at most
 *   once;
 * - dbk_cli_usage names every option. */
#include <math.h>

#include "fuzz.h"
#include "lib/cli.h"
#include "lib/log.h"

#define MAX_ARGS 64

static int calls;

static int on_call(void *ctx, const char *value, char *err, size_t errlen)
{
	(void)ctx;
	calls++;
	if (value[0] == 'x') {
		dbk_errf(err, errlen, "--call: no x");
		return -1;
	}
	return 0;
}

static bool from_args(const char *s, char **argv, int argc)
{
	for (int i = 1; i < argc; i++)
		if (s >= argv[i] && s <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const modes[] = { "a", "bb", "ccc", NULL };
	bool flag = false;
	const char *str = NULL, *once = NULL;
	int i_val = 7, mode = -1;
	long long ll = 0;
	size_t sz = 1;
	long long ms = 0, secs = 0;
	double d = 0, dec = 0;
	const struct dbk_opt opts[] = {
		{ "flag", 'f', DBK_OPT_FLAG, &flag, 0, 0, NULL, NULL, 0, NULL, "a flag", NULL },
		{ "str", 's', DBK_OPT_STR, &str, 0, 0, NULL, NULL, 0, "S", "a string", "Strings" },
		{ "int", 'i', DBK_OPT_INT, &i_val, -5, 100, NULL, NULL, 0, "N", "an int", NULL },
		{ "ll", 0, DBK_OPT_LL, &ll, 0, 1e12, NULL, NULL, DBK_OPT_STRICT, "N", "strict",
		  NULL },
		{ "size", 'z', DBK_OPT_SIZE, &sz, 1, 4096, NULL, NULL, 0, "N", "a size", NULL },
		{ "double", 'd', DBK_OPT_DOUBLE, &d, -1.5, 1e6, NULL, NULL, 0, "X", "a double",
		  NULL },
		{ "dec", 0, DBK_OPT_DOUBLE, &dec, 0, 100, NULL, NULL, DBK_OPT_STRICT, "X",
		  "decimal", NULL },
		{ "mode", 'm', DBK_OPT_CHOICE, &mode, 0, 0, modes, NULL, 0, "M", "a choice", NULL },
		{ "call", 'c', DBK_OPT_CALL, NULL, 0, 0, NULL, on_call, 0, "V", "a call\nline 2",
		  NULL },
		{ "ms", 0, DBK_OPT_MS, &ms, 10, 3.6e6, NULL, NULL, 0, "TIME", "ms", NULL },
		{ "secs", 0, DBK_OPT_SECONDS, &secs, 0, 604800, NULL, NULL, 0, "TIME", "s", NULL },
		{ "once", 0, DBK_OPT_STR, &once, 0, 0, NULL, NULL, DBK_OPT_ONCE, "S", "once",
		  NULL },
		{ NULL, 0, 0, NULL, 0, 0, NULL, NULL, 0, NULL, NULL, NULL },
	};
	char *argv[MAX_ARGS + 2];
	int argc = 0, first = -1;
	char err[256];

	argc = fuzz_argv(data, size, "fuzz", argv, MAX_ARGS);

	/* getopt may permute or rewrite argv; keep the blocks to free. */
	char *blocks[MAX_ARGS + 2];
	memcpy(blocks, argv, sizeof(argv[0]) * (size_t)argc);
	err[0] = '\0';
	calls = 0;
	int rc = dbk_cli_parse(opts, argc, argv, NULL, &first, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
		FUZZ_CHECK(!strchr(err, '\n'));
	} else {
		FUZZ_CHECK(first >= 1 && first <= argc);
		FUZZ_CHECK(i_val >= -5 && i_val <= 100);
		FUZZ_CHECK(ll >= 0 && ll <= 1000000000000LL);
		FUZZ_CHECK(sz >= 1 && sz <= 4096);
		FUZZ_CHECK(ms == 0 || (ms >= 10 && ms <= 3600000));
		FUZZ_CHECK(secs >= 0 && secs <= 604800);
		FUZZ_CHECK(isfinite(d) && d >= -1.5 && d <= 1e6);
		FUZZ_CHECK(isfinite(dec) && dec >= 0 && dec <= 100);
		FUZZ_CHECK(mode >= -1 && mode <= 2);
		FUZZ_CHECK(!str || from_args(str, argv, argc));
		FUZZ_CHECK(!once || from_args(once, argv, argc));
	}

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (f) {
		dbk_cli_usage(f, opts);
		fclose(f);
		for (size_t i = 0; opts[i].name; i++)
			FUZZ_CHECK(text && strstr(text, opts[i].name));
		free(text);
	}
	for (int i = 0; i < argc; i++)
		free(blocks[i]);
	return 0;
}
