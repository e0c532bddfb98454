#!/usr/bin/env bats
# HAProxy 2.6 + dbucket-spoa + four vLLM stubs: responses reach the client
# as the stub sent them (SSE event for event, JSON byte for byte, ids and
# timestamps aside), many concurrent streams leave nothing charged once
# they end, and the agent releases a stream's load promptly after its end.

load stubs

setup() {
	stubs_setup
}

teardown() {
	stubs_teardown
}

# stream_check BASE PATH BODY EVENTS: BASE was streamed through the proxy
# while the test watched: it must be SSE, chunked, hold EVENTS data events
# then [DONE], and match the stub's own answer.
stream_check() {
	local base=$1
	assert_equal "$(cat "$base.rc") $(status "$base")" "0 200"
	assert_equal "$(header "$base" Content-Type)" "text/event-stream; charset=utf-8"
	assert_equal "$(header "$base" Transfer-Encoding)" "chunked"
	assert_equal "$(header "$base" Content-Length)" ""
	assert_equal "$(sse_events "$base")" "$4"
	sse_done "$base" || fail "the stream does not end with data: [DONE]"
	# Only one [DONE], and it is last.
	assert_equal "$(grep -c '^data: \[DONE\]' "$base.b")" 1
	same_as_direct "$base" "$2" "$3"
	assert_equal "$(sse_events "$base.direct")" "$4"
}

# watch_stream BASE PATH BODY: streams BODY through the proxy and, as soon
# as the first event has arrived, records whether the stream was still
# open (no [DONE] yet) and the agent still held its lease: HAProxy passes
# events on as they come instead of buffering the response.
watch_stream() {
	local base=$1 leases
	send_bg "$base" "$2" "$3"
	DBK_POLL_MS=10 dbk_wait_until 5 has_events "$base" 1 || true
	# The leases first, without forking (the stream lasts a few hundred
	# ms, a loaded machine takes that to start curl): if [DONE] has not
	# come after, the stream was open when they were read.
	fast_state_field leases leases
	if grep -q '^data: \[DONE\]' "$base.b"; then
		EARLY="done"
	else
		EARLY="open leases=$leases"
	fi
	wait_clients
}

@test "a completions stream passes through event for event, [DONE] last" {
	# Model clock at a quarter of real time: the stream lasts ~2 s, long
	# enough for a loaded machine to look while it is open.
	start_stubs 0.25
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	# 64 tokens (about half a second): 64 token events and the usage event.
	completion_body 64 true >"$BATS_TEST_TMPDIR/c.json"
	watch_stream "$BATS_TEST_TMPDIR/c" /v1/completions "$BATS_TEST_TMPDIR/c.json"
	assert_equal "$EARLY" "open leases=1"
	stream_check "$BATS_TEST_TMPDIR/c" /v1/completions "$BATS_TEST_TMPDIR/c.json" 65
	# The last event before [DONE] is the usage chunk.
	run bash -c "grep '^data: {' '$BATS_TEST_TMPDIR/c.b' | tail -n 1"
	assert_output --partial '"choices":[],"usage":{"prompt_tokens":10,"total_tokens":74,"completion_tokens":64}'
	# The request was routed by the agent and its lease is back.
	assert_equal "$(header "$BATS_TEST_TMPDIR/c" X-Dbucket-Server)" "$(header "$BATS_TEST_TMPDIR/c" X-Served-By)"
	wait_state released 1
	assert_books_balanced
}

@test "a chat stream passes through event for event, [DONE] last" {
	# Model clock at a quarter of real time: the stream lasts ~2 s, long
	# enough for a loaded machine to look while it is open.
	start_stubs 0.25
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	chat_body 48 true >"$BATS_TEST_TMPDIR/c.json"
	watch_stream "$BATS_TEST_TMPDIR/c" /v1/chat/completions "$BATS_TEST_TMPDIR/c.json"
	assert_equal "$EARLY" "open leases=1"
	# The role delta, 48 token deltas, the usage chunk.
	stream_check "$BATS_TEST_TMPDIR/c" /v1/chat/completions "$BATS_TEST_TMPDIR/c.json" 50
	run bash -c "grep '^data: {' '$BATS_TEST_TMPDIR/c.b' | head -n 1"
	assert_output --partial '"delta":{"role":"assistant","content":""}'
	wait_state released 1
	assert_books_balanced
}

