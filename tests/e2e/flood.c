/* dbk-test-flood: a hostile peer for the adversarial e2e tests. Opens N
 * TCP connections to ADDR (from --bind IP if given), optionally says
 * HAPROXY-HELLO (--hello), half of one (--half) or some text (--text), then
 * holds them silent until every one was closed by the agent or --hold
 * seconds pass.
 *
 * --probe is the other side: HAProxy's new connection. Each of the N
 * says HELLO and waits for the agent's AGENT-HELLO (then hangs up).
 *
 * stdout: "connected=K" once all connects are done (the test's signal
 * that the flood is in place), then "closed=C elapsed=S" at the end, and
 * with --probe "hellos=H max_ms=M": how many got AGENT-HELLO, and the
 * longest wait from connect to it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frames.h"
#include "lib/numparse.h"
#include "lib/spop_codec.h"
#include "lib/version.h"

#define MAX_CONNS 4096

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void usage(void)
{
	fprintf(stderr, "usage: dbk-test-flood [--bind IP] [--hello|--half|--text T] [--hold S] "
	                "HOST:PORT N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct pollfd pfd[MAX_CONNS];
	static double began[MAX_CONNS];
	const char *bind_ip = NULL, *text = NULL;
	bool hello = false, half = false, probe = false;
	unsigned long long n = 0, hold = 30;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--version") == 0) {
			printf("dbk-test-flood %s\n", DBK_VERSION);
			return 0;
		}
		if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc)
			bind_ip = argv[++i];
		else if (strcmp(argv[i], "--hello") == 0)
			hello = true;
		else if (strcmp(argv[i], "--half") == 0)
			half = true;
		else if (strcmp(argv[i], "--probe") == 0)
			hello = probe = true;
		else if (strcmp(argv[i], "--text") == 0 && i + 1 < argc)
			text = argv[++i];
		else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
			if (!dbk_parse_uint(argv[++i], 1, 3600, &hold))
				usage();
		} else
			usage();
	}
	if (argc - i != 2 || !dbk_parse_uint(argv[i + 1], 1, MAX_CONNS, &n))
		usage();
	char host[64];
	const char *colon = strrchr(argv[i], ':');
	unsigned long long port = 0;
	if (!colon || (size_t)(colon - argv[i]) >= sizeof(host) ||
	    !dbk_parse_uint(colon + 1, 1, 65535, &port))
		usage();
	memcpy(host, argv[i], (size_t)(colon - argv[i]));
	host[colon - argv[i]] = '\0';

	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	if (inet_pton(AF_INET, host, &to.sin_addr) != 1 ||
	    (bind_ip && inet_pton(AF_INET, bind_ip, &from.sin_addr) != 1))
		usage();

	uint8_t frame[512];
	size_t flen = 0;
	if (hello)
		flen = test_haproxy_hello(frame, sizeof(frame), 16380, false);
	else if (half)
		flen = test_haproxy_hello(frame, sizeof(frame), 16380, false) / 2;
	else if (text && strlen(text) < sizeof(frame)) {
		flen = strlen(text);
		memcpy(frame, text, flen);
	}

	unsigned connected = 0;
	for (unsigned long long k = 0; k < n; k++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			break;
		began[connected] = now();
		if ((bind_ip && bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0) ||
		    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 ||
		    (flen && send(fd, frame, flen, MSG_NOSIGNAL) != (ssize_t)flen)) {
			close(fd);
			continue;
		}
		pfd[connected].fd = fd;
		pfd[connected].events = POLLIN;
		connected++;
	}
	printf("connected=%u\n", connected);
	fflush(stdout);

	/* Hold every connection; one the agent closes reads EOF or an error
	 * (its AGENT-HELLO or DISCONNECT is read and dropped). */
	unsigned closed = 0, hellos = 0;
	double t0 = now(), end = t0 + (double)hold, max_wait = 0;
	char sink[4096];
	while (closed < connected && now() < end) {
		int r = poll(pfd, connected, 200);

		if (r < 0 && errno != EINTR)
			break;
		for (unsigned k = 0; k < connected && r > 0; k++) {
			if (pfd[k].fd < 0 || !pfd[k].revents)
				continue;
			ssize_t got = recv(pfd[k].fd, sink, sizeof(sink), 0);
			/* A probe's answer: the frame's type byte after its length. */
			bool answered = probe && got >= 5 &&
			                (uint8_t)sink[4] == DBK_SPOP_AGENT_HELLO;
			if (answered) {
				hellos++;
				if (now() - began[k] > max_wait)
					max_wait = now() - began[k];
			}
			if (answered ||
			    (got <= 0 && !(got < 0 && (errno == EAGAIN || errno == EINTR)))) {
				close(pfd[k].fd);
				pfd[k].fd = -1;
				closed++;
			}
		}
	}
	printf("closed=%u elapsed=%.2f\n", closed, now() - t0);
	if (probe)
		printf("hellos=%u max_ms=%.1f\n", hellos, max_wait * 1000);
	return 0;
}
