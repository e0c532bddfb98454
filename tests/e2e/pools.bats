#!/usr/bin/env bats
# One agent, several pools (README "One agent, several pools"): HAProxy's
# layout of one backend per model (haproxy/models-per-backend.cfg, the
# model map haproxy/models.map), model-a on vllm0 and vllm1 in backend
# model-a, model-b on vllm2 and vllm3 in backend model-b, and one agent
# with a pool for each (--pool). Each model's requests land only on its
# backend's servers, a model no pool's servers list gets HAProxy's 404
# without a stub being contacted, a model whose backend is all down (in
# maintenance or stopped) the agent's 503, the same JSON as in the shared
# layout rather than HAProxy's own, and every lease is released in the pool that took it.

load stubs

setup() {
	stubs_setup
	export DBK_MODELS_MAP=$REPO/haproxy/models.map
}
teardown() {
	stubs_teardown
}

# start_pools_agent ARGS...: dbucket-spoa following HAProxy's runtime API,
# ARGS (the pools) last.
start_pools_agent() {
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "127.0.0.1:$ADMIN_PORT" \
		--haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 "$@" \
		2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$AGENT_PORT"
	dbk_wait_port "$ADMIN_PORT"
}

start_haproxy_models() {
	haproxy -f "$REPO/haproxy/haproxy.cfg" -f "$REPO/haproxy/models-per-backend.cfg" \
		2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
}

# pool_field POOL KEY: a number of that pool's /state.
pool_field() {
	agent_get /state | jq -r --arg p "$1" --arg k "$2" '.pools[] | select(.pool == $p) | .[$k]'
}
pool_models_known() {
	[ "$(agent_get /state | jq -r --arg s "$1" \
		'[.pools[].servers[] | select(.name == $s) | .models] | .[0]')" != null ]
}
pools_idle() { [ "$(pool_field model-a leases) $(pool_field model-b leases)" = "0 0" ]; }

# start_world [POLICY ARGS...]: the stubs by model, HAProxy with one
# backend per model, the agent with a pool for each (POLICY ARGS every
# pool's); returns once the agent knows every server's models.
start_world() {
	local i
	for i in 0 1 2 3; do
		STUB_ARGS="--model model-$([ "$i" -lt 2 ] && echo a || echo b)" start_stub "$i" 20
	done
	start_pools_agent "$@" \
		--pool model-a --scrape "vllm0=http://127.0.0.1:${STUB_PORT[0]}" \
		--scrape "vllm1=http://127.0.0.1:${STUB_PORT[1]}" vllm0 vllm1 \
		--pool model-b --scrape "vllm2=http://127.0.0.1:${STUB_PORT[2]}" \
		--scrape "vllm3=http://127.0.0.1:${STUB_PORT[3]}" vllm2 vllm3
	start_haproxy_models
	wait_until 10 pool_up model-a || fail "model-a's runtime API never up"
	wait_until 10 pool_up model-b || fail "model-b's runtime API never up"
	for i in 0 1 2 3; do
		wait_until 10 pool_models_known "vllm$i" || fail "vllm$i's models never known"
	done
}
pool_up() { [ "$(pool_field "$1" runtime_api_up)" = true ]; }

# ask NAME MODEL: one small completion for MODEL; NAME.h, NAME.b kept.
ask() {
	completion_body 2 false 40 "$2" >"$BATS_TEST_TMPDIR/$1.json"
	send "$BATS_TEST_TMPDIR/$1" /v1/completions "$BATS_TEST_TMPDIR/$1.json" || true
}
status_of() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/$1.h"; }
hdr_of() {
	tr -d '\r' <"$BATS_TEST_TMPDIR/$1.h" | awk -F': ' -v h="$2" 'tolower($1) == h { print $2 }'
}

# Requests every stub finished, all told (their own counters).
stub_requests() {
	local i n=0 v
	for i in 0 1 2 3; do
		v=$(curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[i]}/metrics" |
			awk '$1 ~ /^vllm:request_success_total/ { s += $NF } END { print s + 0 }')
		n=$((n + v))
	done
	echo "$n"
}

