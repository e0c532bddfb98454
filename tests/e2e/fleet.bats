#!/usr/bin/env bats
# A backend that changes under streaming load, HAProxy 2.6 and vLLM stubs:
# servers added and deleted through the runtime API, a server-template
# filled and emptied by a real DNS server (Debian's dnsmasq on loopback),
# a reload with another list. Each time: no client request fails, no
# lease is left, and the agent's /state names exactly HAProxy's servers
# within a few polls. And HAProxy's weights: 10/3 on two stubs shares the
# requests as the weights do under least load.

load stubs

POLL_MS=250
BODY_TOKENS=24

setup() {
	stubs_setup
	DNS_PID=
	completion_body "$BODY_TOKENS" true >"$BATS_TEST_TMPDIR/body.json"
}

teardown() {
	touch "$BATS_TEST_TMPDIR/stop"
	[ -n "${DNS_PID:-}" ] && { kill "$DNS_PID" 2>/dev/null; wait "$DNS_PID" 2>/dev/null; }
	stubs_teardown
}

# fleet_cfg OUT SERVERS [SECTION]: haproxy/haproxy.cfg with backend vllm's
# server lines replaced by SERVERS, SECTION appended, and the stats
# socket handing its listeners over on reload (haproxy -x).
fleet_cfg() {
	SERVERS=$2 awk '
		/^    server vllm[0-9] / { if (!done) print ENVIRON["SERVERS"]; done = 1; next }
		/^    stats socket / { print $0 " expose-fd listeners"; next }
		{ print }' "$REPO/haproxy/haproxy.cfg" >"$1"
	[ -z "${3:-}" ] || printf '%s\n' "$3" >>"$1"
}

# fleet_haproxy CFG: HAProxy on CFG (in the foreground, by pid).
fleet_haproxy() {
	haproxy -f "$1" 2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
}

# fleet_agent ARGS...: the agent reading its servers from HAProxy.
fleet_agent() {
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "127.0.0.1:$ADMIN_PORT" \
		--haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval "$POLL_MS" "$@" \
		2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$ADMIN_PORT"
}

# fleet_stub I HOST PORT: stub vllmI on HOST:PORT (any loopback address).
fleet_stub() {
	local i=$1 out="$BATS_TEST_TMPDIR/stub$1.out"
	"$BUILD/vllm-stub" --host "$2" --port "$3" --name "vllm$i" \
		>"$out" 2>>"$BATS_TEST_TMPDIR/stub$i.log" 3>&- &
	STUB_PID[i]=$!
	STUB_PORT[i]=$3
	dbk_wait_until 5 grep -sq ' listening on ' "$out"
}

# local_stubs N: stubs vllm0..N-1 on 127.0.0.1, free ports.
local_stubs() {
	local i
	for ((i = 0; i < $1; i++)); do fleet_stub "$i" 127.0.0.1 "$(dbk_port)"; done
}

# server_lines I...: backend lines for stubs vllmI..., in that order.
server_lines() {
	local i
	for i in "$@"; do echo "    server vllm$i 127.0.0.1:${STUB_PORT[i]}"; done
}

# del_server NAME: maintenance, then deleted once HAProxy lets it (its
# streams over; bounded).
del_server() {
	haproxy_cmd "disable server vllm/$1" >/dev/null
	dbk_wait_until 10 bash -c "echo 'del server vllm/$1' | socat - UNIX-CONNECT:$DBK_STATS_SOCKET | grep -q 'Server deleted'"
}

# ---- load: streams one after another until the stop file exists ----

# load_loop I: a line per request to load.I: start (us) curl's rc, status,
# SSE events, the stub that served it, the agent's choice.
load_loop() {
	local i=$1 n=0 base t0
	while [ ! -e "$BATS_TEST_TMPDIR/stop" ] && ((n < 5000)); do
		base=$BATS_TEST_TMPDIR/r$i
		t0=${EPOCHREALTIME/[.,]/}
		send "$base" /v1/completions "$BATS_TEST_TMPDIR/body.json" || true
		echo "$t0 $(cat "$base.rc") $(status "$base") $(sse_events "$base")" \
			"$(header "$base" X-Served-By) $(header "$base" X-Dbucket-Server)" \
			>>"$BATS_TEST_TMPDIR/load.$i"
		n=$((n + 1))
	done
}

