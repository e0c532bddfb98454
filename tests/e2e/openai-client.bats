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
teardown() { stubs_teardown; }

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
