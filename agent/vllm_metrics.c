#include "vllm_metrics.h"
#include "lib/log.h"

#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/bounds.h"
#include "lib/hash.h"
#include "metric_names.h"

/* Longest value or label value kept for conversion; longer ones are
 * still validated but never a number we use. */
#define TOKEN_MAX 64

/* ---- the families we keep (metric_names.h) ---- */

struct acc {
	double sum[DBK_VMS_N][DBK_VMR_N]; /* [slot][rank] */
	unsigned n[DBK_VMS_N][DBK_VMR_N]; /* finite samples summed */
	double gpu_blocks, block_size;
	unsigned n_blocks, n_bsize;
	unsigned n_awake, n_asleep; /* sleep_state="awake" samples, and of them 0 */
	unsigned bad;               /* DBK_VM_* bits: a value no number of that family can be */
	unsigned series;            /* samples of the families kept */
	bool have_lora;             /* lora holds the latest lora_requests_info sample */
	struct dbk_vm_lora lora;
};

static const unsigned slot_bit[DBK_VMS_N] = {
	DBK_VM_RUNNING,
	DBK_VM_WAITING,
	DBK_VM_KV_USAGE,
	DBK_VM_PC_QUERIES,
	DBK_VM_PC_HITS,
	DBK_VM_PREEMPTIONS,
	DBK_VM_TTFT_SUM,
	DBK_VM_TTFT_COUNT,
	DBK_VM_PC_HIT_RATE,
	DBK_VM_GPU_BLOCKS, /* SGLang's pool, in tokens */
	DBK_VM_PROMPT_TOKENS,
	DBK_VM_GEN_TOKENS,
	DBK_VM_STEPS,
	DBK_VM_ITL_SUM,
	DBK_VM_ITL_COUNT,
	0,
	0,
	0,
};

/* ---- tokens ---- */

/* Character classes by table: the scan of names is most of the work. */
enum { C_START = 1, C_NAME = 2, C_METRIC = 4, C_BLANK = 8 };
/* Rows of letters, not clang-format's columns. */
/* clang-format off */
static const unsigned char cls[256] = {
	[' '] = C_BLANK, ['\t'] = C_BLANK, [':'] = C_METRIC,
	['_'] = C_START | C_NAME | C_METRIC,
#define R(c) [c] = C_START | C_NAME | C_METRIC
	R('a'), R('b'), R('c'), R('d'), R('e'), R('f'), R('g'), R('h'), R('i'), R('j'),
	R('k'), R('l'), R('m'), R('n'), R('o'), R('p'), R('q'), R('r'), R('s'), R('t'),
	R('u'), R('v'), R('w'), R('x'), R('y'), R('z'),
	R('A'), R('B'), R('C'), R('D'), R('E'), R('F'), R('G'), R('H'), R('I'), R('J'),
	R('K'), R('L'), R('M'), R('N'), R('O'), R('P'), R('Q'), R('R'), R('S'), R('T'),
	R('U'), R('V'), R('W'), R('X'), R('Y'), R('Z'),
#undef R
#define D(c) [c] = C_NAME | C_METRIC
	D('0'), D('1'), D('2'), D('3'), D('4'), D('5'), D('6'), D('7'), D('8'), D('9'),
#undef D
};
/* clang-format on */

static bool is_name_start(char c) { return cls[(unsigned char)c] & C_START; }

static bool is_name_char(char c) { return cls[(unsigned char)c] & C_NAME; }

static bool is_metric_char(char c) { return cls[(unsigned char)c] & C_METRIC; }

static bool is_blank(char c) { return cls[(unsigned char)c] & C_BLANK; }

static const char *skip_blank(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The float grammar alone, without converting: [+-] then digits with an
 * optional fraction and exponent, or NaN / Inf / Infinity in any case
 * (Go's ParseFloat, which Prometheus uses). For the samples we skip,
 * which are most of them: strtod costs more than the rest of a line. */
static bool float_syntax(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i < len && !is_digit(s[i]) && s[i] != '.')
		return (len - i == 3 &&
		        (strncasecmp(s + i, "nan", 3) == 0 || strncasecmp(s + i, "inf", 3) == 0)) ||
		       (len - i == 8 && strncasecmp(s + i, "infinity", 8) == 0);
	while (i < len && is_digit(s[i]))
		i++, digits++;
	if (i < len && s[i] == '.')
		for (i++; i < len && is_digit(s[i]); i++)
			digits++;
	if (!digits)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = 0;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		for (; i < len && is_digit(s[i]); i++)
			e++;
		if (!e)
			return false;
	}
	return i == len;
}

