#!/usr/bin/env bats
# The launcher in the layout of one backend per model (`dbucket --layout
# per-model --server-models ...`): what tests/e2e/pools.bats starts by
# hand (haproxy/models-per-backend.cfg, the model map, an agent with a
# --pool per backend) started by build/dbucket from its flags. Two models
# on two stubs each; each model's request reaches a server of its own
# (the stubs' counters), an unknown model gets HAProxy's OpenAI-format
# 404 without a stub being contacted, and every process stops by pid.

load stubs

setup() {
	[ -x "$BUILD/dbucket" ] || fail "no $BUILD/dbucket: run make"
	stubs_setup
	RT=$BATS_TEST_TMPDIR/rt
	LOG=$BATS_TEST_TMPDIR/launcher.log
	: >"$LOG"
	L_PID= L_AGENT= L_HAPROXY=
}

teardown() {
	local p
	if [ -n "$L_PID" ]; then
		kill -TERM "$L_PID" 2>/dev/null || true
		wait "$L_PID" 2>/dev/null || true
	fi
	# What the launcher should have stopped itself.
	for p in $L_AGENT $L_HAPROXY; do kill -KILL "$p" 2>/dev/null || true; done
	stubs_teardown
}

# The launcher's agent answers on its admin socket in the runtime directory.
agent_get() {
	curl -s --max-time 5 --unix-socket "$RT/admin.sock" "http://localhost$1"
}

said() { grep -qE -- "$1" "$LOG"; }
said_or_gone() { said "$1" || dbk_gone "$L_PID"; }
# The pid the launcher reported for a child it started.
child_pid() { grep -oE "started $1 \(pid [0-9]+\)" "$LOG" | tail -n 1 | grep -oE '[0-9]+'; }

models_known() {
	[ "$(agent_get /state | jq '[.pools[].servers[] | select(.models != null)] | length')" = 4 ]
}

# served_by_stub I: requests stub I has finished (its own counter).
served_by_stub() {
	curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[$1]}/metrics" |
		awk '$1 ~ /^vllm:request_success_total/ { s += $NF } END { print s + 0 }'
}
counters() {
	echo "$(served_by_stub 0) $(served_by_stub 1) $(served_by_stub 2) $(served_by_stub 3)"
}

# ask NAME MODEL: one small completion for MODEL through HAProxy.
ask() {
	completion_body 2 false 40 "$2" >"$BATS_TEST_TMPDIR/$1.json"
	send "$BATS_TEST_TMPDIR/$1" /v1/completions "$BATS_TEST_TMPDIR/$1.json" || true
}
status_of() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/$1.h"; }

# per_pool KEY: that number of every pool's /state, in the pools' order.
per_pool() {
	agent_get /state | jq -r --arg k "$1" '[.pools[][$k] | tostring] | join(" ")'
}
pools_idle() { [ "$(per_pool leases)" = "0 0" ]; }

