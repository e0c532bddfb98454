#include "say.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Longer messages are cut: PIPE_BUF, so that a line written to a pipe
 * (a service manager's) is one atomic write too. */
#define SAY_MAX 4096

void dbk_launch_say(const char *fmt, ...)
{
	static const char prefix[] = "dbucket: ";
	char line[SAY_MAX];
	size_t n = sizeof(prefix) - 1;
	va_list ap;

	memcpy(line, prefix, n);
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (m > 0)
		n += (size_t)m;
	if (n > sizeof(line) - 1)
		n = sizeof(line) - 1;
	line[n++] = '\n';
	/* One write of the whole line: HAProxy and the agent write to the
	 * same stderr, and unbuffered stdio would write the prefix, the text
	 * and the newline apart, so that a child's line could land between
	 * "dbucket: " and "ready" (a test waiting for "dbucket: ready" then
	 * never sees it). */
	fwrite(line, 1, n, stderr);
}