/* A Prometheus float, converted: float_syntax, then strtod. */
static bool parse_float(const char *s, size_t len, double *out)
{
	char tok[TOKEN_MAX + 1];
	char *endp;

	if (len == 0 || len > TOKEN_MAX || !float_syntax(s, len))
		return false;
	memcpy(tok, s, len);
	tok[len] = '\0';
	*out = strtod(tok, &endp);
	return endp == tok + len;
}

/* Prometheus text: integer milliseconds; OpenMetrics: seconds, a float. */
static bool parse_timestamp(const char *s, size_t len)
{
	return len > 0 && len <= TOKEN_MAX && float_syntax(s, len);
}

/* The label values of cache_config_info and engine_sleep_state we read. */
struct info {
	char gpu_blocks[TOKEN_MAX + 1];
	char block_size[TOKEN_MAX + 1];
	char sleep_state[TOKEN_MAX + 1];
};

/* Reads one quoted label value at *pp (past the opening quote), undoing
 * \\, \" and \n; keeps it in keep (if not NULL and it fits in cap
 * bytes; else keep is ""), its length in *vlen (if not NULL). */
static const char *label_value(const char *p, const char *end, char *keep, size_t cap, size_t *vlen,
                               const char **why)
{
	size_t k = 0;
	const char *q = memchr(p, '"', (size_t)(end - p));

	/* The usual value has no escape: one memchr each way. (A line never
	 * holds a newline: the caller splits at them.) */
	if (q && !memchr(p, '\\', (size_t)(q - p))) {
		if (keep && (size_t)(q - p) <= cap) {
			memcpy(keep, p, (size_t)(q - p));
			keep[q - p] = '\0';
		} else if (keep) {
			keep[0] = '\0';
		}
		if (vlen)
			*vlen = (size_t)(q - p);
		return q + 1;
	}

	while (p < end && *p != '"') {
		char c = *p++;

		if (c == '\\') {
			if (p == end || (*p != '\\' && *p != '"' && *p != 'n')) {
				*why = "bad escape in a label value";
				return NULL;
			}
			c = *p == 'n' ? '\n' : *p;
			p++;
		} else if (c == '\n') {
			*why = "newline in a label value";
			return NULL;
		}
		if (keep && k < cap)
			keep[k] = c;
		else if (keep)
			keep[0] = '\0', keep = NULL; /* too long: never used */
		k++;
	}
	if (p == end) {
		*why = "unterminated label value";
		return NULL;
	}
	if (keep)
		keep[k] = '\0';
	if (vlen)
		*vlen = k;
	return p + 1;
}

/* The labels of one vllm:lora_requests_info sample, apart from struct
 * info: only that family's samples pay for their size. */
struct lora_labels {
	char running[DBK_VM_LORA_TEXT], waiting[DBK_VM_LORA_TEXT];
	char max_lora[TOKEN_MAX + 1];
	size_t running_len, waiting_len;
};

/* Parses {name="value",...} starting at the '{'; returns past the '}'. */
static const char *labels(const char *p, const char *end, struct info *inf, struct lora_labels *ll,
                          const char **why)
{
	p++;
	for (;;) {
		p = skip_blank(p, end);
		if (p < end && *p == '}')
			return p + 1;
		const char *n = p;
		if (p == end || !is_name_start(*p)) {
			*why = "bad label name";
			return NULL;
		}
		while (p < end && is_name_char(*p))
			p++;
		size_t nl = (size_t)(p - n);
		p = skip_blank(p, end);
		if (p == end || *p != '=') {
			*why = "expected '=' after a label name";
			return NULL;
		}
		p = skip_blank(p + 1, end);
		if (p == end || *p != '"') {
			*why = "expected a quoted label value";
			return NULL;
		}
		char *keep = NULL;
		size_t cap = TOKEN_MAX, *vlen = NULL;
		if (ll && nl == 21 && memcmp(n, "running_lora_adapters", 21) == 0)
			keep = ll->running, cap = DBK_VM_LORA_TEXT - 1, vlen = &ll->running_len;
		else if (ll && nl == 21 && memcmp(n, "waiting_lora_adapters", 21) == 0)
			keep = ll->waiting, cap = DBK_VM_LORA_TEXT - 1, vlen = &ll->waiting_len;
		else if (ll && nl == 8 && memcmp(n, "max_lora", 8) == 0)
			keep = ll->max_lora;
		else if (inf && nl == 14 && memcmp(n, "num_gpu_blocks", 14) == 0)
			keep = inf->gpu_blocks;
		else if (inf && nl == 10 && memcmp(n, "block_size", 10) == 0)
			keep = inf->block_size;
		else if (inf && nl == 11 && memcmp(n, "sleep_state", 11) == 0)
			keep = inf->sleep_state;
		p = label_value(p + 1, end, keep, cap, vlen, why);
		if (!p)
			return NULL;
		p = skip_blank(p, end);
		if (p < end && *p == ',')
			p++;
		else if (p == end || *p != '}') {
			*why = "expected ',' or '}' after a label";
			return NULL;
		}
	}
}

