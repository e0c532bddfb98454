#!/usr/bin/env bats
# Loopback ports for the tests and scripts (contrib/lib.sh): a port
# probed free and handed to a program that binds it later can be taken
# in between. dbk_ports claims what it picks, so that no other picker of
# ours (a test beside, a second pick before the first is bound) takes it;
# dbk_bind_run binds first and hands the sockets over (fd@N), so that
# nothing can.

load helpers

setup() {
	# A claims directory of this test's own, so that nothing else's
	# picks count here.
	export DBK_PORTS_DIR=$BATS_TEST_TMPDIR/claims
	PIDS=()
}

teardown() {
	local p
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null || true; done
	for p in ${PIDS[@]+"${PIDS[@]}"}; do wait "$p" 2>/dev/null || true; done
}

# A range of five ports no one listens on.
five_free() {
	local b
	b=$(DBK_PORTS_DIR=$BATS_TEST_TMPDIR/probe dbk_ports 5)
	export DBK_PORTS_LOW=$b DBK_PORTS_HIGH=$((b + 5))
}

@test "dbk_ports: a pick is claimed until its claimer exits; no two picks share a port" {
	five_free
	# Five picks of one port in a range of five (in a process of its own):
	# five ports, and a sixth pick finds none. Nothing listens on them: the
	# claims keep them for the programs they are for.
	run bash -c '. "$1/contrib/lib.sh"
		for i in 1 2 3 4 5; do dbk_ports 1; done; dbk_ports 1 || echo none' _ "$REPO"
	assert_success
	assert_equal "${#lines[@]}" 6
	assert_equal "${lines[5]}" none
	assert_equal "$(printf '%s\n' "${lines[@]:0:5}" | sort -u | grep -c .)" 5
	# That process has exited: its claims are gone, this one picks all five.
	run dbk_ports 5
	assert_success
	assert_output "$DBK_PORTS_LOW"
	# Now this one holds them, and another process finds none.
	run bash -c '. "$1/contrib/lib.sh"; dbk_ports 1' _ "$REPO"
	assert_failure
}

@test "dbk_bind_run: dbucket-spoa takes its listening sockets bound before it started (fd@N)" {
	local f=$BATS_TEST_TMPDIR/ports
	# SPOP, completions over TCP and UDP on one port, the admin endpoint.
	dbk_bind_run "$f" llul "$BUILD/dbucket-spoa" --listen fd@10 --completion-listen fd@11 \
		--completion-listen fd@12 --admin-listen fd@13 vllm0 2>"$BATS_TEST_TMPDIR/agent.log" &
	PIDS+=($!)
	dbk_bound_ports "$f"
	assert_equal "${#DBK_BOUND[@]}" 4
	assert_equal "${DBK_BOUND[1]}" "${DBK_BOUND[2]}"
	wait_until 5 dbk_in_use "${DBK_BOUND[3]}"
	run curl -s --max-time 5 "http://127.0.0.1:${DBK_BOUND[3]}/state"
	assert_success
	assert_equal "$(dbk_json_field mode <<<"$output")" plain
	dbk_in_use "${DBK_BOUND[0]}"
	dbk_in_use "${DBK_BOUND[1]}"
	grep -q 'event=listening for=completions addr=fd@12' "$BATS_TEST_TMPDIR/agent.log"
	# $! is the agent's pid (dbk_bind_run execs), the one to stop.
	assert_equal "$(ps -o comm= -p "${PIDS[0]}")" dbucket-spoa
}

# closed_down: HAProxy ($SOCK) has marked backend be's server "closed" down.
closed_down() {
	echo "show servers state be" | socat -t 5 - "UNIX-CONNECT:$SOCK" |
		awk '$4 == "closed" && $6 == 0 { ok = 1 } END { exit !ok }'
}

@test "dbk_bind_run: HAProxy serves on a socket bound before it started, and a bound port that does not listen is a server down" {
	local f=$BATS_TEST_TMPDIR/ports cfg=$BATS_TEST_TMPDIR/h.cfg
	cat >"$cfg" <<'EOF'
global
    stats socket "${SOCK}" level admin
defaults
    mode http
    timeout connect 500ms
    timeout client 5s
    timeout server 5s
frontend fe
    bind fd@10
    http-request return status 200 content-type text/plain string ok if { path /ok }
    default_backend be
backend be
    server closed "127.0.0.1:${CLOSED}" check inter 100ms fall 1
EOF
	# The closed port is held by a socket bound first (fd 11, never
	# listening): no other process can listen there while HAProxy runs.
	export SOCK=$BATS_TEST_TMPDIR/h.sock
	dbk_bind_run "$f" lb bash -c 'CLOSED=$(sed -n 2p "$2") exec haproxy -f "$1"' _ "$cfg" "$f" \
		2>"$BATS_TEST_TMPDIR/h.log" &
	PIDS+=($!)
	dbk_bound_ports "$f"
	wait_until 5 dbk_in_use "${DBK_BOUND[0]}"
	run curl -s --max-time 5 "http://127.0.0.1:${DBK_BOUND[0]}/ok"
	assert_output ok
	# The held port refuses: HAProxy's check marks the server down and a
	# request to it fails (503), where a stranger listening there would
	# have answered.
	wait_until 5 closed_down
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${DBK_BOUND[0]}/x"
	assert_output 503
}
