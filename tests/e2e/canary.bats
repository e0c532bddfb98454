#!/usr/bin/env bats
# A canary between model versions, in HAProxy's terms (README "A canary
# between model versions"): the model map sends model-a to backend
# model-a, and the canary map sends DBK_CANARY_PERCENT (5) of those to
# model-a-v2, whose server (vllm4) serves the same model name. One agent
# runs a pool for each backend and decides in the one HAProxy chose.

load stubs

N=400
# The canary's count among N at 5%: outside [4, 42] with probability
# below 5e-6 (binomial tails 2.2e-6 and 2.7e-6).
LO=4
HI=42

setup() {
	stubs_setup
	export DBK_MODELS_MAP=$REPO/haproxy/models.map
	export DBK_CANARY_MAP=$REPO/haproxy/canary.map
	export DBK_CANARY_PERCENT=5
}
teardown() {
	stubs_teardown
}

pool_field() {
	agent_get /state | jq -r --arg p "$1" --arg k "$2" '.pools[] | select(.pool == $p) | .[$k]'
}
canary_idle() { [ "$(pool_field model-a leases) $(pool_field model-a-v2 leases)" = "0 0" ]; }
pool_up() { [ "$(pool_field "$1" runtime_api_up)" = true ]; }

@test "5% of model-a's requests go to its canary backend: the share within its binomial bound, every request answered, leases 0 after" {
	local i
	for i in 0 1 4; do
		STUB_ARGS="--model model-a" start_stub "$i" 20
	done
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "127.0.0.1:$ADMIN_PORT" \
		--haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 \
		--pool model-a vllm0 vllm1 --pool model-a-v2 vllm4 \
		2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$AGENT_PORT"
	dbk_wait_port "$ADMIN_PORT"
	haproxy -f "$REPO/haproxy/haproxy.cfg" -f "$REPO/haproxy/models-per-backend.cfg" \
		2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
	wait_until 10 pool_up model-a
	wait_until 10 pool_up model-a-v2
	completion_body 2 false 40 model-a >"$BATS_TEST_TMPDIR/a.json"
	# Twenty at a time: each batch waited for before the next.
	local b k d=$BATS_TEST_TMPDIR
	for ((b = 0; b < N / 20; b++)); do
		for ((k = 0; k < 20; k++)); do
			send_bg "$d/r$((b * 20 + k))" /v1/completions "$d/a.json"
		done
		wait_clients
	done
	local ok=0 canary=0 wrong=0 who be
	for ((i = 0; i < N; i++)); do
		[ "$(status "$d/r$i")" = 200 ] && ok=$((ok + 1))
		who=$(header "$d/r$i" X-Served-By)
		be=$(header "$d/r$i" X-Dbucket-Backend)
		case "$be:$who" in
		model-a-v2:vllm4) canary=$((canary + 1)) ;;
		model-a:vllm[01]) ;;
		*) wrong=$((wrong + 1)) ;;
		esac
	done
	assert_equal "answered $ok wrong $wrong" "answered $N wrong 0"
	((canary >= LO && canary <= HI)) || fail "canary took $canary of $N (want $LO to $HI)"
	# The agent's books agree: the canary pool decided exactly those.
	assert_equal "canary decisions $(pool_field model-a-v2 decisions)" "canary decisions $canary"
	wait_until 10 canary_idle || fail "leases left: $(pool_field model-a leases) $(pool_field model-a-v2 leases)"
}