/* A label holding a count: not a number ("None" before vLLM knows it) is
 * not reported; a number that no engine can have is bad. */
static void info_count(const char *label, double *v, unsigned *n, bool *bad)
{
	if (!label[0] || !parse_float(label, strlen(label), v))
		return;
	if (!(*v >= 1 && *v <= DBK_VM_MAX_BLOCKS))
		*bad = true;
	else
		(*n)++;
}

static void add_info(struct acc *a, const struct info *inf)
{
	double v;
	unsigned n = 0;
	bool bad = false;

	info_count(inf->gpu_blocks, &v, &n, &bad);
	if (n) {
		a->gpu_blocks += v;
		a->n_blocks++;
	}
	if (bad)
		a->bad |= DBK_VM_GPU_BLOCKS;
	n = 0, bad = false;
	info_count(inf->block_size, &v, &n, &bad);
	if (n && (a->n_bsize == 0 || v > a->block_size))
		a->block_size = v;
	a->n_bsize += n;
	if (bad)
		a->bad |= DBK_VM_BLOCK_SIZE;
}

/* After a sample's value: [timestamp] [# {labels} value [timestamp]], the
 * last an OpenMetrics exemplar (a vLLM with exemplars on serves them). */
static bool sample_tail(const char *p, const char *end, const char **why)
{
	const char *t = p;

	if (p < end && *p != '#') {
		while (p < end && !is_blank(*p))
			p++;
		if (!parse_timestamp(t, (size_t)(p - t))) {
			*why = "bad timestamp or trailing text";
			return false;
		}
		p = skip_blank(p, end);
	}
	if (p == end)
		return true;
	if (*p != '#' || (p = skip_blank(p + 1, end)) == end || *p != '{' ||
	    !(p = labels(p, end, NULL, NULL, why))) {
		*why = "bad timestamp or trailing text";
		return false;
	}
	for (unsigned k = 0; k < 2; k++) { /* the exemplar's value, then its timestamp */
		p = skip_blank(p, end);
		t = p;
		while (p < end && !is_blank(*p))
			p++;
		if (k == 1 && t == p)
			break;
		if (!float_syntax(t, (size_t)(p - t))) {
			*why = "bad exemplar";
			return false;
		}
	}
	if (skip_blank(p, end) != end) {
		*why = "trailing text after an exemplar";
		return false;
	}
	return true;
}

/* ---- vllm:lora_requests_info (vllm_metrics.h) ---- */

/* Names in a comma-joined list of len bytes: 0 for "", -1 for an empty
 * name, a NUL, or more than DBK_VM_LORA_MAX. */
static int lora_count(const char *s, size_t len)
{
	unsigned n = 0;
	size_t start = 0;

	if (len == 0)
		return 0;
	if (len >= DBK_VM_LORA_TEXT || memchr(s, '\0', len))
		return -1;
	for (size_t i = 0; i <= len; i++)
		if (i == len || s[i] == ',') {
			if (i == start || ++n > DBK_VM_LORA_MAX)
				return -1;
			start = i + 1;
		}
	return (int)n;
}

