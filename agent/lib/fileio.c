#include "lib/fileio.h"
#include "lib/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *dbk_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *buf = NULL;

	if (!f) {
		dbk_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	/* Grown by doubling rather than sized by fstat, so pipes and
	 * /proc files (which report size 0) read whole too. */
	for (;;) {
		if (n == cap - 1 || !buf) {
			char *nb;

			if (buf)
				cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				dbk_errf(err, errlen, "%s: out of memory", path);
				goto fail;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - 1 - n, f);

		n += got;
		if (n > max) {
			dbk_errf(err, errlen, "%s: larger than %zu bytes", path, max);
			goto fail;
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		dbk_errf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		goto fail;
	}
	if (!is_stdin)
		fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	if (!is_stdin)
		fclose(f);
	free(buf);
	return NULL;
}