only_own_backend() {
	start_world "$@"
	local i
	for i in 0 1 2 3 4 5; do
		ask "a$i" model-a
		[[ "$(status_of "a$i") $(hdr_of "a$i" x-served-by) $(hdr_of "a$i" x-dbucket-backend)" == "200 vllm"[01]" model-a" ]] ||
			fail "a$i (model-a): $(status_of "a$i") from '$(hdr_of "a$i" x-served-by)' backend '$(hdr_of "a$i" x-dbucket-backend)'"
		ask "b$i" model-b
		[[ "$(status_of "b$i") $(hdr_of "b$i" x-served-by) $(hdr_of "b$i" x-dbucket-backend)" == "200 vllm"[23]" model-b" ]] ||
			fail "b$i (model-b): $(status_of "b$i") from '$(hdr_of "b$i" x-served-by)' backend '$(hdr_of "b$i" x-dbucket-backend)'"
	done
	# Each pool decided its own six and released them: no lease is left
	# in either, none was released in the other pool.
	wait_until 10 pools_idle || fail "leases left: $(pool_field model-a leases) $(pool_field model-b leases)"
	assert_equal "$(pool_field model-a decisions) $(pool_field model-a released)" "6 6"
	assert_equal "$(pool_field model-b decisions) $(pool_field model-b released)" "6 6"
	assert_equal "$(pool_field model-a unknown_releases) $(pool_field model-b unknown_releases)" "0 0"
	# Requests routed per model, the agent's (no pool label).
	run scrape_metric 'dbucket_model_routed_total{model="model-a"}'
	assert_output 6
	run scrape_metric 'dbucket_model_routed_total{model="model-b"}'
	assert_output 6
	assert_equal "$(agent_get /state | jq -c '.pools[0].model_routed')" '{"model-a":6,"model-b":6}'
}

@test "reference: two models on two backends, one agent: each model's requests reach only its backend's servers, every lease released in its pool" {
	only_own_backend
}

@test "ttft: two models on two backends, one agent: each model's requests reach only its backend's servers" {
	only_own_backend --policy ttft --engine-speed 20
}

@test "the model map absent from the request: the agent chooses the pool by the model its servers list" {
	# Without the map HAProxy names no backend: the agent's pool choice
	# alone sends the request to the right backend.
	unset DBK_MODELS_MAP
	start_world
	ask b model-b
	assert_equal "$(status_of b) $(hdr_of b x-dbucket-backend)" "200 model-b"
	[[ "$(hdr_of b x-served-by)" == vllm[23] ]]
	ask a model-a
	assert_equal "$(status_of a) $(hdr_of a x-dbucket-backend)" "200 model-a"
	[[ "$(hdr_of a x-served-by)" == vllm[01] ]]
}

@test "a model no pool's servers list: HAProxy answers 404 NotFoundError JSON, no stub contacted, no lease" {
	start_world
	ask warm model-a
	assert_equal "warm $(status_of warm)" "warm 200"
	local before
	before=$(stub_requests)
	[ "$before" -ge 1 ]
	ask nope no-such-model
	assert_equal "nope $(status_of nope) $(hdr_of nope x-served-by)" "nope 404 "
	run jq -r '[.error.type, .error.code] | map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/nope.b"
	assert_output "NotFoundError 404"
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/nope.h"
	assert_equal "stub requests $(stub_requests)" "stub requests $before"
	wait_until 10 pools_idle
	run scrape_metric 'dbucket_model_refused_total{pool="model-a",reason="unknown_model"}'
	assert_output 1
}

# The 503 haproxy.cfg answers for the agent's model_unavailable, the same
# in both layouts: not HAProxy's own errorfile (haproxy/errors/503.http).
MODEL_503='no server that serves this request'"'"'s model is available (every one is down or in maintenance)'

# model_b_unavailable: model-b, all of whose servers the agent and HAProxy
# see down, gets the agent's OpenAI-format 503 without a stub contacted
# or a lease, in model-b's pool; model-a is still served.
model_b_unavailable() {
	wait_until 10 pool_server_unusable vllm2 || fail "vllm2 still usable"
	wait_until 10 pool_server_unusable vllm3 || fail "vllm3 still usable"
	local before
	before=$(stub_requests)
	ask down model-b
	assert_equal "down $(status_of down) $(hdr_of down x-served-by)" "down 503 "
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/down.h"
	run jq -r '[.error.type, .error.code, .error.message] | map(tostring) | join(" | ")' \
		"$BATS_TEST_TMPDIR/down.b"
	assert_output "ServiceUnavailableError | 503 | $MODEL_503"
	assert_equal "stub requests $(stub_requests)" "stub requests $before"
	assert_equal "$(pool_field model-b decisions) $(pool_field model-b leases)" "0 0"
	run scrape_metric 'dbucket_model_refused_total{pool="model-b",reason="unavailable"}'
	assert_output 1
	ask up model-a
	assert_equal "up $(status_of up)" "up 200"
	[[ "$(hdr_of up x-served-by)" == vllm[01] ]]
	wait_until 10 pools_idle
}

@test "every server of model-b's backend in maintenance: the agent's 503 ServiceUnavailableError JSON, model-a still served, leases 0 after" {
	start_world
	haproxy_cmd "set server model-b/vllm2 state maint" >/dev/null
	haproxy_cmd "set server model-b/vllm3 state maint" >/dev/null
	model_b_unavailable
}

@test "every stub of model-b's backend stopped: the same 503 JSON, model-a still served" {
	start_world
	kill_stub 2
	kill_stub 3
	model_b_unavailable
}