/* One sample's labels and value into a: kept when it is the latest. */
static void lora_sample(struct acc *a, const struct lora_labels *ll, double val)
{
	int nr = lora_count(ll->running, ll->running_len);
	int nw = lora_count(ll->waiting, ll->waiting_len);
	double max = 0;

	if (isnan(val))
		return; /* not set yet */
	if (isinf(val) || nr < 0 || nw < 0 || !ll->max_lora[0] ||
	    !parse_float(ll->max_lora, strlen(ll->max_lora), &max) ||
	    !(max >= 1 && max <= DBK_VM_MAX_LORA) || max != floor(max)) {
		a->bad |= DBK_VM_LORA;
		return;
	}
	if (a->have_lora && val < a->lora.set_at)
		return;
	a->have_lora = true;
	a->lora.max_lora = max;
	a->lora.set_at = val;
	memcpy(a->lora.running, ll->running, ll->running_len + 1);
	memcpy(a->lora.waiting, ll->waiting, ll->waiting_len + 1);
	a->lora.nrunning = (unsigned)nr;
	a->lora.nwaiting = (unsigned)nw;
}

/* One sample line (not blank, not a comment). A family not kept is
 * skipped once its name is read: most of a body is such lines, and a
 * line cannot reach into the next (a newline in a label value is
 * escaped), so what they hold cannot change what is read. Returns 0, -1
 * with why, or -2 when the families kept have too many series. */
static int sample_line(const struct dbk_vm_names *names, const char *p, const char *end,
                       struct acc *a, const char **why)
{
	const char *name = p;
	struct info inf;
	const struct dbk_vm_family *fam;

	if (!is_name_start(*p) && *p != ':') {
		*why = "bad metric name";
		return -1;
	}
	while (p < end && is_metric_char(*p))
		p++;
	fam = dbk_vm_family_of(names, name, (size_t)(p - name));
	if (!fam)
		return 0;
	/* lora_requests_info's samples are not counted against
	 * DBK_VM_MAX_SERIES: vLLM keeps every label set it ever set, so a
	 * server up for long has many, each one line of a body bounded by
	 * its size. Only its lines fill ll. */
	bool lora = fam->slot == DBK_VMS_LORA;
	struct lora_labels ll;
	if (lora) {
		ll.running[0] = ll.waiting[0] = ll.max_lora[0] = '\0';
		ll.running_len = ll.waiting_len = 0;
	} else if (++a->series > DBK_VM_MAX_SERIES) {
		*why = "too many series of the families read";
		return -2;
	}
	memset(&inf, 0, sizeof(inf));
	p = skip_blank(p, end);
	if (p < end && *p == '{') {
		p = labels(p, end,
		           fam->slot == DBK_VMS_INFO || fam->slot == DBK_VMS_SLEEP ? &inf : NULL,
		           lora ? &ll : NULL, why);
		if (!p)
			return -1;
		p = skip_blank(p, end);
	}
	const char *v = p;
	while (p < end && !is_blank(*p))
		p++;
	double val = 0;
	if (!(fam->slot != DBK_VMS_INFO ? parse_float(v, (size_t)(p - v), &val)
	                                : float_syntax(v, (size_t)(p - v)))) {
		*why = v == p ? "no value" : "bad value";
		return -1;
	}
	if (!sample_tail(skip_blank(p, end), end, why))
		return -1;
	if (lora) {
		lora_sample(a, &ll, val);
		return 0;
	}
	if (fam->slot == DBK_VMS_INFO) {
		add_info(a, &inf);
		return 0;
	}
	if (fam->slot == DBK_VMS_SLEEP) {
		if (strcmp(inf.sleep_state, "awake") == 0 && isfinite(val)) {
			a->n_awake++;
			a->n_asleep += val == 0;
		}
		return 0;
	}
	/* NaN is Prometheus's "no value yet"; an infinity is no count. */
	if (isinf(val))
		a->bad |= slot_bit[fam->slot];
	if (isfinite(val)) {
		a->sum[fam->slot][fam->rank] += val;
		a->n[fam->slot][fam->rank]++;
	}
	return 0;
}

