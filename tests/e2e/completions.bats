#!/usr/bin/env bats
# Load accounting from HAProxy's completion events: every lease taken is
# given back exactly once when its request ends.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
}

@test "every finished request releases its load: in-flight returns to exactly 0" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	local i
	for ((i = 0; i < 20; i++)); do
		post "$BATS_TEST_TMPDIR/s.json" >/dev/null
		post "$BATS_TEST_TMPDIR/l.json" >/dev/null
	done
	wait_state released 40
	assert_equal "$(state_field leases)" 0
	assert_equal "$(state_field decisions)" 40
	assert_equal "$(state_field unknown_releases)" 0
	run agent_get /state
	# Every server and bucket is back to exactly zero.
	refute_output --regexp '"inflight": [1-9]'
	refute_output --regexp '"load": [-1-9]'
}

@test "a request in flight loads its group; once it ends the next one stays home" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 3656 >"$BATS_TEST_TMPDIR/a.json"
	body_of_size 15102 >"$BATS_TEST_TMPDIR/b.json"
	# a is held 3 s by its backend: the short group carries its load.
	hold_request "$BATS_TEST_TMPDIR/a.json" 3000
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm2 0 1 1 3775.5"
	wait "$HELD"
	wait_state leases 0
	# Nothing in flight any more: b's twin stays in the short group.
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm0 0 0 0 3775.5"
}

@test "requests the agent did not route are counted, not released" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	run curl -s "http://127.0.0.1:$DBK_PORT/healthcheck"
	wait_state undecided 1
	assert_equal "$(state_field unknown_releases)" 0
}

@test "each completion line comes by the ring and as a datagram: the first copy releases, the second is a duplicate" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	local i
	for ((i = 0; i < 10; i++)); do
		post "$BATS_TEST_TMPDIR/s.json" >/dev/null
	done
	wait_state completion_duplicates 10
	assert_equal "$(state_field released)" 10
	assert_equal "$(state_field completions)" 10
	assert_equal "$(state_field completion_datagrams)" 10
	assert_equal "$(state_field completion_links)" 1
	assert_equal "$(state_field leases)" 0
	assert_equal "$(state_field unknown_releases)" 0
	assert_equal "$(state_field bad_completion_lines)" 0
	run agent_get /metrics
	assert_line "dbucket_completion_duplicates_total 10"
	# A request the agent did not route is counted once, not twice.
	curl -s -o /dev/null "http://127.0.0.1:$DBK_PORT/healthcheck"
	wait_state completion_duplicates 11
	assert_equal "$(state_field undecided)" 1
}

@test "/healthcheck answers as the reference does, counting usable servers" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	run curl -s "http://127.0.0.1:$DBK_PORT/healthcheck"
	assert_output '{"status": "ok", "server_instances": 4}'
}

@test "completion lines that arrive while the agent is away are delivered when it returns" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	# Hold a request, restart the agent under it: the new agent has no
	# lease for it and counts its completion as unknown, never negative.
	hold_request "$BATS_TEST_TMPDIR/s.json" 1500
	stop_agent
	start_agent --enable-dynamic-bucket
	wait "$HELD"
	wait_state unknown_releases 1
	assert_equal "$(state_field leases)" 0
	run agent_get /state
	refute_output --regexp '"load": -'
}
