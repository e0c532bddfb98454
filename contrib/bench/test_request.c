/* Unit tests of the target URL, the loopback rule and the requests sent
 * (request.c). */
#include "request.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "check.h"
#include "lib/net.h"

static void test_url(void)
{
	static const struct {
		const char *url;
		enum dbk_endpoint endpoint;
		const char *host, *port, *authority, *path;
	} good[] = {
		{ "http://127.0.0.1:8000", DBK_EP_COMPLETIONS, "127.0.0.1", "8000",
		  "127.0.0.1:8000", "/v1/completions" },
		{ "http://[::1]:9/v1/", DBK_EP_CHAT, "::1", "9", "[::1]:9",
		  "/v1/chat/completions" },
		{ "http://localhost/proxy/", DBK_EP_COMPLETIONS, "localhost", "80", "localhost",
		  "/proxy/v1/completions" },
	};
	struct dbk_url u;
	char err[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int failed = dbk_check_cur_failed;

		CHECK_EQ_U(dbk_request_url_parse(good[i].url, good[i].endpoint, &u, err,
		                                 sizeof(err)),
		           0);
		CHECK(strcmp(u.host, good[i].host) == 0);
		CHECK(strcmp(u.port, good[i].port) == 0);
		CHECK(strcmp(u.authority, good[i].authority) == 0);
		CHECK(strcmp(u.path, good[i].path) == 0);
		if (dbk_check_cur_failed != failed)
			fprintf(stderr, "    url: %s\n", good[i].url);
	}

	CHECK(dbk_request_url_parse("https://127.0.0.1", 0, &u, err, sizeof(err)) &&
	      strstr(err, "http://"));
	CHECK(dbk_request_url_parse("127.0.0.1:8000", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://:80", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://h:0", 0, &u, err, sizeof(err)) && strstr(err, "port"));
	CHECK(dbk_request_url_parse("http://h:65536", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://h:", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://h:80x", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://[::1", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://h/a b", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://h/a?x=1", 0, &u, err, sizeof(err)));
	CHECK(dbk_request_url_parse("http://user@h/", 0, &u, err, sizeof(err)));
}

/* a, a numeric IPv4 or IPv6 address, is loopback. */
static bool loopback(const char *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	return dbk_net_addr_is_local((struct sockaddr *)&ss);
}

static void test_loopback(void)
{
	CHECK(loopback("127.0.0.1"));
	CHECK(loopback("127.1.2.3"));
	CHECK(!loopback("10.0.0.1"));
	CHECK(!loopback("0.0.0.0"));
	CHECK(!loopback("128.0.0.1"));
	CHECK(loopback("::1"));
	CHECK(loopback("::ffff:127.0.0.1"));
	CHECK(!loopback("::ffff:10.0.0.1"));
	CHECK(!loopback("::"));
	CHECK(!loopback("2001:db8::1"));
}

static const char *body_of(const struct dbk_buf *req, size_t *clen)
{
	const char *p = strstr(req->p, "\r\n\r\n"), *cl;

	cl = strstr(req->p, "Content-Length: ");
	*clen = cl ? strtoul(cl + 16, NULL, 10) : 0;
	return p ? p + 4 : NULL;
}

static void test_request_completions(void)
{
	struct dbk_buf req = { 0 }, scratch = { 0 };
	struct dbk_req_spec s;
	struct dbk_url u;
	char err[128];
	const char *body;
	size_t clen;
	cJSON *j;
	const cJSON *so;

	CHECK_EQ_U(dbk_request_url_parse("http://127.0.0.1:8000/v1", DBK_EP_COMPLETIONS, &u, err,
	                                 sizeof(err)),
	           0);
	memset(&s, 0, sizeof(s));
	s.ep = DBK_EP_COMPLETIONS;
	s.model_json = "\"stub-model\"";
	s.input = 6758;
	s.output = 500;
	dbk_request_build(&req, &scratch, &u, &s, NULL);
	CHECK(!req.oom);
	CHECK(strncmp(req.p,
	              "POST /v1/completions HTTP/1.1\r\n"
	              "Host: 127.0.0.1:8000\r\n",
	              53) == 0);
	CHECK(strstr(req.p, "\r\nConnection: close\r\n") != NULL);
	body = body_of(&req, &clen);
	CHECK(body && clen == strlen(body));
	j = body ? cJSON_Parse(body) : NULL;
	CHECK(j != NULL);
	CHECK(strcmp(cJSON_GetObjectItem(j, "model")->valuestring, "stub-model") == 0);
	CHECK_EQ_U(strlen(cJSON_GetObjectItem(j, "prompt")->valuestring), 6758 * 4);
	CHECK_NEAR(cJSON_GetObjectItem(j, "max_tokens")->valuedouble, 500, 0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "ignore_eos")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "stream")));
	so = cJSON_GetObjectItem(j, "stream_options");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(so, "include_usage")));
	CHECK(cJSON_GetObjectItem(j, "messages") == NULL);
	/* No session: neither the user field nor the header. */
	CHECK(cJSON_GetObjectItem(j, "user") == NULL);
	CHECK(strstr(req.p, "X-Session-Id") == NULL);
	cJSON_Delete(j);
	/* A conversation's key, as a client names it. */
	s.has_session = true;
	s.session = 46;
	dbk_request_build(&req, &scratch, &u, &s, NULL);
	CHECK(strstr(req.p, "\r\nX-Session-Id: conv-46\r\n") != NULL);
	CHECK(strstr(req.p, "X-Request-Class") == NULL);
	dbk_request_build(&req, &scratch, &u, &s, "sheddable");
	CHECK(strstr(req.p, "\r\nX-Request-Class: sheddable\r\n") != NULL);
	body = body_of(&req, &clen);
	j = body ? cJSON_Parse(body) : NULL;
	CHECK(j && strcmp(cJSON_GetObjectItem(j, "user")->valuestring, "conv-46") == 0);
	/* Within the first 15 KB the agent samples. */
	CHECK(body && strstr(body, "\"user\"") < body + 200);
	cJSON_Delete(j);
	dbk_buf_free(&req);
	dbk_buf_free(&scratch);
}

