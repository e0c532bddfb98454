/* Unit tests of the stub's LoRA adapters (loras.c): --lora-modules's two
 * forms, /v1/load_lora_adapter and /v1/unload_lora_adapter with vLLM's
 * answers, /v1/models's cards, a completion naming an adapter, and
 * vllm:lora_requests_info's label sets and text. */
#include "loras.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prom.h"

static int load(struct dbk_stub_loras *L, const char *body, uint32_t *id, struct dbk_api_error *err)
{
	return dbk_stub_loras_load(L, body, strlen(body), id, err);
}

static int unload(struct dbk_stub_loras *L, const char *body, struct dbk_api_error *err)
{
	char name[300];

	return dbk_stub_loras_unload(L, body, strlen(body), name, sizeof(name), err);
}

static void test_modules(void)
{
	struct dbk_stub_loras L = { 0 };
	char err[512];
	uint32_t id = 0;

	CHECK_EQ_U(dbk_stub_loras_add_module(&L, "sql=/lora/sql", &id, err, sizeof(err)), 0);
	CHECK_EQ_U(id, 1);
	CHECK_EQ_U(dbk_stub_loras_add_module(&L,
	                                     "{\"name\":\"chat\",\"path\":\"/lora/"
	                                     "chat\",\"base_model_name\":\"m\"}",
	                                     &id, err, sizeof(err)),
	           0);
	CHECK_EQ_U(id, 2);
	CHECK(strcmp(dbk_stub_loras_find(&L, "chat")->path, "/lora/chat") == 0);
	CHECK(dbk_stub_loras_add_module(&L, "sql=/x", &id, err, sizeof(err)) < 0);
	CHECK(strstr(err, "already been loaded") != NULL);
	CHECK(dbk_stub_loras_add_module(&L, "noequals", &id, err, sizeof(err)) < 0);
	CHECK(dbk_stub_loras_add_module(&L, "a=b=c", &id, err, sizeof(err)) < 0);
	CHECK(dbk_stub_loras_add_module(&L, "=/p", &id, err, sizeof(err)) < 0);
	CHECK(dbk_stub_loras_add_module(&L, "{\"name\":\"x\"}", &id, err, sizeof(err)) < 0);
	CHECK(dbk_stub_loras_add_module(&L, "{bad json", &id, err, sizeof(err)) < 0);
	dbk_stub_loras_free(&L);
}

static void test_load_unload(void)
{
	struct dbk_stub_loras L = { 0 };
	struct dbk_api_error err;
	uint32_t id = 0, got = 0;

	CHECK_EQ_U(load(&L, "{\"lora_name\":\"a\",\"lora_path\":\"/p/a\"}", &id, &err), 0);
	CHECK_EQ_U(id, 1);
	CHECK_EQ_U(dbk_stub_loras_lookup(&L, "a", &got), 0);
	CHECK_EQ_U(got, 1);
	/* vLLM's checks, word for word. */
	CHECK(load(&L, "{\"lora_name\":\"a\",\"lora_path\":\"/q\"}", &id, &err) < 0);
	CHECK_EQ_U(err.status, 400);
	CHECK(strcmp(err.type, "InvalidUserInput") == 0);
	CHECK(strcmp(err.message, "The lora adapter 'a' has already been loaded.") == 0);
	CHECK(load(&L, "{\"lora_name\":\"\",\"lora_path\":\"/q\"}", &id, &err) < 0);
	CHECK(strcmp(err.message, "Both 'lora_name' and 'lora_path' must be provided.") == 0);
	CHECK(load(&L, "[1]", &id, &err) < 0);
	CHECK_EQ_U(err.status, 400);
	CHECK(load(&L, "{\"lora_name\":3,\"lora_path\":\"/q\"}", &id, &err) < 0);
	CHECK(unload(&L, "{\"lora_name\":\"zz\"}", &err) < 0);
	CHECK_EQ_U(err.status, 404);
	CHECK(strcmp(err.type, "NotFoundError") == 0);
	CHECK(strcmp(err.message, "The lora adapter 'zz' cannot be found.") == 0);
	CHECK(unload(&L, "{}", &err) < 0);
	CHECK(strcmp(err.message, "either 'lora_name' and 'lora_int_id' needs to be provided.") ==
	      0);
	CHECK(unload(&L, "{\"lora_int_id\":1}", &err) < 0);
	CHECK(strcmp(err.message, "The lora adapter 'None' cannot be found.") == 0);
	CHECK_EQ_U(unload(&L, "{\"lora_name\":\"a\"}", &err), 0);
	CHECK(dbk_stub_loras_lookup(&L, "a", &got) < 0);
	/* Its name stays for the metric; a new load gets a new id. */
	CHECK(strcmp(dbk_stub_loras_name(&L, 1), "a") == 0);
	CHECK_EQ_U(load(&L, "{\"lora_name\":\"a\",\"lora_path\":\"/p/a\"}", &id, &err), 0);
	CHECK_EQ_U(id, 2);
	dbk_stub_loras_free(&L);
}

