/* The launcher's one message style on stderr, "dbucket: <text>", as the
 * reference proxy prints (a line for people: not logfmt). Each line is
 * one write, cut at 4096 bytes: the children share that stderr. */
#ifndef DBK_LAUNCH_SAY_H
#define DBK_LAUNCH_SAY_H

void dbk_launch_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
