/* The launcher's stderr lines share the file with HAProxy's and the
 * agent's: each must reach it in one write, or a child's line can land
 * inside it. A SOCK_SEQPACKET socket as stderr keeps each write apart. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "say.h"

static int saved_stderr = -1;
static int reader = -1;

/* stderr becomes one end of a packet socket; reader is the other. */
static int capture(void)
{
	int sv[2];

	fflush(stderr);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		return -1;
	saved_stderr = dup(STDERR_FILENO);
	if (saved_stderr < 0 || dup2(sv[1], STDERR_FILENO) < 0)
		return -1;
	close(sv[1]);
	reader = sv[0];
	return 0;
}

static void restore(void)
{
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	close(reader);
}

/* The next write to stderr, NUL-terminated into buf; its length, or -1
 * when there was none. */
static ssize_t next_write(char *buf, size_t len)
{
	ssize_t n = recv(reader, buf, len - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static void test_one_write_a_line(void)
{
	char first[8192], second[8192];

	if (capture() < 0) {
		CHECK(!"socketpair or dup2");
		return;
	}
	dbk_launch_say("ready: clients on %s, agent pid %d, haproxy pid %d",
	               "http://127.0.0.1:8000", 11, 12);
	ssize_t n1 = next_write(first, sizeof(first));
	ssize_t n2 = next_write(second, sizeof(second));
	restore();
	CHECK(strcmp(first, "dbucket: ready: clients on http://127.0.0.1:8000, agent pid 11, "
	                    "haproxy pid 12\n") == 0);
	CHECK(n1 == (ssize_t)strlen(first));
	CHECK(n2 < 0);
}

static void test_long_line_cut_still_one_write(void)
{
	char got[16384];
	size_t big = 10000;
	char *text = malloc(big + 1);

	if (!text || capture() < 0) {
		CHECK(!"malloc, socketpair or dup2");
		free(text);
		return;
	}
	memset(text, 'x', big);
	text[big] = '\0';
	dbk_launch_say("%s", text);
	ssize_t n1 = next_write(got, sizeof(got));
	size_t len = strlen(got);
	bool starts = strncmp(got, "dbucket: xxx", 12) == 0;
	bool ends = len > 0 && got[len - 1] == '\n';
	ssize_t n2 = next_write(got, sizeof(got));
	restore();
	free(text);
	/* Cut at PIPE_BUF, newline included. */
	CHECK_EQ_U(n1, 4096);
	CHECK(starts && ends);
	CHECK(n2 < 0);
}

int main(void)
{
	RUN(test_one_write_a_line);
	RUN(test_long_line_cut_still_one_write);
	return CHECK_DONE();
}
