#!/usr/bin/env bats
# The agent follows HAProxy's runtime API: server states (DOWN, MAINT and
# DRAIN servers are not chosen), server discovery, leaked-lease repair.
# The backend's changing list: fleet.bats.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
}

# status server bucket group redirected score
@test "a server in MAINT is not chosen, and is chosen again once READY" {
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy
	wait_state runtime_api_up true
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	haproxy_cmd "set server vllm/vllm0 state maint"
	wait_server vllm0 usable false
	assert_equal "$(server_field vllm0 haproxy_state)" maint
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm1 0 0 0 75"
	haproxy_cmd "set server vllm/vllm0 state ready"
	wait_server vllm0 usable true
	wait_state leases 0
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
}

@test "a server in DRAIN gets no new requests from the agent (use-server alone would send them)" {
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy
	wait_state runtime_api_up true
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	haproxy_cmd "set server vllm/vllm2 state drain"
	wait_server vllm2 usable false
	assert_equal "$(server_field vllm2 haproxy_state)" drain
	run post "$BATS_TEST_TMPDIR/l.json"
	assert_output "200 vllm3 1 1 0 35000"
	haproxy_cmd "set server vllm/vllm2 state ready"
	wait_server vllm2 usable true
}

@test "a server HAProxy marks DOWN is not chosen; a whole group down sends its requests to the other group" {
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy
	wait_state runtime_api_up true
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	haproxy_cmd "set server vllm/vllm0 health down"
	haproxy_cmd "set server vllm/vllm1 health down"
	wait_server vllm0 usable false
	wait_server vllm1 usable false
	assert_equal "$(server_field vllm0 haproxy_state)" down
	run post "$BATS_TEST_TMPDIR/s.json"
	# Bucket 0 by length, group 1 because group 0 has no usable server.
	assert_output "200 vllm2 0 1 1 75"
}

@test "with --haproxy-socket and no names, the agent reads the servers from HAProxy, in order" {
	start_haproxy
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--admin-listen "127.0.0.1:$ADMIN_PORT" --enable-dynamic-bucket \
		--haproxy-socket "$DBK_STATS_SOCKET" 2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$ADMIN_PORT"
	run agent_get /state
	assert_line --partial '{"name": "vllm0", "group": 0'
	assert_line --partial '{"name": "vllm3", "group": 1'
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	run post "$BATS_TEST_TMPDIR/l.json"
	assert_output "200 vllm2 1 1 0 35000"
}

@test "servers named in another order than HAProxy's are followed by name" {
	start_haproxy
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--admin-listen "127.0.0.1:$ADMIN_PORT" --haproxy-socket "$DBK_STATS_SOCKET" \
		--poll-interval 100 vllm1 vllm0 vllm2 vllm3 2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$ADMIN_PORT"
	haproxy_cmd "set server vllm/vllm0 state maint"
	wait_server vllm0 usable false
	assert_equal "$(server_field vllm1 usable)" true
	assert_equal "$(server_field vllm0 slot)" 1
	run grep -c 'event=backend-mismatch' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 0
}

@test "leases whose completion never comes are reclaimed from HAProxy's session counts" {
	# No completion link: every lease would leak without the runtime API.
	start_agent --enable-dynamic-bucket --completion-listen none \
		--haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 --reclaim-after 1
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	local i
	for ((i = 0; i < 6; i++)); do post "$BATS_TEST_TMPDIR/s.json" >/dev/null; done
	assert_equal "$(state_field decisions)" 6
	wait_state leases 0
	assert_equal "$(state_field reclaimed)" 6
	assert_equal "$(state_field expired)" 0
}

@test "with the runtime API unreachable the agent keeps routing and says so" {
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$BATS_TEST_TMPDIR/nowhere.sock" \
		--poll-interval 100
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
	assert_equal "$(state_field runtime_api_up)" false
	# Said once HAProxy had its start-up grace (5 s) to answer, and once.
	wait_log 'event=runtime-api-unreachable'
	run grep -c 'event=runtime-api-unreachable' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 1
}

@test "following HAProxy's backend, live group sizes count its servers, not the agent's spare slots" {
	# Changes through the admin endpoint's unix socket.
	local admin=$BATS_TEST_TMPDIR/admin.sock
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 \
		--admin-listen "unix:$admin"
	start_haproxy
	wait_state runtime_api_up true
	run curl -s -o /dev/null -w '%{http_code}' --unix-socket "$admin" -X POST \
		"http://localhost/config?group-sizes=3,1"
	assert_output 200
	assert_equal "$(server_field vllm2 group)" 0
	assert_equal "$(server_field vllm3 group)" 1
	run curl -s -o /dev/null -w '%{http_code}' --unix-socket "$admin" -X POST \
		"http://localhost/config?group-sizes=60,5"
	assert_output 400
}
