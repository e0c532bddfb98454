/* Shared helpers of the libFuzzer targets in tests/fuzz/.
 *
 * Every target checks invariants of the parser it drives and calls
 * abort() (through FUZZ_CHECK) when one does not hold, so that libFuzzer
 * reports a violated contract like a crash and saves the input. */
#ifndef DBK_FUZZ_H
#define DBK_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static inline _Noreturn void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "\n*** invariant violated at %s:%d: %s\n", file, line, what);
	fflush(stderr);
	abort();
}

#define FUZZ_CHECK(cond)                                      \
	do {                                                  \
		if (!(cond))                                  \
			fuzz_fail(__FILE__, __LINE__, #cond); \
	} while (0)

/* [p, p + n) lies within [base, base + len). A NULL p is inside only
 * with n == 0. */
static inline bool fuzz_inside(const void *p, size_t n, const void *base, size_t len)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	if (!p)
		return n == 0;
	return a >= b && a - b <= len && n <= len - (a - b);
}

/* Reads the leading bytes of an input as parameters; past the end it
 * yields zeros, so any input is usable. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t b = 0;

	if (in->n) {
		b = in->p[0];
		in->p++;
		in->n--;
	}
	return b;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | fuzz_u8(in);
	return v;
}

/* A heap copy of exactly n bytes (at least one allocated), so that ASan
 * catches a read one past the end that a bigger buffer would hide. */
static inline uint8_t *fuzz_dup(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

/* A command line from an input: argv0, then the input's pieces between
 * NUL bytes (at most max of them), each a string in a heap block of its
 * own (free each of argv[0..argc-1]); argv[argc] is NULL and argv holds
 * max + 2 entries. Returns argc. */
static inline int fuzz_argv(const uint8_t *data, size_t size, const char *argv0, char **argv,
                            int max)
{
	int argc = 0;

	argv[argc++] = (char *)fuzz_dup(argv0, strlen(argv0) + 1);
	for (size_t at = 0; at < size && argc <= max;) {
		const uint8_t *end = memchr(data + at, 0, size - at);
		size_t n = end ? (size_t)(end - (data + at)) : size - at;
		char *a = malloc(n + 1);

		if (!a)
			abort();
		memcpy(a, data + at, n);
		a[n] = '\0';
		argv[argc++] = a;
		at += n + 1;
	}
	argv[argc] = NULL;
	return argc;
}

/* Whether the n bytes at s hold the string w anywhere. */
static inline bool fuzz_contains(const void *s, size_t n, const char *w)
{
	const uint8_t *b = s;
	size_t m = strlen(w);

	for (size_t i = 0; i + m <= n; i++)
		if (memcmp(b + i, w, m) == 0)
			return true;
	return false;
}

#endif