/* /v1/models: the base card, then the served adapters' (parent: the
 * base, root: the path, max_model_len null); an unloaded one is gone. */
static void test_models_json(void)
{
	struct dbk_stub_loras L = { 0 };
	struct dbk_api_error err;
	struct dbk_buf b = { 0 };
	uint32_t id;
	cJSON *j;
	const cJSON *d, *x;

	CHECK_EQ_U(load(&L, "{\"lora_name\":\"a\",\"lora_path\":\"/p/a\"}", &id, &err), 0);
	CHECK_EQ_U(load(&L, "{\"lora_name\":\"b\",\"lora_path\":\"/p/b\"}", &id, &err), 0);
	CHECK_EQ_U(load(&L, "{\"lora_name\":\"c\",\"lora_path\":\"/p/c\"}", &id, &err), 0);
	CHECK_EQ_U(unload(&L, "{\"lora_name\":\"b\"}", &err), 0);
	dbk_stub_loras_models_json(&L, &b, "base", 4096, 7, "modelperm-1");
	j = cJSON_ParseWithLength(b.p, b.len);
	CHECK(j != NULL);
	d = cJSON_GetObjectItemCaseSensitive(j, "data");
	CHECK_EQ_U(cJSON_GetArraySize(d), 3);
	x = cJSON_GetArrayItem(d, 0);
	CHECK(strcmp(cJSON_GetObjectItem(x, "id")->valuestring, "base") == 0);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(x, "parent")));
	CHECK_EQ_U(cJSON_GetObjectItem(x, "max_model_len")->valueint, 4096);
	x = cJSON_GetArrayItem(d, 2);
	CHECK(strcmp(cJSON_GetObjectItem(x, "id")->valuestring, "c") == 0);
	CHECK(strcmp(cJSON_GetObjectItem(x, "parent")->valuestring, "base") == 0);
	CHECK(strcmp(cJSON_GetObjectItem(x, "root")->valuestring, "/p/c") == 0);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(x, "max_model_len")));
	CHECK(strcmp(cJSON_GetObjectItem(x, "object")->valuestring, "model") == 0);
	cJSON_Delete(j);
	dbk_buf_free(&b);
	dbk_stub_loras_free(&L);
}

/* A completion whose model is an adapter gets its id and name; another
 * name is vLLM's 404. */