static void finish(const struct acc *a, struct dbk_vllm_metrics *out)
{
	double *dst[DBK_VMS_N] = {
		&out->running,
		&out->waiting,
		&out->kv_usage,
		&out->pc_queries,
		&out->pc_hits,
		&out->preemptions,
		&out->ttft_sum,
		&out->ttft_count,
		&out->pc_hit_rate,
		&out->gpu_blocks,
		&out->prompt_tokens,
		&out->gen_tokens,
		&out->steps,
		&out->itl_sum,
		&out->itl_count,
		NULL,
		NULL,
		NULL,
	};

	for (unsigned s = 0; s < DBK_VMS_INFO; s++) {
		unsigned o = 0;

		while (o + 1 < DBK_VMR_N && !a->n[s][o])
			o++;

		/* Finite samples can still sum to infinity. */
		if (!a->n[s][o])
			continue;
		if (!isfinite(a->sum[s][o])) {
			out->bad |= slot_bit[s];
			continue;
		}
		*dst[s] = a->sum[s][o];
		if (s == DBK_VMS_RUNNING || (s == DBK_VMS_WAITING && !out->engine))
			out->engine = o == DBK_VMR_SGLANG ? DBK_ENGINE_SGLANG : DBK_ENGINE_VLLM;
		/* Ratios of engines of one server: the mean. */
		if (s == DBK_VMS_KV || s == DBK_VMS_HIT_RATE)
			*dst[s] /= a->n[s][o];
		out->have |= slot_bit[s];
	}
	if (out->have & DBK_VM_GPU_BLOCKS) {
		/* SGLang's pool is of tokens: blocks of one. */
		out->block_size = 1;
		out->have |= DBK_VM_BLOCK_SIZE;
	}
	if (a->n_blocks && isfinite(a->gpu_blocks)) {
		out->gpu_blocks = a->gpu_blocks;
		out->have |= DBK_VM_GPU_BLOCKS;
	}
	if (a->n_bsize) {
		out->block_size = a->block_size;
		out->have |= DBK_VM_BLOCK_SIZE;
	}
	if (a->n_awake) {
		out->asleep = a->n_asleep;
		out->have |= DBK_VM_SLEEP;
	}
	if (a->have_lora && !(a->bad & DBK_VM_LORA)) {
		out->lora = a->lora;
		out->have |= DBK_VM_LORA;
	}
	out->bad |= a->bad;
}

/* The documented range of each number read: ratios 0..1 (vLLM exports
 * kv_cache_usage_perc as a fraction, despite its name), counts and
 * counters from 0 to what no engine reaches. */
static const struct range {
	unsigned bit;
	size_t off;
	double lo, hi;
	const char *what;
} ranges[] = {
	{ DBK_VM_RUNNING, offsetof(struct dbk_vllm_metrics, running), 0, DBK_VM_MAX_REQUESTS,
	  "running requests" },
	{ DBK_VM_WAITING, offsetof(struct dbk_vllm_metrics, waiting), 0, DBK_VM_MAX_REQUESTS,
	  "waiting requests" },
	{ DBK_VM_KV_USAGE, offsetof(struct dbk_vllm_metrics, kv_usage), 0, 1,
	  "KV-cache use (a fraction)" },
	{ DBK_VM_PC_HIT_RATE, offsetof(struct dbk_vllm_metrics, pc_hit_rate), 0, 1,
	  "prefix-cache hit rate (a fraction)" },
	{ DBK_VM_PC_QUERIES, offsetof(struct dbk_vllm_metrics, pc_queries), 0, DBK_VM_MAX_COUNTER,
	  "prefix-cache queries" },
	{ DBK_VM_PC_HITS, offsetof(struct dbk_vllm_metrics, pc_hits), 0, DBK_VM_MAX_COUNTER,
	  "prefix-cache hits" },
	{ DBK_VM_PREEMPTIONS, offsetof(struct dbk_vllm_metrics, preemptions), 0, DBK_VM_MAX_COUNTER,
	  "preemptions" },
	{ DBK_VM_TTFT_SUM, offsetof(struct dbk_vllm_metrics, ttft_sum), 0, DBK_VM_MAX_COUNTER,
	  "first-token seconds" },
	{ DBK_VM_TTFT_COUNT, offsetof(struct dbk_vllm_metrics, ttft_count), 0, DBK_VM_MAX_COUNTER,
	  "first tokens" },
	{ DBK_VM_PROMPT_TOKENS, offsetof(struct dbk_vllm_metrics, prompt_tokens), 0,
	  DBK_VM_MAX_COUNTER, "prompt tokens" },
	{ DBK_VM_GEN_TOKENS, offsetof(struct dbk_vllm_metrics, gen_tokens), 0, DBK_VM_MAX_COUNTER,
	  "generated tokens" },
	{ DBK_VM_STEPS, offsetof(struct dbk_vllm_metrics, steps), 0, DBK_VM_MAX_COUNTER,
	  "engine steps" },
	{ DBK_VM_ITL_SUM, offsetof(struct dbk_vllm_metrics, itl_sum), 0, DBK_VM_MAX_COUNTER,
	  "inter-token seconds" },
	{ DBK_VM_ITL_COUNT, offsetof(struct dbk_vllm_metrics, itl_count), 0, DBK_VM_MAX_COUNTER,
	  "inter-token gaps" },
	{ DBK_VM_GPU_BLOCKS, offsetof(struct dbk_vllm_metrics, gpu_blocks), 1, DBK_VM_MAX_BLOCKS,
	  "KV-cache blocks" },
	{ DBK_VM_BLOCK_SIZE, offsetof(struct dbk_vllm_metrics, block_size), 1, DBK_VM_MAX_BLOCKS,
	  "KV-cache block size" },
};

