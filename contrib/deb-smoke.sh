#!/usr/bin/env bash
# Smoke test of the installed Debian package (`make deb`, then dpkg -i):
# what the package put on the system, then end-to-end tests run against
# the installed binaries (/usr/sbin/dbucket-spoa, /usr/bin/dbucket). The
# stubs and test tools still come from BUILD_DIR. Ends with the line
# "N passed, N failed".
#   contrib/deb-smoke.sh [BUILD_DIR]     BUILD_DIR defaults to build
set -u
cd "$(dirname "$0")/.."
build=${1:-build}

passed=0
failed=0
check() { # check NAME CMD...
	local name=$1
	shift
	if "$@" >/dev/null 2>&1; then
		passed=$((passed + 1)); echo "ok - $name"
	else
		failed=$((failed + 1)); echo "not ok - $name"
	fi
}

version=$(sed -n 's/^#define DBK_VERSION "\(.*\)"/\1/p' agent/lib/version.h)
[ -n "$version" ] || { echo "deb-smoke: no DBK_VERSION in agent/lib/version.h" >&2; exit 2; }
check "dbucket $version is installed" \
	test "$(dpkg-query -W -f='${Status} ${Version}' dbucket 2>/dev/null)" = "install ok installed $version"
check "dbucket-spoa --version says $version" \
	test "$(/usr/sbin/dbucket-spoa --version)" = "dbucket-spoa $version"
check "the system user dbucket exists, with no shell" \
	sh -c 'getent passwd dbucket | grep -q ":/usr/sbin/nologin$"'
if getent group haproxy >/dev/null; then
	check "dbucket is in group haproxy (its runtime API socket)" sh -c 'id -nG dbucket | grep -qw haproxy'
fi
check "man dbucket-spoa and man dbucket are found" sh -c 'man -w dbucket-spoa && man -w dbucket'
# The pages describe this install: the package's paths and user, not
# the /usr/local install and user haproxy they are written for.
man_pages_name_the_package() {
	local text
	text=$(zcat -f "$(man -w dbucket-spoa)" "$(man -w dbucket)") || return 1
	grep -qF '/usr/share/dbucket/' <<<"$text" &&
		grep -qF '/lib/systemd/system/dbucket\-spoa.service' <<<"$text" &&
		grep -q 'as user dbucket' <<<"$text" &&
		! grep -qE '/usr/local/(share|lib)|as user haproxy' <<<"$text"
}
check "the man pages name the package's paths and user (/usr/share/dbucket, /lib/systemd/system, dbucket)" \
	man_pages_name_the_package
check "the samples, rules and dashboard are the repository's" sh -c \
	'cmp haproxy/haproxy.cfg /usr/share/dbucket/haproxy.cfg &&
	 cmp haproxy/dbucket-priority.lua /usr/share/dbucket/dbucket-priority.lua &&
	 cmp haproxy/dbucket.spoe.conf /etc/haproxy/dbucket.spoe.conf &&
	 diff -r haproxy/errors /etc/haproxy/dbucket-errors &&
	 cmp contrib/prometheus/dbucket.rules.yml /usr/share/dbucket/prometheus/dbucket.rules.yml &&
	 cmp contrib/grafana/dbucket.json /usr/share/dbucket/grafana/dbucket.json'
if command -v haproxy >/dev/null; then
	# Every file the sample names by default (the SPOE file, the error
	# files) is where the package put it.
	check "haproxy -c accepts the installed sample as it is" \
		env -u DBK_ERRORS_DIR -u DBK_SPOE_CONF haproxy -c -f /usr/share/dbucket/haproxy.cfg
	check "... and with the installed priority filter loaded (DBK_PRIORITY_LUA)" \
		env -u DBK_ERRORS_DIR -u DBK_SPOE_CONF DBK_PRIORITY_LUA=/usr/share/dbucket/dbucket-priority.lua \
		haproxy -c -f /usr/share/dbucket/haproxy.cfg
fi
check "the unit runs /usr/sbin/dbucket-spoa as dbucket" sh -c \
	'grep -q "^ExecStart=/usr/sbin/dbucket-spoa " /lib/systemd/system/dbucket-spoa.service &&
	 grep -q "^User=dbucket" /lib/systemd/system/dbucket-spoa.service.d/debian.conf'
check "what the package runs is --policy ttft (the unit's default and /etc/default/dbucket-spoa)" sh -c \
	'grep -q "^Environment=\"DBUCKET_SPOA_OPTS=--policy ttft\"$" /lib/systemd/system/dbucket-spoa.service &&
	 grep -q "^DBUCKET_SPOA_OPTS=\"--policy ttft\"$" /etc/default/dbucket-spoa'
if command -v systemd-analyze >/dev/null; then
	check "systemd-analyze verify accepts the unit" \
		systemd-analyze verify /lib/systemd/system/dbucket-spoa.service
fi

# The installed agent, dropped to the dbucket user, serves its admin
# endpoint (status page included); stopped by pid.
run_as_dbucket() {
	local port pid rc=1 i
	port=$((20000 + RANDOM % 10000))
	/usr/sbin/dbucket-spoa --user dbucket --group dbucket --listen "127.0.0.1:$((port + 1))" \
		--completion-listen none --admin-listen "127.0.0.1:$port" vllm0 vllm1 2>/dev/null &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		if curl -s --max-time 2 "http://127.0.0.1:$port/" | grep -q '<title>dbucket</title>' &&
			[ "$(ps -o user= -p "$pid")" = dbucket ]; then
			rc=0
			break
		fi
		sleep 0.05
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return $rc
}
check "the installed agent runs as dbucket and serves its status page" run_as_dbucket

# The e2e suites that drive the agent and the launcher, on the installed
# binaries: BUILD_DIR's files, with those two replaced by links.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for f in "$PWD/$build"/*; do ln -s "$f" "$bin/"; done
ln -sfn /usr/sbin/dbucket-spoa "$bin/dbucket-spoa"
ln -sfn /usr/bin/dbucket "$bin/dbucket"
log=$bin/bats.log
DBK_BUILD=$bin bats --tap tests/e2e/routing.bats tests/e2e/status_page.bats >"$log" 2>&1
DBK_BUILD=$bin bats --tap --filter 'four vLLM stubs|by default the agent runs --policy ttft' \
	tests/e2e/launcher.bats >>"$log" 2>&1
sed 's/^/  /' "$log"
passed=$((passed + $(grep -cE '^ok ' "$log")))
failed=$((failed + $(grep -cE '^not ok ' "$log")))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
