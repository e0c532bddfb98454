#!/usr/bin/env bats
# Issue 28 through HAProxy 2.6 and four vLLM stubs saturated on purpose:
# under --policy ttft --admission a sheddable (or standard) request
# predicted past its share of the objective gets HAProxy's 429 in
# OpenAI's format with a Retry-After, and takes no lease; critical goes
# through; a class not known is standard; HAProxy's own queue (servers at
# maxconn) lets critical requests out before sheddable ones queued
# earlier; the OpenAI SDK sees the 429 as a RateLimitError, and a retry
# once the load is gone succeeds.

load stubs

setup() {
	stubs_setup
	NODE_DIR="$REPO/tests/e2e/node"
	# The test's client is the operator's own: its X-Request-Class may
	# raise a class (tests/e2e/class-trust.bats: what others' may do).
	echo 127.0.0.1 >"$BATS_TEST_TMPDIR/trusted.lst"
	export DBK_TRUSTED_CLASS_SRC=$BATS_TEST_TMPDIR/trusted.lst
}
teardown() { stubs_teardown; }

# The load: N requests of distinct 56 KB prompts (about 14k tokens each,
# within the short servers' 16k context; no prefix shared, so every
# prefill is paid), sent as critical so that admission lets them all in;
# the agent holds their N leases on return.
LOAD=48
saturate() {
	local k
	for ((k = 0; k < LOAD; k++)); do
		{
			printf '{"model":"stub-model","max_tokens":20,"ignore_eos":true,"prompt":"%s-' "$k"
			head -c 56000 /dev/zero | tr '\0' 'a'
			printf '"}'
		} >"$BATS_TEST_TMPDIR/load$k.json"
		send_bg "$BATS_TEST_TMPDIR/load$k" /v1/completions "$BATS_TEST_TMPDIR/load$k.json" \
			"$DBK_PORT" -H 'X-Request-Class: critical'
	done
	wait_state_ge leases "$LOAD"
}

# The stubs run at a fifth of real time (and the agent's model knows it),
# so that the load keeps them past the objective for several seconds.
start_world() {
	start_stubs 0.2
	local i scrape=()
	for i in 0 1 2 3; do scrape+=(--scrape "vllm$i=http://$(eval echo "\$DBK_VLLM$i")"); done
	start_agent --policy ttft --engine-speed 0.2 --admission --admit-ttft 1s "${scrape[@]}"
	start_haproxy_stubs
	completion_body 4 false >"$BATS_TEST_TMPDIR/small.json"
}

