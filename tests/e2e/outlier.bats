#!/usr/bin/env bats
# A server that fails its requests while its health check and /metrics
# stay fine, a sleeping vLLM engine, and a request id with spaces and
# quotes: real HAProxy, the sample configuration, four vLLM stubs.
#
# HAProxy's own layer (observe layer7 ... on-error mark-down) is set to
# on-error fastinter here (a copy of the sample), which only speeds its
# health checks up: what is measured is the agent's ejection alone.

load stubs

setup() {
	stubs_setup
	CFG=$BATS_TEST_TMPDIR/haproxy.cfg
	sed 's/ on-error mark-down$/ on-error fastinter/' "$REPO/haproxy/haproxy.cfg" >"$CFG"
	grep -q 'on-error fastinter' "$CFG"
	LOAD=$REPO/contrib/load-requests.sh
	BODY=$BATS_TEST_TMPDIR/body.json
	completion_body 4 false 40 >"$BODY"
}

teardown() {
	stubs_teardown
}

# agent_up: HAProxy's SPOE backend has the agent UP (its check passed),
# so that requests are decided by the agent from the first.
agent_up() {
	haproxy_cmd "show stat" | awk -F, '$1 == "dbucket-agents" && $2 == "agent1" { print $18 }' |
		grep -q '^UP'
}

# world POLICY FAULT0 FAULT1 FAULT2 FAULT3 [AGENT ARGS...]: stub vllmI
# with --completion-fault FAULTi (none, 500, 500:0.5), every stub
# scraped, the agent under POLICY with short ejections (DBK_OUTLIER_ARGS
# set empty runs an agent that has no such flags: today's main), HAProxy.
world() {
	local policy=$1 i
	local -a faults=("$2" "$3" "$4" "$5") sa=() oa
	read -ra oa <<<"${DBK_OUTLIER_ARGS---outlier-base-ejection 2000 --outlier-max-ejection 4000}"
	shift 5
	for i in 0 1 2 3; do
		STUB_ARGS="--completion-fault ${faults[i]}" start_stub "$i" 10 || return 1
		sa+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}")
	done
	start_agent --policy "$policy" --haproxy-socket "unix:$DBK_STATS_SOCKET" "${oa[@]}" \
		"${sa[@]}" "$@"
	start_haproxy_cfg "$CFG"
	wait_until 10 agent_up
	wait_state runtime_api_up true
}

# start_haproxy_cfg FILE: HAProxy with FILE (a copy of the sample).
start_haproxy_cfg() {
	haproxy -f "$1" 2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
}

# load N CONC OUT: N requests from CONC clients, one line each in OUT
# (contrib/load-requests.sh).
load_run() {
	"$LOAD" "http://127.0.0.1:$DBK_PORT/v1/completions" "$BODY" "$1" "$2" >"$3"
	[ "$(wc -l <"$3")" -eq "$1" ]
}

# log_ms EVENT [N]: the wall-clock ms of the agent's Nth (default 1st)
# log line of EVENT, empty when none.
log_ms() {
	local ts
	ts=$(grep "event=$1 " "$BATS_TEST_TMPDIR/agent.log" | sed -n "${2:-1}p" |
		sed -E 's/^ts=([^ ]+) .*/\1/')
	[ -n "$ts" ] && date -d "$ts" +%s%3N
}

