/* The launcher's command line turned into HAProxy's configuration, the
 * SPOE configuration and dbucket-spoa's command line: the set-up of
 * haproxy/haproxy.cfg and haproxy/dbucket.spoe.conf, with concrete
 * addresses and N servers named vllm0..vllmN-1. Pure: text goes to the
 * FILE given (a file, or open_memstream in the tests), nothing else is
 * touched. */
#ifndef DBK_LAUNCH_RENDER_H
#define DBK_LAUNCH_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "flags.h"

/* A unix socket path must fit sockaddr_un.sun_path (108 bytes, NUL
 * included) on Linux. */
#define DBK_RENDER_SUN_PATH 107
#define DBK_RENDER_PATH 512

/* File and socket names inside the runtime directory. */
#define DBK_RENDER_HAPROXY_CFG "haproxy.cfg"
#define DBK_RENDER_SPOE_CONF "dbucket.spoe.conf"
#define DBK_RENDER_AGENT_ENV "dbucket-spoa.env"
#define DBK_RENDER_README "README.dbucket"
#define DBK_RENDER_MODELS_MAP "models.map" /* --layout per-model */
#define DBK_RENDER_SPOA_SOCK "spoa.sock"
#define DBK_RENDER_ADMIN_SOCK "admin.sock"
#define DBK_RENDER_STATS_SOCK "haproxy.sock"
#define DBK_RENDER_PROM_SOCK "stats.sock"

/* Production: what dbucket-spoa.service and Debian's HAProxy use. */
#define DBK_RENDER_PROD_STATS_SOCKET "/run/haproxy/admin.sock"
#define DBK_RENDER_PROD_AGENT "127.0.0.1:12345"
#define DBK_RENDER_PROD_COMPLETIONS "127.0.0.1:12346"
#define DBK_RENDER_PROD_ADMIN "127.0.0.1:12347"
#define DBK_RENDER_PROD_PROM "127.0.0.1:8404"

/* Where everything is, in HAProxy's and in the agent's spelling. */
struct dbk_render_addrs {
	bool production;                    /* --print-config rather than a run */
	char spoe_conf[DBK_RENDER_PATH];    /* the path haproxy.cfg loads */
	char errors_dir[DBK_RENDER_PATH];   /* where its error files are */
	char models_map[DBK_RENDER_PATH];   /* --layout per-model: the model map it reads */
	char stats_socket[DBK_RENDER_PATH]; /* HAProxy's runtime API socket */
	char agent[DBK_RENDER_PATH];        /* HAProxy's address of the SPOP listener */
	char completions[DBK_RENDER_PATH];  /* ... of the completion listener (TCP and UDP) */
	char prom[DBK_RENDER_PATH];         /* HAProxy's own /metrics and /stats */
	char agent_listen[DBK_RENDER_PATH]; /* the same, as dbucket-spoa's flags take them */
	char agent_completions[DBK_RENDER_PATH];
	char agent_completions_udp[DBK_RENDER_PATH];
	char agent_admin[DBK_RENDER_PATH];
	char agent_haproxy_socket[DBK_RENDER_PATH];
};

/* A path that can stand in haproxy.cfg and on a command line as it is:
 * absolute, of letters, digits and / . _ - + , = @ ~ only, at most
 * DBK_RENDER_PATH - 64 bytes. */
bool dbk_render_path_ok(const char *path);

/* Addresses for a run: unix sockets in DIR (absolute), but completion
 * lines on 127.0.0.1:COMPLETIONS_PORT, TCP for the ring and UDP for the
 * datagrams (no HAProxy since 3.3 takes a unix@ ring server, and a unix
 * datagram queue holds only 10 lines). Returns 0, or -1 with err when DIR
 * cannot hold them (characters, socket path length). */
int dbk_render_addrs_run(struct dbk_render_addrs *a, const char *dir, int completions_port,
                         char *err, size_t errlen);
/* The agent's completion addresses as the sockets it inherits, TCP_FD
 * and UDP_FD (fd@N), bound by the launcher on the port HAProxy is given.
 * Returns 0, or -1 with err for a negative fd. */
int dbk_render_addrs_inherit(struct dbk_render_addrs *a, int tcp_fd, int udp_fd, char *err,
                             size_t errlen);
/* Addresses for --print-config: loopback TCP (the agent's defaults),
 * Debian's /run/haproxy/admin.sock, the SPOE file in DIR (absolute). */
int dbk_render_addrs_production(struct dbk_render_addrs *a, const char *dir, char *err,
                                size_t errlen);

/* Each returns 0, or -1 when writing failed. */
int dbk_render_haproxy_cfg(FILE *out, const struct dbk_launch_flags *f,
                           const struct dbk_render_addrs *a, const char *agent_path);
int dbk_render_spoe_conf(FILE *out, const struct dbk_launch_flags *f);
/* --layout per-model: haproxy/models.map's format, each model to its
 * backend. */
int dbk_render_models_map(FILE *out, const struct dbk_launch_flags *f);
/* systemd EnvironmentFile for dbucket-spoa.service (DBUCKET_SPOA_OPTS). */
int dbk_render_agent_env(FILE *out, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a, const char *agent_path);
/* How to install what --print-config wrote into dir. */
int dbk_render_readme(FILE *out, const struct dbk_launch_flags *f, const struct dbk_render_addrs *a,
                      const char *dir, const char *agent_path);

/* HAProxy's own error answers (haproxy/errors/NNN.http, compiled in):
 * written into the directory as DBK_RENDER_ERROR_PREFIX "NNN.http", and
 * named by the configuration's http-errors section. */
#define DBK_RENDER_ERROR_PREFIX "error-"
#define DBK_RENDER_ERROR_NAME 32 /* room for a name, NUL included */
size_t dbk_render_error_count(void);
/* The i-th file's name (i < dbk_render_error_count()). */
void dbk_render_error_name(size_t i, char *out, size_t outlen);
/* The file called name; -1 when there is none or writing failed. */
int dbk_render_error_file(FILE *out, const char *name);
/* The http-errors section naming them in dir. */
void dbk_render_http_errors(FILE *out, const char *dir);

/* dbucket-spoa's argv (NULL-terminated, every string allocated), argv[0]
 * being agent_path. A run names the servers (vllm0..) and reads their
 * states from HAProxy; production discovers them from HAProxy. NULL when
 * out of memory. */
char **dbk_render_agent_argv(const struct dbk_launch_flags *f, const struct dbk_render_addrs *a,
                             const char *agent_path);
void dbk_render_argv_free(char **argv);

/* The launcher's command line, canonical (every flag and its value), for
 * the comments of the generated files: prefix, then the words, wrapped
 * before column 76 onto lines starting with cont, then a newline. */
void dbk_render_cmdline(FILE *out, const struct dbk_launch_flags *f, const char *prefix,
                        const char *cont);

#endif
