/* The launcher's command line: the reference proxy's flags
 * (hybrid_proxy_server.py, parsed there by Python's argparse), with the
 * same defaults, the same parsing rules and argparse's error messages, so
 * that a user of the reference switches by changing the command name; plus
 * a few of our own. Pure: argv in, a struct or a message out. */
#ifndef DBK_LAUNCH_FLAGS_H
#define DBK_LAUNCH_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The reference's defaults. */
#define DBK_LAUNCH_DEFAULT_HOST "localhost"
#define DBK_LAUNCH_DEFAULT_PORT 8000
#define DBK_LAUNCH_DEFAULT_SERVER_HOST "localhost"
#define DBK_LAUNCH_DEFAULT_SERVER_PORT 8001
#define DBK_LAUNCH_DEFAULT_THRESHOLD 32768           /* 32 * 1024 */
#define DBK_LAUNCH_DEFAULT_MAX_REQUEST_TOKENS 131072 /* 128 * 1024 */
#define DBK_LAUNCH_DEFAULT_MAX_RETRIES 3
#define DBK_LAUNCH_DEFAULT_RETRY_DELAY 0.001

/* Ours: the policy a new user gets. The reference proxy's algorithm
 * sends long prompts to the short group whenever it is lighter, and a
 * short group with a smaller --max-model-len answers them 400; ttft
 * reads each server's max_model_len and never does. `--policy
 * reference` is the reference, decision for decision. */
#define DBK_LAUNCH_DEFAULT_POLICY "ttft"
/* Ours: --layout's names; shared (the sample's haproxy.cfg alone) unless
 * asked, as before the flag. */
#define DBK_LAUNCH_LAYOUT_SHARED "shared"
#define DBK_LAUNCH_LAYOUT_PER_MODEL "per-model"
/* The agent's --pool limit (agent/config.h's DBK_MAX_POOLS): at most
 * this many models in --layout per-model. */
#define DBK_LAUNCH_MAX_MODELS 16
/* A model name: visible characters (no # " ' \: they would end a map
 * line or a quoted argument), at most this long. */
#define DBK_LAUNCH_MODEL_MAX 128
/* dbucket-spoa's bounds for --scrape-interval and --scrape-timeout (ms),
 * checked here so that a run fails before anything starts. */
#define DBK_LAUNCH_SCRAPE_MS_MIN 10
#define DBK_LAUNCH_SCRAPE_INTERVAL_MS_MAX (3600 * 1000)
#define DBK_LAUNCH_SCRAPE_TIMEOUT_MS_MAX (600 * 1000)

/* dbucket-spoa's limits (lib/bounds.h) are checked here too, so that a
 * command line the agent would refuse fails before anything starts.
 * HAProxy would retry up to this many times; more is a typo. */
#define DBK_LAUNCH_MAX_RETRIES 1000

struct dbk_launch_flags {
	/* The reference's flags. */
	const char *host;          /* --host; "" means every address */
	long port;                 /* --port */
	const char **server_hosts; /* --server-hosts, nhosts of them */
	unsigned nhosts;
	long *server_ports; /* --server-ports, nports of them */
	unsigned nports;
	bool dynamic;                 /* --enable-dynamic-bucket */
	long long threshold;          /* --server-group-threshold */
	long long max_request_tokens; /* --max-request-tokens */
	long long max_retries;        /* --max-retries: attempts, as the reference counts */
	double retry_delay;           /* --retry-delay: accepted, has no HAProxy equivalent */
	/* Ours; NULL when not given. */
	const char *print_config;     /* --print-config DIR */
	const char *runtime_dir;      /* --runtime-dir DIR */
	const char *agent;            /* --agent PATH */
	const char *haproxy;          /* --haproxy PATH */
	bool access_log;              /* --access-log */
	bool version;                 /* --version */
	bool force;                   /* --force: --print-config may replace files */
	const char *policy;           /* --policy: reference, ttft or p2ttft */
	long long scrape_interval_ms; /* --scrape-interval; 0: the agent's default */
	long long scrape_timeout_ms;  /* --scrape-timeout; 0: the agent's default */
	bool admission;               /* --admission: the agent sheds (issue 28) */
	const char *layout;           /* --layout: shared or per-model */
	bool per_model;               /* --layout per-model */
	const char **server_models;   /* --server-models, nmodels of them (NULL: none) */
	unsigned nmodels;
	/* --trusted-class-src: the clients whose X-Request-Class may raise a
	 * request's class, ntrusted of them (NULL: none). */
	const char **trusted_src;
	unsigned ntrusted;
	/* Storage for the lists (strings point into argv). */
	const char **hosts_buf;
	long *ports_buf;
	const char **models_buf;
	const char **trusted_buf;
};

enum dbk_flags_result {
	DBK_FLAGS_OK = 0,
	DBK_FLAGS_HELP,    /* -h/--help: print dbk_flags_help, exit 0 */
	DBK_FLAGS_VERSION, /* --version: print the version, exit 0 */
	DBK_FLAGS_ERROR, /* err holds argparse's message: print usage, "dbucket: error: ERR", exit 2 */
};

/* Parses argv[1..argc-1]. The struct points into argv, which must outlive
 * it; dbk_flags_free releases the lists (also after an error). */
enum dbk_flags_result dbk_flags_parse(struct dbk_launch_flags *f, int argc, char **argv, char *err,
                                      size_t errlen);
void dbk_flags_free(struct dbk_launch_flags *f);

/* argparse's short usage (to stderr before an error) and full help. */
void dbk_flags_usage(FILE *out);
void dbk_flags_help(FILE *out);

/* HAProxy's `retries` for --max-retries N. The reference makes N attempts
 * in all (its loop runs attempt = 1..N), HAProxy's `retries R` makes R + 1:
 * R = N - 1, and 0 when N <= 1 (HAProxy always makes the first one; the
 * reference with N <= 0 made none and answered an empty 200). */
unsigned dbk_flags_haproxy_retries(const struct dbk_launch_flags *f);

/* Whether the policy routes on the servers' /metrics and /v1/models
 * (ttft and p2ttft): then the agent scrapes every server. */
bool dbk_flags_scraped(const struct dbk_launch_flags *f);

/* Whether the agent scrapes the servers in a run: for the policy, or
 * for the servers' models (/v1/models), which --layout per-model's pools
 * need to answer an unknown model 404. */
bool dbk_flags_scrapes(const struct dbk_launch_flags *f);

/* --layout per-model: the distinct models of --server-models, in the
 * order they first appear, into models (DBK_LAUNCH_MAX_MODELS); returns
 * how many (0 in the shared layout). */
unsigned dbk_flags_models(const struct dbk_launch_flags *f, const char **models);
/* The HAProxy backend (and agent pool) of a model: the model with each
 * character a backend name cannot carry (letters, digits, - _ . : only)
 * as '-'. out: DBK_LAUNCH_MODEL_MAX + 1 bytes. */
void dbk_flags_backend_name(const char *model, char *out, size_t outlen);

/* A host HAProxy's configuration can carry: letters, digits and . - _ : %
 * [ ] (names, IPv4, IPv6 with an optional zone), 1 to 253 characters. */
bool dbk_flags_host_ok(const char *s);

/* An address or network HAProxy's `src` matches: an IPv4 or IPv6
 * address, optionally with a /prefix length that fits it. */
bool dbk_flags_network_ok(const char *s);

#endif