# stream_spread PORT BODYFILE: streams BODYFILE from PORT and sets SPREAD
# to the microseconds between the first token event's arrival and
# [DONE]'s, as the client saw them.
stream_spread() {
	local fd line t first="" last=""
	exec {fd}< <(curl -s -N --max-time 30 -H 'Content-Type: application/json' \
		--data-binary "@$2" "http://127.0.0.1:$1/v1/completions" 3>&-)
	while IFS= read -r -u "$fd" line; do
		case $line in
		"data: [DONE]") now_us last; break ;;
		"data: {"*) [ -n "$first" ] || now_us first ;;
		esac
	done
	exec {fd}<&-
	[ -n "$first" ] && [ -n "$last" ] || fail "the stream from port $1 ended without events or [DONE]"
	SPREAD=$((last - first))
}

@test "tokens reach the client as the stub sends them, not held back (http-no-delay)" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	# 24 tokens, about 180 ms of stream. Without option http-no-delay
	# HAProxy 2.6 sends with MSG_MORE, and the kernel holds the events
	# until a segment fills or 200 ms pass: all of them arrive at the end,
	# together with [DONE].
	completion_body 24 true >"$BATS_TEST_TMPDIR/t.json"
	local direct proxied
	stream_spread "${STUB_PORT[0]}" "$BATS_TEST_TMPDIR/t.json"
	direct=$SPREAD
	stream_spread "$DBK_PORT" "$BATS_TEST_TMPDIR/t.json"
	proxied=$SPREAD
	echo "# first token to [DONE]: direct ${direct} us, through HAProxy ${proxied} us" >&3
	((direct > 100000)) || fail "the stub streamed 24 tokens in ${direct} us: too fast to tell"
	((proxied * 2 > direct)) || fail "through HAProxy the stream arrived in ${proxied} us, direct in ${direct} us: held back"
	wait_state released 1
}

@test "non-streaming JSON answers pass through intact (completions and chat)" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	completion_body 20 false >"$BATS_TEST_TMPDIR/c.json"
	chat_body 20 false >"$BATS_TEST_TMPDIR/h.json"
	local b
	for b in c h; do
		local path=/v1/completions
		[ "$b" = h ] && path=/v1/chat/completions
		send "$BATS_TEST_TMPDIR/$b" "$path" "$BATS_TEST_TMPDIR/$b.json"
		assert_equal "$(status "$BATS_TEST_TMPDIR/$b")" 200
		assert_equal "$(header "$BATS_TEST_TMPDIR/$b" Content-Type)" "application/json"
		# Content-Length kept and right.
		assert_equal "$(header "$BATS_TEST_TMPDIR/$b" Content-Length)" "$(stat -c %s "$BATS_TEST_TMPDIR/$b.b")"
		assert_equal "$(header "$BATS_TEST_TMPDIR/$b" Transfer-Encoding)" ""
		grep -q '"completion_tokens":20' "$BATS_TEST_TMPDIR/$b.b" || fail "no usage in $(cat "$BATS_TEST_TMPDIR/$b.b")"
		same_as_direct "$BATS_TEST_TMPDIR/$b" "$path" "$BATS_TEST_TMPDIR/$b.json"
	done
	wait_state released 2
	assert_books_balanced
}

# sample_leases: one sample of /state's leases into max (and polls);
# succeeds once every client has exited.
sample_leases() {
	local v
	v=$(state_field leases)
	polls=$((polls + 1))
	[ -n "$v" ] && ((v > max)) && max=$v
	dbk_gone "${CLIENT_PIDS[@]}"
}

