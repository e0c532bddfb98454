/* Python's int(), float() and repr() on ASCII strings: what the
 * reference's argparse (type=int, type=float, and %r in its messages)
 * accepts and prints. Pure. */
#ifndef DBK_LAUNCH_PYVAL_H
#define DBK_LAUNCH_PYVAL_H

#include <stdbool.h>
#include <stddef.h>

/* Python's int() and float() on a string (ASCII forms: surrounding
 * whitespace, a sign, underscores between digits; inf and nan for float).
 * Return 0, or -1 when Python would raise ValueError. An int beyond long
 * long saturates (Python's have no bound; the range checks then refuse
 * it). */
int dbk_py_int(const char *s, long long *out);
int dbk_py_float(const char *s, double *out);

/* Python's repr() of a str, as argparse quotes values in its messages. */
void dbk_py_repr(const char *s, char *out, size_t outlen);

#endif
