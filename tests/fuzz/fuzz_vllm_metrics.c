/* Fuzzes vLLM's /metrics and /v1/models parsers (agent/vllm_metrics.c).
 *
 * Input: one parameter byte b, then the body.
 *   b & 1: the body is a /v1/models list, else a /metrics text
 *   b & 2: /metrics read with --engine sglang's names and one --metric,
 *          else with the default (vLLM's and SGLang's)
 *
 * Checked (vllm_metrics.h):
 * - /metrics: 0 or -1; on -1 nothing is reported (have 0) and the reason
 *   names a line; on 0 every reported value is finite, the KV use lies in
 *   the range of the samples (here: checked not negative when the inputs
 *   are not), the latest lora_requests_info kept is within its bounds
 *   (max_lora a whole 1..DBK_VM_MAX_LORA, lists of as many non-empty
 *   names as counted, at most DBK_VM_LORA_MAX), and a body that parsed still parses with one more
 *   well-formed sample line after it, reporting that sample's family
 *   (num_preemptions_total) one higher (or 1, where the count read was
 *   SGLang's, which vLLM's outranks; or still bad, where the family's
 *   samples summed to an infinity), and fails with one malformed
 *   line after it (-2: over the series cap); request counts, the KV use
 *   and KV pool, the step counters (prompt and generated tokens,
 *   steps) and the inter-token totals that pass
 *   dbk_vllm_metrics_implausible are in range;
 * - /v1/models: 0 with a length of 0 or at least 1, or -1 with a length
 *   and a count of 0; on 0 at most DBK_VM_MAX_MODELS models, each id
 *   non-empty and NUL-terminated within DBK_VM_MODEL_ID_MAX, each parent
 *   too (or empty), and the same body parses to the same list again. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "vllm_metrics.h"

#define MAX_BODY 65536

static bool finite_fields(const struct dbk_vllm_metrics *m)
{
	return isfinite(m->running) && isfinite(m->waiting) && isfinite(m->kv_usage) &&
	       isfinite(m->pc_queries) && isfinite(m->pc_hits) && isfinite(m->preemptions) &&
	       isfinite(m->ttft_sum) && isfinite(m->ttft_count) && isfinite(m->gpu_blocks) &&
	       isfinite(m->block_size) && isfinite(m->pc_hit_rate) && isfinite(m->prompt_tokens) &&
	       isfinite(m->gen_tokens) && isfinite(m->steps) && isfinite(m->itl_sum) &&
	       isfinite(m->itl_count);
}

/* A list of names as kept: NUL-terminated within its buffer, as many
 * non-empty names as counted, at most DBK_VM_LORA_MAX. */
static void lora_list(const char *list, unsigned count)
{
	size_t len, total = 0;
	unsigned i = 0;
	const char *p;

	FUZZ_CHECK(strnlen(list, DBK_VM_LORA_TEXT) < DBK_VM_LORA_TEXT);
	FUZZ_CHECK(count <= DBK_VM_LORA_MAX);
	for (; (p = dbk_vm_lora_name(list, i, &len)) != NULL; i++) {
		FUZZ_CHECK(len > 0 && i < DBK_VM_LORA_MAX);
		FUZZ_CHECK(dbk_vm_adapter_key(p, len) != 0);
		total += len + 1;
	}
	FUZZ_CHECK(i == count);
	FUZZ_CHECK(count == 0 || total == strlen(list) + 1);
}

static void lora_checks(const struct dbk_vm_lora *l)
{
	FUZZ_CHECK(l->max_lora >= 1 && l->max_lora <= DBK_VM_MAX_LORA &&
	           l->max_lora == floor(l->max_lora));
	FUZZ_CHECK(isfinite(l->set_at));
	lora_list(l->running, l->nrunning);
	lora_list(l->waiting, l->nwaiting);
}

