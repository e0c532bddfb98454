/* Logging: one line per event on stderr, in logfmt
 * (ts=... level=... event=... key=value ...), so that journald, grep and
 * log shippers all read it without a custom parser. */
#ifndef DBK_LOG_H
#define DBK_LOG_H

#include <stddef.h>
#include <stdint.h>

enum dbk_log_level {
	DBK_LOG_DEBUG = 0,
	DBK_LOG_INFO,
	DBK_LOG_WARN,
	DBK_LOG_ERROR,
};

/* Lines below this level are dropped. Set once at start-up. */
void dbk_log_set_level(enum dbk_log_level lvl);
enum dbk_log_level dbk_log_get_level(void);

/* Parses "debug", "info", "warn" or "error"; returns -1 otherwise. */
int dbk_log_level_parse(const char *s);

/* Writes `ts=... level=... event=<event>` followed by the printf-style
 * key=value pairs of fmt (may be NULL). Values with spaces must be quoted
 * by the caller (%s in "..."), see dbk_log_quote. */
void dbk_log(enum dbk_log_level lvl, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Copies s into buf with logfmt quoting rules applied (escapes " and \,
 * replaces control bytes), truncating to fit. Returns buf. */
const char *dbk_log_quote(char *buf, unsigned long size, const char *s, unsigned long len);

/* The one error style of every parser and constructor: a function that
 * fails returns -1 (or NULL) and writes a one-line reason into the
 * caller's err[errlen], which the caller logs or prints (control bytes
 * become '?', so that quoted input cannot break the line). err may be
 * NULL. */
void dbk_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same, appended to the reason err already holds (a list of names
 * after a dbk_errf), truncated to fit. */
void dbk_errf_append(char *err, size_t errlen, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* A repeated event (refused connections, a peer that keeps failing)
 * logs at most DBK_LOG_LIMIT_BURST lines a second, so that a flood of it
 * cannot flood the log too; the next line says how many were left out.
 * Time is the caller's, in seconds. */
#define DBK_LOG_LIMIT_BURST 5
struct dbk_log_limit {
	double last;    /* start of the current second */
	unsigned burst; /* lines in it */
	uint64_t suppressed;
};

/* Whether to log now; *suppressed is what was left out before this one. */
int dbk_log_limit_allow(struct dbk_log_limit *r, double now, uint64_t *suppressed);

#endif
