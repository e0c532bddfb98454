#!/usr/bin/env bats
# The official OpenAI SDK (npm "openai", pinned in tests/e2e/node) against
# the stub: a client library must see vLLM's error bodies as vLLM's (its
# 400 message, not "400 status code (no body)") and read the stream.
# contrib/install-deps.sh installs the SDK (npm ci) once; nothing here
# downloads anything.

load stubs

setup() {
	stubs_setup
	NODE_DIR="$REPO/tests/e2e/node"
	command -v node >/dev/null || fail "node is missing: run contrib/install-deps.sh"
	[ -d "$NODE_DIR/node_modules/openai" ] ||
		fail "the OpenAI SDK is not installed: run contrib/install-deps.sh"
}
teardown() {
	local p
	for p in "${FAULT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${FAULT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	stubs_teardown
}

FAULT_PIDS=()

# start_fault MODE: a vLLM server gone wrong (node fault-server.mjs MODE:
# hang or garbage), its pid in FAULT_PIDS, its port in FAULT_PORT.
start_fault() {
	local out="$BATS_TEST_TMPDIR/fault-$1.out"
	node "$NODE_DIR/fault-server.mjs" "$1" >"$out" 2>&1 3>&- &
	FAULT_PIDS+=($!)
	dbk_wait_until 10 grep -sq '^listening on' "$out" || fail "fault server $1: $(cat "$out")"
	FAULT_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
}

# srv_status NAME: backend vllm's server NAME's status in HAProxy (UP,
# DOWN, MAINT...).
srv_status() {
	haproxy_cmd "show stat" | awk -F, -v s="$1" '$1 == "vllm" && $2 == s { print $18 }'
}
srv_is() { [ "$(srv_status "$1")" = "$2" ]; }

# only_server NAME: every server of backend vllm in MAINT but NAME, which
# is back UP (its health check passes) before this returns.
only_server() {
	local i
	for i in 0 1 2 3; do
		[ "vllm$i" = "$1" ] || haproxy_cmd "set server vllm/vllm$i state maint" >/dev/null
	done
	[ -z "$1" ] || haproxy_cmd "set server vllm/$1 state ready" >/dev/null
	[ -z "$1" ] || dbk_wait_until 10 srv_is "$1" UP || fail "$1 is $(srv_status "$1"), not UP"
}

# sdk_error NAME [HEADER VALUE]: one chat completion through HAProxy with
# the SDK; what it saw goes to NAME.json, and into output.
sdk_error() {
	local name=$1
	shift
	timeout 60 node "$NODE_DIR/openai-error.mjs" "http://127.0.0.1:$DBK_PORT/v1" "$@" \
		>"$BATS_TEST_TMPDIR/$name.json"
	cat "$BATS_TEST_TMPDIR/$name.json"
}

# assert_sdk_error NAME CLASS STATUS TYPE MESSAGE: the SDK raised CLASS
# for STATUS with the JSON body's TYPE and MESSAGE ("STATUS MESSAGE", as
# the SDK shows it), from an application/json answer: no HTML anywhere.
assert_sdk_error() {
	local f="$BATS_TEST_TMPDIR/$1.json"
	run jq -r '[.class, .status, .type, .code, .content_type] | map(tostring) | join(" ")' "$f"
	assert_output "$2 $3 $4 $3 application/json"
	run jq -r .message "$f"
	assert_output "$3 $5"
	refute grep -qi '<html' "$f"
}

call() {
	grep "\"call\":\"$1\"" "$BATS_TEST_TMPDIR/out"
}

@test "the OpenAI SDK shows the stub's 400 and 404 messages and reads its stream" {
	start_stub 0 20
	# 80000 bytes = 20000 tokens: over the short stub's 16384.
	run timeout 60 node "$NODE_DIR/openai-client.mjs" \
		"http://127.0.0.1:${STUB_PORT[0]}/v1" stub-model 80000
	assert_success
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/out"

	run call too-long
	assert_output --partial '"class":"BadRequestError","status":400'
	assert_output --partial '"message":"400 This model'"'"'s maximum context length is 16384 tokens. However, you requested 20016 tokens (20000 in the messages, 16 in the completion).'
	assert_output --partial '"type":"BadRequestError","code":400'
	refute_output --partial 'no body'

	run call unknown-model
	assert_output --partial '"class":"NotFoundError","status":404,"message":"404 The model `no-such-model` does not exist."'

	run call stream
	assert_output --partial '"ok":true,"text":" tok tok tok tok tok","completion_tokens":5'
}

