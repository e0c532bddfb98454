/* dbucket: the reference proxy's command line in front of HAProxy and
 * dbucket-spoa. Parses the flags (flags.c), renders the configuration
 * (render.c) into a runtime directory and supervises the two processes
 * (supervise.c); or, with --print-config, writes a production
 * configuration and exits. Starts programs with execve only: no shell. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flags.h"
#include "lib/net.h"
#include "render.h"
#include "say.h"
#include "supervise.h"
#include "lib/version.h"

#define ERRLEN 512

/* ---- finding the programs ---------------------------------------------- */

static bool executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* path made absolute into out. */
static bool take_path(const char *path, char *out, size_t outlen)
{
	char real[PATH_MAX];

	if (!executable(path) || !realpath(path, real) || strlen(real) >= outlen)
		return false;
	memcpy(out, real, strlen(real) + 1);
	return true;
}

static bool in_dir(const char *dir, const char *name, char *out, size_t outlen)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return false;
	return take_path(p, out, outlen);
}

/* The first of n fixed directories that holds an executable name. */
static bool in_dirs(const char *const *dirs, size_t n, const char *name, char *out, size_t outlen)
{
	for (size_t i = 0; i < n; i++)
		if (in_dir(dirs[i], name, out, outlen))
			return true;
	return false;
}

/* $PATH as execvp searches it (an empty entry is the current directory). */
static bool in_path(const char *name, char *out, size_t outlen)
{
	const char *path = getenv("PATH");

	if (!path)
		return false;
	/* Bounded by the length of $PATH. */
	for (const char *p = path;;) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char dir[PATH_MAX];
		if (n < sizeof(dir)) {
			memcpy(dir, n ? p : ".", n ? n : 1);
			dir[n ? n : 1] = '\0';
			if (in_dir(dir, name, out, outlen))
				return true;
		}
		if (!end)
			return false;
		p = end + 1;
	}
}

/* The directory of this executable, for the build tree (build/dbucket
 * beside build/dbucket-spoa) and the installed one (bin/ and sbin/). */
static bool self_dir(char *out, size_t outlen)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return false;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash || (size_t)(slash - exe) >= outlen)
		return false;
	*slash = '\0';
	memcpy(out, exe, strlen(exe) + 1);
	return true;
}

static bool find_agent(const char *given, char *out, size_t outlen)
{
	char dir[PATH_MAX];
	static const char *const fixed[] = { "/usr/local/sbin", "/usr/sbin", "/usr/local/bin",
		                             "/usr/bin" };

	if (given)
		return take_path(given, out, outlen);
	if (self_dir(dir, sizeof(dir))) {
		if (in_dir(dir, "dbucket-spoa", out, outlen))
			return true;
		if (strlen(dir) + 8 < sizeof(dir)) {
			strcat(dir, "/../sbin");
			if (in_dir(dir, "dbucket-spoa", out, outlen))
				return true;
		}
	}
	return in_path("dbucket-spoa", out, outlen) ||
	       in_dirs(fixed, sizeof(fixed) / sizeof(fixed[0]), "dbucket-spoa", out, outlen);
}

static bool find_haproxy(const char *given, char *out, size_t outlen)
{
	/* Debian installs it in /usr/sbin, which a user's $PATH may lack. */
	static const char *const fixed[] = { "/usr/sbin", "/usr/local/sbin", "/sbin" };

	if (given)
		return take_path(given, out, outlen);
	return in_path("haproxy", out, outlen) ||
	       in_dirs(fixed, sizeof(fixed) / sizeof(fixed[0]), "haproxy", out, outlen);
}

/* ---- writing the files ------------------------------------------------- */

enum what { W_HAPROXY, W_SPOE, W_ENV, W_README, W_MODELS, W_ERROR };

struct job {
	const struct dbk_launch_flags *f;
	const struct dbk_render_addrs *a;
	const char *dir;
	const char *agent_path;
	bool printing; /* --print-config: say what is written, keep what it replaces as NAME.bak */
};

/* path's old self as path.bak, by a hard link: path itself is replaced
 * by a rename, never missing. A .bak of an earlier --force goes. */
static int keep_backup(const char *path)
{
	char bak[PATH_MAX];

	if (snprintf(bak, sizeof(bak), "%s.bak", path) >= (int)sizeof(bak)) {
		dbk_launch_say("%s.bak: path too long", path);
		return -1;
	}
	if ((unlink(bak) < 0 && errno != ENOENT) || link(path, bak) < 0) {
		dbk_launch_say("cannot keep %s as %s: %s", path, bak, strerror(errno));
		return -1;
	}
	return 0;
}

