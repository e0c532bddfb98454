# Shared set-up for the end-to-end tests: free loopback ports, start and
# stop of dbucket-spoa and HAProxy by pid, request helpers.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${DBK_BUILD:-$REPO/build}

# HAPROXY=/path/to/haproxy runs the suite against that binary: it comes
# first in PATH as "haproxy", so that the tests, the launcher and the
# scripts they start all find it, and a pid taken with $! is HAProxy's.
if [ -n "${HAPROXY:-}" ] && [ "$HAPROXY" != haproxy ]; then
	mkdir -p "$BATS_RUN_TMPDIR/haproxy-bin"
	ln -sfn "$(readlink -f "$HAPROXY")" "$BATS_RUN_TMPDIR/haproxy-bin/haproxy"
	case ":$PATH:" in
	*":$BATS_RUN_TMPDIR/haproxy-bin:"*) ;;
	*) PATH=$BATS_RUN_TMPDIR/haproxy-bin:$PATH ;;
	esac
fi

# Prints the first of $1 consecutive loopback TCP ports nothing listens
# on, below Linux's ephemeral range (32768+) so that no client socket takes
# one between this check and the bind. Bounded: 200 tries.
free_ports() {
	local n=${1:-1} base i k
	for ((i = 0; i < 200; i++)); do
		base=$((20000 + (RANDOM * 32768 + RANDOM) % (12000 - n)))
		for ((k = 0; k < n; k++)); do
			(exec 3<>"/dev/tcp/127.0.0.1/$((base + k))") 2>/dev/null && break
		done
		if [ "$k" -eq "$n" ]; then
			echo "$base"
			return 0
		fi
	done
	return 1
}

free_port() {
	free_ports 1
}

