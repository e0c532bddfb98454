#!/usr/bin/env bats
# Limits: each bound gives a clear log line and a counter, never a crash,
# and HAProxy balances alone whatever the agent refuses.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
}

metric() {
	agent_get /metrics | awk -v m="$1" '$1 == m { print $2 }'
}

@test "past --max-leases the agent stops answering routes; HAProxy balances alone" {
	start_agent --enable-dynamic-bucket --max-leases 2 --completion-listen none
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_success
	local i
	for ((i = 0; i < 5; i++)); do
		run curl -s -o /dev/null -D - -X POST --data-binary "@$BATS_TEST_TMPDIR/s.json" \
			"http://127.0.0.1:$DBK_PORT/v1/completions"
		assert_line --partial "200"
		assert_line --partial "x-dbucket-error: lease table full"
		refute_line --regexp "^x-dbucket-server: [^[:space:]]"
	done
	assert_equal "$(state_field leases)" 2
	assert_equal "$(metric dbucket_refused_total)" 5
	# One log line, not one per refusal.
	run grep 'event=route-refused' "$BATS_TEST_TMPDIR/agent.log"
	assert_equal "${#lines[@]}" 1
	assert_output --partial 'reason="lease table full"'
}

@test "a flood of completion lines for unknown ids is counted and costs bounded memory" {
	start_agent --enable-dynamic-bucket
	local pid_rss0 n=20000
	pid_rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status")
	# Octet-counted lines, as HAProxy's ring sends them, with ids the agent
	# never routed (bounded: n lines in one connection).
	awk -v n="$n" 'BEGIN {
		for (i = 0; i < n; i++) {
			l = sprintf("dbk1 flood-%d vllm0 vllm0 200 ---- 5 100 0 1796000000000", i)
			printf "%d %s", length(l), l
		}
	}' | socat -t 5 - "TCP:$DBK_COMPLETIONS"
	wait_state unknown_releases "$n"
	local rss1
	rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status")
	# Unknown ids take no lease; each is remembered as ended (so that the
	# second copy of its line is known for a duplicate) in a table capped
	# at DBK_BAL_MAX_BURIED ids that forgets the oldest. An id of this
	# size costs that table ~150 bytes (more under ASan's redzones):
	# anything near 400 bytes a line is a leak, not the table.
	[ $((rss1 - pid_rss0)) -lt $((n * 400 / 1024)) ] ||
		fail "RSS grew from $pid_rss0 to $rss1 kB for $n lines"
	assert_equal "$(state_field leases)" 0
	# Still routing.
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
}

@test "garbage on the completion link drops that connection only" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	printf 'GET / HTTP/1.0\r\n\r\n' | socat -t 2 - "TCP:$DBK_COMPLETIONS" || true
	wait_log 'event=completion-link-dropped'
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
	# HAProxy's own link still delivers.
	wait_state released 1
}
