/* Reading a whole small file (a --config file, a trace, a fixture) into
 * memory in one call, with a size cap so a wrong path (a device, a huge
 * log) fails cleanly instead of eating the heap. */
#ifndef DBK_FILEIO_H
#define DBK_FILEIO_H

#include <stddef.h>

/* Returns a malloc'd, NUL-terminated copy of the file at path ("-" is
 * standard input) and its length in *len, or NULL with a one-line reason
 * in err (no such file, unreadable, larger than max bytes, out of
 * memory). The NUL is not counted in *len; the content may hold NULs. */
char *dbk_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen);

#endif
