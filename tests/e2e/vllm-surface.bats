#!/usr/bin/env bats
# The stub's vLLM surface beyond completions: GET /metrics with vLLM's
# names and label sets (the byte-exact format is unit-tested against a
# fixture in contrib/stub/test_prom.c), its prefix-cache counters moving
# as vLLM's do, and GET /v1/models.

load stubs

setup() { stubs_setup; }
teardown() { stubs_teardown; }

metrics() {
	curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[$1]}/metrics"
}

@test "/metrics: vLLM's families with engine and model_name labels, valid Prometheus text" {
	start_stub 2
	metrics 2 >"$BATS_TEST_TMPDIR/m"
	# Prometheus text; its lint findings are vLLM's own names ("vllm:").
	run prom_parses "$BATS_TEST_TMPDIR/m"
	assert_success
	local l='{engine="0",model_name="stub-model"}' n
	for n in vllm:num_requests_running vllm:num_requests_waiting vllm:kv_cache_usage_perc \
		vllm:prefix_cache_queries_total vllm:prefix_cache_hits_total vllm:num_preemptions_total \
		vllm:prompt_tokens_total vllm:generation_tokens_total vllm:time_to_first_token_seconds_count; do
		run grep -c "^$n$l " "$BATS_TEST_TMPDIR/m"
		assert_output 1
	done
	run grep -c '^vllm:time_to_first_token_seconds_bucket{engine="0",le="[0-9.+Inf]*",model_name="stub-model"} ' "$BATS_TEST_TMPDIR/m"
	assert_output 23
	# 430000 tokens of KV in blocks of 16.
	run grep '^vllm:cache_config_info{' "$BATS_TEST_TMPDIR/m"
	assert_output --partial 'block_size="16"'
	assert_output --partial 'enable_prefix_caching="True"'
	assert_output --partial 'num_gpu_blocks="26875"'
}

@test "a repeated prompt hits the prefix cache: all its full blocks but the one holding the last token" {
	start_stub 2 20
	# 2048 bytes = 512 tokens = 32 blocks; the second request finds 31.
	completion_body 1 false 2048 >"$BATS_TEST_TMPDIR/b.json"
	send "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/b.json" "${STUB_PORT[2]}"
	send "$BATS_TEST_TMPDIR/r2" /v1/completions "$BATS_TEST_TMPDIR/b.json" "${STUB_PORT[2]}"
	assert_equal "$(status "$BATS_TEST_TMPDIR/r2")" 200
	assert_equal "$(stub_metric 2 vllm:prefix_cache_queries_total)" 1024
	assert_equal "$(stub_metric 2 vllm:prefix_cache_hits_total)" 496
	assert_equal "$(stub_metric 2 vllm:prompt_tokens_total)" 1024
	assert_equal "$(stub_metric 2 vllm:time_to_first_token_seconds_count)" 2
	# The same text as a chat message shares the completion's blocks.
	chat_body 1 false 2048 >"$BATS_TEST_TMPDIR/c.json"
	send "$BATS_TEST_TMPDIR/r3" /v1/chat/completions "$BATS_TEST_TMPDIR/c.json" "${STUB_PORT[2]}"
	assert_equal "$(stub_metric 2 vllm:prefix_cache_hits_total)" 992
}

@test "--no-prefix-caching: nothing is looked up, cache_config_info says so" {
	STUB_ARGS=--no-prefix-caching start_stub 2 20
	completion_body 1 false 2048 >"$BATS_TEST_TMPDIR/b.json"
	send "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/b.json" "${STUB_PORT[2]}"
	send "$BATS_TEST_TMPDIR/r2" /v1/completions "$BATS_TEST_TMPDIR/b.json" "${STUB_PORT[2]}"
	assert_equal "$(stub_metric 2 vllm:prefix_cache_queries_total)" 0
	assert_equal "$(stub_metric 2 vllm:prefix_cache_hits_total)" 0
	assert_equal "$(stub_metric 2 vllm:prompt_tokens_total)" 1024
	run grep '^vllm:cache_config_info{' <(metrics 2)
	assert_output --partial 'enable_prefix_caching="False"'
}

@test "/v1/models: the served model with its max_model_len, as vLLM's ModelCard" {
	start_stub 0
	run curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[0]}/v1/models"
	assert_success
	assert_output --regexp '^\{"object":"list","data":\[\{"id":"stub-model","object":"model","created":[0-9]+,"owned_by":"vllm","root":"stub-model","parent":null,"max_model_len":16384,"permission":\[\{"id":"modelperm-[0-9a-f]+","object":"model_permission",'
}
