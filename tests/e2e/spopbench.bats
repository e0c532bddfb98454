#!/usr/bin/env bats
# The SPOP benchmark tools (contrib/spopbench). dbucket-null-agent, the
# overhead benchmark's ceiling: behind the sample HAProxy it names its
# servers in turn, and it reads and drops completion lines by both of the
# sample's paths, ring and datagrams, so that an HAProxy in front of it
# logs as one in front of dbucket-spoa does. dbucket-spop-load, playing
# HAProxy: every NOTIFY answered by either agent, and with --release
# every lease dbucket-spoa took given back.

load helpers

setup() { dbk_env; }

teardown() {
	stop_null
	dbk_teardown
}

start_null() {
	"$BUILD/dbucket-null-agent" --listen "$DBK_AGENT" "$@" 2>"$BATS_TEST_TMPDIR/null.log" &
	NULL_PID=$!
	dbk_wait_port "$AGENT_PORT"
}

# Stops it by pid; its counters are then the last line of null.log.
stop_null() {
	if [ -n "${NULL_PID:-}" ]; then
		kill "$NULL_PID" 2>/dev/null
		wait "$NULL_PID" 2>/dev/null || true
		NULL_PID=
	fi
}

# The bytes waiting in the receive queue of the UDP socket bound to
# 127.0.0.1:$1 (/proc/net/udp, rx_queue in hex): 0 once the agent has
# read every datagram sent to it.
udp_drained() {
	local q
	q=$(awk -v a="$(printf '0100007F:%04X' "$1")" '$2 == a { split($5, q, ":"); print q[2] }' /proc/net/udp)
	[ -n "$q" ] && [ $((16#$q)) -eq 0 ]
}

# Whether no TCP connection to port $1 is still open on the agent's side
# (/proc/net/tcp: established, 01, or closed by the peer only, 08): the
# agent closes a ring link once it has read it to the end.
tcp_links_closed() {
	! awk -v p="$(printf ':%04X' "$1")" 'substr($2, length($2) - 4) == p && ($4 == "01" || $4 == "08") { f = 1 } END { exit !f }' /proc/net/tcp
}

@test "dbucket-null-agent answers HAProxy's NOTIFY naming its servers in turn" {
	start_null --server vllm1 --server vllm2
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/b.json"
	local got=() i
	for i in 1 2 3 4; do
		read -r status server _ < <(post "$BATS_TEST_TMPDIR/b.json")
		assert_equal "$status" 200
		got+=("$server")
	done
	assert_equal "${got[*]}" "vllm1 vllm2 vllm1 vllm2"
}

@test "dbucket-null-agent reads and drops completion lines by ring and by datagram" {
	start_null --completion-listen "$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS_UDP"
	local line="dbk1 id-1 vllm0 vllm0 200 ---- 5 2 0 1700000000000" i
	for i in 1 2 3; do
		printf '%s' "$line" >"/dev/udp/127.0.0.1/$COMPLETIONS_PORT"
	done
	wait_until 5 udp_drained "$COMPLETIONS_PORT"
	# One octet-counted frame by the ring, which socat closes once sent.
	local frame="${#line} $line"
	printf '%s' "$frame" | socat -t 5 - "TCP:$DBK_COMPLETIONS"
	wait_until 5 tcp_links_closed "$COMPLETIONS_PORT"
	stop_null
	run tail -n 1 "$BATS_TEST_TMPDIR/null.log"
	assert_output --partial "completion_links=1"
	assert_output --partial "completion_bytes=$((3 * ${#line} + ${#frame}))"
	assert_output --partial "completion_datagrams=3"
	# udp@ is for completions only, and says so.
	run "$BUILD/dbucket-null-agent" --listen "udp@127.0.0.1:$((AGENT_PORT + 100))"
	assert_failure
	assert_output --partial "udp@ is for completions only"
}

@test "dbucket-spop-load plays HAProxy to both agents; --release gives every lease back" {
	start_null --server vllm1
	run "$BUILD/dbucket-spop-load" --connect "$DBK_AGENT" --total 300 --connections 2 --depth 8
	assert_success
	assert_output --partial "decisions=300 "
	assert_output --partial " errors=0 "
	stop_null
	run tail -n 1 "$BATS_TEST_TMPDIR/null.log"
	assert_output --partial "notifies=300 "
	start_agent --enable-dynamic-bucket
	run "$BUILD/dbucket-spop-load" --connect "$DBK_AGENT" --total 300 --body-bytes 6000 \
		--release "$DBK_COMPLETIONS"
	assert_success
	assert_output --partial "decisions=300 "
	assert_output --partial " errors=0 "
	wait_state decisions 300
	wait_state leases 0
	# Nothing beyond this host.
	run "$BUILD/dbucket-spop-load" --connect 192.0.2.1:12345 --total 1
	assert_failure
	assert_output --partial "loopback"
}
