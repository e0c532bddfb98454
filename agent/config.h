/* Command-line configuration of dbucket-spoa. Parsing is pure: argv in,
 * a filled struct or a one-line error out; nothing is opened or bound. */
#ifndef DBK_CONFIG_H
#define DBK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "admission.h"
#include "metric_names.h"
#include "balancer.h"
#include "outlier.h"
#include "policy_ops.h"
#include "saturation.h"
#include "lib/bounds.h"
#include "lib/net.h"

#define DBK_MAX_LISTEN 8
#define DBK_DEFAULT_LISTEN "127.0.0.1:12345"
#define DBK_DEFAULT_COMPLETION_LISTEN "127.0.0.1:12346"
#define DBK_DEFAULT_ADMIN_LISTEN "127.0.0.1:12347"
/* Above the sample haproxy.cfg's `timeout server 600s`: a lease outlives
 * any request HAProxy would still be serving. */
#define DBK_DEFAULT_LEASE_TTL_S 660
#define DBK_DEFAULT_BACKEND "vllm"
#define DBK_DEFAULT_POLL_MS 1000
#define DBK_DEFAULT_SHARE_MS 10
/* A lease can look leaked for a while without being one: a retried
 * request holds its lease on the server it left until its response
 * starts. Real leaks are rare and can wait. */
#define DBK_DEFAULT_RECLAIM_AFTER_S 30
/* Servers followed at most with --haproxy-socket: slots for servers
 * added at runtime beyond those at start. */
#define DBK_DEFAULT_MAX_SERVERS 64
#define DBK_DEFAULT_THRESHOLD 32768
#define DBK_DEFAULT_MAX_REQUEST_TOKENS 131072
/* HAProxy's default tune.bufsize (16384) less the 4-byte length prefix:
 * what HAProxy 2.6 announces, so we never ask for more than it can send. */
#define DBK_DEFAULT_MAX_FRAME 16380
#define DBK_MIN_FRAME 256
#define DBK_DEFAULT_MAX_CONNS 1024
#define DBK_DEFAULT_MAX_LEASES 1000000
/* Above the sample SPOE 'timeout idle 30s': HAProxy closes its own idle
 * connections first; what stays silent longer is not HAProxy's. */
#define DBK_DEFAULT_IDLE_TIMEOUT_S 120
#define DBK_MAX_SERVER_NAME 64
#define DBK_MAX_ALLOW 32
/* --pool: HAProxy backends one agent serves at most. */
#define DBK_MAX_POOLS 16

#define DBK_DEFAULT_SCRAPE_INTERVAL_MS 100
#define DBK_DEFAULT_SCRAPE_TIMEOUT_MS 1000
#define DBK_MAX_SCRAPE_URL 512