static void metrics(const struct dbk_vm_names *names, const char *s, size_t n)
{
	static char buf[MAX_BODY + 128];
	static const char more[] = "\nvllm:num_preemptions_total{engine=\"9\"} 1\n";
	static const char junk[] = "\nvllm:num_requests_running{x=\"1\"} 1 2 3\n";
	struct dbk_vllm_metrics m, m2;
	char err[128];
	int rc = dbk_vm_parse_metrics(names, s, n, &m, err, sizeof(err));

	FUZZ_CHECK(rc == 0 || rc == -1 || rc == -2);
	if (rc < 0) {
		FUZZ_CHECK(m.have == 0 && m.samples == 0);
		FUZZ_CHECK(strncmp(err, "line ", 5) == 0);
		return;
	}
	FUZZ_CHECK(finite_fields(&m));
	FUZZ_CHECK((m.have & ~((unsigned)DBK_VM_ITL_COUNT * 2 - 1)) == 0);
	char why[96];
	if (!dbk_vllm_metrics_implausible(&m, why, sizeof(why))) {
		if (m.have & DBK_VM_RUNNING)
			FUZZ_CHECK(m.running >= 0 && m.running <= DBK_VM_MAX_REQUESTS);
		if (m.have & DBK_VM_WAITING)
			FUZZ_CHECK(m.waiting >= 0 && m.waiting <= DBK_VM_MAX_REQUESTS);
		if (m.have & DBK_VM_KV_USAGE)
			FUZZ_CHECK(m.kv_usage >= 0 && m.kv_usage <= 1);
		/* SGLang's pool is a sample's value, judged here, not by the
		 * parser. */
		if (m.have & DBK_VM_GPU_BLOCKS)
			FUZZ_CHECK(m.gpu_blocks >= 1 && m.gpu_blocks <= DBK_VM_MAX_BLOCKS);
		/* The step budget's counters (predict_budget.c). */
		if (m.have & DBK_VM_STEPS)
			FUZZ_CHECK(m.steps >= 0 && m.steps <= DBK_VM_MAX_COUNTER);
		if (m.have & DBK_VM_PROMPT_TOKENS)
			FUZZ_CHECK(m.prompt_tokens >= 0 && m.prompt_tokens <= DBK_VM_MAX_COUNTER);
		if (m.have & DBK_VM_GEN_TOKENS)
			FUZZ_CHECK(m.gen_tokens >= 0 && m.gen_tokens <= DBK_VM_MAX_COUNTER);
		/* The TPOT measured (predict_gaps.c). */
		if (m.have & DBK_VM_ITL_SUM)
			FUZZ_CHECK(m.itl_sum >= 0 && m.itl_sum <= DBK_VM_MAX_COUNTER);
		if (m.have & DBK_VM_ITL_COUNT)
			FUZZ_CHECK(m.itl_count >= 0 && m.itl_count <= DBK_VM_MAX_COUNTER);
		FUZZ_CHECK(m.bad == 0);
	}
	if (m.have & DBK_VM_BLOCK_SIZE)
		FUZZ_CHECK(m.block_size > 0);
	if (m.have & DBK_VM_LORA)
		lora_checks(&m.lora);
	/* One more sample of a family read may pass the series cap; the
	 * appended lines are judged by the default names. */
	if (m.samples >= DBK_VM_MAX_SERIES || names != dbk_vm_names_default())
		return;

	memcpy(buf, s, n);
	memcpy(buf + n, more, sizeof(more) - 1);
	FUZZ_CHECK(dbk_vllm_parse_metrics(buf, n + sizeof(more) - 1, &m2, err, sizeof(err)) == 0);
	FUZZ_CHECK(m2.samples == m.samples + 1);
	/* Where m's samples of the family summed past a double (each finite,
	 * the family bad), one more cannot bring it back. */
	FUZZ_CHECK((m2.have & DBK_VM_PREEMPTIONS) || (m.bad & DBK_VM_PREEMPTIONS));
	/* vLLM's family outranks SGLang's: where m's count was SGLang's, the
	 * appended vLLM sample is all m2 reports. */
	if ((m.have & DBK_VM_PREEMPTIONS) && fabs(m.preemptions) < 1e15)
		FUZZ_CHECK(m2.preemptions == m.preemptions + 1 || m2.preemptions == 1);

	memcpy(buf + n, junk, sizeof(junk) - 1);
	FUZZ_CHECK(dbk_vllm_parse_metrics(buf, n + sizeof(junk) - 1, &m2, err, sizeof(err)) == -1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > MAX_BODY)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;

	if (data[0] & 1) {
		static struct dbk_vm_models ms, again;
		char err[128];
		int rc = dbk_vllm_parse_models(s, n, &ms, err, sizeof(err));
		long len = ms.max_len;

		FUZZ_CHECK((rc == 0 && (len == 0 || len >= 1)) ||
		           (rc == -1 && len == 0 && ms.n == 0));
		FUZZ_CHECK(ms.n <= DBK_VM_MAX_MODELS);
		for (unsigned i = 0; i < ms.n; i++) {
			size_t il = strnlen(ms.m[i].id, sizeof(ms.m[i].id));
			FUZZ_CHECK(il >= 1 && il <= DBK_VM_MODEL_ID_MAX);
			FUZZ_CHECK(strnlen(ms.m[i].parent, sizeof(ms.m[i].parent)) <=
			           DBK_VM_MODEL_ID_MAX);
		}
		if (rc == 0) {
			FUZZ_CHECK(dbk_vllm_parse_models(s, n, &again, err, sizeof(err)) == 0);
			FUZZ_CHECK(again.n == ms.n && again.max_len == ms.max_len);
			for (unsigned i = 0; i < ms.n; i++)
				FUZZ_CHECK(strcmp(again.m[i].id, ms.m[i].id) == 0 &&
				           strcmp(again.m[i].parent, ms.m[i].parent) == 0);
		}
	} else if (data[0] & 2) {
		static struct dbk_vm_names sg;
		char err[160];

		if (!sg.n) {
			dbk_vm_names_init(&sg, DBK_ENGINE_SGLANG);
			FUZZ_CHECK(dbk_vm_names_override(&sg, "waiting=q", err, sizeof(err)) == 0);
		}
		metrics(&sg, s, n);
	} else {
		metrics(dbk_vm_names_default(), s, n);
	}
	return 0;
}
