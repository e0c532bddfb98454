# Shared set-up for the end-to-end tests: free loopback ports, start and
# stop of dbucket-spoa and HAProxy by pid, request helpers.

# bats-support and bats-assert from BATS_LIB_PATH (bats defaults it to
# /usr/lib/bats, where Debian installs them).
bats_load_library bats-support
bats_load_library bats-assert

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${DBK_BUILD:-$REPO/build}

# Ports, waits and HAPROXY=/path/to/haproxy are the scripts' (contrib/lib.sh);
# the link to that HAProxy lives in this run's directory.
DBK_HAPROXY_BIN=$BATS_RUN_TMPDIR/haproxy-bin
# shellcheck source=contrib/lib.sh
. "$REPO/contrib/lib.sh"
DBK_WHO=${BATS_TEST_FILENAME##*/}

# Allocates the ports of one test's world and exports what haproxy.cfg
# reads from the environment.
dbk_env() {
	# One block of distinct ports: proxy, agent, completions, admin, stubs.
	local base
	base=$(dbk_ports 9)
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
	dbk_wait_port "$AGENT_PORT"
	dbk_wait_port "$ADMIN_PORT"
}

# The agent's /state (JSON) or /metrics.
agent_get() {
	curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT$1"
}

# A field of /state, e.g. state_field leases.
state_field() {
	agent_get /state | dbk_json_field "$1"
}

# A field of one server's entry in /state: server_field vllm0 usable.
server_field() {
	agent_get /state | jq -r --arg n "$1" --arg f "$2" '.servers[] | select(.name == $n) | .[$f]' 2>/dev/null
}

# wait_until SECONDS COMMAND [ARGS...]: contrib/lib.sh's bounded poll,
# saying on failure what it waited for.
wait_until() {
	dbk_wait_until "$@" && return 0
	echo "waited $1 s in vain for: ${*:2}" >&2
	return 1
}

# state_snapshot: keeps /state in $STATE; state_get NAME reads one field
# of it, so that several fields are read from one instant.
state_snapshot() {
	STATE=$(agent_get /state)
}
state_get() {
	dbk_json_field "$1" <<<"$STATE"
}

# snapshot_is NAME VALUE: a new snapshot, in which NAME is VALUE.
snapshot_is() {
	state_snapshot
	[ "$(state_get "$1")" = "$2" ]
}

state_is() { [ "$(state_field "$1")" = "$2" ]; }
state_ge() {
	local v
	v=$(state_field "$1")
	[ -n "$v" ] && [ "$v" -ge "$2" ]
}
server_is() { [ "$(server_field "$1" "$2")" = "$3" ]; }

# Waits (bounded, 10 s) until /state's field $1 equals $2.
wait_state() {
	dbk_wait_until 10 state_is "$1" "$2" && return 0
	echo "state field $1 is '$(state_field "$1")', wanted '$2'" >&2
	return 1
}

# Waits (bounded, 10 s) until /state's numeric field $1 is at least $2.
wait_state_ge() {
	dbk_wait_until 10 state_ge "$1" "$2" && return 0
	echo "state field $1 is '$(state_field "$1")', wanted at least $2" >&2
	return 1
}

# Waits (bounded, 10 s) until server $1's field $2 equals $3.
wait_server() {
	dbk_wait_until 10 server_is "$1" "$2" "$3" && return 0
	echo "server $1 field $2 is '$(server_field "$1" "$2")', wanted '$3'" >&2
	return 1
}

# wait_file FILE REGEX [SECONDS]: waits (bounded, default 15 s) until
# FILE has a line matching the extended REGEX.
wait_file() {
	wait_until "${3:-15}" grep -sqE -- "$2" "$1"
}

# Waits (bounded, 10 s) until the agent's log has a line matching $1.
wait_log() {
	wait_until 10 grep -sq -- "$1" "$BATS_TEST_TMPDIR/agent.log"
}

# has_lines FILE REGEX N: FILE has at least N lines matching the
# extended REGEX.
has_lines() {
	local c
	c=$(grep -scE -- "$2" "$1") || true
	((${c:-0} >= $3))
}

# prom_lint FILE: `promtool check metrics` on FILE; its exit code: 0
# clean, 1 not Prometheus text, 3 parsed but with lint findings (names,
# suffixes, HELP), which it prints.
prom_lint() {
	promtool check metrics <"$1"
}

# prom_parses FILE: FILE is Prometheus text, lint findings aside (vLLM's
# own metric names have colons, which the lint frowns on).
prom_parses() {
	local rc=0
	prom_lint "$1" || rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]
}

# A command on HAProxy's runtime API.
haproxy_cmd() {
	echo "$*" | socat -t 5 - "UNIX-CONNECT:$DBK_STATS_SOCKET"
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
	dbk_wait_port "$DBK_PORT"
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

# post FILE [CURL ARGS...]: POSTs FILE to the proxy; prints "status
# server bucket group redirected score" from the response.
post() {
	local f=$1
	shift
	curl -s -o /dev/null --max-time 10 -X POST -H 'Content-Type: application/json' \
		--data-binary "@$f" "$@" -D - "http://127.0.0.1:$DBK_PORT/v1/completions" | dbk_routing
}

# hold_request FILE MS: POSTs FILE in the background, which the test
# backends answer after MS milliseconds (X-Delay-Ms); HELD is curl's pid.
# Returns once the agent holds the request's lease (the only one).
hold_request() {
	curl -s -o /dev/null -X POST -H "X-Delay-Ms: $2" --data-binary "@$1" \
		"http://127.0.0.1:$DBK_PORT/v1/completions" &
	HELD=$!
	wait_state leases 1
}

# post_like FILE PATTERN: posts FILE (post) and keeps its summary in
# POSTED; succeeds when it matches the glob PATTERN.
post_like() {
	POSTED=$(post "$1")
	# shellcheck disable=SC2053 # a glob on purpose
	[[ $POSTED == $2 ]]
}

# The body sizes (bytes) of a sequence sent in a row under dynamic buckets
# (threshold 8192 tokens, four servers) in which both groups redirect at
# least once.
PARITY_SIZES=(3656 900 40000 15102 200 70000 33000 1200 131072 5000 500 250000 64 9000 20000 32800)

# parity_want: WANT gets the parity tool's decision for each request of
# PARITY_SIZES ("rI group server score"), dispatch only: none completes
# before the last is decided.
parity_want() {
	local plan=$BATS_TEST_TMPDIR/plan.jsonl i
	echo '{"config": {"servers": 4, "enable_dynamic_bucket": true, "server_group_threshold": 8192, "max_request_tokens": 131072}}' >"$plan"
	for i in "${!PARITY_SIZES[@]}"; do
		echo "{\"op\": \"dispatch\", \"id\": \"r$i\", \"body_bytes\": ${PARITY_SIZES[$i]}, \"max_tokens\": null, \"ignore_eos\": false}" >>"$plan"
	done
	run "$BUILD/dbucket-parity" --predict "$plan"
	assert_success
	mapfile -t WANT < <(printf '%s\n' "$output" | grep '^r')
	assert_equal "predictions: ${#WANT[@]}" "predictions: ${#PARITY_SIZES[@]}"
}
