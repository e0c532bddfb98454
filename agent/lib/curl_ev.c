/* See curl_ev.h. libcurl's "multi_socket" API, as its docs describe it
 * (curl_multi_socket_action(3), CURLMOPT_SOCKETFUNCTION(3),
 * CURLMOPT_TIMERFUNCTION(3)): libcurl is never called back into from its
 * own callbacks; a timeout of 0 becomes a timer that fires on the next
 * loop iteration. */
#include "lib/curl_ev.h"

#include <stdlib.h>

#include "lib/log.h"

struct dbk_curl_ev {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer timer;
	struct dbk_list jobs, socks;
};

/* One socket libcurl asked to be watched. */
struct sock {
	ev_io io;
	struct dbk_curl_ev *m;
	struct dbk_list link;
};

/* Hands every finished transfer to its job's done. */
static void reap(struct dbk_curl_ev *m)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m->multi, &left))) {
		struct dbk_curl_job *job = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		CURLcode rc = msg->data.result;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&job);
		curl_multi_remove_handle(m->multi, msg->easy_handle);
		if (!job)
			continue;
		dbk_list_del(&job->link);
		job->active = false;
		/* done may start the job again: msg is not read after this. */
		job->done(job->arg, rc);
	}
}

static void act(struct dbk_curl_ev *m, curl_socket_t fd, int what)
{
	int running;

	curl_multi_socket_action(m->multi, fd, what, &running);
	reap(m);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sock *s = (struct sock *)w;

	(void)loop;
	act(s->m, w->fd,
	    (revents & EV_READ ? CURL_CSELECT_IN : 0) |
	            (revents & EV_WRITE ? CURL_CSELECT_OUT : 0));
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_curl_ev *m = w->data;

	(void)loop;
	(void)revents;
	act(m, CURL_SOCKET_TIMEOUT, 0);
}

static void sock_free(struct sock *s)
{
	ev_io_stop(s->m->loop, &s->io);
	dbk_list_del(&s->link);
	free(s);
}

/* CURLMOPT_SOCKETFUNCTION: watch fd for what (or no more). */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct dbk_curl_ev *m = userp;
	struct sock *s = socketp;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_free(s);
		curl_multi_assign(m->multi, fd, NULL);
		return 0;
	}
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return -1; /* libcurl fails the transfer */
		s->m = m;
		dbk_list_push(&m->socks, &s->link);
		curl_multi_assign(m->multi, fd, s);
	}
	ev_io_stop(m->loop, &s->io);
	ev_io_init(&s->io, on_io, fd,
	           (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0));
	ev_io_start(m->loop, &s->io);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: call back in ms (-1: no timer). */
static int on_timeout(CURLM *multi, long ms, void *userp)
{
	struct dbk_curl_ev *m = userp;

	(void)multi;
	ev_timer_stop(m->loop, &m->timer);
	if (ms >= 0) {
		ev_timer_set(&m->timer, (double)ms / 1000.0, 0.0);
		ev_timer_start(m->loop, &m->timer);
	}
	return 0;
}

struct dbk_curl_ev *dbk_curl_ev_new(struct ev_loop *loop, long keep, char *err, size_t errlen)
{
	struct dbk_curl_ev *m;

	/* Reference-counted by libcurl, and safe to call at any time since
	 * 7.84 (Debian 12 ships 7.88). */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		dbk_errf(err, errlen, "libcurl: cannot initialise");
		return NULL;
	}
	if (!(m = calloc(1, sizeof(*m))) || !(m->multi = curl_multi_init())) {
		free(m);
		curl_global_cleanup();
		dbk_errf(err, errlen, "libcurl: out of memory");
		return NULL;
	}
	m->loop = loop;
	dbk_list_init(&m->jobs);
	dbk_list_init(&m->socks);
	ev_timer_init(&m->timer, on_timer, 0.0, 0.0);
	m->timer.data = m;
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, on_timeout);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
	curl_multi_setopt(m->multi, CURLMOPT_MAXCONNECTS, keep);
	return m;
}

int dbk_curl_ev_add(struct dbk_curl_ev *m, struct dbk_curl_job *job, char *err, size_t errlen)
{
	CURLMcode rc;

	if (job->active) {
		dbk_errf(err, errlen, "a request is in flight");
		return -1;
	}
	curl_easy_setopt(job->easy, CURLOPT_PRIVATE, job);
	if ((rc = curl_multi_add_handle(m->multi, job->easy)) != CURLM_OK) {
		dbk_errf(err, errlen, "libcurl: %s", curl_multi_strerror(rc));
		return -1;
	}
	job->active = true;
	dbk_list_push(&m->jobs, &job->link);
	return 0;
}

void dbk_curl_ev_remove(struct dbk_curl_ev *m, struct dbk_curl_job *job)
{
	if (!job->active)
		return;
	curl_multi_remove_handle(m->multi, job->easy);
	dbk_list_del(&job->link);
	job->active = false;
}

void dbk_curl_ev_free(struct dbk_curl_ev *m)
{
	struct dbk_list *it, *nx;

	if (!m)
		return;
	dbk_list_for_each_safe(it, nx, &m->jobs)
	{
		dbk_curl_ev_remove(m, dbk_list_elem(it, struct dbk_curl_job, link));
	}
	curl_multi_cleanup(m->multi);
	/* Sockets libcurl did not say goodbye to are closed by now. */
	dbk_list_for_each_safe(it, nx, &m->socks)
	{
		sock_free(dbk_list_elem(it, struct sock, link));
	}
	ev_timer_stop(m->loop, &m->timer);
	free(m);
	curl_global_cleanup();
}
