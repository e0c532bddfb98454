#!/usr/bin/env bats
# The ttft policy live: four vLLM stubs (vllm0-1 with a 16k context and a
# small KV cache, vllm2-3 full size), the agent scraping their /metrics
# and /v1/models, HAProxy with the repository's configuration. What is
# checked: the context limit is a hard rule, a conversation follows its
# prefix unless that server is overloaded, a broken /metrics costs routing
# nothing, a slower server is learnt and spared, so is a stub's step
# budget, and the scraped numbers are in the agent's /metrics.

load stubs

setup() {
	stubs_setup
}

teardown() {
	stubs_teardown
}

# scrape_args: --scrape vllmI=URL for every stub started.
scrape_args() {
	local i
	for i in "${!STUB_PORT[@]}"; do
		printf -- '--scrape\nvllm%s=http://127.0.0.1:%s\n' "$i" "${STUB_PORT[i]}"
	done
}

# start_ttft_agent [ARGS...]: the agent with --policy ttft, scraping every
# stub started; returns once every stub's max_model_len was read.
start_ttft_agent() {
	local -a sa
	mapfile -t sa < <(scrape_args)
	start_agent --policy ttft "${sa[@]}" "$@"
	wait_metric_lines dbucket_vllm_max_model_len "${#STUB_PORT[@]}"
}

# metric_lines_ge NAME N: the agent's /metrics has N samples of NAME.
metric_lines_ge() {
	local c
	c=$(agent_get /metrics | grep -c "^$1{") || true
	((${c:-0} >= $2))
}

# wait_metric_lines NAME N: waits (bounded, 10 s) until the agent's
# /metrics has N samples of NAME.
wait_metric_lines() {
	dbk_wait_until 10 metric_lines_ge "$1" "$2" && return 0
	echo "/metrics has fewer than $2 samples of $1" >&2
	agent_get /metrics | grep "^dbucket_scrape" >&2
	return 1
}

# metric NAME SERVER: the agent's sample of NAME for server SERVER.
metric() {
	agent_get /metrics | awk -v k="$1{server=\"$2\"}" '$1 == k { print $2 }'
}

# metric_ge NAME SERVER MIN: that sample is at least MIN (its integer
# part; no sample is less).
metric_ge() {
	local v
	v=$(metric "$1" "$2")
	[ "${v%.*}" -ge "$3" ] 2>/dev/null
}

@test "ttft: a long prompt never reaches a short-context stub while a long-context one is up" {
	start_stubs
	start_ttft_agent --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy_stubs
	assert_equal "$(metric dbucket_vllm_max_model_len vllm0)" 16384
	assert_equal "$(metric dbucket_vllm_max_model_len vllm2)" 131072
	# 80 KB of prompt: 20000 tokens, more than vllm0-1 hold. The reference
	# in dynamic mode sends these to the short group (errors.bats).
	local d=$BATS_TEST_TMPDIR i s
	completion_body 1 false 80000 >"$d/long.json"
	for i in 1 2 3 4 5 6; do
		send "$d/l$i" /v1/completions "$d/long.json"
		assert_equal "l$i:$(status "$d/l$i")" "l$i:200"
		s=$(header "$d/l$i" X-Served-By)
		[[ $s == vllm2 || $s == vllm3 ]] || fail "request $i went to '$s'"
	done
	# With vllm2 gone, vllm3 alone: still never a short server.
	kill_stub 2
	haproxy_cmd "disable server vllm/vllm2" >/dev/null
	wait_server vllm2 usable false
	for i in 7 8 9; do
		send "$d/l$i" /v1/completions "$d/long.json"
		assert_equal "l$i:$(status "$d/l$i") $(header "$d/l$i" X-Served-By)" "l$i:200 vllm3"
	done
	run grep -c 'level=warn event=route-refused' "$d/agent.log"
	assert_output 0
}