static void test_request_chat(void)
{
	struct dbk_buf req = { 0 }, scratch = { 0 };
	struct dbk_req_spec s;
	struct dbk_url u;
	char err[128], *model;
	const char *body;
	const cJSON *m;
	size_t clen;
	cJSON *j;

	CHECK_EQ_U(dbk_request_url_parse("http://[::1]:1", DBK_EP_CHAT, &u, err, sizeof(err)), 0);
	model = dbk_request_json_quote("org/m \"q\" \\ \x01");
	CHECK(model && strcmp(model, "\"org/m \\\"q\\\" \\\\ \\u0001\"") == 0);
	memset(&s, 0, sizeof(s));
	s.ep = DBK_EP_CHAT;
	s.model_json = model;
	s.input = 1;
	s.output = 1;
	dbk_request_build(&req, &scratch, &u, &s, NULL);
	CHECK(strncmp(req.p,
	              "POST /v1/chat/completions HTTP/1.1\r\n"
	              "Host: [::1]:1\r\n",
	              51) == 0);
	body = body_of(&req, &clen);
	CHECK(body && clen == strlen(body));
	j = body ? cJSON_Parse(body) : NULL;
	CHECK(j != NULL);
	CHECK(strcmp(cJSON_GetObjectItem(j, "model")->valuestring, "org/m \"q\" \\ \x01") == 0);
	m = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "messages"), 0);
	CHECK(strcmp(cJSON_GetObjectItem(m, "role")->valuestring, "user") == 0);
	CHECK_EQ_U(strlen(cJSON_GetObjectItem(m, "content")->valuestring), 4);
	CHECK(cJSON_GetObjectItem(j, "prompt") == NULL);
	CHECK_NEAR(cJSON_GetObjectItem(j, "max_tokens")->valuedouble, 1, 0);
	cJSON_Delete(j);
	free(model);
	dbk_buf_free(&req);
	dbk_buf_free(&scratch);
}

int main(void)
{
	RUN(test_url);
	RUN(test_loopback);
	RUN(test_request_completions);
	RUN(test_request_chat);
	return CHECK_DONE();
}
