/* See curl_get.h. */
#include "lib/curl_get.h"

#include <string.h>

#include "lib/log.h"

/* CURLOPT_WRITEFUNCTION: a body past the cap (chunked, or longer than
 * it said) ends the transfer: returning less than given is libcurl's
 * way to abort. */
static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct dbk_curl_get *g = arg;
	size_t len = size * n;

	if (len > g->max_body - g->body.len) {
		g->too_large = true;
		return 0;
	}
	dbk_buf_add(&g->body, p, len);
	return g->body.oom ? 0 : len;
}

static void on_done(void *arg, CURLcode rc)
{
	struct dbk_curl_get *g = arg;
	struct dbk_hc_result r = { 0 };
	long status = 0;

	if (rc == CURLE_FILESIZE_EXCEEDED)
		g->too_large = true;
	g->tls_failed = rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
	                rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CIPHER ||
	                rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_ISSUER_ERROR ||
	                rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH || rc == CURLE_SSL_INVALIDCERTSTATUS ||
	                rc == CURLE_SSL_CRL_BADFILE || rc == CURLE_SSL_ENGINE_INITFAILED ||
	                rc == CURLE_SSL_CLIENTCERT ||
	                /* TLS 1.3: a refused client certificate is an alert
	                 * read after the handshake. */
	                ((rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) &&
	                 strstr(g->curl_err, " alert "));
	if (g->too_large) {
		dbk_errf(g->err, sizeof(g->err), "body too large (over %zu bytes)", g->max_body);
		r.too_large = true;
	} else if (rc == CURLE_OK && g->body.oom) {
		dbk_errf(g->err, sizeof(g->err), "out of memory");
	} else if (rc != CURLE_OK) {
		/* libcurl's own line says most ("SSL certificate problem: ..."),
		 * and may quote the peer: dbk_errf scrubs it. */
		dbk_errf(g->err, sizeof(g->err), "%s",
		         g->curl_err[0] ? g->curl_err : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(g->job.easy, CURLINFO_RESPONSE_CODE, &status);
		r.status = (int)status;
		r.body = g->body.len ? g->body.p : "";
		r.body_len = g->body.len;
	}
	if (!r.status)
		r.error = g->err;
	g->done(g->arg, &r);
}

/* The options; false when libcurl refuses one. */
static bool setup(CURL *e, struct dbk_curl_get *g, const char *url, const struct dbk_curl_tls *tls,
                  bool once)
{
	bool ok = true;

#define SET(opt, val) ok = ok && curl_easy_setopt(e, opt, val) == CURLE_OK
	SET(CURLOPT_URL, url);
	/* The URL's scheme only (no redirect is followed either). */
	SET(CURLOPT_PROTOCOLS_STR, strncmp(url, "https:", 6) == 0 ? "https" : "http");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_USERAGENT, "dbucket-spoa");
	SET(CURLOPT_ERRORBUFFER, g->curl_err);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, g);
	SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)g->max_body);
	SET(CURLOPT_FORBID_REUSE, once ? 1L : 0L);
	SET(CURLOPT_TCP_NODELAY, 1L);
	/* CAs from one file only (Debian's build adds the directory
	 * /etc/ssl/certs, which holds the same ones): libcurl keeps the store
	 * made of a file for the next connections, not one with a directory,
	 * and making it from the system's bundle takes tens of ms of the
	 * loop each time. */
	SET(CURLOPT_CAPATH, NULL);
	if (tls && tls->ca_file)
		SET(CURLOPT_CAINFO, tls->ca_file);
	if (tls && tls->cert_file)
		SET(CURLOPT_SSLCERT, tls->cert_file);
	if (tls && tls->key_file)
		SET(CURLOPT_SSLKEY, tls->key_file);
	if (tls && tls->insecure) {
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
	}
#undef SET
	return ok;
}

int dbk_curl_get_init(struct dbk_curl_get *g, struct dbk_curl_ev *m, const char *url,
                      const struct dbk_curl_tls *tls, bool once, size_t max_body,
                      dbk_hc_done_fn done, void *arg, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	g->m = m;
	g->max_body = max_body;
	g->done = done;
	g->arg = arg;
	g->job.done = on_done;
	g->job.arg = g;
	dbk_list_init(&g->job.link);
	if (!(g->job.easy = curl_easy_init())) {
		dbk_errf(err, errlen, "libcurl: out of memory");
		return -1;
	}
	if (!setup(g->job.easy, g, url, tls, once)) {
		dbk_errf(err, errlen, "%s: libcurl refuses the URL or a TLS option", url);
		dbk_curl_get_free(g);
		return -1;
	}
	return 0;
}

bool dbk_curl_get_busy(const struct dbk_curl_get *g) { return g->job.active; }

int dbk_curl_get_start(struct dbk_curl_get *g, long timeout_ms)
{
	dbk_buf_reset(&g->body);
	g->too_large = false;
	g->tls_failed = false;
	g->curl_err[0] = '\0';
	curl_easy_setopt(g->job.easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	return dbk_curl_ev_add(g->m, &g->job, g->err, sizeof(g->err));
}

void dbk_curl_get_free(struct dbk_curl_get *g)
{
	if (g->job.easy) {
		dbk_curl_ev_remove(g->m, &g->job);
		curl_easy_cleanup(g->job.easy);
	}
	dbk_buf_free(&g->body);
	memset(g, 0, sizeof(*g));
}
