/* Request sources for dbucket-bench: the Mooncake JSONL trace, the Azure
 * LLM inference CSV trace and synthetic mixes, all reduced to one list of
 * (arrival time, prompt tokens, output tokens). Pure: parsers work on
 * bytes already in memory, the generator on an explicit seed. */
#ifndef DBK_BENCH_TRACE_H
#define DBK_BENCH_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 4 Mi tokens is a 16 MiB prompt: far above any model's context, low
 * enough that a typo in a trace cannot make us allocate gigabytes. */
#define DBK_TRACE_MAX_TOKENS (1u << 22)
/* Mooncake hash ids name 512-token prefix blocks. */
#define DBK_TRACE_BLOCK_TOKENS 512u

enum dbk_trace_format {
	DBK_TRACE_UNKNOWN = 0,
	DBK_TRACE_MOONCAKE,   /* JSONL: timestamp (ms), input_length, ... */
	DBK_TRACE_AZURE,      /* CSV: TIMESTAMP, ContextTokens, ... */
};

struct dbk_trace_req {
	double t;             /* arrival, seconds of trace time */
	uint32_t input;       /* prompt tokens, >= 1 */
	uint32_t output;      /* output tokens (max_tokens), >= 1 */
	uint32_t hash_off;    /* first of this request's ids in trace.hash */
	uint32_t n_hash;      /* 0 when the source has no prefix ids */
	uint32_t line;        /* 1-based source line, 0 for synthetic */
	/* The conversation it belongs to, as a client would name it: see
	 * dbk_trace_sessions. */
	uint64_t session;
	bool has_session;
};

struct dbk_trace {
	struct dbk_trace_req *req;
	size_t n, cap;
	uint64_t *hash;
	size_t n_hash, cap_hash;
	/* Rows with 0 prompt or output tokens, sent as 1 (a server refuses
	 * max_tokens 0, and such rows would otherwise sink a whole trace). */
	size_t n_raised;
};

/* By extension (.jsonl/.json, .csv), else by the first non-blank byte. */
enum dbk_trace_format dbk_trace_detect(const char *path, const char *data,
                                       size_t n);
const char *dbk_trace_format_name(enum dbk_trace_format f);

/* Appends every row of data to out, arrivals made relative to the
 * earliest row and sorted (stable). 0, or -1 with "line N: ..." in err. */
int dbk_trace_parse(enum dbk_trace_format f, const char *data, size_t n,
                    struct dbk_trace *out, char *err, size_t errn);
void dbk_trace_free(struct dbk_trace *t);

/* Session keys from the prefix ids (dbk_trace_parse calls it): the
 * first id past the prefix every request of the trace shares. In the
 * Mooncake conversation trace all 12,031 requests open with id 0 (one
 * 512-token block: a shared system prompt, not a conversation), and the
 * requests that share their second id form conversations (85% of
 * consecutive ones extend the previous one's blocks), so the session is
 * hash_ids[1]. A request with nothing past the shared prefix, or
 * without ids (Azure, synthetic), has no session. */
void dbk_trace_sessions(struct dbk_trace *t);

/* Seconds since 1970-01-01 of a UTC civil time "YYYY-MM-DD HH:MM:SS[.f]"
 * ('T' also accepted as separator); false if malformed. Split in whole
 * seconds and fraction so that differences keep sub-microsecond precision. */
bool dbk_trace_parse_wallclock(const char *s, size_t n, int64_t *sec,
                               double *frac);

/* ---- Synthetic mixes. ---- */

#define DBK_SYNTH_MAX_CLASSES 16

struct dbk_synth_class {
	char name[32];
	double weight;
	uint32_t in_lo, in_hi, out_lo, out_hi;
};

struct dbk_synth {
	struct dbk_synth_class c[DBK_SYNTH_MAX_CLASSES];
	size_t n;
};

/* Output length when a class gives none: vLLM's random dataset default. */
#define DBK_SYNTH_DEFAULT_OUTPUT 128u

/* "NAME=WEIGHT:IN[-IN_MAX][:OUT[-OUT_MAX]],..." e.g.
 * "short=0.9:300-2000,long=0.1:33000-90000:200-400". */
int dbk_synth_parse(const char *spec, struct dbk_synth *out, char *err,
                    size_t errn);

/* Poisson arrivals at rate per second (infinite: all at t = 0), first at
 * t = 0, classes drawn by weight, lengths uniform in their ranges. Stops
 * after max_n requests and/or before max_t seconds (0 = no bound; at
 * least one bound must be given). */
int dbk_synth_generate(const struct dbk_synth *s, double rate, size_t max_n,
                       double max_t, uint64_t seed, struct dbk_trace *out,
                       char *err, size_t errn);

/* ---- Selection. ---- */

struct dbk_select {
	double start_s;        /* trace seconds skipped at the start */
	double duration_s;     /* <= 0: to the end */
	size_t max_requests;   /* 0: all */
	uint32_t max_model_len;/* 0: no limit */
	bool skip_overlong;    /* else clip */
};

struct dbk_select_stats {
	size_t skipped, clipped;
};

/* Makes prompt + output fit max_len (>= 2), as vLLM requires: the output
 * is capped at max_len - 1 first, then the prompt shortened to fit, so a
 * clipped request keeps its decode length whenever it can. Returns true
 * if anything changed. */
bool dbk_trace_clip(uint32_t *input, uint32_t *output, uint32_t max_len);

/* Keeps, in order, the requests in [start, start + duration) whose
 * lengths fit (or clips them), at most max_requests, with arrivals
 * re-based on start. */
void dbk_trace_select(struct dbk_trace *t, const struct dbk_select *sel,
                      struct dbk_select_stats *st);

#endif
