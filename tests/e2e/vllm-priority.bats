#!/usr/bin/env bats
# Issue 28, vLLM's own priority: with DBK_PRIORITY_LUA, haproxy/haproxy.cfg
# loads haproxy/dbucket-priority.lua, which writes each request's class
# into the body as vLLM's `priority` field (0 critical, 1 standard, 2
# sheddable) and keeps Content-Length true. Four stubs started with
# --scheduling-policy priority --verbose log the priority each request
# reached them with; bodies of every shape must reach them whole.

load stubs

setup() {
	stubs_setup
	completion_body 2 false >"$BATS_TEST_TMPDIR/small.json"
	STUB_ARGS="--verbose --scheduling-policy priority"
	SENT=0
}
teardown() {
	stubs_teardown
}

# ask BODY CLASS [CURL ARGS...]: POST BODY with X-Request-Class CLASS
# (none when "-"); its status in ST, its response in $BATS_TEST_TMPDIR/rN.
ask() {
	local body=$1 c=$2
	local -a h=()
	[ "$c" = - ] || h=(-H "X-Request-Class: $c")
	shift 2
	SENT=$((SENT + 1))
	send "$BATS_TEST_TMPDIR/r$SENT" /v1/completions "$body" "$DBK_PORT" "${h[@]}" "$@" ||
		fail "request $SENT: curl failed"
	ST=$(status "$BATS_TEST_TMPDIR/r$SENT")
}

@test "each request reaches vLLM with its class as priority: critical 0, standard 1, sheddable 2" {
	echo 127.0.0.1 >"$BATS_TEST_TMPDIR/trusted.lst"
	export DBK_TRUSTED_CLASS_SRC=$BATS_TEST_TMPDIR/trusted.lst
	export DBK_PRIORITY_LUA=$REPO/haproxy/dbucket-priority.lua
	start_ttft_world
	local c
	for c in critical - sheddable standard 2 0; do
		ask "$BATS_TEST_TMPDIR/small.json" "$c"
		assert_equal "$c $ST" "$c 200"
	done
	wait_until 10 priorities_logged 6 || fail "the stubs logged fewer than 6 requests"
	assert_equal "$(priorities)" "0 0 1 1 2 2 "
}

@test "bodies of every shape keep a true length: spaces, an empty object, not JSON, 100 KB" {
	export DBK_PRIORITY_LUA=$REPO/haproxy/dbucket-priority.lua
	start_ttft_world
	local d=$BATS_TEST_TMPDIR
	# Leading whitespace and a newline before the first member.
	printf ' \n\t{\n "model":"stub-model","max_tokens":2,"prompt":"aaaa"}' >"$d/ws.json"
	ask "$d/ws.json" sheddable
	assert_equal "$ST" 200
	# 100 KB: past HAProxy's 16 KB buffer, the field still lands first.
	body_of_size 100000 '"max_tokens":2,' | sed 's/"model":"m"/"model":"stub-model"/' >"$d/big.json"
	ask "$d/big.json" sheddable
	assert_equal "$ST" 200
	wait_until 10 priorities_logged 2 || fail "the stubs logged fewer than 2 requests"
	assert_equal "$(priorities)" "2 2 "
	# An empty object and a body that is not JSON reach the stub whole and
	# get its own 400 (JSON, X-Served-By), not HAProxy's.
	printf '{ }' >"$d/empty.json"
	printf 'not json at all' >"$d/text.json"
	local f
	for f in empty text; do
		ask "$d/$f.json" -
		assert_equal "$f $ST" "$f 400"
		[ -n "$(header "$d/r$SENT" X-Served-By)" ] || fail "$f: HAProxy answered, not the stub"
		grep -q '"error"' "$d/r$SENT.b" || fail "$f: no JSON error: $(cat "$d/r$SENT.b")"
	done
}

@test "without DBK_PRIORITY_LUA the body is untouched: every request reaches vLLM at priority 0" {
	start_ttft_world
	local c
	for c in - sheddable; do
		ask "$BATS_TEST_TMPDIR/small.json" "$c"
		assert_equal "$c $ST" "$c 200"
	done
	wait_until 10 priorities_logged 2 || fail "the stubs logged fewer than 2 requests"
	assert_equal "$(priorities)" "0 0 "
}

# requests: "prompt_tokens max_tokens priority" of every request the
# stubs logged, sorted, ';' after each.
requests() {
	cat "$BATS_TEST_TMPDIR"/stub?.log | grep ' event=request ' |
		sed -n 's/.* prompt_tokens=\([0-9]*\) max_tokens=\([0-9]*\) .*priority=\(-\?[0-9]*\).*/\1 \2 \3/p' |
		sort -n | tr '\n' ';'
}

# chunked_pair: a 400-byte prompt (100 tokens, max_tokens 3) with class
# sheddable and a 100 KB one (25000 tokens, several chunks) with none,
# both sent chunked; both answered 200 with the usage of what was sent.
chunked_pair() {
	local d=$BATS_TEST_TMPDIR
	completion_body 3 false 400 >"$d/c-small.json"
	completion_body 2 false 100000 >"$d/c-big.json"
	ask "$d/c-small.json" sheddable -H 'Transfer-Encoding: chunked'
	assert_equal "small $ST $(jq -c '[.usage.prompt_tokens, .usage.completion_tokens]' "$d/r$SENT.b")" "small 200 [100,3]"
	ask "$d/c-big.json" - -H 'Transfer-Encoding: chunked'
	assert_equal "big $ST $(jq -c '[.usage.prompt_tokens, .usage.completion_tokens]' "$d/r$SENT.b")" "big 200 [25000,2]"
	wait_until 10 priorities_logged 2 || fail "the stubs logged fewer than 2 requests"
}

@test "a chunked body gets its priority and keeps every field, small and 100 KB" {
	# No Content-Length to raise: HAProxy re-chunks the body with the 13
	# bytes in, and the stub decodes it.
	export DBK_PRIORITY_LUA=$REPO/haproxy/dbucket-priority.lua
	start_ttft_world
	chunked_pair
	assert_equal "$(requests)" "100 3 2;25000 2 1;"
}

@test "without DBK_PRIORITY_LUA a chunked body arrives unchanged" {
	start_ttft_world
	chunked_pair
	assert_equal "$(requests)" "100 3 0;25000 2 0;"
}