# load_start C: C clients streaming at once.
load_start() {
	local i
	rm -f "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR"/load.*
	for ((i = 0; i < $1; i++)); do
		load_loop "$i" </dev/null >/dev/null 2>&1 3>&- &
		CLIENT_PIDS+=("$!")
	done
}

load_stop() {
	touch "$BATS_TEST_TMPDIR/stop"
	wait_clients
	cat "$BATS_TEST_TMPDIR"/load.* >"$BATS_TEST_TMPDIR/load"
}

# load_count: requests done so far.
load_count() {
	cat "$BATS_TEST_TMPDIR"/load.* 2>/dev/null | wc -l
}

load_at_least() { (($(load_count) >= $1)); }

# assert_no_failures: every request of the load got its whole stream.
assert_no_failures() {
	local want=$((BODY_TOKENS + 1)) bad
	bad=$(awk -v w="$want" '!($2 == 0 && $3 == 200 && $4 == w)' "$BATS_TEST_TMPDIR/load")
	[ -z "$bad" ] || fail "failed requests: $bad"
	assert [ "$(wc -l <"$BATS_TEST_TMPDIR/load")" -gt 0 ]
}

# ---- what each side says ----

haproxy_names() {
	haproxy_cmd "show servers state vllm" | awk 'NR > 2 && NF > 4 { print $4 }' | sort
}

agent_names() {
	agent_get /state | jq -r '.servers[].name' | sort
}

names_match() { [ "$(haproxy_names)" = "$(agent_names)" ]; }

# assert_names_follow: the agent names HAProxy's servers within a few
# polls (bounded: 4 polls and the reads).
assert_names_follow() {
	dbk_wait_until $((4 * POLL_MS / 1000 + 1)) names_match ||
		fail "HAProxy has $(haproxy_names | xargs), the agent $(agent_names | xargs)"
}

# load_end: the load stopped, and what must hold after any change: no
# request failed, every lease given back (by a completion, the TTL,
# repair, or its server leaving), HAProxy's servers named.
load_end() {
	load_stop
	assert_no_failures
	wait_state leases 0
	assert_books_balanced
	assert_names_follow
}

# served_by_agent NAME: requests the agent sent to NAME and NAME served.
served_by_agent() {
	awk -v n="$1" '$5 == n && $6 == n' "$BATS_TEST_TMPDIR/load" | wc -l
}

@test "servers added and deleted through the runtime API are followed under streaming load" {
	local_stubs 3
	fleet_cfg "$BATS_TEST_TMPDIR/h.cfg" "$(server_lines 0 1)"
	fleet_haproxy "$BATS_TEST_TMPDIR/h.cfg"
	fleet_agent
	wait_state runtime_api_up true
	load_start 4
	dbk_wait_until 10 load_at_least 8
	haproxy_cmd "add server vllm/vllm2 127.0.0.1:${STUB_PORT[2]}"
	haproxy_cmd "enable server vllm/vllm2"
	assert_names_follow
	wait_server vllm2 usable true
	local before=$(load_count)
	dbk_wait_until 10 load_at_least $((before + 12))
	# vllm0 out: maintenance, its streams end, then deleted.
	del_server vllm0
	local deleted=${EPOCHREALTIME/[.,]/}
	assert_names_follow
	before=$(load_count)
	dbk_wait_until 10 load_at_least $((before + 12))
	load_end
	# The added server was chosen by the agent; the deleted one not once
	# a poll after it went.
	assert [ "$(served_by_agent vllm2)" -gt 0 ]
	run awk -v t=$((deleted + POLL_MS * 1000)) '$1 > t && $6 == "vllm0"' "$BATS_TEST_TMPDIR/load"
	assert_output ""
	assert_equal "$(state_field servers_added) $(state_field servers_removed)" "1 1"
	run grep -c 'event=backend-mismatch' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 0
}

# start_dns HOSTS: dnsmasq on a free loopback port, answering from HOSTS
# alone (reread on SIGHUP), by pid. DNS_PORT is its port.
start_dns() {
	DNS_PORT=$(dbk_port)
	dnsmasq --keep-in-foreground --port="$DNS_PORT" --listen-address=127.0.0.1 \
		--bind-interfaces --no-resolv --no-hosts --addn-hosts="$1" --user=root \
		--pid-file= --log-facility="$BATS_TEST_TMPDIR/dns.log" --local-ttl=0 \
		2>>"$BATS_TEST_TMPDIR/dns.log" 3>&- &
	DNS_PID=$!
	dbk_wait_until 5 dbk_udp_answers "$DNS_PORT"
}

