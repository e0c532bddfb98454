#!/usr/bin/env bats
# HAProxy 2.6 + dbucket-spoa + four test backends: requests land where the
# reference algorithm says, and HAProxy carries on alone without the agent.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
}

@test "a short body lands in the short group" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 300 '"max_tokens":32,' >"$BATS_TEST_TMPDIR/short.json"
	run post "$BATS_TEST_TMPDIR/short.json"
	# status server bucket group redirected score (300 bytes = 75 tokens)
	assert_output "200 vllm0 0 0 0 75"
}

@test "a body above the threshold lands in the long group" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	# 140000 bytes = 35000 tokens >= 32768; the sample is cut at one buffer
	# but the Content-Length decides the bucket.
	body_of_size 140000 >"$BATS_TEST_TMPDIR/long.json"
	run post "$BATS_TEST_TMPDIR/long.json"
	assert_output "200 vllm2 1 1 0 35000"
}

@test "the threshold is the agent's: a lower one moves the same body to the long group" {
	start_agent --enable-dynamic-bucket --server-group-threshold 50
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/b.json"
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm2 1 1 0 75"
}

@test "a body sent in small chunks, its length unknown past the sample, lands in the long group" {
	command -v node >/dev/null || fail "node is missing: run contrib/install-deps.sh"
	start_agent --enable-dynamic-bucket
	start_haproxy
	# 40000 bytes = 10000 tokens: with its Content-Length, the short group.
	body_of_size 40000 >"$BATS_TEST_TMPDIR/b.json"
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm0 0 0 0 10000"
	# In 4 KB chunks HAProxy holds part of it when it asks and cannot
	# know the rest: scored at the threshold at least, the long group.
	local head='"\(.status) \(.headers["x-served-by"]) \(.headers["x-dbucket-bucket"]) \(.headers["x-dbucket-group"]) \(.headers["x-dbucket-redirected"]) \(.headers["x-dbucket-score"])"'
	run timeout 30 node "$REPO/tests/e2e/node/chunked-post.mjs" \
		"http://127.0.0.1:$DBK_PORT/v1/completions" "$BATS_TEST_TMPDIR/b.json" 4096
	assert_success
	assert_equal "$(jq -r "$head" <<<"$output")" "200 vllm2 1 1 0 32768"
	assert_equal "$(agent_get /metrics | grep '^dbucket_unsized_bodies_total ')" \
		"dbucket_unsized_bodies_total 1"
}

# The next three tests hold every lease: the agent gets no completion
# events, so the load of each request stays charged, as in the parity
# vectors' dispatch-only runs.

@test "a loaded short group sends the next short request to the long group (the worked example)" {
	start_agent --enable-dynamic-bucket --completion-listen none
	start_haproxy
	body_of_size 3656 >"$BATS_TEST_TMPDIR/a.json"
	body_of_size 15102 >"$BATS_TEST_TMPDIR/b.json"
	run post "$BATS_TEST_TMPDIR/a.json"
	assert_output "200 vllm0 0 0 0 914"
	# Bucket 0 now holds 914, bucket 1 nothing: p = 1 x 0.94 > 0.12.
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm2 0 1 1 3775.5"
}

@test "a sequence of requests is routed exactly as the parity tool predicts" {
	start_agent --enable-dynamic-bucket --server-group-threshold 8192 --completion-listen none
	start_haproxy
	parity_want
	local redirects=0 i
	for i in "${!PARITY_SIZES[@]}"; do
		body_of_size "${PARITY_SIZES[$i]}" >"$BATS_TEST_TMPDIR/r.json"
		read -r status server bucket group redirected score < <(post "$BATS_TEST_TMPDIR/r.json")
		read -r _ wgroup wserver wscore <<<"${WANT[$i]}"
		assert_equal "$status r$i" "200 r$i"
		assert_equal "r$i $group vllm$wserver $score" "r$i $wgroup $server $wscore"
		[ "$redirected" = 1 ] && redirects=$((redirects + 1))
	done
	# The sequence is chosen so that both groups redirect at least once.
	[ "$redirects" -ge 2 ]
}

@test "plain mode scores max_tokens from the JSON body" {
	start_agent --completion-listen none
	start_haproxy
	# Server loads after a (100 B, max 1000): 600; b (400 B): 408. If the
	# agent ignored max_tokens, a would weigh 108 and c would go to vllm0.
	body_of_size 100 '"max_tokens":1000,' >"$BATS_TEST_TMPDIR/a.json"
	body_of_size 400 >"$BATS_TEST_TMPDIR/b.json"
	body_of_size 100 >"$BATS_TEST_TMPDIR/c.json"
	body_of_size 100 '"max_tokens":1000,"ignore_eos":true,' >"$BATS_TEST_TMPDIR/d.json"
	run post "$BATS_TEST_TMPDIR/a.json"
	assert_output "200 vllm0 0 0 0 600"
	run post "$BATS_TEST_TMPDIR/b.json"
	assert_output "200 vllm1 0 0 0 408"
	run post "$BATS_TEST_TMPDIR/c.json"
	assert_output "200 vllm2 0 0 0 108"
	run post "$BATS_TEST_TMPDIR/d.json"
	assert_output "200 vllm3 0 0 0 1100"
	run post "$BATS_TEST_TMPDIR/c.json"
	assert_output "200 vllm2 0 0 0 108"
}

@test "a malformed or truncated body still gets a length-based decision" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	printf '{"prompt": "abc", "max_tokens": ' >"$BATS_TEST_TMPDIR/bad.json"
	run post "$BATS_TEST_TMPDIR/bad.json"
	assert_output "200 vllm0 0 0 0 8"
}

@test "GET requests bypass the agent and are balanced by HAProxy" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DBK_PORT/v1/models"
	assert_output "200"
}

@test "with the agent stopped, every request still succeeds through leastconn" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	run post "$BATS_TEST_TMPDIR/s.json"
	assert_output "200 vllm0 0 0 0 75"
	stop_agent
	# The agent exits cleanly on SIGTERM.
	assert_equal "$AGENT_RC" 0
	local i ok=0 servers=""
	for ((i = 0; i < 20; i++)); do
		read -r status server bucket _ < <(post "$BATS_TEST_TMPDIR/s.json")
		[ "$status" = 200 ] && ok=$((ok + 1))
		# No decision: no bucket header value.
		[ "$bucket" = "" ] || fail "request $i carried a decision without an agent"
		servers="$servers $server"
	done
	assert_equal "$ok" 20
	# leastconn spreads them over more than one server.
	[ "$(tr ' ' '\n' <<<"$servers" | sort -u | grep -c vllm)" -ge 2 ]
}

@test "a restarted agent takes over again" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	stop_agent
	start_agent --enable-dynamic-bucket
	body_of_size 140000 >"$BATS_TEST_TMPDIR/long.json"
	# HAProxy reconnects on the next request; allow a few for the check.
	dbk_wait_until 5 post_like "$BATS_TEST_TMPDIR/long.json" "200 vllm2 1 1 0 *" || true
	assert_equal "${POSTED%% 35000}" "200 vllm2 1 1 0"
}