static void test_request_model(void)
{
	struct dbk_stub_loras L = { 0 };
	struct dbk_api_error err;
	struct dbk_api_request r;
	const struct dbk_api_config cfg = { .model = "base",
		                            .max_model_len = 1000,
		                            .find_adapter = dbk_stub_loras_lookup,
		                            .adapters = &L };
	static const char a[] = "{\"model\":\"sql\",\"prompt\":\"hi\"}";
	static const char z[] = "{\"model\":\"zz\",\"prompt\":\"hi\"}";
	static const char base[] = "{\"model\":\"base\",\"prompt\":\"hi\"}";
	uint32_t id;

	CHECK_EQ_U(load(&L, "{\"lora_name\":\"sql\",\"lora_path\":\"/p\"}", &id, &err), 0);
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_COMPLETION, a, sizeof(a) - 1, &cfg, &r, &err), 0);
	CHECK_EQ_U(r.lora, id);
	CHECK(strcmp(r.model, "sql") == 0);
	dbk_api_request_free(&r);
	CHECK_EQ_U(dbk_api_parse_request(DBK_API_COMPLETION, base, sizeof(base) - 1, &cfg, &r,
	                                 &err),
	           0);
	CHECK_EQ_U(r.lora, 0);
	dbk_api_request_free(&r);
	CHECK(dbk_api_parse_request(DBK_API_COMPLETION, z, sizeof(z) - 1, &cfg, &r, &err) < 0);
	dbk_api_request_free(&r);
	CHECK_EQ_U(err.status, 404);
	CHECK(strcmp(err.message, "The model `zz` does not exist.") == 0);
	dbk_stub_loras_free(&L);
}

/* Label sets: a set seen again gets the new time and keeps its place;
 * the text is loggers.py's through prometheus_client (labels sorted,
 * no engine or model_name, the time as Go prints it). */
static void test_metric(void)
{
	static const char want[] =
	        "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
	        "# TYPE vllm:lora_requests_info gauge\n"
	        "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"a,b\","
	        "waiting_lora_adapters=\"c\"} 1.7e+09\n"
	        "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
	        "waiting_lora_adapters=\"\"} 1.7000000015e+09\n";
	struct dbk_stub_loras L = { 0 };
	struct dbk_prom_outcomes o;
	struct dbk_prom_stats m = { .model = "base", .out = &o, .lora = true, .max_lora = 2 };
	struct dbk_buf b = { 0 };
	const char *at;

	dbk_prom_outcomes_init(&o, 1000);
	CHECK_EQ_U(dbk_stub_loras_record(&L, "a,b", "c", 1.6e9), 0);
	CHECK_EQ_U(dbk_stub_loras_record(&L, "", "", 1700000001.0), 0);
	CHECK_EQ_U(dbk_stub_loras_record(&L, "a,b", "c", 1.7e9), 0);
	CHECK_EQ_U(dbk_stub_loras_record(&L, "", "", 1700000001.5), 0);
	CHECK_EQ_U(L.n_series, 2);
	m.lora_sets = L.series;
	m.n_lora_sets = L.n_series;
	m.lora_loads = 3;
	dbk_prom_render(&b, &m);
	dbk_buf_add(&b, "", 1);
	at = strstr(b.p, "# HELP vllm:lora_requests_info");
	CHECK(at && strncmp(at, want, sizeof(want) - 1) == 0);
	CHECK(strstr(b.p, "\nvllm_stub_lora_loads_total 3.0\n") != NULL);
	/* Before vllm:cache_config_info, as loggers.py registers them. */
	CHECK(at && strstr(b.p, "# HELP vllm:cache_config_info") > at);
	dbk_buf_free(&b);
	/* The oldest set makes way past the bound. */
	for (unsigned i = 0; i < DBK_STUB_LORA_SERIES_MAX; i++) {
		char w[16];

		snprintf(w, sizeof(w), "w%u", i);
		CHECK_EQ_U(dbk_stub_loras_record(&L, "x", w, 1.8e9 + i), 0);
	}
	CHECK_EQ_U(L.n_series, DBK_STUB_LORA_SERIES_MAX);
	CHECK(strcmp(L.series[0].waiting, "w0") == 0);
	dbk_stub_loras_free(&L);
}

int main(void)
{
	RUN(test_modules);
	RUN(test_load_unload);
	RUN(test_models_json);
	RUN(test_request_model);
	RUN(test_metric);
	return CHECK_DONE();
}