@test "ttft: a conversation's next turn goes back to the stub holding its prefix" {
	start_stubs
	start_ttft_agent
	start_haproxy_stubs
	local d=$BATS_TEST_TMPDIR c first next
	# Eight conversations, each a 6 KB opening then a follow-up that
	# repeats it and adds a turn: each follow-up goes where its opening
	# went, while the openings spread over the fleet.
	declare -A where
	for c in 1 2 3 4 5 6 7 8; do
		words "$c" 6000 >"$d/c$c.t1"
		prompt_body "$d/c$c.t1" 4 >"$d/c$c.1.json"
		send "$d/c$c.r1" /v1/completions "$d/c$c.1.json"
		assert_equal "$(status "$d/c$c.r1")" 200
		where[$c]=$(header "$d/c$c.r1" X-Served-By)
	done
	for c in 1 2 3 4 5 6 7 8; do
		{ cat "$d/c$c.t1"; words "$((c + 100))" 800; } >"$d/c$c.t2"
		prompt_body "$d/c$c.t2" 4 >"$d/c$c.2.json"
		send "$d/c$c.r2" /v1/completions "$d/c$c.2.json"
		assert_equal "$(status "$d/c$c.r2")" 200
		first=${where[$c]}
		next=$(header "$d/c$c.r2" X-Served-By)
		assert_equal "conversation $c: $next" "conversation $c: $first"
		# The prediction rides along (debug headers): the follow-up
		# expects its opening's 1,500 tokens from the cache, the opening
		# nothing.
		assert_equal "c$c opening hit: $(header "$d/c$c.r1" X-Dbucket-Hit-Tokens)" "c$c opening hit: 0"
		(($(header "$d/c$c.r2" X-Dbucket-Hit-Tokens) >= 1000)) ||
			fail "c$c follow-up hit: '$(header "$d/c$c.r2" X-Dbucket-Hit-Tokens)'"
		(($(header "$d/c$c.r2" X-Dbucket-Ttft-Ms) >= 1)) ||
			fail "c$c follow-up ttft_ms: '$(header "$d/c$c.r2" X-Dbucket-Ttft-Ms)'"
	done
	# The openings did not all pile on one server.
	local distinct
	distinct=$(printf '%s\n' "${where[@]}" | sort -u | wc -l)
	((distinct >= 2)) || fail "every opening went to ${where[1]}"
}

