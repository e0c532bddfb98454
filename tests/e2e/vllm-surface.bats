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

# ---- engines and exposition formats the agent scrapes (issue 30) ----

scraped_up() { [ "$(scrape_metric "dbucket_scrape_up{server=\"$1\"}")" = 1 ]; }

@test "--engine-names sglang: SGLang's families, and the agent reads them by default; --engine vllm does not" {
	STUB_ARGS="--engine-names sglang" start_stub 1
	start_stub 2
	metrics 1 >"$BATS_TEST_TMPDIR/m"
	run prom_parses "$BATS_TEST_TMPDIR/m"
	assert_success
	local n
	for n in sglang:num_running_reqs sglang:num_queue_reqs sglang:token_usage sglang:cache_hit_rate \
		sglang:max_total_num_tokens sglang:prompt_tokens_total sglang:cached_tokens_total \
		sglang:time_to_first_token_seconds_count; do
		run grep -c "^$n{" "$BATS_TEST_TMPDIR/m"
		assert_output 1
	done
	run grep -c '^vllm:' "$BATS_TEST_TMPDIR/m"
	assert_output 0
	start_agent --policy ttft --scrape "vllm1=http://127.0.0.1:${STUB_PORT[1]}" \
		--scrape "vllm2=http://127.0.0.1:${STUB_PORT[2]}"
	wait_until 10 scraped_up vllm1
	scraped_up vllm2
	# SGLang's pool is in tokens: blocks of one.
	assert_equal "$(scrape_metric 'dbucket_vllm_gpu_blocks{server="vllm1"}')" "$SHORT_KV"
	assert_equal "$(scrape_metric 'dbucket_vllm_block_size{server="vllm1"}')" 1
	assert_equal "$(agent_get /state | jq -r '.scrape.servers[] | select(.name == "vllm1") | .engine')" sglang
	assert_equal "$(agent_get /state | jq -r '.scrape.servers[] | select(.name == "vllm2") | .engine')" vllm
	# A request held running on the SGLang stub shows in what the agent read.
	completion_body 400 true 200 >"$BATS_TEST_TMPDIR/long.json"
	send_bg "$BATS_TEST_TMPDIR/r" /v1/completions "$BATS_TEST_TMPDIR/long.json" "${STUB_PORT[1]}"
	running_one() { [ "$(scrape_metric 'dbucket_vllm_requests_running{server="vllm1"}')" = 1 ]; }
	wait_until 10 running_one
	stop_agent
	# --engine vllm reads vLLM's names only: the SGLang server is not one.
	: >"$BATS_TEST_TMPDIR/agent.log"
	start_agent --policy ttft --engine vllm --scrape "vllm1=http://127.0.0.1:${STUB_PORT[1]}"
	wait_log 'event=scrape-down server=vllm1 .*cause=implausible'
}

@test "--metric KEY=NAME reads a renamed family; --engine and --metric are checked" {
	STUB_ARGS="--engine-names sglang" start_stub 1
	start_agent --policy ttft --engine vllm --metric running=sglang:num_running_reqs \
		--metric waiting=sglang:num_queue_reqs --scrape "vllm1=http://127.0.0.1:${STUB_PORT[1]}"
	wait_until 10 scraped_up vllm1
	assert_equal "$(scrape_metric 'dbucket_vllm_requests_running{server="vllm1"}')" 0
	stop_agent
	run "$BUILD/dbucket-spoa" --engine trtllm vllm0
	assert_failure 2
	assert_output --partial "--engine wants vllm, sglang or auto"
	run "$BUILD/dbucket-spoa" --metric nope=x vllm0
	assert_failure 2
	assert_output --partial "--metric wants KEY=NAME"
	run "$BUILD/dbucket-spoa" --metric running=x --engine vllm vllm0
	assert_failure 2
	assert_output --partial "--engine comes before any --metric"
}

@test "an OpenMetrics /metrics (exemplars, float timestamps, # EOF) is read; main refused it" {
	local d=$BATS_TEST_TMPDIR port
	port=$(dbk_port)
	cat >"$d/om.txt" <<'OM'
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0 1700000000.250
# TYPE vllm:time_to_first_token_seconds histogram
# UNIT vllm:time_to_first_token_seconds seconds
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 3.0 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.31 1700000000.5
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 3.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.9
vllm:time_to_first_token_seconds_created{engine="0",model_name="m"} 1.7e+09
# EOF
OM
	cat >"$d/om.cfg" <<CFG
global
  log stderr format raw local0 err
defaults
  mode http
  timeout client 5s
  timeout server 5s
  timeout connect 5s
frontend om
  bind 127.0.0.1:$port
  http-request return status 200 content-type application/json string '{"object":"list","data":[{"id":"m","max_model_len":4096}]}' if { path /v1/models }
  http-request return status 200 content-type "application/openmetrics-text; version=1.0.0; charset=utf-8" file $d/om.txt
CFG
	haproxy -f "$d/om.cfg" 2>"$d/om.log" &
	STUB_PID[0]=$! # stopped by stubs_teardown
	dbk_wait_port "$port"
	start_agent --policy ttft --scrape "vllm0=http://127.0.0.1:$port"
	wait_until 10 scraped_up vllm0
	assert_equal "$(scrape_metric 'dbucket_vllm_requests_running{server="vllm0"}')" 2
	assert_equal "$(scrape_metric 'dbucket_vllm_requests_waiting{server="vllm0"}')" 1
	assert_equal "$(scrape_metric 'dbucket_vllm_first_tokens_total{server="vllm0"}')" 3
}

# ---- the request histograms (issue 30) and priority scheduling (issue 28) ----

# hist_count I FAMILY: the _count of stub vllmI's histogram FAMILY.
hist_count() { stub_metric "$1" "$2_count"; }

@test "/metrics: vLLM's request histograms in its buckets, counted per request served" {
	start_stub 2 20
	metrics 2 >"$BATS_TEST_TMPDIR/m0"
	run prom_parses "$BATS_TEST_TMPDIR/m0"
	assert_success
	# loggers.py's buckets, +Inf included; the token counts' 1-2-5 up to
	# the 131072-token context: 1 ... 100000.
	local fam want
	for fam in request_prompt_tokens:17 request_generation_tokens:17 \
		time_to_first_token_seconds:23 inter_token_latency_seconds:20 \
		time_per_output_token_seconds:20 e2e_request_latency_seconds:22; do
		want=${fam#*:} fam=vllm:${fam%:*}
		run grep -c "^${fam}_bucket{engine=\"0\",le=\"[0-9.e+Inf]*\",model_name=\"stub-model\"} " "$BATS_TEST_TMPDIR/m0"
		assert_output "$want"
		assert_equal "$(hist_count 2 "$fam")" 0
	done
	grep -q '^vllm:request_prompt_tokens_bucket{engine="0",le="100000.0",model_name="stub-model"} 0.0$' "$BATS_TEST_TMPDIR/m0"
	# Three requests of 5 tokens, one a batch of two prompts: four
	# engine requests, each a first token, four gaps and an end.
	completion_body 5 false 400 >"$BATS_TEST_TMPDIR/one.json"
	send "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/one.json" "${STUB_PORT[2]}"
	completion_body 5 true 400 >"$BATS_TEST_TMPDIR/stream.json"
	send "$BATS_TEST_TMPDIR/r2" /v1/completions "$BATS_TEST_TMPDIR/stream.json" "${STUB_PORT[2]}"
	printf '{"model":"stub-model","max_tokens":5,"prompt":["%s","%s"]}' \
		"$(head -c 400 /dev/zero | tr '\0' a)" "$(head -c 800 /dev/zero | tr '\0' b)" >"$BATS_TEST_TMPDIR/batch.json"
	send "$BATS_TEST_TMPDIR/r3" /v1/completions "$BATS_TEST_TMPDIR/batch.json" "${STUB_PORT[2]}"
	for r in r1 r2 r3; do assert_equal "$(status "$BATS_TEST_TMPDIR/$r")" 200; done
	metrics 2 >"$BATS_TEST_TMPDIR/m1"
	run prom_parses "$BATS_TEST_TMPDIR/m1"
	assert_success
	assert_equal "$(hist_count 2 vllm:time_to_first_token_seconds)" 4
	assert_equal "$(hist_count 2 vllm:inter_token_latency_seconds)" 16
	assert_equal "$(hist_count 2 vllm:time_per_output_token_seconds)" 16
	assert_equal "$(hist_count 2 vllm:e2e_request_latency_seconds)" 4
	assert_equal "$(hist_count 2 vllm:request_prompt_tokens)" 4
	assert_equal "$(stub_metric 2 vllm:request_prompt_tokens_sum)" $((100 * 3 + 200))
	assert_equal "$(stub_metric 2 vllm:request_generation_tokens_sum)" 20
	# The latencies are sums of model seconds after each arrival.
	awk '/^vllm:(e2e_request_latency|time_to_first_token|inter_token_latency)_seconds_sum/ { if ($2 <= 0) bad = 1 } END { exit bad }' "$BATS_TEST_TMPDIR/m1"
}

# finish_order A B: which of the requests A and B (their .done stamps)
# ended first.
finished_first() { [ "$(cat "$BATS_TEST_TMPDIR/$1.done")" -lt "$(cat "$BATS_TEST_TMPDIR/$2.done")" ]; }

# send_stamped NAME BODY PORT: send in the background, then stamp NAME.done
# with the time it ended (ns).
send_stamped() {
	(send "$BATS_TEST_TMPDIR/$1" /v1/completions "$2" "$3"; date +%s%N >"$BATS_TEST_TMPDIR/$1.done") \
		</dev/null >/dev/null 2>&1 3>&- &
	CLIENT_PIDS+=("$!")
}

waiting_is() { [ "$(stub_metric 2 vllm:num_requests_waiting)" = "$1" ]; }
running_is() { [ "$(stub_metric 2 vllm:num_requests_running)" = "$1" ]; }

# overtake POLICY: on one seat, A runs, B (priority 10) waits, then C
# (priority 0) arrives; both B and C are served.
overtake() {
	STUB_ARGS="--max-num-seqs 1 --scheduling-policy $1" start_stub 2 1
	grep -q "scheduling-policy $1)" "$BATS_TEST_TMPDIR/stub2.out"
	local d=$BATS_TEST_TMPDIR
	printf '{"model":"stub-model","max_tokens":200,"prompt":"aaaa","priority":10}' >"$d/a.json"
	printf '{"model":"stub-model","max_tokens":40,"prompt":"bbbb","priority":10}' >"$d/b.json"
	printf '{"model":"stub-model","max_tokens":40,"prompt":"cccc","priority":0}' >"$d/c.json"
	send_stamped a "$d/a.json" "${STUB_PORT[2]}"
	wait_until 5 running_is 1
	send_stamped b "$d/b.json" "${STUB_PORT[2]}"
	wait_until 5 waiting_is 1
	send_stamped c "$d/c.json" "${STUB_PORT[2]}"
	wait_until 5 waiting_is 2
	wait_clients
	for r in a b c; do assert_equal "$(status "$d/$r")" 200; done
}

@test "--scheduling-policy priority: a priority-0 request overtakes a priority-10 one waiting before it" {
	overtake priority
	finished_first c b
}

@test "--scheduling-policy fcfs (the default): the priority is accepted and ignored, first come first served" {
	overtake fcfs
	finished_first b c
	# vLLM V1 takes any integer under fcfs; the stub refuses what is not one.
	printf '{"model":"stub-model","max_tokens":1,"prompt":"a","priority":"high"}' >"$BATS_TEST_TMPDIR/bad.json"
	send "$BATS_TEST_TMPDIR/bad" /v1/completions "$BATS_TEST_TMPDIR/bad.json" "${STUB_PORT[2]}"
	assert_equal "$(status "$BATS_TEST_TMPDIR/bad")" 400
	grep -q '"message":"priority must be an integer' "$BATS_TEST_TMPDIR/bad.b"
}
