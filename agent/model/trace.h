/* The requests dbucket-bench and dbucket-sim replay: the Mooncake JSONL
 * trace and the Azure LLM inference CSV trace (and dbucket-bench's
 * synthetic mixes, contrib/bench/synth.h), all reduced to one list of
 * (arrival time, prompt tokens, output tokens). Pure: parsers work on
 * bytes already in memory, spreading on an explicit seed. */
#ifndef DBK_MODEL_TRACE_H
#define DBK_MODEL_TRACE_H

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
	DBK_TRACE_MOONCAKE, /* JSONL: timestamp (ms), input_length, ... */
	DBK_TRACE_AZURE,    /* CSV: TIMESTAMP, ContextTokens, ... */
};

struct dbk_trace_req {
	double t;          /* arrival, seconds of trace time */
	uint32_t input;    /* prompt tokens, >= 1 */
	uint32_t output;   /* output tokens (max_tokens), >= 1 */
	uint32_t hash_off; /* first of this request's ids in trace.hash */
	uint32_t n_hash;   /* 0 when the source has no prefix ids */
	uint32_t line;     /* 1-based source line, 0 for synthetic */
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
enum dbk_trace_format dbk_trace_detect(const char *path, const char *data, size_t n);
const char *dbk_trace_format_name(enum dbk_trace_format f);

/* Appends every row of data to out, arrivals made relative to the
 * earliest row and sorted (stable). 0, or -1 with "line N: ..." in err. */
int dbk_trace_parse(enum dbk_trace_format f, const char *data, size_t n, struct dbk_trace *out,
                    char *err, size_t errn);
void dbk_trace_free(struct dbk_trace *t);

/* Appends a zeroed request (for a source that generates them); NULL when
 * out of memory. */
struct dbk_trace_req *dbk_trace_push(struct dbk_trace *t);

/* Session keys from the prefix ids (dbk_trace_parse calls it;
 * trace_sessions.c). The ids of all requests form a tree of prefixes; a
 * node where prompts part ways is a fork, as wide as the distinct ids
 * that follow it. A request's session is its id just past the widest
 * fork on its path (the deepest among equally wide ones): past a system
 * prompt that conversations share, the conversation's first turn, which
 * its later turns repeat. In the Mooncake conversation trace all 12,031
 * requests open with id 0 (one 512-token block shared by all), the fork
 * there is the widest, and the session is hash_ids[1] (7373 sessions);
 * in a trace with several system prompts, the conversations behind each
 * keep their own sessions instead of one per prompt. A trace whose ids
 * never fork keys past the prefix every request shares. A request that
 * ends at or before its widest fork, or without ids (Azure, synthetic),
 * has no session. 0, or -1 when out of memory. */
int dbk_trace_sessions(struct dbk_trace *t);

/* Seconds since 1970-01-01 of a UTC civil time "YYYY-MM-DD HH:MM:SS[.f]"
 * ('T' also accepted as separator); false if malformed. Split in whole
 * seconds and fraction so that differences keep sub-microsecond precision. */
bool dbk_trace_parse_wallclock(const char *s, size_t n, int64_t *sec, double *frac);

/* Spreads each run of requests that share an arrival over the time to
 * the next distinct arrival, in order, at uniform random points (seeded:
 * the same seed, the same times). Some traces are recorded in coarse
 * ticks: Mooncake's arrivals come about 3 s apart, ten or so in one
 * millisecond, which no real client fleet does and which makes every
 * router see a whole tick at once. A request alone at its arrival stays;
 * the last run takes the gap before it; a trace with a single distinct
 * arrival is left as it is. Returns how many requests moved. */
size_t dbk_trace_spread(struct dbk_trace *t, uint64_t seed);
/* The seed dbucket-bench and dbucket-sim spread with: live and simulated
 * runs replay the same arrivals. */
#define DBK_TRACE_SPREAD_SEED UINT64_C(0x5350524541445331)

/* ---- Selection. ---- */

/* The trace a program replays and the slice of it its command line picks:
 * dbucket-bench and dbucket-sim fill one each (their option names
 * differ), the time window first, then the count. */
struct dbk_trace_slice {
	const char *path;
	enum dbk_trace_format format; /* UNKNOWN: detect */
	double start_s, duration_s;   /* trace seconds; duration <= 0: to the end */
	size_t max_requests;          /* 0: all */
	double rate_factor;           /* arrivals this many times faster */
	bool spread_ticks;            /* dbk_trace_spread before the slice */
};

struct dbk_select {
	double start_s;         /* trace seconds skipped at the start */
	double duration_s;      /* <= 0: to the end */
	size_t max_requests;    /* 0: all */
	uint32_t max_model_len; /* 0: no limit */
	bool skip_overlong;     /* else clip */
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