/* Writes DIR/NAME through a temporary file renamed into place, so that
 * nobody (HAProxy reloading, an operator) reads half a file. */
static int write_file(const struct job *j, const char *name, enum what w, mode_t mode)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc = -1;

	if (snprintf(path, sizeof(path), "%s/%s", j->dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", j->dir, name, (long)getpid()) >=
	            (int)sizeof(tmp)) {
		dbk_launch_say("%s/%s: path too long", j->dir, name);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		dbk_launch_say("cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	FILE *out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		unlink(tmp);
		dbk_launch_say("cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	switch (w) {
	case W_HAPROXY: rc = dbk_render_haproxy_cfg(out, j->f, j->a, j->agent_path); break;
	case W_SPOE: rc = dbk_render_spoe_conf(out, j->f); break;
	case W_ENV: rc = dbk_render_agent_env(out, j->f, j->a, j->agent_path); break;
	case W_README: rc = dbk_render_readme(out, j->f, j->a, j->dir, j->agent_path); break;
	case W_MODELS: rc = dbk_render_models_map(out, j->f); break;
	case W_ERROR: rc = dbk_render_error_file(out, name); break;
	}
	/* fchmod: the mode must not depend on the umask. */
	if (fflush(out) != 0 || fchmod(fileno(out), mode) != 0)
		rc = -1;
	if (fclose(out) != 0)
		rc = -1;
	struct stat st;
	bool existed = lstat(path, &st) == 0;
	if (rc == 0 && existed && j->printing && keep_backup(path) < 0) {
		unlink(tmp);
		return -1;
	}
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc == 0 && j->printing)
		printf(existed ? "replaced %s (the old one is %s.bak)\n" : "wrote %s\n", path,
		       path);
	if (rc != 0) {
		dbk_launch_say("cannot write %s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
	}
	return rc;
}

static const char *const print_files[] = { DBK_RENDER_HAPROXY_CFG, DBK_RENDER_SPOE_CONF,
	                                   DBK_RENDER_AGENT_ENV, DBK_RENDER_README };
#define NPRINT (sizeof(print_files) / sizeof(print_files[0]))

/* The error files haproxy.cfg names, each written into dir; 0 or -1. */
static int write_error_files(const struct job *j, mode_t mode)
{
	char name[DBK_RENDER_ERROR_NAME];

	for (size_t i = 0; i < dbk_render_error_count(); i++) {
		dbk_render_error_name(i, name, sizeof(name));
		if (write_file(j, name, W_ERROR, mode))
			return -1;
	}
	return 0;
}

/* Whether dir/name exists, said on stderr. */
static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    lstat(path, &st) < 0)
		return false;
	dbk_launch_say("%s exists", path);
	return true;
}

/* Without --force, a file of ours already in dir stops everything before
 * anything is written: an operator's haproxy.cfg is not lost by a typo in
 * DIR. 0, or 1 said on stderr. */
static int refuse_existing(const char *dir)
{
	char name[DBK_RENDER_ERROR_NAME];
	unsigned found = 0;

	for (size_t i = 0; i < NPRINT; i++)
		found += exists(dir, print_files[i]);
	found += exists(dir, DBK_RENDER_MODELS_MAP);
	for (size_t i = 0; i < dbk_render_error_count(); i++) {
		dbk_render_error_name(i, name, sizeof(name));
		found += exists(dir, name);
	}
	if (!found)
		return 0;
	dbk_launch_say("--print-config: nothing written; print into a new directory, or give "
	               "--force to replace %s (each kept as FILE.bak)",
	               found == 1 ? "it" : "them");
	return 1;
}