@test "64 concurrent streams: once they end nothing is in flight on any server" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	# Completions and chat, prompts of 40 B to 6 KB; 120 tokens each (about
	# a second, more as batches grow).
	local n=64 i
	for ((i = 0; i < 8; i++)); do
		completion_body 120 true $((40 + i * 800)) >"$BATS_TEST_TMPDIR/c$i.json"
		chat_body 120 true $((40 + i * 800)) >"$BATS_TEST_TMPDIR/h$i.json"
	done
	for ((i = 0; i < n; i++)); do
		if ((i % 2)); then
			send_bg "$BATS_TEST_TMPDIR/r$i" /v1/chat/completions "$BATS_TEST_TMPDIR/h$((i % 8)).json"
		else
			send_bg "$BATS_TEST_TMPDIR/r$i" /v1/completions "$BATS_TEST_TMPDIR/c$((i % 8)).json"
		fi
	done
	# Watch the agent's in-flight count while they run (bounded: 30 s).
	local max=0 polls=0
	DBK_POLL_MS=10 dbk_wait_until 30 sample_leases || true
	wait_clients
	echo "# max in-flight: $max of $n concurrent streams ($polls polls of /state)" >&3
	local ok=0
	for ((i = 0; i < n; i++)); do
		# A chat stream has one more event: the assistant's role.
		stream_ok "$BATS_TEST_TMPDIR/r$i" $((121 + i % 2)) && ok=$((ok + 1))
	done
	assert_equal "complete streams: $ok" "complete streams: $n"
	# They overlapped: the agent had more than one in flight at once.
	((max >= 2)) || fail "never more than $max in flight"
	wait_state released "$n"
	assert_books_balanced
	assert_equal "$(state_field decisions)" "$n"
	assert_equal "$(state_field unknown_releases)" 0
	assert_equal "$(state_field completions)" "$n"
	assert_equal "$(state_field expired)" 0
}

@test "release latency: from the client's data: [DONE] to the agent's release" {
	start_stubs 10
	start_agent --enable-dynamic-bucket
	start_haproxy_stubs
	completion_body 8 true >"$BATS_TEST_TMPDIR/s.json"
	local n=200 i k fd line t_done t_poll t_end rel first=0 lags=()
	for ((i = 0; i < n; i++)); do
		exec {fd}< <(curl -s -N --max-time 30 -H 'Content-Type: application/json' \
			--data-binary "@$BATS_TEST_TMPDIR/s.json" "http://127.0.0.1:$DBK_PORT/v1/completions" 3>&-)
		t_done=
		while IFS= read -r -u "$fd" line; do
			if [ "$line" = "data: [DONE]" ]; then
				now_us t_done
				break
			fi
		done
		if [ -z "$t_done" ]; then
			exec {fd}<&-
			fail "request $i ended without data: [DONE]"
		fi
		# Poll back to back, without forking, until this request's lease
		# is back (bounded: 10 s). The release happened before the agent
		# answered the first poll that shows it, so the poll's start bounds
		# the lag from above (one poll takes about half a millisecond).
		t_end=$((t_done + 10000000))
		for ((k = 0; ; k++)); do
			now_us t_poll
			fast_state_field released rel
			[ -n "$rel" ] && ((rel >= i + 1)) && break
			((t_poll > t_end)) && fail "request $i: lease not released in 10 s (released=$rel)"
		done
		exec {fd}<&-
		((k == 0)) && first=$((first + 1))
		lags+=($((t_poll - t_done)))
	done
	wait_state released "$n"
	assert_books_balanced
	assert_equal "$(state_field unknown_releases)" 0
	local p50 p99 mx a50 a99 cnt
	ms() { awk '{ printf "%.2f", $1 / 1000 }'; }
	p50=$(printf '%s\n' "${lags[@]}" | quantile 0.5 | ms)
	p99=$(printf '%s\n' "${lags[@]}" | quantile 0.99 | ms)
	mx=$(printf '%s\n' "${lags[@]}" | quantile 1 | ms)
	state_snapshot
	read -r cnt a50 a99 < <(jq -r '.completion_lag_ms | "\(.count) \(.p50) \(.p99)"' <<<"$STATE")
	echo "# release latency, client's data: [DONE] to lease released, $n streams: p50 $p50 ms, p99 $p99 ms, max $mx ms (already released at the first poll: $first of $n)" >&3
	echo "# agent's completion lag (HAProxy's log time, ms resolution, to release; histogram): p50 $a50 ms, p99 $a99 ms over $cnt" >&3
	assert_equal "histogram count: $cnt" "histogram count: $n"
	# /metrics carries the same histogram.
	run agent_get /metrics
	assert_line "dbucket_completion_lag_seconds_count $n"
}
