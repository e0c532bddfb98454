#include "say.h"

#include <stdarg.h>
#include <stdio.h>

void dbk_launch_say(const char *fmt, ...)
{
	va_list ap;

	/* One write of the whole line where stdio allows it: the children
	 * print to the same stderr. */
	flockfile(stderr);
	fputs("dbucket: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}