static int print_config(const struct dbk_launch_flags *f, const char *agent_path)
{
	char dir[PATH_MAX], err[ERRLEN];
	struct dbk_render_addrs a;

	if (mkdir(f->print_config, 0755) < 0 && errno != EEXIST) {
		dbk_launch_say("cannot create %s: %s", f->print_config, strerror(errno));
		return 1;
	}
	if (!realpath(f->print_config, dir)) {
		dbk_launch_say("%s: %s", f->print_config, strerror(errno));
		return 1;
	}
	if (dbk_render_addrs_production(&a, dir, err, sizeof(err)) < 0) {
		dbk_launch_say("--print-config: %s", err);
		return 2;
	}
	if (!f->force && refuse_existing(dir) != 0)
		return 1;
	struct job j = { f, &a, dir, agent_path, true };
	static const enum what whats[NPRINT] = { W_HAPROXY, W_SPOE, W_ENV, W_README };
	for (size_t i = 0; i < NPRINT; i++)
		if (write_file(&j, print_files[i], whats[i], 0644))
			return 1;
	if (f->per_model && write_file(&j, DBK_RENDER_MODELS_MAP, W_MODELS, 0644))
		return 1;
	return write_error_files(&j, 0644) ? 1 : 0;
}

/* ---- the runtime directory --------------------------------------------- */

static const char *const run_files[] = {
	DBK_RENDER_HAPROXY_CFG, DBK_RENDER_SPOE_CONF, DBK_RENDER_SPOA_SOCK,  DBK_RENDER_ADMIN_SOCK,
	DBK_RENDER_STATS_SOCK,  DBK_RENDER_PROM_SOCK, DBK_RENDER_MODELS_MAP,
};

/* A fresh private directory: under $XDG_RUNTIME_DIR (the user's tmpfs),
 * else $TMPDIR, else /tmp. */
static bool make_temp_dir(char *out, size_t outlen)
{
	const char *bases[] = { getenv("XDG_RUNTIME_DIR"), getenv("TMPDIR"), "/tmp" };

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		struct stat st;
		const char *b = bases[i];
		if (!b || b[0] != '/' || stat(b, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    access(b, W_OK | X_OK) < 0)
			continue;
		if (snprintf(out, outlen, "%s/dbucket.XXXXXX", b) >= (int)outlen)
			continue;
		if (mkdtemp(out))
			return true;
	}
	return false;
}

static void remove_file(const char *dir, const char *name)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) < (int)sizeof(p) && unlink(p) < 0 &&
	    errno != ENOENT)
		dbk_launch_say("cannot remove %s: %s", p, strerror(errno));
}

static void clean_run_dir(const char *dir, bool created)
{
	char name[DBK_RENDER_ERROR_NAME];

	for (size_t i = 0; i < sizeof(run_files) / sizeof(run_files[0]); i++)
		remove_file(dir, run_files[i]);
	for (size_t i = 0; i < dbk_render_error_count(); i++) {
		dbk_render_error_name(i, name, sizeof(name));
		remove_file(dir, name);
	}
	if (created && rmdir(dir) < 0)
		dbk_launch_say("cannot remove %s: %s", dir, strerror(errno));
}

/* The runtime directory, absolute into dir (PATH_MAX): --runtime-dir,
 * made if missing, or a fresh one. 0, or 1 said on stderr. */
static int open_run_dir(const struct dbk_launch_flags *f, char *dir, bool *created)
{
	char made[PATH_MAX];

	*created = false;
	if (f->runtime_dir) {
		if (mkdir(f->runtime_dir, 0700) == 0)
			*created = true;
		else if (errno != EEXIST) {
			dbk_launch_say("cannot create %s: %s", f->runtime_dir, strerror(errno));
			return 1;
		}
		if (!realpath(f->runtime_dir, dir)) {
			dbk_launch_say("%s: %s", f->runtime_dir, strerror(errno));
			return 1;
		}
	} else {
		if (!make_temp_dir(made, sizeof(made))) {
			dbk_launch_say(
			        "cannot create a runtime directory under $XDG_RUNTIME_DIR, $TMPDIR "
			        "or /tmp: give --runtime-dir");
			return 1;
		}
		*created = true;
		if (!realpath(made, dir)) {
			dbk_launch_say("%s: %s", made, strerror(errno));
			rmdir(made);
			return 1;
		}
	}
	return 0;
}

