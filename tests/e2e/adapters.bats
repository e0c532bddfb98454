#!/usr/bin/env bats
# LoRA adapter affinity (issue 27): four stubs of one base model, each
# serving three adapters with two GPU slots (--enable-lora --max-loras
# 2), behind HAProxy's one backend, the agent scraping their /v1/models
# and vllm:lora_requests_info under ttft. An adapter's requests stay on
# the server that holds it loaded (the agent's books know where it sent
# it, the scrape what runs there) until their load calls for another,
# then spread; /state shows each server's adapters.

load stubs

setup() {
	stubs_setup
}
teardown() {
	stubs_teardown
}

LORA_ARGS='--model base --enable-lora --max-loras 2 --lora-modules sql=/lora/sql chat=/lora/chat code=/lora/code'

# start_world [SCALE]: the stubs (model clock SCALE, default 20 times
# real time), the agent under ttft told so and scraping them every
# 100 ms, HAProxy; returns once the agent knows every server's models.
start_world() {
	local scale=${1:-20}
	start_model_fleet "$scale" lora_args --scrape-interval 100 --policy ttft --engine-speed "$scale"
}
lora_args() { echo "$LORA_ARGS"; }

# settled: the agent's books hold no request (the last one's completion
# line is in) and its scrapes agree: no server shows a request beyond
# them. A scrape out as a request ended can still count it running; the
# agent counts such an end as its own (dbk_pred_scraped), and this
# checks it does: taken for another balancer's, it priced that server
# busier until the next scrape.
no_others() { [ "$(agent_get /state | jq '[.ttft[].others] | add')" = 0 ]; }
settled() {
	wait_state leases 0 && wait_until 10 no_others
}

# where NAME: where the agent sent request NAME (X-Dbucket-Server) and
# where it was served, "chosen>served".
where() {
	echo "$(header "$BATS_TEST_TMPDIR/$1" X-Dbucket-Server)>$(header "$BATS_TEST_TMPDIR/$1" X-Served-By)"
}

# body MODEL USER MAX_TOKENS [PROMPT_BYTES] [STREAM]: a completion whose
# "user" (the session) sets it apart from the others.
body() {
	local so=""
	[ "${5:-false}" = true ] && so='"stream_options":{"include_usage":true},'
	printf '{"model":"%s","user":"%s","max_tokens":%d,"ignore_eos":true,"stream":%s,%s"prompt":"' \
		"$1" "$2" "$3" "${5:-false}" "$so"
	# Its own text from the first byte: no prefix shared with another.
	yes "$2" | tr -d '\n' | head -c "${4:-40}"
	printf '"}'
}

# ask NAME MODEL [MAX_TOKENS]: one completion for MODEL, as user NAME.
ask() {
	body "$2" "$1" "${3:-2}" >"$BATS_TEST_TMPDIR/$1.json"
	send "$BATS_TEST_TMPDIR/$1" /v1/completions "$BATS_TEST_TMPDIR/$1.json" || true
}

# Adapters the stubs read into their caches, all told (the stub's own
# counter: vllm_stub_lora_loads_total).
loads() {
	local i n=0
	for i in 0 1 2 3; do n=$((n + $(stub_metric "$i" vllm_stub_lora_loads_total))); done
	echo "$n"
}

@test "sequential requests of an adapter stay on the one server that loaded it" {
	start_world
	local i before
	# --lora-modules read the adapters at start: count from here.
	before=$(loads)
	# Sequential for the agent too: each request's completion line is in
	# (its lease released) and the scrapes agree before the next is sent
	# (settled). The client has its answer first, and a next request sent
	# before the agent heard of the end saw the server still busy (a CI
	# run on a loaded machine sent one to a second server; another,
	# under the sanitizers, two). Each line: where it went (where).
	for i in 1 2 3 4 5 6 7 8; do
		ask "sql$i" sql
		assert_equal "sql$i $(status "$BATS_TEST_TMPDIR/sql$i")" "sql$i 200"
		where "sql$i"
		settled >&2
	done >"$BATS_TEST_TMPDIR/served"
	run sort -u "$BATS_TEST_TMPDIR/served"
	[ "${#lines[@]}" -eq 1 ] || fail "sql's requests went to (chosen>served) $(tr '\n' ' ' <"$BATS_TEST_TMPDIR/served")"
	# Another adapter too: one server, loaded once.
	for i in 1 2 3 4 5 6; do
		ask "chat$i" chat
		where "chat$i"
		settled >&2
	done >"$BATS_TEST_TMPDIR/served-chat"
	run sort -u "$BATS_TEST_TMPDIR/served-chat"
	[ "${#lines[@]}" -eq 1 ] || fail "chat's requests went to (chosen>served) $(tr '\n' ' ' <"$BATS_TEST_TMPDIR/served-chat")"
	# Each adapter read at most once, by the one server that serves it.
	[ "$(($(loads) - before))" -le 2 ] || fail "loads: $before before, $(loads) after"
}

@test "a burst of an adapter's long prompts spreads once its server's queue costs more than a load" {
	# Real time: the burst's prefills overlap.
	start_world 1
	local d=$BATS_TEST_TMPDIR i
	# 8,000-token prompts: about 0.2 s of prefill each, so a queue of
	# them soon costs more than the 50 ms a load does.
	for i in $(seq 1 12); do
		body code "b$i" 4 32000 >"$d/b$i.json"
		send_bg "$d/b$i" /v1/completions "$d/b$i.json"
	done
	wait_clients
	for i in $(seq 1 12); do
		assert_equal "b$i $(status "$d/b$i")" "b$i 200"
		header "$d/b$i" X-Served-By
	done | sort | uniq -c >"$d/spread"
	run cat "$d/spread"
	[ "${#lines[@]}" -ge 2 ] || fail "the burst stayed on one server: $output"
}

@test "/state shows each server's adapters with requests and its slots, as vllm:lora_requests_info says" {
	start_world
	local who
	body sql held 6000 40 true >"$BATS_TEST_TMPDIR/held.json"
	send_bg "$BATS_TEST_TMPDIR/held" /v1/completions "$BATS_TEST_TMPDIR/held.json"
	wait_events "$BATS_TEST_TMPDIR/held" 1
	who=$(header "$BATS_TEST_TMPDIR/held" X-Served-By)
	[ -n "$who" ] || fail "no server for the held request"
	wait_until 10 server_lora "$who" '{"max_lora":2,"running":"sql","waiting":""}' ||
		fail "/state: $(agent_get /state | jq -c "[.servers[] | {name, lora}]")"
	# The others have run nothing: vLLM has set no state to read.
	run jq -c "[.servers[] | select(.name != \"$who\") | .lora]" < <(agent_get /state)
	assert_output '[null,null,null]'
}

server_lora() {
	[ "$(agent_get /state | jq -c ".servers[] | select(.name == \"$1\") | .lora")" = "$2" ]
}
