/* HAProxy's own answers as JSON errors: the sample's haproxy/errors/NNN.http,
 * compiled in (build/gen/error_files.inc, made by contrib/package.mk from
 * those files), so that the launcher writes the very same files beside the
 * haproxy.cfg it generates and nothing has to be found on disk. */
#include "render.h"

#include <string.h>

static const struct {
	const char *status; /* "503", the file's name in haproxy/errors/ */
	const char *text;   /* the whole HTTP response */
} files[] = {
#include "error_files.inc"
};

#define NFILES (sizeof(files) / sizeof(files[0]))

size_t dbk_render_error_count(void) { return NFILES; }

void dbk_render_error_name(size_t i, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%s.http", DBK_RENDER_ERROR_PREFIX, files[i].status);
}

int dbk_render_error_file(FILE *out, const char *name)
{
	char n[DBK_RENDER_ERROR_NAME];

	for (size_t i = 0; i < NFILES; i++) {
		dbk_render_error_name(i, n, sizeof(n));
		if (strcmp(n, name) == 0) {
			fputs(files[i].text, out);
			return ferror(out) ? -1 : 0;
		}
	}
	return -1;
}

void dbk_render_http_errors(FILE *out, const char *dir)
{
	char n[DBK_RENDER_ERROR_NAME];

	fputs("\n"
	      "# HAProxy's own answers (no server, timeouts, refusals) in vLLM's JSON\n"
	      "# error shape: dbucket's haproxy/errors, written beside this file.\n"
	      "http-errors dbucket-json\n",
	      out);
	for (size_t i = 0; i < NFILES; i++) {
		dbk_render_error_name(i, n, sizeof(n));
		fprintf(out, "    errorfile %s \"%s/%s\"\n", files[i].status, dir, n);
	}
}
