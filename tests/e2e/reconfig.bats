#!/usr/bin/env bats
# Live reconfiguration: POST /config and SIGHUP with --config change where
# the next request goes; requests in flight keep their leases.

load helpers

setup() {
	dbk_env
	# Changes over TCP need the admin token.
	echo reconfig-token >"$BATS_TEST_TMPDIR/token"
	AUTH=(-H 'Authorization: Bearer reconfig-token')
}

teardown() {
	dbk_teardown
}

@test "a live change of threshold through /config changes where the next request goes" {
	start_agent --enable-dynamic-bucket --admin-token-file "$BATS_TEST_TMPDIR/token"
	start_haproxy
	body_of_size 4000 >"$BATS_TEST_TMPDIR/b.json"
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm0 0 0 0 1000"
	wait_state leases 0
	run curl -s "${AUTH[@]}" -X POST "http://127.0.0.1:$ADMIN_PORT/config?server-group-threshold=500"
	assert_line "server-group-threshold = 500"
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm2 1 1 0 1000"
	run agent_get /metrics
	assert_line "dbucket_config_threshold_tokens 500"
	assert_line "dbucket_config_changes_total 1"
	run grep -c 'event=config-applied by=admin server-group-threshold=500' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 1
}

@test "an invalid live change is refused with 400 and changes nothing" {
	start_agent --enable-dynamic-bucket --admin-token-file "$BATS_TEST_TMPDIR/token"
	run curl -s -o "$BATS_TEST_TMPDIR/out" -w '%{http_code}' "${AUTH[@]}" -X POST \
		"http://127.0.0.1:$ADMIN_PORT/config?server-group-threshold=500000"
	assert_output 400
	run cat "$BATS_TEST_TMPDIR/out"
	assert_output --partial "must be below --max-request-tokens"
	run curl -s -w '%{http_code}' "${AUTH[@]}" -X POST "http://127.0.0.1:$ADMIN_PORT/config?sensitivity=1.5&nope=1"
	assert_output --partial "unknown setting 'nope'"
	run agent_get /config
	assert_line "server-group-threshold = 32768"
	assert_line "sensitivity = 1"
}

@test "SIGHUP rereads --config; a bad file is refused and the settings stay" {
	local conf=$BATS_TEST_TMPDIR/dbucket.conf
	echo "group-sizes = 1,3" >"$conf"
	start_agent --enable-dynamic-bucket --config "$conf"
	start_haproxy
	run agent_get /state
	assert_line --partial '{"name": "vllm1", "group": 1'
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	run post "$BATS_TEST_TMPDIR/l.json"
	assert_output "200 vllm1 1 1 0 35000"

	printf 'group-sizes = 2,2\nserver-group-threshold = 40000\n' >"$conf"
	kill -HUP "$AGENT_PID"
	wait_log 'event=config-applied by=file server-group-threshold=40000'
	run agent_get /state
	assert_line --partial '{"name": "vllm1", "group": 0'
	# 35000 tokens is short now.
	run post "$BATS_TEST_TMPDIR/l.json"
	assert_output "200 vllm0 0 0 0 35000"

	echo "sensitivity = -1" >"$conf"
	kill -HUP "$AGENT_PID"
	wait_log 'event=config-rejected'
	run agent_get /config
	assert_line "sensitivity = 1"
	assert_line "server-group-threshold = 40000"
}

@test "requests in flight keep their leases across a regroup, and release to zero" {
	start_agent --enable-dynamic-bucket --admin-token-file "$BATS_TEST_TMPDIR/token"
	start_haproxy
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	hold_request "$BATS_TEST_TMPDIR/l.json" 4000
	run curl -s "${AUTH[@]}" -X POST "http://127.0.0.1:$ADMIN_PORT/config?group-sizes=3,1"
	assert_success
	# vllm2 carries the held request into group 0.
	run agent_get /state
	assert_line --partial '{"name": "vllm2", "group": 0, "usable": true, "inflight": 1, "load": 35000,'
	assert_line --partial '{"min": 0, "max": 32768, "load": 35000}'
	wait "$HELD"
	wait_state leases 0
	run agent_get /state
	refute_output --regexp '"load": [-1-9]'
}
