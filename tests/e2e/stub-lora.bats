#!/usr/bin/env bats
# The stub's LoRA adapters as vLLM serves them (issue 27): /v1/models's
# adapter cards, vLLM's 404 for a model it does not serve, the runtime
# load and unload endpoints, vllm:lora_requests_info following what runs
# and waits, and the load a request pays for an adapter outside the GPU
# slots. The engine's slots, eviction and cap are unit-tested in
# tests/unit/test_engine_lora.c; the JSON and the metric's text in
# contrib/stub/test_loras.c.

load stubs

setup() { stubs_setup; }
teardown() { stubs_teardown; }

url() { echo "http://127.0.0.1:${STUB_PORT[2]}$1"; }

# post_json PATH JSON: prints the body, then the status on a line of its own.
post_json() {
	curl -s --max-time 10 -w '\n%{http_code}' -H 'Content-Type: application/json' \
		--data-binary "$2" "$(url "$1")"
}

complete() {
	post_json /v1/completions "{\"model\":\"$1\",\"prompt\":\"hello\",\"max_tokens\":${2:-2}}"
}

# lora_latest: the label set of vllm:lora_requests_info with the latest
# time (a reader's rule: the value is when it was set), as
# "running=...;waiting=...;max=...".
lora_latest() {
	curl -s --max-time 5 "$(url /metrics)" | awk '
		/^vllm:lora_requests_info\{/ {
			v = $NF + 0
			if (v >= best) { best = v; line = $0 }
		}
		END {
			match(line, /max_lora="[^"]*"/); m = substr(line, RSTART + 10, RLENGTH - 11)
			match(line, /running_lora_adapters="[^"]*"/); r = substr(line, RSTART + 23, RLENGTH - 24)
			match(line, /waiting_lora_adapters="[^"]*"/); w = substr(line, RSTART + 23, RLENGTH - 24)
			printf "running=%s;waiting=%s;max=%s\n", r, w, m
		}'
}

lora_is() { [ "$(lora_latest)" = "$1" ]; }

@test "/v1/models: the base model, then each adapter's ModelCard with parent and root, from both --lora-modules forms" {
	STUB_ARGS='--model base --enable-lora --max-loras 2 --lora-modules sql=/lora/sql {"name":"chat","path":"/lora/chat"} --max-num-seqs 64' \
		start_stub 2
	run curl -s --max-time 5 "$(url /v1/models)"
	assert_success
	assert_equal "$(jq -r '[.data[].id] | join(",")' <<<"$output")" base,sql,chat
	assert_output --regexp '\{"id":"sql","object":"model","created":[0-9]+,"owned_by":"vllm","root":"/lora/sql","parent":"base","max_model_len":null,"permission":\[\{"id":"modelperm-[0-9a-f]+","object":"model_permission",'
	assert_equal "$(jq -r '.data[0].parent' <<<"$output")" null
	assert_equal "$(jq -r '.data[2].root' <<<"$output")" /lora/chat
	# The flag after the modules was read as a flag.
	run grep -c 'max-num-seqs 64' "$BATS_TEST_TMPDIR/stub2.out"
	assert_output 1
}

@test "a model neither the base nor a served adapter: vLLM's 404 JSON; an adapter is served under its own name" {
	STUB_ARGS='--model base --enable-lora --lora-modules sql=/lora/sql' start_stub 2 20
	run complete nope
	assert_line --index 1 404
	assert_line --index 0 '{"error":{"message":"The model `nope` does not exist.","type":"NotFoundError","param":null,"code":404}}'
	run complete sql
	assert_line --index 1 200
	assert_equal "$(head -1 <<<"$output" | jq -r .model)" sql
	run complete base
	assert_line --index 1 200
	assert_equal "$(head -1 <<<"$output" | jq -r .model)" base
}

@test "without --enable-lora an adapter's name is an unknown model; --lora-modules without it, or malformed, is bad usage" {
	start_stub 2 20
	run complete sql
	assert_line --index 1 404
	run "$BUILD/vllm-stub" --lora-modules sql=/p
	assert_failure 2
	assert_output --partial -- '--lora-modules needs --enable-lora'
	run "$BUILD/vllm-stub" --enable-lora --max-loras 4 --max-cpu-loras 2
	assert_failure 2
	assert_output --partial 'max-cpu-loras (2) must be >= max-loras (4)'
	# A module that is neither form, or a name twice, is bad usage.
	run "$BUILD/vllm-stub" --enable-lora --lora-modules a=/p bogus
	assert_failure 2
	assert_output --partial "--lora-modules wants name=path or a JSON object, got 'bogus'"
	run "$BUILD/vllm-stub" --enable-lora --lora-modules a=/p a=/q
	assert_failure 2
	assert_output --partial "The lora adapter 'a' has already been loaded."
}

@test "load and unload: only with VLLM_ALLOW_RUNTIME_LORA_UPDATING, vLLM's bodies and answers" {
	STUB_ARGS='--model base --enable-lora' start_stub 2 20
	run post_json /v1/load_lora_adapter '{"lora_name":"x","lora_path":"/p/x"}'
	assert_line --index 0 '{"detail":"Not Found"}'
	assert_line --index 1 404
	kill_stub 2 TERM

	VLLM_ALLOW_RUNTIME_LORA_UPDATING=True STUB_ARGS='--model base --enable-lora' start_stub 2 20
	run post_json /v1/load_lora_adapter '{"lora_name":"x","lora_path":"/p/x"}'
	assert_line --index 0 "Success: LoRA adapter 'x' added successfully."
	assert_line --index 1 200
	run post_json /v1/load_lora_adapter '{"lora_name":"x","lora_path":"/p/x"}'
	assert_line --index 0 "{\"error\":{\"message\":\"The lora adapter 'x' has already been loaded.\",\"type\":\"InvalidUserInput\",\"param\":null,\"code\":400}}"
	assert_line --index 1 400
	assert_equal "$(curl -s "$(url /v1/models)" | jq -r '.data[1] | .id + " " + .parent + " " + .root')" "x base /p/x"
	run complete x
	assert_line --index 1 200
	run post_json /v1/unload_lora_adapter '{"lora_name":"x"}'
	assert_line --index 0 "Success: LoRA adapter 'x' removed successfully."
	assert_line --index 1 200
	run complete x
	assert_line --index 1 404
	run post_json /v1/unload_lora_adapter '{"lora_name":"x"}'
	assert_line --index 0 "{\"error\":{\"message\":\"The lora adapter 'x' cannot be found.\",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}}"
	assert_line --index 1 404
	assert_equal "$(curl -s "$(url /v1/models)" | jq '.data | length')" 1
}

@test "vllm:lora_requests_info: a running adapter, another waiting past --max-loras 1, then neither" {
	STUB_ARGS='--model base --enable-lora --max-loras 1 --lora-modules a=/p/a b=/p/b' start_stub 2
	# Before any step, the family and no sample (prometheus_client's
	# labelled gauge with no child yet).
	run curl -s --max-time 5 "$(url /metrics)"
	assert_output --partial '# TYPE vllm:lora_requests_info gauge'
	refute_output --partial 'vllm:lora_requests_info{'
	# a streams 600 tokens (~5 s at real time); b cannot join its batch.
	completion_body 600 true 40 a >"$BATS_TEST_TMPDIR/a.json"
	completion_body 2 false 40 b >"$BATS_TEST_TMPDIR/b.json"
	send_bg "$BATS_TEST_TMPDIR/ra" /v1/completions "$BATS_TEST_TMPDIR/a.json" "${STUB_PORT[2]}"
	wait_events "$BATS_TEST_TMPDIR/ra" 1
	wait_until 5 lora_is 'running=a;waiting=;max=1'
	send_bg "$BATS_TEST_TMPDIR/rb" /v1/completions "$BATS_TEST_TMPDIR/b.json" "${STUB_PORT[2]}"
	wait_until 5 lora_is 'running=a;waiting=b;max=1'
	# b has not run while a holds the only slot.
	[ ! -s "$BATS_TEST_TMPDIR/rb.b" ]
	wait_until 20 lora_is 'running=;waiting=;max=1'
	wait_clients
	assert_equal "$(status "$BATS_TEST_TMPDIR/rb")" 200
	# Every label set stays, as prometheus_client keeps them, and the
	# text is Prometheus's.
	curl -s --max-time 5 "$(url /metrics)" >"$BATS_TEST_TMPDIR/m"
	run grep -c '^vllm:lora_requests_info{max_lora="1",' "$BATS_TEST_TMPDIR/m"
	[ "$output" -ge 4 ]
	run prom_parses "$BATS_TEST_TMPDIR/m"
	assert_success
}

@test "a request for an adapter outside the GPU slots pays its load: slower than the same request once it is in" {
	# One slot, one adapter in the CPU cache: b, added last, holds both;
	# a must be read again. A load of 3 s of model time, 0.3 s real.
	STUB_ARGS='--model base --enable-lora --max-loras 1 --max-cpu-loras 1 --lora-load-ms 3000 --lora-modules a=/p/a b=/p/b' \
		start_stub 2 10
	local loads0 t1 t2
	loads0=$(stub_metric 2 vllm_stub_lora_loads_total)
	assert_equal "$loads0" 2
	completion_body 2 false 40 a >"$BATS_TEST_TMPDIR/a.json"
	t1=$(curl -s -o /dev/null -w '%{time_total}' --max-time 10 --data-binary "@$BATS_TEST_TMPDIR/a.json" "$(url /v1/completions)")
	assert_equal "$(stub_metric 2 vllm_stub_lora_loads_total)" 3
	t2=$(curl -s -o /dev/null -w '%{time_total}' --max-time 10 --data-binary "@$BATS_TEST_TMPDIR/a.json" "$(url /v1/completions)")
	assert_equal "$(stub_metric 2 vllm_stub_lora_loads_total)" 3
	echo "first a: $t1 s, second a: $t2 s" >&3
	awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(a > b) }'
}