# The 500 stub: detected within a few requests, nothing failed by it
# afterwards but the half-open probes, back within its back-off once
# healthy. Prints its figures (for BENCHMARKS.md).
failing_server() {
	local out=$BATS_TEST_TMPDIR/load.txt
	completion_body 64 false 40 >"$BODY"
	world "$1" 500 none none none
	load_run 300 4 "$out"
	local ej first total failed before_n before_f after_f returns drawn
	# Never ejected (today's main): the figures are the whole run's.
	ej=$(log_ms server-ejected) || ej=
	ej=${ej:-99999999999999}
	first=$(sort -n "$out" | head -n 1 | cut -d' ' -f1)
	total=$(wc -l <"$out")
	failed=$(awk '$3 != 200' "$out" | wc -l)
	drawn=$(awk '$4 == "vllm0"' "$out" | wc -l)
	before_n=$(awk -v e="$ej" '$2 <= e' "$out" | wc -l)
	before_f=$(awk -v e="$ej" '$2 <= e && $3 != 200' "$out" | wc -l)
	after_f=$(awk -v e="$ej" '$2 > e && $3 != 200' "$out" | wc -l)
	returns=$(grep -c 'event=server-returned server=vllm0' "$BATS_TEST_TMPDIR/agent.log") || true
	echo "# $1: requests=$total failed=$failed served_by_vllm0=$drawn detect_ms=$((ej - first)) detect_requests=$before_n failed_before=$before_f failed_after=$after_f half_open_returns=$returns" >&3
	grep -q 'event=server-ejected server=vllm0 reason=consecutive last=http-500' \
		"$BATS_TEST_TMPDIR/agent.log" || fail "vllm0 was never ejected"
	# Every failure is vllm0's; after its ejection only the half-open
	# probes (one or two each, four clients) and what was in flight.
	[ "$(awk '$3 != 200 && $4 != "vllm0"' "$out" | wc -l)" -eq 0 ]
	((before_n <= 40)) || fail "detected after $before_n requests"
	((after_f <= 4 + 2 * returns)) || fail "$after_f failures after the ejection, $returns returns"
	((failed * 10 < total)) || fail "$failed of $total requests failed"
	[ "$(agent_get /metrics | awk '$1 == "dbucket_outlier_ejections_total" { print $2 }')" -ge 1 ]
	[ "$(agent_get /metrics | awk '$1 == "dbucket_server_failures_total{server=\"vllm0\"}" { print $2 }')" -ge 5 ]

	# Healthy again: back within its back-off (at most 4 s here), then
	# it serves and closes.
	curl -s -X POST "http://127.0.0.1:${STUB_PORT[0]}/stub/fault?completion=none" >/dev/null
	agent_get /state | jq -e '.outlier.servers[0].state != "in"' >/dev/null
	wait_until 8 back_in_rotation
}

# back_in_rotation: a few requests, of which vllm0 served one, and the
# agent has it closed again (two successes after its half-open return).
back_in_rotation() {
	load_run 8 4 "$BATS_TEST_TMPDIR/after.txt" &&
		awk '$3 == 200 && $4 == "vllm0"' "$BATS_TEST_TMPDIR/after.txt" | grep -q . &&
		[ "$(agent_get /state | jq -r '.outlier.servers[0].state')" = in ]
}

@test "outlier: a server answering 500 is ejected and comes back, under --policy reference" {
	failing_server reference
}

@test "outlier: a server answering 500 is ejected and comes back, under --policy ttft" {
	failing_server ttft
}

@test "outlier: a server failing half its requests is ejected by the ratio rule" {
	world reference 500:0.5 none none none
	load_run 200 4 "$BATS_TEST_TMPDIR/load.txt"
	grep -q 'event=server-ejected server=vllm0 reason=ratio' "$BATS_TEST_TMPDIR/agent.log"
	refute grep -q 'event=server-ejected server=vllm[123]' "$BATS_TEST_TMPDIR/agent.log"
}

@test "outlier: when every server fails, ejection never empties the fleet" {
	world reference 500 500 500 500
	load_run 200 4 "$BATS_TEST_TMPDIR/load.txt"
	local n
	n=$(grep -c 'event=server-ejected ' "$BATS_TEST_TMPDIR/agent.log") || true
	((n >= 2)) || fail "only $n ejections"
	# 50% of four: two at once, never more.
	refute grep -qE 'event=server-ejected .* ejected=([3-9]|[1-9][0-9])' "$BATS_TEST_TMPDIR/agent.log"
	[ "$(agent_get /metrics | awk '$1 == "dbucket_outlier_capped_total" { print $2 }')" -ge 1 ]
	# Every request still reached a server (its 500, not HAProxy's 503).
	[ "$(awk '$4 == "-"' "$BATS_TEST_TMPDIR/load.txt" | wc -l)" -eq 0 ]
	[ "$(agent_get /state | jq '[.servers[] | select(.usable)] | length')" -ge 2 ]
}

@test "sleep: a sleeping engine is not chosen, and is chosen again once awake" {
	world reference none none none none
	completion_body 200 false 40 >"$BODY"
	curl -s -X POST "http://127.0.0.1:${STUB_PORT[1]}/sleep?level=1" >/dev/null
	[ "$(curl -s "http://127.0.0.1:${STUB_PORT[1]}/is_sleeping")" = '{"is_sleeping":true}' ]
	wait_log 'event=server-asleep server=vllm1'
	server_is vllm1 usable false
	agent_get /metrics | grep -qx 'dbucket_server_asleep{server="vllm1"} 1'
	load_run 40 4 "$BATS_TEST_TMPDIR/asleep.txt"
	[ "$(awk '$5 == "vllm1" || $4 == "vllm1" || $3 != 200' "$BATS_TEST_TMPDIR/asleep.txt" | wc -l)" -eq 0 ]
	[ "$(awk '$5 != "-"' "$BATS_TEST_TMPDIR/asleep.txt" | wc -l)" -eq 40 ]

	curl -s -X POST "http://127.0.0.1:${STUB_PORT[1]}/wake_up" >/dev/null
	wait_log 'event=server-awake server=vllm1'
	server_is vllm1 usable true
	load_run 40 4 "$BATS_TEST_TMPDIR/awake.txt"
	awk '$3 == 200 && $4 == "vllm1" && $5 == "vllm1"' "$BATS_TEST_TMPDIR/awake.txt" | grep -q .
}

@test "completion id with spaces and quotes: released by its completion line, not the TTL" {
	local i
	for i in 0 1 2 3; do start_stub "$i" 10 || return 1; done
	start_agent --haproxy-socket "unix:$DBK_STATS_SOCKET"
	# The sample, with the unique id taken from a client's header.
	sed 's/^    unique-id-format .*/    unique-id-format "%[req.hdr(x-test-id)]"/' \
		"$REPO/haproxy/haproxy.cfg" >"$BATS_TEST_TMPDIR/id.cfg"
	grep -q 'req.hdr(x-test-id)' "$BATS_TEST_TMPDIR/id.cfg"
	start_haproxy_cfg "$BATS_TEST_TMPDIR/id.cfg"
	wait_until 10 agent_up
	local id='sess 1 "quoted" \back] end'
	run curl -s -o /dev/null -w '%{http_code} %header{x-dbucket-server}' -X POST \
		-H "X-Test-Id: $id" -H 'Content-Type: application/json' --data-binary "@$BODY" \
		"http://127.0.0.1:$DBK_PORT/v1/completions"
	assert_output --regexp '^200 vllm[0-3]$'
	# Released by its line within a second or two, not at --lease-ttl (660 s).
	wait_state leases 0
	wait_state completions 1
	assert_equal "$(state_field unknown_releases) $(state_field expired)" "0 0"
	grep -qF 'dbk1 "sess 1 \"quoted\" \\back\] end" vllm' "$BATS_TEST_TMPDIR/haproxy.log"
}

@test "outlier: forged completion lines (ids of no live lease) eject nothing" {
	for i in 0 1 2 3; do start_stub "$i" 10 || return 1; done
	start_agent
	local k now
	now=$(date +%s%3N)
	for k in $(seq 1 20); do
		printf 'dbk1 forged-%d vllm0 vllm0 500 ---- 1 0 0 %s' "$k" "$now" \
			>"/dev/udp/127.0.0.1/$COMPLETIONS_PORT"
	done
	wait_state completions 20
	assert_equal "$(agent_get /metrics | awk '$1 == "dbucket_outlier_ejections_total" { print $2 }')" 0
	assert_equal "$(agent_get /state | jq '.outlier.servers[0].failures')" 0
	server_is vllm0 usable true
}
