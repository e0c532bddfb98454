/* The stub's command line: what vLLM's `vllm serve` flags the stub
 * models, their defaults (the GPU profile's where vLLM derives them from
 * the hardware) and their bounds. Kept apart from the server so the
 * flags can be checked, and --help printed, without a socket. */
#ifndef DBK_STUB_OPTS_H
#define DBK_STUB_OPTS_H

#include <stdbool.h>

#include "model/engine.h"

/* For the agent's tests: /metrics never answers, or answers with what is
 * not Prometheus text. */
enum dbk_stub_metrics_fault {
	DBK_STUB_FAULT_NONE,
	DBK_STUB_FAULT_HANG,
	DBK_STUB_FAULT_GARBAGE,
};

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
	/* --completion-fault: completions answer this status (0: none), a
	 * share ratio of them. */
	int completion_fault;
	double completion_fault_ratio;
};

/* "none" or STATUS[:RATIO] (500-599; ratio in (0, 1], 1 if not given).
 * Returns 0, or -1 when spec is neither. */
int dbk_stub_parse_fault(const char *spec, int *status, double *ratio);

/* Parses argv into o. Returns 0 to run, 1 to exit 0 (--help and
 * --version, printed on stdout), 2 for bad usage (a message and a hint
 * printed on stderr). */
int dbk_stub_parse_args(int argc, char **argv, struct dbk_stub_opts *o);

#endif