@test "HAProxy's own answers reach the SDK as vLLM-shaped JSON errors: 503, 429, 504, 502" {
	# The sample as shipped, but for a short `timeout server` (the 504) and
	# a test-only rule answering 429 (the future admission control's
	# status) to requests with X-Test-Deny.
	local cfg="$BATS_TEST_TMPDIR/haproxy.cfg"
	sed -e 's/^    timeout server  600s$/    timeout server  2s/' \
		-e '/^frontend llm$/a\    http-request deny deny_status 429 if { req.hdr(x-test-deny) -m found }' \
		"$REPO/haproxy/haproxy.cfg" >"$cfg"
	grep -q '^    timeout server  2s$' "$cfg" || fail "the sample's timeout server line changed"
	start_fault hang
	export DBK_VLLM0=127.0.0.1:$FAULT_PORT
	start_fault garbage
	export DBK_VLLM1=127.0.0.1:$FAULT_PORT
	start_agent
	haproxy -f "$cfg" 2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"

	only_server ""
	sdk_error all-maint
	assert_sdk_error all-maint InternalServerError 503 ServiceUnavailableError \
		"no vLLM server is available for this request (every server is down or in maintenance, or none freed up in time)"

	sdk_error denied X-Test-Deny 1
	assert_sdk_error denied RateLimitError 429 RateLimitError \
		"too many requests: the load balancer is admitting no more for now; retry after the seconds in the Retry-After header"
	assert_equal "$(jq -r .retry_after "$BATS_TEST_TMPDIR/denied.json")" 1

	only_server vllm0
	sdk_error timeout
	assert_sdk_error timeout InternalServerError 504 GatewayTimeoutError \
		"the vLLM server did not answer in time: the load balancer stopped waiting (timeout server), and the request may still be running there"

	only_server vllm1
	sdk_error garbage
	assert_sdk_error garbage InternalServerError 502 BadGatewayError \
		"the vLLM server sent an invalid response or closed the connection without one (it may have crashed or restarted); the request may have been partly processed"

	# A request HAProxy cannot parse: its 400 comes from the HTTP/1 layer,
	# before the request is a stream, and only 3.3 and later (3.2.x with
	# the backport) answer those with the configured error file
	# (haproxy/haproxy#3032): JSON there, HAProxy's own HTML before.
	local fd reply version
	exec {fd}<>"/dev/tcp/127.0.0.1/$DBK_PORT"
	printf 'GET /v1/models HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n' >&"$fd"
	read -r -d "" -N 4096 -t 5 -u "$fd" reply || true
	exec {fd}>&-
	reply=${reply//$'\r'/}
	[[ ${reply,,} == "http/1.1 400 bad request"$'\n'* ]] || fail "not a 400: $reply"
	version=$(haproxy -v | awk 'NR == 1 { print $3 }')
	if dpkg --compare-versions "$version" ge 3.3; then
		[[ ${reply,,} == *$'\n'"content-type: application/json"$'\n'* ]] || fail "not JSON: $reply"
		assert_equal "$(jq -r '.error.type' <<<"${reply##*$'\n\n'}")" BadRequestError
	elif dpkg --compare-versions "$version" lt 3.2; then
		[[ $reply == *"<html><body><h1>400 Bad request</h1>"* ]] || fail "HAProxy $version: $reply"
	fi

	# HAProxy's log has the statuses, in order, for its own answers.
	run bash -c "grep '^dbk1 ' '$BATS_TEST_TMPDIR/haproxy.log' | awk '{ print \$5 }' | tr '\n' ' '"
	assert_output "503 429 504 502 400 "
}

@test "the launcher's HAProxy answers in the same JSON: the SDK's 503 when no server is up" {
	local rt=$BATS_TEST_TMPDIR/rt log=$BATS_TEST_TMPDIR/launcher.log pid rc=0
	# A port nothing listens on (dbk_env's for vllm3; no stub started).
	"$BUILD/dbucket" --runtime-dir "$rt" --host 127.0.0.1 --port "$DBK_PORT" \
		--server-hosts 127.0.0.1 --server-ports "$DBK_STUB3" --policy reference \
		2>"$log" </dev/null 3>&- &
	pid=$!
	dbk_wait_until 20 grep -q 'dbucket: ready' "$log" || {
		kill "$pid"
		wait "$pid"
		fail "the launcher did not start: $(cat "$log")"
	}
	cmp "$rt/error-503.http" "$REPO/haproxy/errors/503.http" || rc=1
	sdk_error launcher || rc=1
	kill "$pid"
	wait "$pid" || true
	[ "$rc" -eq 0 ] || fail "the launcher's error file differs from the sample's, or the SDK failed"
	assert_sdk_error launcher InternalServerError 503 ServiceUnavailableError \
		"no vLLM server is available for this request (every server is down or in maintenance, or none freed up in time)"
	# What the launcher wrote it removed.
	[ ! -e "$rt" ] || fail "$rt is still there: $(ls -A "$rt")"
}