# Waits until something accepts on 127.0.0.1:$1 (at most ~5 s).
wait_port() {
	local i
	for ((i = 0; i < 250; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.02
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# Allocates the ports of one test's world and exports what haproxy.cfg
# reads from the environment.
dbk_env() {
	# One block of distinct ports: proxy, agent, completions, admin, stubs.
	local base
	base=$(free_ports 9)
	DBK_PORT=$base
	AGENT_PORT=$((base + 1))
	COMPLETIONS_PORT=$((base + 2))
	ADMIN_PORT=$((base + 3))
	export DBK_BIND=127.0.0.1:$DBK_PORT
	export DBK_AGENT=127.0.0.1:$AGENT_PORT
	export DBK_COMPLETIONS=127.0.0.1:$COMPLETIONS_PORT
	export DBK_COMPLETIONS_UDP=127.0.0.1:$COMPLETIONS_PORT
	export DBK_STATS_SOCKET=$BATS_TEST_TMPDIR/haproxy.sock
	export DBK_STATS_BIND=127.0.0.1:$((base + 8))
	export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
	# The shipped 50 ms decision budget is for a dedicated machine; here
	# sanitizers and other jobs share two cores, and a late answer would
	# make HAProxy balance alone and the test read it as a wrong route.
	export DBK_SPOE_PROCESSING=2s DBK_SPOE_HELLO=2s
	export DBK_DEBUG_HEADERS=1
	export DBK_TEST_LUA=$REPO/tests/e2e/backend.lua
	local i
	for i in 0 1 2 3; do
		export "DBK_STUB$i=$((base + 4 + i))"
		export "DBK_VLLM$i=127.0.0.1:$((base + 4 + i))"
	done
}

# start_agent ARGS...: dbucket-spoa on $AGENT_PORT with the four test
# servers, extra ARGS first. It takes completion lines by both of the
# sample's paths, the ring (TCP) and datagrams (UDP).
start_agent() {
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "127.0.0.1:$ADMIN_PORT" \
		"$@" vllm0 vllm1 vllm2 vllm3 \
		2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	wait_port "$AGENT_PORT"
	wait_port "$ADMIN_PORT"
}

# The agent's /state (JSON) or /metrics.
agent_get() {
	curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT$1"
}

# A field of /state, e.g. state_field leases.
state_field() {
	agent_get /state | grep -o "\"$1\": *[^,}]*" | head -n 1 | cut -d: -f2 | tr -d ' '
}

# Waits (bounded, ~10 s) until /state's numeric field $1 is at least $2.
wait_state_ge() {
	local i v
	for ((i = 0; i < 500; i++)); do
		v=$(state_field "$1")
		[ -n "$v" ] && [ "$v" -ge "$2" ] && return 0
		sleep 0.02
	done
	echo "state field $1 is '$v', wanted at least $2" >&2
	return 1
}

# A field of one server's line in /state: server_field vllm0 usable.
server_field() {
	agent_get /state | grep "\"name\": \"$1\"" | grep -o "\"$2\": *[^,}]*" | cut -d: -f2 | tr -d ' "'
}

# Waits (bounded, ~10 s) until server $1's field $2 equals $3.
wait_server() {
	local i v
	for ((i = 0; i < 500; i++)); do
		v=$(server_field "$1" "$2")
		[ "$v" = "$3" ] && return 0
		sleep 0.02
	done
	echo "server $1 field $2 is '$v', wanted '$3'" >&2
	return 1
}

# Waits (bounded, ~10 s) until the agent's log has a line matching $1.
wait_log() {
	local i
	for ((i = 0; i < 500; i++)); do
		grep -q -- "$1" "$BATS_TEST_TMPDIR/agent.log" && return 0
		sleep 0.02
	done
	echo "no '$1' in agent.log" >&2
	return 1
}

# A command on HAProxy's runtime API.
haproxy_cmd() {
	echo "$*" | socat -t 5 - "UNIX-CONNECT:$DBK_STATS_SOCKET"
}

# Waits (bounded, ~10 s) until /state's field $1 equals $2.
wait_state() {
	local i v
	for ((i = 0; i < 500; i++)); do
		v=$(state_field "$1")
		[ "$v" = "$2" ] && return 0
		sleep 0.02
	done
	echo "state field $1 is '$v', wanted '$2'" >&2
	return 1
}

stop_agent() {
	if [ -n "${AGENT_PID:-}" ]; then
		kill "$AGENT_PID" 2>/dev/null
		wait "$AGENT_PID" 2>/dev/null
		AGENT_RC=$?
		AGENT_PID=
	fi
}

# HAProxy with the repository's configuration plus the test backends, in
# the foreground so that its log lands in haproxy.log.
start_haproxy() {
	haproxy -f "$REPO/haproxy/haproxy.cfg" -f "$REPO/tests/e2e/backends.cfg" \
		2>>"$BATS_TEST_TMPDIR/haproxy.log" &
	HAPROXY_PID=$!
	wait_port "$DBK_PORT"
}

stop_haproxy() {
	if [ -n "${HAPROXY_PID:-}" ]; then
		kill "$HAPROXY_PID" 2>/dev/null
		wait "$HAPROXY_PID" 2>/dev/null
		HAPROXY_PID=
	fi
}

dbk_teardown() {
	stop_haproxy
	stop_agent
	if [ -n "${BATS_TEST_COMPLETED:-}" ]; then return 0; fi
	echo "--- agent.log" >&3
	tail -n 30 "$BATS_TEST_TMPDIR/agent.log" >&3 2>/dev/null || true
	echo "--- haproxy.log" >&3
	tail -n 30 "$BATS_TEST_TMPDIR/haproxy.log" >&3 2>/dev/null || true
}

# A completions body of exactly $1 bytes, with optional extra JSON fields
# in $2 (e.g. '"max_tokens":100,'): the prompt is padded to fit.
body_of_size() {
	local size=$1 extra=${2:-}
	local head="{${extra}\"model\":\"m\",\"prompt\":\""
	local tail='"}'
	local pad=$((size - ${#head} - ${#tail}))
	[ "$pad" -ge 0 ] || { echo "body_of_size: $size too small" >&2; return 1; }
	printf '%s' "$head"
	head -c "$pad" /dev/zero | tr '\0' 'a'
	printf '%s' "$tail"
}

# post FILE: POSTs FILE to the proxy; prints "status server bucket group
# redirected score" from the response.
post() {
	curl -s -o /dev/null --max-time 10 -X POST -H 'Content-Type: application/json' \
		--data-binary "@$1" -D - "http://127.0.0.1:$DBK_PORT/v1/completions" |
		tr -d '\r' | awk '
			NR == 1 { status = $2 }
			tolower($1) == "x-served-by:" { srv = $2 }
			tolower($1) == "x-dbucket-bucket:" { b = $2 }
			tolower($1) == "x-dbucket-group:" { g = $2 }
			tolower($1) == "x-dbucket-redirected:" { r = $2 }
			tolower($1) == "x-dbucket-score:" { s = $2 }
			END { print status, srv, b, g, r, s }'
}