# per_model_world [LAUNCHER ARGS...]: two models on two stubs each behind
# the launcher in --layout per-model, ARGS added; then one request per
# model and one for an unknown model, and the launcher stopped.
per_model_world() {
	local i models=(model-a model-a model-b model-b)
	for i in 0 1 2 3; do
		STUB_ARGS="--model ${models[i]}" start_stub "$i" 20
	done
	"$BUILD/dbucket" --runtime-dir "$RT" --host 127.0.0.1 --port "$DBK_PORT" \
		--server-hosts 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 \
		--server-ports "${STUB_PORT[0]}" "${STUB_PORT[1]}" "${STUB_PORT[2]}" "${STUB_PORT[3]}" \
		--layout per-model --server-models "${models[@]}" "$@" \
		2>>"$LOG" </dev/null 3>&- &
	L_PID=$!
	dbk_wait_until 60 said_or_gone 'dbucket: ready' || true
	said 'dbucket: ready' || fail "the launcher never got ready: $(tail -n 20 "$LOG")"
	L_AGENT=$(child_pid dbucket-spoa)
	L_HAPROXY=$(child_pid haproxy)
	[ -n "$L_AGENT" ] && [ -n "$L_HAPROXY" ]

	# The agent runs a pool per model's backend, with that model's servers.
	run jq -r '.pools[] | .pool + ": " + ([.servers[].name] | join(" "))' <<<"$(agent_get /state)"
	assert_output "model-a: vllm0 vllm1
model-b: vllm2 vllm3"
	wait_until 10 models_known || fail "the servers' models never known"

	ask a model-a
	assert_equal "a $(status_of a)" "a 200"
	local after_a
	after_a=$(counters)
	[[ "$after_a" == "1 0 0 0" || "$after_a" == "0 1 0 0" ]] || fail "model-a's request: stubs $after_a"
	ask b model-b
	assert_equal "b $(status_of b)" "b 200"
	local after_b
	after_b=$(counters)
	[[ "$after_b" == "${after_a% 0 0} 1 0" || "$after_b" == "${after_a% 0 0} 0 1" ]] ||
		fail "model-b's request: stubs $after_a, then $after_b"

	ask nope no-such-model
	assert_equal "nope $(status_of nope)" "nope 404"
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/nope.h"
	run jq -r '[.error.type, .error.code] | map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/nope.b"
	assert_output "NotFoundError 404"
	assert_equal "stubs $(counters)" "stubs $after_b"
	# Each pool decided its own request and released it.
	wait_until 10 pools_idle || fail "leases left: $(per_pool leases)"
	assert_equal "$(per_pool pool) decisions $(per_pool decisions)" "model-a model-b decisions 1 1"

	kill -TERM "$L_PID"
	local rc=0
	wait "$L_PID" || rc=$?
	L_PID=
	assert_equal "exit=$rc" "exit=0"
	dbk_gone "$L_AGENT" || fail "the agent (pid $L_AGENT) still runs"
	dbk_gone "$L_HAPROXY" || fail "haproxy (pid $L_HAPROXY) still runs"
	[ ! -e "$RT" ] || fail "$RT is still there"
}

@test "--layout per-model (ttft, the default): each model's request reaches its own backend's servers, an unknown model gets 404 JSON, every process stops by pid" {
	per_model_world
}

@test "--layout per-model --policy reference: the servers are scraped for their models all the same, and the unknown model still gets 404" {
	per_model_world --policy reference
}

@test "--layout per-model --print-config: a backend per model, the model map beside haproxy.cfg, a --pool per backend; haproxy -c accepts it" {
	local out=$BATS_TEST_TMPDIR/prod
	run "$BUILD/dbucket" --print-config "$out" --server-hosts 127.0.0.1 127.0.0.1 127.0.0.1 \
		--server-ports 8101 8102 8103 --layout per-model --server-models org/m-a org/m-a m-b
	assert_success
	assert_output --partial "wrote $out/models.map"
	run grep -v '^#' "$out/models.map"
	assert_output "org/m-a org-m-a
m-b m-b"
	grep -q -- ' --pool org-m-a --pool m-b"$' "$out/dbucket-spoa.env"
	run grep -c '^backend \(vllm\|org-m-a\|m-b\)$' "$out/haproxy.cfg"
	assert_output 3
	run haproxy -c -f "$out/haproxy.cfg"
	assert_success
}

@test "--layout per-model: bad input is refused with exit 2 and a clear message, starting nothing" {
	local servers=(--server-hosts 127.0.0.1 127.0.0.1 --server-ports 8101 8102)
	run "$BUILD/dbucket" --runtime-dir "$RT" --layout per-models "${servers[@]}"
	assert_failure 2
	assert_output --partial "argument --layout: invalid choice: 'per-models' (choose from 'shared', 'per-model')"
	run "$BUILD/dbucket" --runtime-dir "$RT" --layout per-model "${servers[@]}"
	assert_failure 2
	assert_output --partial "per-model needs each server's model: give --server-models"
	run "$BUILD/dbucket" --runtime-dir "$RT" --layout per-model "${servers[@]}" --server-models model-a
	assert_failure 2
	assert_output --partial "argument --server-models: 1 model for 2 servers"
	run "$BUILD/dbucket" --runtime-dir "$RT" "${servers[@]}" --server-models model-a model-b
	assert_failure 2
	assert_output --partial "argument --server-models: only with --layout per-model"
	[ ! -e "$RT" ]
}
