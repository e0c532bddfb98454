/* libcurl's multi interface driven by a libev loop: the one place the
 * agent meets libcurl's event plumbing. libcurl says which sockets to
 * watch (CURLMOPT_SOCKETFUNCTION: an ev_io each) and when to call it
 * back (CURLMOPT_TIMERFUNCTION: one ev_timer); the loop's events go back
 * to curl_multi_socket_action, so a transfer never blocks the loop and
 * no thread of ours runs one. It exists for https (TLS is libcurl's and
 * OpenSSL's job, not ours); plain HTTP stays on lib/http_client, which
 * costs the loop less per request.
 *
 * The multi handle keeps the connections of its transfers between them
 * (its connection cache), so a handle sent again reuses its TLS session
 * and connection. An easy handle is the caller's, set up by it; this
 * module only runs it and says when it is over. */
#ifndef DBK_CURL_EV_H
#define DBK_CURL_EV_H

#include <curl/curl.h>
#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/list.h"

struct dbk_curl_ev;

/* A transfer in flight: the caller's, living until done is called or it
 * is removed. done gets libcurl's result (CURLE_OK or why not). */
struct dbk_curl_job {
	CURL *easy;
	void (*done)(void *arg, CURLcode rc);
	void *arg;
	/* This module's: the jobs in flight. */
	struct dbk_list link;
	bool active;
};

/* A multi handle on loop, keeping up to keep idle connections (one per
 * URL polled: libcurl's default sizes its cache by the transfers in
 * flight, and a poller has few at a time, so it would close and reopen
 * connections, a TLS handshake each). Returns NULL with err when libcurl
 * cannot be started. */
struct dbk_curl_ev *dbk_curl_ev_new(struct ev_loop *loop, long keep, char *err, size_t errlen);
/* Ends every transfer (without done) and frees the multi handle and its
 * connections; the easy handles stay the callers'. */
void dbk_curl_ev_free(struct dbk_curl_ev *m);

/* Starts job->easy (its CURLOPT_PRIVATE is taken for the job). Returns
 * 0, and done follows from the loop, never from this call; or -1 with
 * err. */
int dbk_curl_ev_add(struct dbk_curl_ev *m, struct dbk_curl_job *job, char *err, size_t errlen);
/* Ends job's transfer, if any, without done. */
void dbk_curl_ev_remove(struct dbk_curl_ev *m, struct dbk_curl_job *job);

#endif