# dbk_udp_answers PORT: dnsmasq has bound it (its log says so).
dbk_udp_answers() {
	grep -sq 'started, version' "$BATS_TEST_TMPDIR/dns.log"
}

# slot_addrs: HAProxy's template slots and their addresses.
slot_addrs() {
	haproxy_cmd "show servers state vllm" | awk 'NR > 2 && NF > 4 { print $4, $5 }'
}

has_addr() { slot_addrs | grep -q " $1\$"; }
lacks_addr() { ! slot_addrs | grep -q " $1\$"; }

# The agent's view of each server's usability matches HAProxy's state.
states_match() {
	local h a
	h=$(haproxy_cmd "show servers state vllm" |
		awk 'NR > 2 && NF > 4 { print $4, ($6 == 2 && $7 == 0) ? "true" : "false" }' | sort)
	a=$(agent_get /state | jq -r '.servers[] | "\(.name) \(.usable)"' | sort)
	[ "$h" = "$a" ]
}

@test "a server-template resolved by DNS is followed as its records change under load" {
	local port
	port=$(dbk_port)
	fleet_stub 0 127.0.0.11 "$port"
	fleet_stub 1 127.0.0.12 "$port"
	fleet_stub 2 127.0.0.13 "$port"
	fleet_stub 3 127.0.0.14 "$port"
	printf '127.0.0.11 pod.test\n127.0.0.12 pod.test\n' >"$BATS_TEST_TMPDIR/hosts"
	start_dns "$BATS_TEST_TMPDIR/hosts"
	fleet_cfg "$BATS_TEST_TMPDIR/h.cfg" \
		"    server-template pod 3 pod.test:$port resolvers fleetdns init-addr none resolve-prefer ipv4" \
		"resolvers fleetdns
    nameserver dns1 127.0.0.1:$DNS_PORT
    hold valid 500ms
    hold obsolete 500ms
    hold nx 500ms
    timeout resolve 200ms
    timeout retry 200ms
    resolve_retries 2"
	fleet_haproxy "$BATS_TEST_TMPDIR/h.cfg"
	fleet_agent
	wait_state runtime_api_up true
	dbk_wait_until 10 has_addr 127.0.0.12
	dbk_wait_until 5 states_match
	load_start 4
	dbk_wait_until 10 load_at_least 12
	# .12 goes, .13 comes.
	printf '127.0.0.11 pod.test\n127.0.0.13 pod.test\n' >"$BATS_TEST_TMPDIR/hosts"
	kill -HUP "$DNS_PID"
	dbk_wait_until 10 has_addr 127.0.0.13
	dbk_wait_until 10 lacks_addr 127.0.0.12 || true
	assert_names_follow
	dbk_wait_until 5 states_match || fail "states: $(slot_addrs | xargs) / $(agent_get /state | jq -c '[.servers[] | [.name, .usable]]')"
	local before=$(load_count)
	dbk_wait_until 15 load_at_least $((before + 16))
	# A third pod: it takes the slot .12 left, at a new address there (a
	# new incarnation: what was learnt of the old pod is forgotten).
	printf '127.0.0.11 pod.test\n127.0.0.13 pod.test\n127.0.0.14 pod.test\n' >"$BATS_TEST_TMPDIR/hosts"
	kill -HUP "$DNS_PID"
	dbk_wait_until 10 has_addr 127.0.0.14
	dbk_wait_until 5 states_match || fail "states: $(slot_addrs | xargs) / $(agent_get /state | jq -c '[.servers[] | [.name, .usable]]')"
	wait_state_ge servers_readdressed 1
	before=$(load_count)
	dbk_wait_until 15 load_at_least $((before + 16))
	load_end
	# The new pods were chosen by the agent under their slots' names.
	run awk '$5 == "vllm2" && $6 ~ /^pod[0-9]$/' "$BATS_TEST_TMPDIR/load"
	refute_output ""
	run awk '$5 == "vllm3" && $6 ~ /^pod[0-9]$/' "$BATS_TEST_TMPDIR/load"
	refute_output ""
	run grep -c 'event=server-readdressed' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 1
}