const char *dbk_vllm_metrics_implausible(const struct dbk_vllm_metrics *m, char *buf, size_t buflen)
{
	if (!(m->have & (DBK_VM_RUNNING | DBK_VM_WAITING)))
		return "no running or waiting request count: not an engine's /metrics";
	if (m->bad & DBK_VM_LORA)
		return "lora_requests_info: an adapter list or max_lora out of bounds";
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		const struct range *r = &ranges[i];
		double v = *(const double *)(const void *)((const char *)m + r->off);

		if (m->bad & r->bit)
			return r->bit == DBK_VM_GPU_BLOCKS || r->bit == DBK_VM_BLOCK_SIZE
			               ? "KV-cache blocks or block size not a positive count"
			               : "a count or ratio is infinite";
		if ((m->have & r->bit) && !(v >= r->lo && v <= r->hi)) {
			snprintf(buf, buflen, "%s out of range (%.6g)", r->what, v);
			return buf;
		}
	}
	if ((m->have & DBK_VM_GPU_BLOCKS) && (m->have & DBK_VM_BLOCK_SIZE) &&
	    !(m->gpu_blocks * m->block_size <= DBK_MAX_TOKENS))
		return "KV-cache capacity (num_gpu_blocks x block_size) out of range";
	return NULL;
}

int dbk_vllm_parse_metrics(const char *buf, size_t len, struct dbk_vllm_metrics *out, char *err,
                           size_t errlen)
{
	return dbk_vm_parse_metrics(dbk_vm_names_default(), buf, len, out, err, errlen);
}

int dbk_vm_parse_metrics(const struct dbk_vm_names *names, const char *buf, size_t len,
                         struct dbk_vllm_metrics *out, char *err, size_t errlen)
{
	const char *p = buf, *end = buf + len;
	struct acc a;
	unsigned lineno = 0, samples = 0;

	memset(out, 0, sizeof(*out));
	memset(&a, 0, sizeof(a));
	if (!buf)
		return len == 0 ? 0 : -1;
	/* Each round consumes one line, so the loop ends within len rounds. */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *why = NULL;

		lineno++;
		if (le - p > DBK_VM_MAX_LINE) {
			dbk_errf(err, errlen, "line %u: longer than %d bytes", lineno,
			         DBK_VM_MAX_LINE);
			return -1;
		}
		if (le > p && le[-1] == '\r')
			le--;
		const char *s = skip_blank(p, le);
		if (s < le && *s != '#') {
			int rc = sample_line(names, s, le, &a, &why);

			if (rc < 0) {
				dbk_errf(err, errlen, "line %u: %s", lineno, why);
				memset(out, 0, sizeof(*out));
				return rc;
			}
			samples++;
		}
		p = nl ? nl + 1 : end;
	}
	finish(&a, out);
	out->samples = samples;
	return 0;
}

const char *dbk_vm_lora_name(const char *list, unsigned i, size_t *len)
{
	const char *p = list;

	if (!*p)
		return NULL;
	for (; i > 0; i--) {
		p = strchr(p, ',');
		if (!p)
			return NULL;
		p++;
	}
	const char *c = strchr(p, ',');
	*len = c ? (size_t)(c - p) : strlen(p);
	return p;
}

uint64_t dbk_vm_adapter_key(const void *name, size_t len)
{
	uint64_t k = dbk_hash_bytes(DBK_HASH_GOLDEN, UINT64_C(0x6c6f7261), name, len);

	return k ? k : 1;
}
