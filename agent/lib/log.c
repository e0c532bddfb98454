#include "lib/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The only process-wide setting: written once by main before the event
 * loop starts, read everywhere after. */
static enum dbk_log_level min_level = DBK_LOG_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void dbk_log_set_level(enum dbk_log_level lvl) { min_level = lvl; }

enum dbk_log_level dbk_log_get_level(void) { return min_level; }

int dbk_log_level_parse(const char *s)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(s, level_names[i]) == 0)
			return (int)i;
	return -1;
}

void dbk_log(enum dbk_log_level lvl, const char *event, const char *fmt, ...)
{
	if (lvl < min_level)
		return;

	struct timespec ts;
	struct tm tm;
	char line[1024];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ level=%s event=%s",
	                      ts.tv_nsec / 1000000, level_names[lvl], event);
	if (fmt && n < sizeof(line) - 1) {
		va_list ap;

		line[n++] = ' ';
		va_start(ap, fmt);
		int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		if (m > 0)
			n += (size_t)m;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so concurrent writers never interleave. */
	fwrite(line, 1, n, stderr);
}

const char *dbk_log_quote(char *buf, unsigned long size, const char *s, unsigned long len)
{
	unsigned long o = 0;

	if (size == 0)
		return buf;
	for (unsigned long i = 0; i < len && o + 2 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			if (o + 3 >= size)
				break;
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			buf[o++] = '?';
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* Reasons quote what they were given (an argument, a line of a file): a
 * control byte there would break the one line. */
static void errf_at(char *err, size_t errlen, size_t at, const char *fmt, va_list ap)
{
	if (!err || at >= errlen)
		return;
	vsnprintf(err + at, errlen - at, fmt, ap);
	for (char *p = err + at; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

void dbk_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errf_at(err, errlen, 0, fmt, ap);
	va_end(ap);
}

void dbk_errf_append(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	errf_at(err, errlen, strnlen(err, errlen), fmt, ap);
	va_end(ap);
}

int dbk_log_limit_allow(struct dbk_log_limit *r, double now, uint64_t *suppressed)
{
	if (now - r->last >= 1.0) {
		r->last = now;
		r->burst = 0;
	}
	if (r->burst == DBK_LOG_LIMIT_BURST) {
		r->suppressed++;
		return 0;
	}
	r->burst++;
	*suppressed = r->suppressed;
	r->suppressed = 0;
	return 1;
}