static int run(const struct dbk_launch_flags *f, const char *agent_path)
{
	char haproxy_path[PATH_MAX], dir[PATH_MAX], err[ERRLEN];
	char cfg[PATH_MAX + 32], listen[300];
	struct dbk_render_addrs a;
	bool created = false;
	int rc = 1;

	if (!find_haproxy(f->haproxy, haproxy_path, sizeof(haproxy_path))) {
		if (f->haproxy)
			dbk_launch_say("--haproxy %s: not an executable file", f->haproxy);
		else
			dbk_launch_say("haproxy not found in $PATH, /usr/sbin or /usr/local/sbin: "
			               "install it "
			               "(apt-get install haproxy) or give --haproxy PATH");
		return f->haproxy ? 2 : 1;
	}
	if (open_run_dir(f, dir, &created) != 0)
		return 1;

	char **agent_argv = NULL;
	/* The completion sockets are bound here and held for the agent
	 * (fd@N), across its restarts too: a port only picked here and
	 * bound by the agent later could be taken in between. */
	int fds[2] = { -1, -1 };
	int port = dbk_net_loopback_pair(&fds[0], &fds[1], err, sizeof(err));
	if (port < 0 || dbk_render_addrs_run(&a, dir, port, err, sizeof(err)) < 0 ||
	    dbk_render_addrs_inherit(&a, fds[0], fds[1], err, sizeof(err)) < 0) {
		dbk_launch_say("%s", err);
		rc = 2;
		goto out;
	}
	struct job j = { f, &a, dir, agent_path, false };
	if (write_file(&j, DBK_RENDER_SPOE_CONF, W_SPOE, 0600) || write_error_files(&j, 0600) ||
	    (f->per_model && write_file(&j, DBK_RENDER_MODELS_MAP, W_MODELS, 0600)) ||
	    write_file(&j, DBK_RENDER_HAPROXY_CFG, W_HAPROXY, 0600))
		goto out;
	agent_argv = dbk_render_agent_argv(f, &a, agent_path);
	if (!agent_argv) {
		dbk_launch_say("out of memory");
		goto out;
	}
	snprintf(cfg, sizeof(cfg), "%s/%s", dir, DBK_RENDER_HAPROXY_CFG);
	/* -db: stay in the foreground, whatever the configuration says. */
	char *haproxy_argv[] = { haproxy_path, "-db", "-f", cfg, NULL };
	snprintf(listen, sizeof(listen), "http://%s%s%s:%ld",
	         strchr(f->host, ':') && f->host[0] != '[' ? "[" : "", f->host[0] ? f->host : "*",
	         strchr(f->host, ':') && f->host[0] != '[' ? "]" : "", f->port);

	struct dbk_supervisor s;
	dbk_supervise_init(&s);
	s.agent.argv = agent_argv;
	s.agent.inherit = fds;
	s.agent.ninherit = 2;
	s.haproxy.argv = haproxy_argv;
	s.agent_ready = a.agent_admin + strlen("unix:");
	s.haproxy_ready = a.stats_socket;
	s.listen = listen;
	dbk_launch_say("runtime directory %s (agent's /state and /metrics on %s)", dir,
	               a.agent_admin);
	rc = dbk_supervise_run(&s);
out:
	dbk_render_argv_free(agent_argv);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	clean_run_dir(dir, created);
	return rc;
}

int main(int argc, char **argv)
{
	struct dbk_launch_flags f;
	char err[ERRLEN], agent_path[PATH_MAX];
	int rc;

	/* Before anything: a stop signal that comes early waits for the
	 * supervisor instead of killing us with the directory half made. */
	dbk_supervise_block();
	switch (dbk_flags_parse(&f, argc, argv, err, sizeof(err))) {
	case DBK_FLAGS_HELP:
		dbk_flags_help(stdout);
		dbk_flags_free(&f);
		return 0;
	case DBK_FLAGS_VERSION:
		printf("dbucket %s\n", DBK_VERSION);
		dbk_flags_free(&f);
		return 0;
	case DBK_FLAGS_ERROR:
		dbk_flags_usage(stderr);
		fprintf(stderr, "dbucket: error: %s\n", err);
		dbk_flags_free(&f);
		return 2;
	case DBK_FLAGS_OK: break;
	}
	if (!find_agent(f.agent, agent_path, sizeof(agent_path))) {
		if (f.agent || !f.print_config) {
			rc = f.agent ? 2 : 1;
			if (f.agent)
				dbk_launch_say("--agent %s: not an executable file", f.agent);
			else
				dbk_launch_say("dbucket-spoa not found beside dbucket, in ../sbin, "
				               "$PATH or "
				               "/usr/local/sbin: give --agent PATH");
			dbk_flags_free(&f);
			return rc;
		}
		/* --print-config only names it. */
		snprintf(agent_path, sizeof(agent_path), "/usr/local/sbin/dbucket-spoa");
	}
	if (f.print_config)
		rc = print_config(&f, agent_path);
	else
		rc = run(&f, agent_path);
	dbk_flags_free(&f);
	return rc;
}