struct dbk_config {
	/* Server names as haproxy.cfg spells them, in order; they point
	 * into argv. */
	const char *servers[DBK_MAX_SERVERS];
	unsigned nservers;
	bool dynamic;
	long long threshold;
	long long max_request_tokens;
	const char *listen[DBK_MAX_LISTEN];
	unsigned nlisten;
	const char *completion_listen[DBK_MAX_LISTEN];
	unsigned ncompletion_listen;
	const char *admin_listen[DBK_MAX_LISTEN];
	unsigned nadmin_listen;
	long long lease_ttl_s;
	const char *haproxy_socket; /* runtime API; NULL: none */
	const char *backend;        /* the vLLM backend's name in haproxy.cfg */
	const char *pool;           /* --pool NAME (then backend too); NULL: none */
	long long poll_ms;          /* runtime API poll interval */
	long long reclaim_after_s;  /* youngest lease a leak repair may take */
	int max_servers;            /* slots when following HAProxy's backend */
	/* --share-books TABLE, --node NAME, --share-interval: the books
	 * shared through a stick table (books_share.h); NULL: not shared. */
	const char *share_books, *node;
	long long share_ms;
	const char *config_file; /* tunables, reread on SIGHUP; NULL: none */
	/* --policy, from policy_ops.h's table (reference by default). */
	const struct dbk_policy_ops *policy;
	/* --scrape NAME=URL, as given (checked against the server names
	 * once they are known: dbk_config_scrape_url). */
	const char *scrape[DBK_MAX_SERVERS];
	unsigned nscrape;
	long long scrape_interval_ms;
	long long scrape_timeout_ms;
	/* --engine and --metric KEY=NAME: the metric names scraped (when
	 * scrape_names_set; else dbk_vm_names_default). */
	struct dbk_vm_names scrape_names;
	bool scrape_names_set, scrape_metric_given;
	/* https scrapes (--scrape-ca, --scrape-cert, --scrape-key: NULL when
	 * not given; --scrape-insecure). */
	const char *scrape_ca, *scrape_cert, *scrape_key;
	bool scrape_insecure;
	/* --hold-partial-bodies: a body not whole at the decision is charged
	 * once its server's scrape counts it (estimate_hold.h). */
	bool hold_partial;
	double engine_speed; /* ttft: servers' speed vs its engine model (1) */
	/* ttft: --lora-load, a LoRA adapter's load on these servers; -1: the
	 * engine model's (DBK_ENGINE_LORA_LOAD_S) over engine_speed. */
	long long lora_load_ms;
	/* ttft: --max-num-batched-tokens, the servers' step token budget as
	 * given to vllm serve (its /metrics export no scheduler settings);
	 * 0: the engine model's default. */
	long long max_num_batched_tokens;
	const char *user;  /* drop to this user after binding */
	const char *group; /* ... and group */
	int max_frame_size;
	int max_connections;
	int max_connections_per_peer; /* 0: half of max_connections */
	long long idle_timeout_s;
	size_t max_leases;
	int log_level; /* enum dbk_log_level */

	/* Who may talk to the agent (README's "Security model"). */
	struct dbk_net_cidr allow[DBK_MAX_ALLOW]; /* --allow-from; none: anyone */
	unsigned nallow;
	const char *admin_token_file; /* NULL: none */
	bool admin_read_only;
	unsigned admin_public; /* DBK_ADMIN_PUBLIC_* */
	const char *admin_hosts[DBK_MAX_LISTEN];
	unsigned nadmin_hosts;
	/* --outlier-*: ejection of servers that fail their requests. */
	struct dbk_outlier_config outlier;
	/* --admission, --admit-*, --saturation-* (issue 28). */
	struct dbk_admit_config admit;
	double sat_queue, sat_kv;
};

enum dbk_config_result {
	DBK_CONFIG_OK = 0,
	DBK_CONFIG_HELP,    /* --help: print usage, exit 0 */
	DBK_CONFIG_VERSION, /* --version: print version, exit 0 */
	DBK_CONFIG_ERROR,   /* err holds the reason: exit 2 */
};

/* The LoRA load to give the ttft policy (struct dbk_policy_env's
 * lora_load_s, 0 for its default). */
double dbk_config_lora_load_env_s(const struct dbk_config *c);

enum dbk_config_result dbk_config_parse(struct dbk_config *c, int argc, char **argv, char *err,
                                        size_t errlen);

/* The pools of a command line (README's "Several models, several
 * pools"), into *pools[0..*n), at most max. Without --pool, one: what
 * dbk_config_parse gives. With it, one per --pool NAME: each parsed from
 * the options before the first --pool, then its own (pool options only:
 * an agent-wide one there is an error), then its server names. */
enum dbk_config_result dbk_config_parse_pools(struct dbk_config *const *pools, unsigned max,
                                              unsigned *n, int argc, char **argv, char *err,
                                              size_t errlen);

void dbk_config_usage(FILE *out, const char *prog);

/* Checks what needs the server list (known after discovery when the
 * command line names none). Returns 0, or -1 with err. */
int dbk_config_check_servers(const struct dbk_config *c, char *err, size_t errlen);

/* The URL --scrape gives for server name, or NULL. */
const char *dbk_config_scrape_url(const struct dbk_config *c, const char *name);

/* The balancer configuration this command line asks for. */
void dbk_config_balancer(const struct dbk_config *c, struct dbk_bal_config *bc);

#endif