# ask NAME CLASS: one small completion with X-Request-Class CLASS (none
# when empty); NAME.h, NAME.b as send keeps them.
ask() {
	local -a h=()
	[ -z "$2" ] || h=(-H "X-Request-Class: $2")
	send "$BATS_TEST_TMPDIR/$1" /v1/completions "$BATS_TEST_TMPDIR/small.json" "$DBK_PORT" \
		"${h[@]}" || true
}
status_of() { sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/$1.h"; }
header_of() {
	tr -d '\r' <"$BATS_TEST_TMPDIR/$1.h" | awk -F': ' -v h="$2" 'tolower($1) == h { print $2 }'
}

@test "past capacity: sheddable and standard get a 429 in OpenAI's format with Retry-After, critical goes through, none takes a lease" {
	start_world
	# Below capacity nothing is refused, whatever the class.
	ask idle sheddable
	assert_equal "idle: $(status_of idle)" "idle: 200"
	saturate
	ask shed sheddable
	assert_equal "sheddable: $(status_of shed)" "sheddable: 429"
	run header_of shed retry-after
	assert_output --regexp '^[1-9][0-9]*$'
	run jq -r '[.error.type, .error.code] | map(tostring) | join(" ")' "$BATS_TEST_TMPDIR/shed.b"
	assert_output "RateLimitError 429"
	run header_of shed content-type
	assert_output application/json
	ask std ""
	assert_equal "standard: $(status_of std)" "standard: 429"
	# A class not known is standard: shed as standard, counted, no error.
	ask bad urgent
	assert_equal "bad class: $(status_of bad)" "bad class: 429"
	ask crit critical
	assert_equal "critical: $(status_of crit)" "critical: 200"
	assert_equal "bad_class $(state_field bad_class)" "bad_class 1"
	assert_equal "shed_sheddable_predicted_late $(state_field shed_sheddable_predicted_late)" "shed_sheddable_predicted_late 1"
	assert_equal "shed_standard_predicted_late $(state_field shed_standard_predicted_late)" "shed_standard_predicted_late 2"
	assert_equal "admitted_critical $(state_field admitted_critical)" "admitted_critical $((LOAD + 1))"
	assert_equal "admitted_sheddable $(state_field admitted_sheddable)" "admitted_sheddable 1"
	wait_clients
	# Nothing leaks: the refused requests held no lease, and their
	# completion lines released none (undecided, not unknown).
	wait_state leases 0
	wait_state_ge completions $((LOAD + 5))
	assert_equal "unknown_releases $(state_field unknown_releases)" "unknown_releases 0"
	assert_equal "undecided $(state_field undecided)" "undecided 3"
	run curl -s "http://127.0.0.1:$ADMIN_PORT/metrics"
	assert_line 'dbucket_admission_shed_total{class="sheddable",reason="predicted_late"} 1'
	assert_line 'dbucket_admission_bad_class_total 1'
}

@test "the OpenAI SDK sees the 429 as a RateLimitError with Retry-After, and a retry once the load is gone succeeds" {
	command -v node >/dev/null || fail "node is missing: run contrib/install-deps.sh"
	[ -d "$NODE_DIR/node_modules/openai" ] ||
		fail "the OpenAI SDK is not installed: run contrib/install-deps.sh"
	start_world
	saturate
	run timeout 60 node "$NODE_DIR/openai-error.mjs" "http://127.0.0.1:$DBK_PORT/v1" \
		X-Request-Class sheddable
	assert_success
	echo "$output" >"$BATS_TEST_TMPDIR/sdk.json"
	run jq -r '[.class, .status, .type, .content_type] | map(tostring) | join(" ")' \
		"$BATS_TEST_TMPDIR/sdk.json"
	assert_output "RateLimitError 429 RateLimitError application/json"
	run jq -r .retry_after "$BATS_TEST_TMPDIR/sdk.json"
	assert_output --regexp '^[1-9][0-9]*$'
	wait_clients
	wait_state leases 0
	run timeout 60 node "$NODE_DIR/openai-error.mjs" "http://127.0.0.1:$DBK_PORT/v1" \
		X-Request-Class sheddable
	assert_success
	assert_output '{"ok":true}'
}

# backend_queue: requests waiting in HAProxy's queues for backend vllm,
# the backend's own and its servers' (where the agent's use-server puts
# them).
backend_queue() {
	haproxy_cmd "show stat" | awk -F, '$1 == "vllm" { q += $3 } END { print q + 0 }'
}
queue_is() { [ "$(backend_queue)" = "$1" ]; }

@test "HAProxy's queue lets critical requests out before sheddable ones queued earlier" {
	# One server, one request at a time: the rest wait in HAProxy's
	# queue, which admission leaves alone (no --admission here).
	export DBK_SERVER_MAXCONN=1
	start_ttft_world
	local i
	for i in 1 2 3; do haproxy_cmd "set server vllm/vllm$i state maint" >/dev/null; done
	completion_body 600 false >"$BATS_TEST_TMPDIR/hold.json"
	completion_body 2 false >"$BATS_TEST_TMPDIR/small.json"
	send_bg "$BATS_TEST_TMPDIR/hold" /v1/completions "$BATS_TEST_TMPDIR/hold.json"
	wait_state_ge leases 1
	local n=0 c
	for c in sheddable sheddable sheddable critical critical critical; do
		n=$((n + 1))
		send_bg "$BATS_TEST_TMPDIR/q$n" /v1/completions "$BATS_TEST_TMPDIR/small.json" \
			"$DBK_PORT" -H "X-Request-Class: $c"
		dbk_wait_until 10 queue_is "$n" || fail "queue is $(backend_queue), wanted $n"
	done
	wait_clients
	# HAProxy logs each request as it ends, one at a time here: after
	# the holder (standard), the three critical, then the sheddable.
	run bash -c "grep -o '\"POST /v1/completions HTTP/1.1\" [a-z]*\$' '$BATS_TEST_TMPDIR/haproxy.log' | awk '{ print \$NF }' | tr '\n' ' '"
	assert_output "standard critical critical critical sheddable sheddable sheddable "
	wait_state leases 0
}