@test "model-b's backend in maintenance and the agent down: HAProxy answers the same 503 JSON itself, model-a still served" {
	start_world
	kill_agent
	haproxy_cmd "set server model-b/vllm2 state maint" >/dev/null
	haproxy_cmd "set server model-b/vllm3 state maint" >/dev/null
	local before
	before=$(stub_requests)
	ask down model-b
	assert_equal "down $(status_of down) $(hdr_of down x-served-by)" "down 503 "
	run jq -r '[.error.type, .error.code, .error.message] | map(tostring) | join(" | ")' \
		"$BATS_TEST_TMPDIR/down.b"
	assert_output "ServiceUnavailableError | 503 | $MODEL_503"
	assert_equal "stub requests $(stub_requests)" "stub requests $before"
	ask up model-a
	assert_equal "up $(status_of up)" "up 200"
	[[ "$(hdr_of up x-served-by)" == vllm[01] ]]
}

pool_server_unusable() {
	[ "$(agent_get /state | jq -r --arg s "$1" '.pools[].servers[] | select(.name == $s) | .usable')" = false ]
}

@test "/metrics labels each pool's series with its pool, promtool-clean; /config takes pool=NAME" {
	echo pools-token >"$BATS_TEST_TMPDIR/token"
	local auth=(-H 'Authorization: Bearer pools-token')
	start_world --admin-token-file "$BATS_TEST_TMPDIR/token"
	ask a model-a
	agent_get /metrics >"$BATS_TEST_TMPDIR/m.txt"
	run prom_lint "$BATS_TEST_TMPDIR/m.txt"
	assert_success
	assert_output ""
	run scrape_metric 'dbucket_inflight_leases{pool="model-b"}'
	assert_output 0
	agent_get /metrics | grep -q '^dbucket_server_usable{pool="model-a",server="vllm0"} 1$'
	# Agent-wide numbers have no pool.
	agent_get /metrics | grep -q '^dbucket_spop_notifies_total [1-9]'
	run curl -s --max-time 5 "${auth[@]}" -X POST "http://127.0.0.1:$ADMIN_PORT/config?pool=model-b&sensitivity=3"
	assert_success
	run curl -s --max-time 5 "${auth[@]}" "http://127.0.0.1:$ADMIN_PORT/config?pool=model-b"
	assert_output --partial "sensitivity = 3"
	run curl -s --max-time 5 "${auth[@]}" "http://127.0.0.1:$ADMIN_PORT/config?pool=model-a"
	refute_output --partial "sensitivity = 3"
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${auth[@]}" "http://127.0.0.1:$ADMIN_PORT/config?pool=nope"
	assert_output 404
}

@test "the status page lists every pool and shows the one chosen, its servers only (headless Chromium)" {
	command -v chromium >/dev/null ||
		fail "no chromium: run contrib/install-deps.sh (Debian's chromium package)"
	start_world
	ask a model-a
	wait_until 10 pools_idle
	timeout -k 5 90 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars \
		--user-data-dir="$BATS_TEST_TMPDIR/chromium" --window-size=1280,720 \
		--virtual-time-budget=2500 --dump-dom "http://127.0.0.1:$ADMIN_PORT/?pool=model-b" \
		>"$BATS_TEST_TMPDIR/dom.html" 2>>"$BATS_TEST_TMPDIR/chromium.log"
	grep -q 'data-pool="model-a"' "$BATS_TEST_TMPDIR/dom.html"
	grep -q '<b><u data-pool="model-b">' "$BATS_TEST_TMPDIR/dom.html"
	grep -q 'data-server="vllm2"' "$BATS_TEST_TMPDIR/dom.html"
	grep -q 'data-server="vllm3"' "$BATS_TEST_TMPDIR/dom.html"
	run grep -c 'data-server="vllm[01]"' "$BATS_TEST_TMPDIR/dom.html"
	assert_output 0
}

@test "with no server named, each pool reads its own backend's servers from HAProxy and scrapes them where HAProxy reaches them" {
	local i
	for i in 0 1 2 3; do
		STUB_ARGS="--model model-$([ "$i" -lt 2 ] && echo a || echo b)" start_stub "$i" 20
	done
	start_haproxy_models
	start_pools_agent --policy ttft --engine-speed 20 --pool model-a --pool model-b
	wait_until 10 pool_up model-a
	wait_until 10 pool_up model-b
	run jq -r '.pools[] | .pool + ": " + ([.servers[].name] | join(" "))' <<<"$(agent_get /state)"
	assert_output "model-a: vllm0 vllm1
model-b: vllm2 vllm3"
	for i in 0 1 2 3; do
		wait_until 10 pool_models_known "vllm$i" || fail "vllm$i's models never known"
	done
	ask b model-b
	assert_equal "$(status_of b) $(hdr_of b x-dbucket-backend)" "200 model-b"
	[[ "$(hdr_of b x-served-by)" == vllm[23] ]]
	wait_until 10 pools_idle
}
