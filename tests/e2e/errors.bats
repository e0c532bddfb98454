#!/usr/bin/env bats
# vLLM's error answers through HAProxy and the agent: they reach the client
# as vLLM sent them (the reference proxy turned a 400 into an empty 200),
# and each releases its lease exactly once.

load stubs

setup() {
	stubs_setup
}

teardown() {
	stubs_teardown
}

# same_bytes BASE: BASE's body is byte for byte the one the serving stub
# gave when asked directly (error bodies carry no id or time).
same_bytes() {
	cmp -s "$1.b" "$1.direct.b" || fail "body differs: '$(head -c 300 "$1.b")' vs '$(head -c 300 "$1.direct.b")'"
	assert_equal "$(header "$1" Content-Length)" "$(stat -c %s "$1.b")"
}

@test "a 400 from vLLM reaches the client as that 400, with vLLM's JSON body" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	# 80 KB of prompt: 20000 tokens, under the 32768-token threshold, so a
	# short-group server, whose context is 16384 tokens.
	completion_body 16 false 80000 >"$BATS_TEST_TMPDIR/long.json"
	send "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/long.json"
	assert_equal "$(status "$BATS_TEST_TMPDIR/r1")" 400
	run header "$BATS_TEST_TMPDIR/r1" X-Served-By
	assert_output --regexp '^vllm[01]$'
	run cat "$BATS_TEST_TMPDIR/r1.b"
	assert_output '{"error":{"message":"This model'"'"'s maximum context length is 16384 tokens. However, you requested 20016 tokens (20000 in the messages, 16 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}'
	same_as_direct "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/long.json"
	same_bytes "$BATS_TEST_TMPDIR/r1"

	# Invalid JSON.
	printf '{"model":"stub-model","prompt":' >"$BATS_TEST_TMPDIR/bad.json"
	send "$BATS_TEST_TMPDIR/r2" /v1/completions "$BATS_TEST_TMPDIR/bad.json"
	assert_equal "$(status "$BATS_TEST_TMPDIR/r2")" 400
	assert_equal "$(header "$BATS_TEST_TMPDIR/r2" Content-Type)" application/json
	grep -q '"type":"BadRequestError"' "$BATS_TEST_TMPDIR/r2.b" || fail "$(cat "$BATS_TEST_TMPDIR/r2.b")"
	same_as_direct "$BATS_TEST_TMPDIR/r2" /v1/completions "$BATS_TEST_TMPDIR/bad.json"
	same_bytes "$BATS_TEST_TMPDIR/r2"

	# A streaming request refused up front is a JSON error, not a stream.
	completion_body 16 true 80000 >"$BATS_TEST_TMPDIR/long-stream.json"
	send "$BATS_TEST_TMPDIR/r3" /v1/completions "$BATS_TEST_TMPDIR/long-stream.json"
	assert_equal "$(status "$BATS_TEST_TMPDIR/r3")" 400
	assert_equal "$(header "$BATS_TEST_TMPDIR/r3" Content-Type)" application/json
	same_as_direct "$BATS_TEST_TMPDIR/r3" /v1/completions "$BATS_TEST_TMPDIR/long-stream.json"
	same_bytes "$BATS_TEST_TMPDIR/r3"

	wait_state released 3
	assert_books_balanced
}

@test "error answers (404, 400, 405) release their lease exactly once each" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	local d="$BATS_TEST_TMPDIR"
	completion_body 8 false 40 nosuch-model >"$d/e0.json"
	sed 's/"stub-model"/"nosuch-model"/' < <(chat_body 8 true) >"$d/e1.json"
	printf '{"model":"stub-model","prompt":' >"$d/e2.json"
	completion_body 16 false 80000 >"$d/e3.json"
	printf '{"model":"stub-model","prompt":"hi","max_tokens":-1}' >"$d/e4.json"
	printf '{"model":"stub-model","prompt":"hi","n":2}' >"$d/e5.json"
	completion_body 8 false >"$d/e6.json"
	completion_body 8 false >"$d/e7.json"
	# path, body, status, what the body says
	local -a paths=(/v1/completions /v1/chat/completions /v1/completions /v1/completions
		/v1/completions /v1/completions /v1/nosuch /v1/models)
	local -a want=(404 404 400 400 400 400 404 405)
	local -a says=('"type":"NotFoundError"' '"type":"NotFoundError"' '"type":"BadRequestError"'
		'maximum context length' '"type":"BadRequestError"' '"type":"BadRequestError"'
		'{"detail":"Not Found"}' '{"detail":"Method Not Allowed"}')
	local i n=${#want[@]}
	for ((i = 0; i < n; i++)); do
		send "$d/r$i" "${paths[$i]}" "$d/e$i.json"
		assert_equal "r$i ${paths[$i]} $(status "$d/r$i")" "r$i ${paths[$i]} ${want[$i]}"
		grep -qF -- "${says[$i]}" "$d/r$i.b" || fail "r$i: $(cat "$d/r$i.b")"
		# Routed by the agent, then released: one more each time, and
		# one completion line each (the ring is ordered, so a second line
		# for this request would arrive before the next one's).
		[ -n "$(header "$d/r$i" X-Dbucket-Server)" ] || fail "r$i was not routed by the agent"
		wait_state released $((i + 1))
		assert_equal "r$i completions=$(state_field completions)" "r$i completions=$((i + 1))"
	done
	# A last, successful request closes the sequence: any late duplicate
	# of the last error's line would be counted before it.
	completion_body 4 false >"$d/ok.json"
	send "$d/ok" /v1/completions "$d/ok.json"
	assert_equal "$(status "$d/ok")" 200
	wait_state released $((n + 1))
	assert_books_balanced
	state_snapshot
	assert_equal "decisions=$(state_get decisions) completions=$(state_get completions) unknown=$(state_get unknown_releases) expired=$(state_get expired)" \
		"decisions=$((n + 1)) completions=$((n + 1)) unknown=0 expired=0"
	# HAProxy's lines carry vLLM's statuses, not a rewritten 200.
	run bash -c "grep '^dbk1 ' '$d/haproxy.log' | awk '{ print \$5 }' | tr '\n' ' '"
	assert_output "${want[*]} 200 "
	echo "# error answers: $n (404 model, 404 chat model, 400 JSON, 400 context, 400 max_tokens, 400 n, 404 path, 405 method), each released once" >&3
}
