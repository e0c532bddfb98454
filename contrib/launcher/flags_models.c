/* --layout per-model: which server serves which model (--server-models,
 * one per server, as --server-ports is), the models' backends, and what
 * HAProxy and the agent would refuse of them (flags_parts.h). */
#include "flags_parts.h"

#include <string.h>

#include "pyval.h"
#include "lib/log.h"

#define FAIL(...)                                   \
	do {                                        \
		dbk_errf(err, errlen, __VA_ARGS__); \
		return -1;                          \
	} while (0)

/* The frontends' and backends' names of the rendered haproxy.cfg: a
 * model's backend may be none of them (HAProxy names proxies uniquely). */
static const char *const taken[] = { "llm", "stats", "vllm", "dbucket-agents" };

unsigned dbk_flags_models(const struct dbk_launch_flags *f, const char **models)
{
	unsigned n = 0;

	if (!f->per_model)
		return 0;
	for (unsigned i = 0; i < f->nmodels; i++) {
		unsigned k = 0;
		while (k < n && strcmp(models[k], f->server_models[i]) != 0)
			k++;
		if (k == n && n < DBK_LAUNCH_MAX_MODELS)
			models[n++] = f->server_models[i];
	}
	return n;
}

void dbk_flags_backend_name(const char *model, char *out, size_t outlen)
{
	size_t i = 0;

	for (; model[i] && i + 1 < outlen; i++) {
		char c = model[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':';
		out[i] = ok ? c : '-';
	}
	out[i] = '\0';
}

static bool model_ok(const char *m)
{
	size_t n = strlen(m);

	if (n == 0 || n > DBK_LAUNCH_MODEL_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (m[i] <= ' ' || m[i] > '~' || strchr("#\"'\\", m[i]))
			return false;
	return true;
}

/* Distinct models, each with a backend name of its own and not one the
 * configuration already uses. */
static int check_backends(const char *const *models, unsigned n, char *err, size_t errlen)
{
	char a[DBK_LAUNCH_MODEL_MAX + 1], b[DBK_LAUNCH_MODEL_MAX + 1];

	for (unsigned i = 0; i < n; i++) {
		dbk_flags_backend_name(models[i], a, sizeof(a));
		for (size_t k = 0; k < sizeof(taken) / sizeof(taken[0]); k++)
			if (strcmp(a, taken[k]) == 0)
				FAIL("argument --server-models: model '%s' would be HAProxy "
				     "backend "
				     "'%s', a name the configuration uses for its own",
				     models[i], a);
		for (unsigned j = 0; j < i; j++) {
			dbk_flags_backend_name(models[j], b, sizeof(b));
			if (strcmp(a, b) == 0)
				FAIL("argument --server-models: models '%s' and '%s' would both be "
				     "HAProxy backend '%s' (a backend name is letters, digits, - _ "
				     ". "
				     ":)",
				     models[j], models[i], a);
		}
	}
	return 0;
}

/* Each model's servers: at least two when the dynamic buckets split
 * them, as the agent asks of each pool. */
static int check_dynamic(const struct dbk_launch_flags *f, const char *const *models, unsigned n,
                         char *err, size_t errlen)
{
	for (unsigned m = 0; f->dynamic && m < n; m++) {
		unsigned servers = 0;
		for (unsigned i = 0; i < f->nmodels; i++)
			servers += strcmp(f->server_models[i], models[m]) == 0;
		if (servers < 2)
			FAIL("argument --enable-dynamic-bucket: model '%s' has %u server; with "
			     "--layout per-model each model's backend needs 2",
			     models[m], servers);
	}
	return 0;
}

int dbk_flags_check_models(const struct dbk_launch_flags *f, char *err, size_t errlen)
{
	const char *models[DBK_LAUNCH_MAX_MODELS];
	char r[160];

	if (!f->per_model) {
		if (f->nmodels)
			FAIL("argument --server-models: only with --layout per-model (the shared "
			     "layout reads each server's models from its /v1/models)");
		return 0;
	}
	if (f->nmodels == 0)
		FAIL("argument --layout: per-model needs each server's model: give "
		     "--server-models, "
		     "one per --server-hosts, in order");
	if (f->nmodels != f->nhosts)
		FAIL("argument --server-models: %u model%s for %u servers: one per --server-hosts, "
		     "in order (a server with no model would be in no backend)",
		     f->nmodels, f->nmodels == 1 ? "" : "s", f->nhosts);
	for (unsigned i = 0; i < f->nmodels; i++)
		if (!model_ok(f->server_models[i])) {
			dbk_py_repr(f->server_models[i], r, sizeof(r));
			FAIL("argument --server-models: invalid model %s (1 to %d visible "
			     "characters, none of # \" ' \\)",
			     r, DBK_LAUNCH_MODEL_MAX);
		}
	/* Counted before dbk_flags_models caps the list. */
	unsigned distinct = 0;
	for (unsigned i = 0; i < f->nmodels; i++) {
		unsigned k = 0;
		while (k < i && strcmp(f->server_models[k], f->server_models[i]) != 0)
			k++;
		distinct += k == i;
	}
	if (distinct > DBK_LAUNCH_MAX_MODELS)
		FAIL("argument --server-models: %u models, at most %d (one agent pool each)",
		     distinct, DBK_LAUNCH_MAX_MODELS);
	unsigned n = dbk_flags_models(f, models);
	if (check_backends(models, n, err, errlen) < 0)
		return -1;
	return check_dynamic(f, models, n, err, errlen);
}
