#!/usr/bin/env bats
# Several models behind one backend (README): four stubs, vllm0 and vllm1
# serving model-a, vllm2 and vllm3 serving model-b, in HAProxy's one
# backend. The agent learns who serves what from each stub's /v1/models
# and routes a request only to the servers of its model; a model no
# server lists gets HAProxy's 404, one whose servers are all down a 503,
# neither touching a server.

load stubs

setup() {
	stubs_setup
}
teardown() {
	stubs_teardown
}

# start_world [AGENT ARGS...]: the stubs by model, the agent scraping
# them (and following HAProxy's server states), HAProxy; returns once the
# agent knows every server's models.
start_world() { start_model_fleet 20 model_of "$@"; }
# model_of I: vllm0 and vllm1 serve model-a, vllm2 and vllm3 model-b.
model_of() { if (($1 < 2)); then echo --model model-a; else echo --model model-b; fi; }

# ask NAME MODEL: one small completion for MODEL; NAME.h, NAME.b kept.
ask() {
	completion_body 2 false 40 "$2" >"$BATS_TEST_TMPDIR/$1.json"
	send "$BATS_TEST_TMPDIR/$1" /v1/completions "$BATS_TEST_TMPDIR/$1.json" || true
}
status_of() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/$1.h"; }
served_by() {
	tr -d '\r' <"$BATS_TEST_TMPDIR/$1.h" | awk -F': ' 'tolower($1) == "x-served-by" { print $2 }'
}

# Requests the backend's servers were sent, all told (HAProxy's stot).
server_sessions() {
	haproxy_cmd "show stat" | awk -F, '$1 == "vllm" && $2 ~ /^vllm[0-9]$/ { s += $8 } END { print s + 0 }'
}

# Each model's requests reach only its own servers, under policy $1.
only_own_servers() {
	start_world "$@"
	local i
	for i in 0 1 2 3 4 5; do
		ask "a$i" model-a
		[[ "$(status_of "a$i") $(served_by "a$i")" == "200 vllm"[01] ]] ||
			fail "a$i (model-a): $(status_of "a$i") from '$(served_by "a$i")'"
		ask "b$i" model-b
		[[ "$(status_of "b$i") $(served_by "b$i")" == "200 vllm"[23] ]] ||
			fail "b$i (model-b): $(status_of "b$i") from '$(served_by "b$i")'"
	done
	[ "$(state_field model_filtered)" -ge 12 ]
}

@test "reference: model-a's requests reach only vllm0 and vllm1, model-b's only vllm2 and vllm3" {
	only_own_servers
}

@test "ttft: model-a's requests reach only vllm0 and vllm1, model-b's only vllm2 and vllm3" {
	only_own_servers --policy ttft --engine-speed 20
}

@test "a model no server lists: HAProxy answers 404 NotFoundError JSON, no server contacted, no lease" {
	start_world
	ask warm model-a
	assert_equal "warm $(status_of warm)" "warm 200"
	local before
	before=$(server_sessions)
	ask nope no-such-model
	assert_equal "nope $(status_of nope) $(served_by nope)" "nope 404 "
	run jq -r '[.error.type, .error.code] | map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/nope.b"
	assert_output "NotFoundError 404"
	grep -qi '^content-type: application/json' "$BATS_TEST_TMPDIR/nope.h"
	assert_equal "sessions $(server_sessions)" "sessions $before"
	assert_equal "unknown_model $(state_field unknown_model) leases $(state_field leases)" \
		"unknown_model 1 leases 0"
	run scrape_metric 'dbucket_model_refused_total{reason="unknown_model"}'
	assert_output 1
}

@test "a model whose every server is in maintenance: HAProxy answers 503 JSON, the other model still served" {
	start_world
	haproxy_cmd "set server vllm/vllm2 state maint" >/dev/null
	haproxy_cmd "set server vllm/vllm3 state maint" >/dev/null
	wait_server vllm2 usable false
	wait_server vllm3 usable false
	local before
	before=$(server_sessions)
	ask down model-b
	assert_equal "down $(status_of down) $(served_by down)" "down 503 "
	run jq -r '[.error.type, .error.code] | map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/down.b"
	assert_output "ServiceUnavailableError 503"
	assert_equal "sessions $(server_sessions)" "sessions $before"
	assert_equal "model_unavailable $(state_field model_unavailable) leases $(state_field leases)" \
		"model_unavailable 1 leases 0"
	ask up model-a
	assert_equal "up $(status_of up)" "up 200"
	# Back in service, served again.
	haproxy_cmd "set server vllm/vllm3 state ready" >/dev/null
	wait_server vllm3 usable true
	ask back model-b
	assert_equal "back $(status_of back) $(served_by back)" "back 200 vllm3"
}

@test "the OpenAI SDK sees HAProxy's 404 for an unknown model as NotFoundError" {
	NODE_DIR="$REPO/tests/e2e/node"
	[ -d "$NODE_DIR/node_modules/openai" ] ||
		fail "the OpenAI SDK is not installed: run contrib/install-deps.sh"
	start_world
	local before
	before=$(server_sessions)
	DBK_MODEL=no-such-model timeout 60 node "$NODE_DIR/openai-error.mjs" \
		"http://127.0.0.1:$DBK_PORT/v1" >"$BATS_TEST_TMPDIR/sdk.json"
	run jq -r '[.class, .status, .type, .content_type] | map(tostring) | join(" ")' \
		"$BATS_TEST_TMPDIR/sdk.json"
	assert_output "NotFoundError 404 NotFoundError application/json"
	run jq -r .message "$BATS_TEST_TMPDIR/sdk.json"
	assert_output --partial "no server behind this endpoint serves it"
	assert_equal "sessions $(server_sessions)" "sessions $before"
}

@test "/state lists each server's models as its /v1/models gave them" {
	start_world
	run jq -c '[.servers[] | {name, models}]' < <(agent_get /state)
	assert_output '[{"name":"vllm0","models":[{"id":"model-a"}]},{"name":"vllm1","models":[{"id":"model-a"}]},{"name":"vllm2","models":[{"id":"model-b"}]},{"name":"vllm3","models":[{"id":"model-b"}]}]'
}