@test "a reload with another server list is followed without a restart" {
	local_stubs 3
	fleet_cfg "$BATS_TEST_TMPDIR/h1.cfg" "$(server_lines 0 1)"
	# vllm1 goes, vllm2 comes first (ids renumbered), vllm0 stays.
	fleet_cfg "$BATS_TEST_TMPDIR/h2.cfg" "$(server_lines 2 0)"
	fleet_haproxy "$BATS_TEST_TMPDIR/h1.cfg"
	fleet_agent
	wait_state runtime_api_up true
	load_start 4
	dbk_wait_until 10 load_at_least 8
	# A seamless reload: the new process takes the listeners over (-x)
	# and the old one finishes its streams (-sf).
	local old=$HAPROXY_PID
	haproxy -f "$BATS_TEST_TMPDIR/h2.cfg" -x "$DBK_STATS_SOCKET" -sf "$old" \
		2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_until 10 bash -c "! kill -0 $old 2>/dev/null"
	wait "$old" 2>/dev/null || true
	assert_names_follow
	wait_server vllm2 usable true
	local before=$(load_count)
	dbk_wait_until 10 load_at_least $((before + 12))
	load_end
	assert [ "$(served_by_agent vllm2)" -gt 0 ]
	assert_equal "$(server_field vllm0 slot)" 0
	assert_equal "$(state_field servers_removed)" 1
}

# share NAME: percent of the load's requests the agent sent to NAME.
share() {
	awk -v n="$1" '{ t++ } $6 == n { k++ } END { printf "%d", t ? 100 * k / t : 0 }' \
		"$BATS_TEST_TMPDIR/load"
}

@test "weights 10 and 3: least load per unit of weight shares the requests as the weights" {
	local_stubs 2
	fleet_cfg "$BATS_TEST_TMPDIR/h.cfg" "    server vllm0 127.0.0.1:${STUB_PORT[0]} weight 10
    server vllm1 127.0.0.1:${STUB_PORT[1]} weight 3"
	fleet_haproxy "$BATS_TEST_TMPDIR/h.cfg"
	fleet_agent
	wait_server vllm1 weight 3
	load_start 13
	dbk_wait_until 60 load_at_least 150
	load_end
	# 10/13 of the requests in flight is 77%, but the stub with more in
	# flight serves each a little slower: 68-71% of the requests in
	# quiet runs, 65% on a loaded machine. Equal weights would give
	# about half.
	local s
	s=$(share vllm0)
	echo "# vllm0's share: $s%" >&3
	assert [ "$s" -gt 60 ]
	assert [ "$s" -lt 90 ]
	assert_equal "$(server_field vllm0 haproxy_weight)" 10
	# Weight 0 is a drain: not chosen (a server without checks still
	# says "no check" in show stat), back with its weight.
	haproxy_cmd "set server vllm/vllm1 weight 0" >/dev/null
	wait_server vllm1 usable false
	assert_equal "$(server_field vllm1 haproxy_state)" drain
	haproxy_cmd "set server vllm/vllm1 weight 3" >/dev/null
	wait_server vllm1 usable true
}

@test "ttft: an added server is scraped where HAProxy reaches it, a deleted one no longer" {
	local_stubs 2
	fleet_cfg "$BATS_TEST_TMPDIR/h.cfg" "$(server_lines 0)"
	fleet_haproxy "$BATS_TEST_TMPDIR/h.cfg"
	fleet_agent --policy ttft
	wait_state runtime_api_up true
	haproxy_cmd "add server vllm/vllm1 127.0.0.1:${STUB_PORT[1]}"
	haproxy_cmd "enable server vllm/vllm1"
	assert_names_follow
	dbk_wait_until 10 scraped_up vllm1 ||
		fail "vllm1 not scraped: $(agent_get /state | jq -c .scrape)"
	assert_equal "$(agent_get /state | jq -r '.scrape.servers[] | select(.name == "vllm1") | .url')" \
		"http://127.0.0.1:${STUB_PORT[1]}"
	load_start 2
	dbk_wait_until 10 load_at_least 8
	del_server vllm0
	assert_names_follow
	run bash -c "curl -s --max-time 5 http://127.0.0.1:$ADMIN_PORT/state | jq -r '.scrape.servers[].name, .ttft[].name'"
	assert_output "vllm1
vllm1"
	local before=$(load_count)
	dbk_wait_until 10 load_at_least $((before + 8))
	load_end
}

# scraped_up NAME: the agent's last scrape of NAME worked.
scraped_up() {
	[ "$(agent_get /state | jq -r --arg n "$1" '.scrape.servers[] | select(.name == $n) | .up')" = true ]
}
