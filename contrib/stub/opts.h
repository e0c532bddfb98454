/* The stub's command line: what vLLM's `vllm serve` flags the stub
 * models, their defaults (the GPU profile's where vLLM derives them from
 * the hardware) and their bounds. Kept apart from the server so the
 * flags can be checked, and --help printed, without a socket. */
#ifndef DBK_STUB_OPTS_H
#define DBK_STUB_OPTS_H

#include <stdbool.h>

#include "model/engine.h"

/* For the agent's tests: /metrics never answers, answers with what is
 * not Prometheus text, or with a hostile body after the real one (issue
 * 29): 4 MB of families nobody reads, or 900 KB of label sets of one
 * the agent reads; or a KV use of 85 (a 0-100 scale, not vLLM's 0..1). */
enum dbk_stub_metrics_fault {
	DBK_STUB_FAULT_NONE,
	DBK_STUB_FAULT_HANG,
	DBK_STUB_FAULT_GARBAGE,
	DBK_STUB_FAULT_HUGE,
	DBK_STUB_FAULT_MANY_SERIES,
	DBK_STUB_FAULT_IMPLAUSIBLE,
};
/* The hostile bodies' size: huge's is under the 4 MiB the agent read
 * whole before issue 29, many-series's under the 1 MiB it reads now
 * (~14k label sets, past its cap of series). */
#define DBK_STUB_HUGE_BYTES 4000000u
#define DBK_STUB_MANY_SERIES_BYTES 900000u

/* --lora-modules values the stub takes (vLLM has no bound). */
#define DBK_STUB_MAX_LORA_MODULES 64u

struct dbk_stub_opts {
	const char *host;
	unsigned port;
	const char *name;
	const char *model;
	/* The engine as configured: defaults resolved, checked. */
	struct dbk_engine_config engine;
	double time_scale;
	double keep_alive_s;
	bool verbose;
	enum dbk_stub_metrics_fault metrics_fault;
	bool sglang_names; /* --engine-names sglang: /metrics as SGLang's */
	/* --completion-fault: completions answer this status (0: none), a
	 * share ratio of them. */
	int completion_fault;
	double completion_fault_ratio;
	/* vLLM's --enable-lora (the engine's max_loras and the rest are in
	 * engine); the adapters served from the start (--lora-modules,
	 * argv's own strings, checked when they are added); whether
	 * /v1/load_lora_adapter and /v1/unload_lora_adapter exist
	 * (--allow-runtime-lora-updating, or vLLM's switch, the
	 * environment's VLLM_ALLOW_RUNTIME_LORA_UPDATING=1|true). */
	bool enable_lora;
	const char *lora_modules[DBK_STUB_MAX_LORA_MODULES];
	unsigned n_lora_modules;
	bool lora_runtime;
};

/* "none" or STATUS[:RATIO] (500-599; ratio in (0, 1], 1 if not given).
 * Returns 0, or -1 when spec is neither. */
int dbk_stub_parse_fault(const char *spec, int *status, double *ratio);

/* Parses argv into o. Returns 0 to run, 1 to exit 0 (--help and
 * --version, printed on stdout), 2 for bad usage (a message and a hint
 * printed on stderr). */
int dbk_stub_parse_args(int argc, char **argv, struct dbk_stub_opts *o);

#endif
