/* The words of the generated files that several of them share
 * (render_parts.h): HAProxy's HOST:PORT, wrapped word lists, and the
 * launcher's canonical command line for their comments. */
#include "render_parts.h"

#include <string.h>

void dbk_render_haproxy_addr(FILE *out, const char *host, long port)
{
	if (strchr(host, ':') && host[0] != '[')
		fprintf(out, "[%s]:%ld", host, port);
	else
		fprintf(out, "%s:%ld", host, port);
}

void dbk_render_word(struct dbk_render_wrap *w, const char *s)
{
	size_t n = strlen(s);

	if (!w->fresh) {
		if (w->col + 1 + n > 76) {
			fprintf(w->out, "\n%s", w->cont);
			w->col = strlen(w->cont);
		} else {
			fputc(' ', w->out);
			w->col++;
		}
	}
	w->fresh = false;
	fputs(s, w->out);
	w->col += n;
}

void dbk_render_pair(struct dbk_render_wrap *w, const char *flag, const char *value)
{
	char buf[DBK_RENDER_PATH + 64];

	snprintf(buf, sizeof(buf), "%s %s", flag, value);
	dbk_render_word(w, buf);
}

static void pairf(struct dbk_render_wrap *w, const char *flag, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	dbk_render_pair(w, flag, buf);
}

static void cmdline_words(struct dbk_render_wrap *w, const struct dbk_launch_flags *f)
{
	char buf[64];

	dbk_render_word(w, "dbucket");
	dbk_render_pair(w, "--host", f->host[0] ? f->host : "''");
	pairf(w, "--port", f->port);
	/* nargs "+": at least one value each. */
	dbk_render_pair(w, "--server-hosts", f->server_hosts[0]);
	for (unsigned i = 1; i < f->nhosts; i++)
		dbk_render_word(w, f->server_hosts[i]);
	pairf(w, "--server-ports", f->server_ports[0]);
	for (unsigned i = 1; i < f->nports; i++) {
		snprintf(buf, sizeof(buf), "%ld", f->server_ports[i]);
		dbk_render_word(w, buf);
	}
	if (f->dynamic)
		dbk_render_word(w, "--enable-dynamic-bucket");
	pairf(w, "--server-group-threshold", f->threshold);
	pairf(w, "--max-request-tokens", f->max_request_tokens);
	pairf(w, "--max-retries", f->max_retries);
	snprintf(buf, sizeof(buf), "%g", f->retry_delay);
	dbk_render_pair(w, "--retry-delay", buf);
	dbk_render_pair(w, "--policy", f->policy);
	if (f->per_model) {
		dbk_render_pair(w, "--layout", f->layout);
		dbk_render_pair(w, "--server-models", f->server_models[0]);
		for (unsigned i = 1; i < f->nmodels; i++)
			dbk_render_word(w, f->server_models[i]);
	}
	if (f->scrape_interval_ms)
		pairf(w, "--scrape-interval", f->scrape_interval_ms);
	if (f->scrape_timeout_ms)
		pairf(w, "--scrape-timeout", f->scrape_timeout_ms);
}

void dbk_render_cmdline(FILE *out, const struct dbk_launch_flags *f, const char *prefix,
                        const char *cont)
{
	struct dbk_render_wrap w = { out, strlen(prefix), cont, true };

	fputs(prefix, out);
	cmdline_words(&w, f);
	fputc('\n', out);
}