@test "ttft: a next turn leaves the stub holding its prefix when that stub is overloaded" {
	start_stubs
	start_ttft_agent
	start_haproxy_stubs
	local d=$BATS_TEST_TMPDIR i home next
	words 1 6000 >"$d/t1"
	prompt_body "$d/t1" 4 >"$d/1.json"
	send "$d/r1" /v1/completions "$d/1.json"
	home=$(header "$d/r1" X-Served-By)
	# Load the home stub behind the agent's back (straight to its port):
	# only its /metrics tells, through the queue it reports.
	local hp=${home#vllm}
	# 10000 + 2000 tokens each, no two alike (no shared cache): a few
	# fit the KV cache at a time, the rest wait.
	for i in $(seq 1 24); do
		words "$((i + 1000))" 40000 >"$d/h$i.t"
		prompt_body "$d/h$i.t" 2000 >"$d/h$i.json"
		send_bg "$d/h$i" /v1/completions "$d/h$i.json" "${STUB_PORT[hp]}"
	done
	dbk_wait_until 10 metric_ge dbucket_vllm_requests_waiting "$home" 8 ||
		fail "$home never reported a queue (waiting '$(metric dbucket_vllm_requests_waiting "$home")')"
	{ cat "$d/t1"; words 101 800; } >"$d/t2"
	prompt_body "$d/t2" 4 >"$d/2.json"
	send "$d/r2" /v1/completions "$d/2.json"
	assert_equal "$(status "$d/r2")" 200
	next=$(header "$d/r2" X-Served-By)
	[ "$next" != "$home" ] || fail "the next turn went back to the overloaded $home"
}

@test "ttft: a stub whose /metrics hangs or returns garbage does not stall routing" {
	STUB_ARGS="--metrics-fault hang" start_stub 0
	STUB_ARGS="--metrics-fault garbage" start_stub 1
	start_stub 2
	start_stub 3
	local -a sa
	mapfile -t sa < <(scrape_args)
	start_agent --policy ttft --scrape-timeout 300 "${sa[@]}"
	start_haproxy_stubs
	wait_log 'event=scrape-down server=vllm0 .*reason="response timed out"'
	wait_log 'event=scrape-down server=vllm1 .*reason="bad /metrics: line 1'
	local d=$BATS_TEST_TMPDIR i
	# Sixteen prompts, no two alike (no cache pulls one to its holder),
	# each long enough in decode that they are all in flight at once:
	# one at a time, every server idle, any one of them may take them all.
	for i in $(seq 1 16); do
		words "$i" 400 >"$d/s$i.t"
		prompt_body "$d/s$i.t" 200 >"$d/s$i.json"
		send_bg "$d/s$i" /v1/completions "$d/s$i.json"
	done
	wait_clients
	local -A by
	for i in $(seq 1 16); do
		assert_equal "s$i:$(status "$d/s$i")" "s$i:200"
		# Routed by the agent, not by HAProxy alone.
		[ -n "$(header "$d/s$i" X-Dbucket-Server)" ] || fail "s$i was not routed by the agent"
		by[$(header "$d/s$i" X-Served-By)]=1
	done
	# Servers scraped or not, all are used: the broken ones on the books.
	[ -n "${by[vllm0]:-}${by[vllm1]:-}" ] || fail "no request reached vllm0 or vllm1: ${!by[*]}"
	assert_equal "$(metric dbucket_scrape_up vllm0) $(metric dbucket_scrape_up vllm1)" "0 0"
	assert_equal "$(metric dbucket_scrape_up vllm2) $(metric dbucket_scrape_up vllm3)" "1 1"
	(($(metric dbucket_scrape_failures_total vllm1) >= 2)) || fail "vllm1's failures not counted"
	assert_equal "$(metric dbucket_ttft_scraped vllm1) $(metric dbucket_ttft_scraped vllm2)" "0 1"
	# One log line per change of state, however many scrapes failed.
	run grep -c 'event=scrape-down server=vllm1 ' "$d/agent.log"
	assert_output 1
	wait_state released 16
	assert_books_balanced
}

@test "ttft: scraped numbers appear in the agent's /metrics and /state" {
	start_stubs
	start_ttft_agent
	start_haproxy_stubs
	local d=$BATS_TEST_TMPDIR
	# Prometheus's format, every line.
	agent_get /metrics >"$d/m.txt"
	run prom_lint "$d/m.txt"
	assert_success
	# The stub's KV cache: 65536 tokens in 16-token blocks on vllm0.
	assert_equal "$(metric dbucket_vllm_gpu_blocks vllm0)" 4096
	assert_equal "$(metric dbucket_vllm_block_size vllm0)" 16
	assert_equal "$(metric dbucket_vllm_requests_running vllm3)" 0
	assert_equal "$(metric dbucket_scrape_up vllm1)" 1
	# A request held running on vllm2 shows in its scraped numbers.
	completion_body 400 true 200 >"$d/long-out.json"
	send_bg "$d/r" /v1/completions "$d/long-out.json" "${STUB_PORT[2]}"
	dbk_wait_until 10 metric_ge dbucket_vllm_requests_running vllm2 1 || true
	assert_equal "$(metric dbucket_vllm_requests_running vllm2)" 1
	# /state is JSON, with the scraper's and the predictor's views.
	agent_get /state >"$d/state.json"
	run jq -e '.policy == "ttft" and (.scrape.servers | length) == 4 and (.ttft | length) == 4
		and .scrape.servers[2].running == 1' "$d/state.json"
	assert_success
	run agent_get /state
	assert_output --partial '"policy": "ttft"'
	assert_output --regexp '"name": "vllm2", "url": "http://127\.0\.0\.1:[0-9]+", "up": true, "fresh": true'
	assert_output --partial '"max_model_len": 16384'
	wait_clients
}

@test "ttft: a stub on a slower GPU is learnt, and spared" {
	# vllm3 runs the A100 profile (about three times slower to prefill),
	# the others the H100's; all at five times real time.
	local i
	for i in 0 1 2; do
		start_stub "$i" 5
	done
	STUB_ARGS="--gpu a100" start_stub 3 5
	start_ttft_agent
	start_haproxy_stubs
	local d=$BATS_TEST_TMPDIR
	# 400 prompts of 1500 to 3000 tokens, 20 a second of model time:
	# every scrape's first tokens teach each server's prefill (matched to
	# the requests sent there, agent/predict_learn.h), from the first ones.
	run "$BUILD/dbucket-bench" --synthetic short=1:1500-3000:8 --rate 20 --max-requests 400 \
		--time-scale 5 --url "http://127.0.0.1:$DBK_PORT" --csv "$d/run.csv"
	assert_success
	agent_get /metrics >"$d/m.txt"
	local slow fast
	slow=$(metric dbucket_ttft_slowness vllm3)
	for i in 0 1 2; do
		fast=$(metric dbucket_ttft_slowness "vllm$i")
		awk -v s="$slow" -v f="$fast" 'BEGIN { exit !(s > 1.2 && f <= 1 && s / f > 1.5) }' ||
			fail "slowness: vllm3 $slow, vllm$i $fast"
	done
	run jq -e '.ttft[3].slowness > 1.2' <(agent_get /state)
	assert_success
	# Spared: of the last 200 requests, vllm3 served fewer than any
	# other (served_by is the CSV's 13th column).
	local -A n=()
	while read -r i; do n[$i]=$((${n[$i]:-0} + 1)); done < <(tail -n 200 "$d/run.csv" | cut -d, -f13)
	for i in 0 1 2; do
		((${n[vllm3]:-0} < ${n[vllm$i]:-0})) || fail "last 200: vllm3 ${n[vllm3]:-0}, vllm$i ${n[vllm$i]:-0}"
	done
	wait_state released 400
}

# queue_on_vllm0 SYNTH N: the ttft agent scraping vllm0 (STUB_ARGS) and
# a plain vllm2, then N requests of SYNTH (dbucket-bench --synthetic)
# sent at once to vllm0 directly, past HAProxy and the agent.
queue_on_vllm0() {
	start_stub 0 5
	STUB_ARGS= start_stub 2 5
	start_ttft_agent
	run "$BUILD/dbucket-bench" --synthetic "$1" --rate 2000 --max-requests "$2" \
		--time-scale 5 --url "http://127.0.0.1:${STUB_PORT[0]}" --csv "$BATS_TEST_TMPDIR/run.csv"
	assert_success
}

@test "ttft: a stub's step budget is learnt from its /metrics while prompts queue there" {
	# vllm0 runs 2048-token steps, vllm2 vLLM's H100 default (8192); the
	# agent is told neither. 300 prompts of 1000 tokens sent to vllm0
	# at once queue there for about 150 steps: the tokens its steps
	# computed over the steps it took, read while they wait, are its
	# budget (agent/predict_budget.c). vllm2, never queued, keeps the
	# default.
	STUB_ARGS="--max-num-batched-tokens 2048" queue_on_vllm0 q=1:1000:8 300
	local b
	b=$(metric dbucket_ttft_step_budget_tokens vllm0)
	# A prompt whose first chunks ran before the first span counted is
	# counted whole in it: a few percent either way.
	awk -v b="$b" 'BEGIN { exit !(b >= 1600 && b <= 2150) }' || fail "vllm0's budget learnt: $b"
	assert_equal "$(metric dbucket_ttft_step_budget_tokens vllm2)" 8192
	# /state, whole tokens.
	run jq -e --argjson b "$b" '.ttft[0].name == "vllm0" and .ttft[0].step_budget == ($b | floor)' \
		<(agent_get /state)
	assert_success
}

@test "ttft: a stub's seats are learnt from its /metrics while prompts wait for one" {
	# vllm0 runs 8 requests at most (--max-num-seqs 8); the agent is not
	# told. 120 short prompts of 200 tokens out, sent to vllm0 at once,
	# wait there for seats while 8 decode: prompts waiting, 8 running
	# (the most it ever ran), the cache with room and the steps far from
	# full (agent/predict_seats.c). vllm2, never out of seats, learns
	# none.
	STUB_ARGS="--max-num-seqs 8" queue_on_vllm0 q=1:200:200 120
	assert_equal "$(metric dbucket_ttft_seats vllm0)" 8
	assert_equal "$(metric dbucket_ttft_seats vllm2)" 0
	run jq -e '.ttft[0].name == "vllm0" and .ttft[0].seats == 8 and .ttft[1].seats == 0' \
		<(agent_get /state)
	assert_success
}

@test "reference: no --policy means no scraping and the reference's mode" {
	start_stubs
	start_agent --enable-dynamic-bucket
	run agent_get /state
	assert_output --partial '"policy": "reference"'
	refute_output --partial '"scrape"'
	run agent_get /metrics
	refute_output --partial dbucket_scrape_up
	run grep -c 'event=scrape-configured' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 0
}

@test "ttft: a chunked body is routed as its Content-Length twin; a long one never to a short stub" {
	start_stubs
	start_ttft_agent --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy_stubs
	# HAProxy forwards a chunked body chunked; the agent gets the same
	# size (req.body_size) and first 15 KB of a body HAProxy holds whole.
	local d=$BATS_TEST_TMPDIR s
	completion_body 1 false 400 >"$d/short.json"
	send "$d/cl" /v1/completions "$d/short.json"
	send "$d/ch" /v1/completions "$d/short.json" "$DBK_PORT" -H 'Transfer-Encoding: chunked'
	for s in cl ch; do
		assert_equal "$s $(status "$d/$s") $(jq -c .usage.prompt_tokens "$d/$s.b")" "$s 200 100"
	done
	assert_equal "$(header "$d/ch" X-Dbucket-Score)" "$(header "$d/cl" X-Dbucket-Score)"
	# 80 KB, 20000 tokens, in curl's 64 KB chunks: past what HAProxy
	# holds, still never a short stub, and the stub reads it whole.
	completion_body 1 false 80000 >"$d/long.json"
	for s in 1 2 3 4; do
		send "$d/l$s" /v1/completions "$d/long.json" "$DBK_PORT" -H 'Transfer-Encoding: chunked'
		assert_equal "l$s $(status "$d/l$s") $(jq -c .usage.prompt_tokens "$d/l$s.b")" "l$s 200 20000"
		[[ $(header "$d/l$s" X-Served-By) == vllm[23] ]] || fail "request $s went to $(header "$d/l$s" X-Served-By)"
	done
	run grep -c 'level=warn event=route-refused' "$d/agent.log"
	assert_output 0
}

@test "ttft: a long prompt in small chunks, its length unknown, goes only to the longest context" {
	start_stubs
	start_ttft_agent --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100
	start_haproxy_stubs
	command -v node >/dev/null || fail "node is missing: run contrib/install-deps.sh"
	local d=$BATS_TEST_TMPDIR i s
	# The long stubs busy behind the agent's back (only their /metrics
	# tell): a prompt the short stubs hold is better off there.
	for s in 2 3; do
		for i in 1 2 3 4 5 6; do
			words "$((s * 100 + i))" 40000 >"$d/b$s$i.t"
			prompt_body "$d/b$s$i.t" 2000 >"$d/b$s$i.json"
			send_bg "$d/b$s$i" /v1/completions "$d/b$s$i.json" "${STUB_PORT[s]}"
		done
	done
	for s in vllm2 vllm3; do
		dbk_wait_until 10 metric_ge dbucket_vllm_requests_running "$s" 6 ||
			fail "$s never reported its batch (running '$(metric dbucket_vllm_requests_running "$s")')"
	done
	# 16 KB with its Content-Length, about 4,000 tokens: an idle short
	# stub holds it and takes it.
	words 7 16000 >"$d/mid.t"
	prompt_body "$d/mid.t" 1 >"$d/mid.json"
	send "$d/m" /v1/completions "$d/mid.json"
	assert_equal "$(status "$d/m")" 200
	[[ $(header "$d/m" X-Served-By) == vllm[01] ]] || fail "16 KB went to $(header "$d/m" X-Served-By)"
	# 80 KB in 4 KB chunks: HAProxy holds about 16 KB of it when it asks,
	# no more than the request above shows. Without a Content-Length that
	# is only a floor, so it goes where the longest context is; on a short
	# stub it would be a 400 (too long for 16,384 tokens).
	for i in 1 2 3; do
		words "$((i + 50))" 80000 >"$d/k$i.t"
		prompt_body "$d/k$i.t" 1 >"$d/k$i.json"
		run timeout 60 node "$REPO/tests/e2e/node/chunked-post.mjs" \
			"http://127.0.0.1:$DBK_PORT/v1/completions" "$d/k$i.json" 4096
		assert_success
		assert_equal "k$i $(jq -r .status <<<"$output")" "k$i 200"
		[[ $(jq -r '.headers["x-served-by"]' <<<"$output") == vllm[23] ]] ||
			fail "request $i in 4 KB chunks went to $(jq -r '.headers["x-served-by"]' <<<"$output")"
		(($(jq -r '.body | fromjson | .usage.prompt_tokens' <<<"$output") > 16384)) ||
			fail "request $i: the stub read $(jq -r .body <<<"$output")"
	done
	assert_equal "$(agent_get /metrics | grep '^dbucket_unsized_bodies_total ')" \
		"dbucket_unsized_bodies_total 3"
}
