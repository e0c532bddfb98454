/* Where the generated files, sockets and listeners are (render.h): a
 * run's runtime directory or production's fixed addresses, in HAProxy's
 * and in the agent's spelling. */
#include "render.h"

#include <string.h>

#include "lib/log.h"

bool dbk_render_path_ok(const char *path)
{
	size_t n = strlen(path);

	if (n < 2 || path[0] != '/' || n > DBK_RENDER_PATH - 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = path[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
		      c == '=' || c == '@' || c == '~'))
			return false;
	}
	return true;
}

static int bad_dir(const char *dir, char *err, size_t errlen)
{
	dbk_errf(err, errlen,
	         "'%s' cannot be used: want an absolute path of letters, digits and / . _ - + , = "
	         "@ ~ "
	         "(it goes into haproxy.cfg unquoted)",
	         dir);
	return -1;
}

int dbk_render_addrs_run(struct dbk_render_addrs *a, const char *dir, int completions_port,
                         char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!dbk_render_path_ok(dir))
		return bad_dir(dir, err, errlen);
	/* The longest socket name decides. */
	static const char *const socks[] = { DBK_RENDER_SPOA_SOCK, DBK_RENDER_ADMIN_SOCK,
		                             DBK_RENDER_STATS_SOCK, DBK_RENDER_PROM_SOCK };
	size_t name = 0;
	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++)
		if (strlen(socks[i]) > name)
			name = strlen(socks[i]);
	if (strlen(dir) + 1 + name > DBK_RENDER_SUN_PATH) {
		dbk_errf(err, errlen,
		         "runtime directory '%s' is too long for unix sockets (%zu bytes, at most "
		         "%zu): "
		         "give a shorter --runtime-dir",
		         dir, strlen(dir), (size_t)DBK_RENDER_SUN_PATH - 1 - name);
		return -1;
	}
	a->production = false;
	snprintf(a->spoe_conf, sizeof(a->spoe_conf), "%s/%s", dir, DBK_RENDER_SPOE_CONF);
	snprintf(a->errors_dir, sizeof(a->errors_dir), "%s", dir);
	snprintf(a->models_map, sizeof(a->models_map), "%s/%s", dir, DBK_RENDER_MODELS_MAP);
	snprintf(a->stats_socket, sizeof(a->stats_socket), "%s/%s", dir, DBK_RENDER_STATS_SOCK);
	snprintf(a->agent, sizeof(a->agent), "unix@%s/%s", dir, DBK_RENDER_SPOA_SOCK);
	if (completions_port <= 0 || completions_port > 65535) {
		dbk_errf(err, errlen, "completion port %d out of range", completions_port);
		return -1;
	}
	snprintf(a->completions, sizeof(a->completions), "127.0.0.1:%d", completions_port);
	snprintf(a->prom, sizeof(a->prom), "unix@%s/%s", dir, DBK_RENDER_PROM_SOCK);
	snprintf(a->agent_listen, sizeof(a->agent_listen), "unix:%s/%s", dir, DBK_RENDER_SPOA_SOCK);
	snprintf(a->agent_completions, sizeof(a->agent_completions), "127.0.0.1:%d",
	         completions_port);
	snprintf(a->agent_completions_udp, sizeof(a->agent_completions_udp), "udp@127.0.0.1:%d",
	         completions_port);
	snprintf(a->agent_admin, sizeof(a->agent_admin), "unix:%s/%s", dir, DBK_RENDER_ADMIN_SOCK);
	snprintf(a->agent_haproxy_socket, sizeof(a->agent_haproxy_socket), "unix:%s/%s", dir,
	         DBK_RENDER_STATS_SOCK);
	return 0;
}

int dbk_render_addrs_inherit(struct dbk_render_addrs *a, int tcp_fd, int udp_fd, char *err,
                             size_t errlen)
{
	if (tcp_fd < 0 || udp_fd < 0) {
		dbk_errf(err, errlen, "completion sockets not open");
		return -1;
	}
	snprintf(a->agent_completions, sizeof(a->agent_completions), "fd@%d", tcp_fd);
	snprintf(a->agent_completions_udp, sizeof(a->agent_completions_udp), "fd@%d", udp_fd);
	return 0;
}

int dbk_render_addrs_production(struct dbk_render_addrs *a, const char *dir, char *err,
                                size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!dbk_render_path_ok(dir))
		return bad_dir(dir, err, errlen);
	a->production = true;
	snprintf(a->spoe_conf, sizeof(a->spoe_conf), "%s/%s", dir, DBK_RENDER_SPOE_CONF);
	snprintf(a->errors_dir, sizeof(a->errors_dir), "%s", dir);
	snprintf(a->models_map, sizeof(a->models_map), "%s/%s", dir, DBK_RENDER_MODELS_MAP);
	snprintf(a->stats_socket, sizeof(a->stats_socket), "%s", DBK_RENDER_PROD_STATS_SOCKET);
	snprintf(a->agent, sizeof(a->agent), "%s", DBK_RENDER_PROD_AGENT);
	snprintf(a->completions, sizeof(a->completions), "%s", DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->prom, sizeof(a->prom), "%s", DBK_RENDER_PROD_PROM);
	snprintf(a->agent_listen, sizeof(a->agent_listen), "%s", DBK_RENDER_PROD_AGENT);
	snprintf(a->agent_completions, sizeof(a->agent_completions), "%s",
	         DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->agent_completions_udp, sizeof(a->agent_completions_udp), "udp@%s",
	         DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->agent_admin, sizeof(a->agent_admin), "%s", DBK_RENDER_PROD_ADMIN);
	snprintf(a->agent_haproxy_socket, sizeof(a->agent_haproxy_socket), "%s",
	         DBK_RENDER_PROD_STATS_SOCKET);
	return 0;
}
