#!/usr/bin/env bats
# HTTP/2 clients: HAProxy terminates TLS with ALPN h2 (or takes h2c on a
# plain port) in front of the same frontend, and HTTP/1.1 to the stubs
# behind it. The agent must decide as for HTTP/1.1, leases must come
# back once whether the stream ends, is reset by the client or carries
# a body of unknown length, and the priority filter must keep bodies
# whole.

load stubs

setup() {
	stubs_setup
	local base
	base=$(dbk_ports 2)
	H2_PORT=$base
	H2C_PORT=$((base + 1))
}

teardown() {
	stubs_teardown
}

# make_cert: a throwaway self-signed certificate and its key, one PEM
# file as HAProxy's `crt` takes it, in CERT.
make_cert() {
	CERT=$BATS_TEST_TMPDIR/h2.pem
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=localhost -keyout "$CERT.key" -out "$CERT.crt" 2>/dev/null ||
		fail "openssl could not make a certificate"
	cat "$CERT.crt" "$CERT.key" >"$CERT"
}

# start_haproxy_h2: HAProxy with a copy of the repository's configuration
# whose llm frontend also listens with TLS and ALPN h2,http/1.1 on H2_PORT
# and as h2c (HTTP/2 without TLS) on H2C_PORT, as an operator would add
# the lines.
start_haproxy_h2() {
	make_cert
	local cfg=$BATS_TEST_TMPDIR/haproxy-h2.cfg
	awk -v tls="    bind 127.0.0.1:$H2_PORT ssl crt $CERT alpn h2,http/1.1" \
		-v h2c="    bind 127.0.0.1:$H2C_PORT proto h2" '
		{ print }
		/^    bind "\$\{DBK_BIND-/ { print tls; print h2c; n++ }
		END { exit n != 1 }' "$REPO/haproxy/haproxy.cfg" >"$cfg" ||
		fail "no DBK_BIND line in haproxy.cfg's frontend"
	haproxy -f "$cfg" 2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
	dbk_wait_port "$H2_PORT"
	dbk_wait_port "$H2C_PORT"
}

# h2_url PATH: the TLS listener's URL.
h2_url() { echo "https://127.0.0.1:$H2_PORT$1"; }

# h2_send BASE PATH BODY [CURL ARGS...]: send's twin over TLS and HTTP/2
# (BASE.h, BASE.b, BASE.rc).
h2_send() {
	local base=$1 path=$2 body=$3 rc=0
	shift 3
	curl -s -N -k --http2 --max-time 60 -D "$base.h" -o "$base.b" \
		-H 'Content-Type: application/json' --data-binary "@$body" "$@" \
		"$(h2_url "$path")" || rc=$?
	echo "$rc" >"$base.rc"
	return "$rc"
}

# h2_curl_bg BASE PATH BODY [CURL ARGS...]: h2_send in the background,
# curl's own pid in LAST_PID (killing it resets the stream).
h2_curl_bg() {
	local base=$1 path=$2 body=$3
	shift 3
	curl -s -N -k --http2 --max-time 60 -D "$base.h" -o "$base.b" \
		-H 'Content-Type: application/json' --data-binary "@$body" "$@" \
		"$(h2_url "$path")" </dev/null >/dev/null 2>&1 3>&- &
	LAST_PID=$!
	CLIENT_PIDS+=("$LAST_PID")
}

# proto BASE: the protocol of BASE's last response ("HTTP/2", "HTTP/1.1").
proto() {
	tr -d '\r' <"$1.h" | awk '/^HTTP\// { p = $1 } END { print p }'
}

# unsized: the agent's dbucket_unsized_bodies_total.
unsized() {
	agent_get /metrics | awk '$1 == "dbucket_unsized_bodies_total" { print $2 }'
}

@test "h2 over TLS: a completion is routed as its HTTP/1.1 twin and its lease released once" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR
	completion_body 4 false 300 >"$d/c.json"
	send "$d/one" /v1/completions "$d/c.json"
	wait_state released 1
	h2_send "$d/two" /v1/completions "$d/c.json"
	assert_equal "$(proto "$d/one") $(proto "$d/two")" "HTTP/1.1 HTTP/2"
	assert_equal "$(cat "$d/two.rc") $(status "$d/two")" "0 200"
	# Status, bucket, group, redirected and score: the server aside (the
	# idle fleet's tie may break either way), the same decision.
	local r1 r2
	r1=$(dbk_routing <"$d/one.h")
	r2=$(dbk_routing <"$d/two.h")
	[[ $r2 =~ ^200\ vllm[0-3]\ [0-9] ]] || fail "not routed by the agent over h2: $r2"
	echo "# $(haproxy -v | awk 'NR == 1 { print $1, $3 }'): HTTP/1.1 $r1; HTTP/2 $r2" >&3
	assert_equal "$(cut -d' ' -f1,3- <<<"$r2")" "$(cut -d' ' -f1,3- <<<"$r1")"
	jq -e '.choices[0].text | length > 0' "$d/two.b" >/dev/null || fail "no completion: $(cat "$d/two.b")"
	wait_state released 2
	assert_books_balanced
	assert_equal "$(state_field decisions)" 2
	assert_equal "$(state_field unknown_releases)" 0
}

@test "h2c (proto h2, no TLS): a completion is routed by the agent and released once" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR
	completion_body 4 false 300 >"$d/c.json"
	curl -s --http2-prior-knowledge --max-time 30 -D "$d/c.h" -o "$d/c.b" \
		-H 'Content-Type: application/json' --data-binary "@$d/c.json" \
		"http://127.0.0.1:$H2C_PORT/v1/completions" || fail "curl failed over h2c"
	assert_equal "$(proto "$d/c")" "HTTP/2"
	[[ $(dbk_routing <"$d/c.h") =~ ^200\ vllm[0-3]\ [0-9] ]] || fail "not routed: $(dbk_routing <"$d/c.h")"
	wait_state released 1
	assert_books_balanced
}

@test "h2: a streamed completion arrives event by event, ends with [DONE], its lease released once" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR
	completion_body 40 true >"$d/s.json"
	h2_send "$d/s" /v1/completions "$d/s.json"
	assert_equal "$(proto "$d/s")" "HTTP/2"
	assert_equal "$(header "$d/s" Content-Type)" "text/event-stream; charset=utf-8"
	# 40 tokens and the usage chunk.
	stream_ok "$d/s" 41 || fail "stream: rc $(cat "$d/s.rc"), status $(status "$d/s"), $(sse_events "$d/s") events"
	assert_equal "$(grep -c '^data: \[DONE\]' "$d/s.b")" 1
	[ -n "$(header "$d/s" X-Dbucket-Bucket)" ] || fail "not routed by the agent"
	wait_state released 1
	assert_books_balanced
	assert_equal "$(state_field decisions)" 1
}

@test "h2: four streams multiplexed on one connection, each its own lease, all released once" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR i out=()
	# 300 tokens: about 2 s of stream, so that all four overlap.
	completion_body 300 true >"$d/c.json"
	for i in 0 1 2 3; do out+=(-o "$d/p$i.b" "$(h2_url /v1/completions)"); done
	curl -s -N -k --http2 --max-time 60 -Z --parallel-max 4 -w '%{http_version} %{http_code}\n' \
		-H 'Content-Type: application/json' --data-binary "@$d/c.json" "${out[@]}" \
		>"$d/codes" 2>"$d/curl.err" </dev/null 3>&- &
	CLIENT_PIDS+=("$!")
	wait_state leases 4
	wait_clients
	assert_equal "$(sort "$d/codes" | uniq -c | tr -s ' ')" " 4 2 200"
	for i in 0 1 2 3; do
		assert_equal "p$i $(sse_events "$d/p$i")" "p$i 301"
		sse_done "$d/p$i" || fail "p$i did not end with [DONE]"
	done
	wait_state released 4
	assert_books_balanced
	assert_equal "$(state_field decisions)" 4
	# One client connection, four request ids (each its own lease).
	run awk '$1 == "dbk1" { print $11 }' "$d/haproxy.log"
	assert_equal "${#lines[@]} connections: $(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" "4 connections: 1"
	assert_equal "$(awk '$1 == "dbk1" { print $2 }' "$d/haproxy.log" | sort -u | wc -l)" 4
}

@test "h2: clients that reset their streams mid-stream give their leases back once; the stubs stop" {
	start_stubs
	start_agent --enable-dynamic-bucket
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR i killed=()
	# 3000 tokens: over 20 s of stream, far longer than the test runs.
	completion_body 3000 true >"$d/c.json"
	for ((i = 0; i < 2; i++)); do
		h2_curl_bg "$d/k$i" /v1/completions "$d/c.json"
		killed+=("$LAST_PID")
	done
	for ((i = 0; i < 2; i++)); do
		h2_curl_bg "$d/m$i" /v1/completions "$d/c.json" --max-time 1.5
	done
	for ((i = 0; i < 2; i++)); do
		wait_events "$d/k$i" 3
	done
	state_snapshot
	(($(state_get leases) >= 2)) || fail "only $(state_get leases) in flight: $STATE"
	kill -TERM "${killed[@]}"
	wait_clients
	for i in k0 k1 m0 m1; do
		assert_equal "$i $(proto "$d/$i")" "$i HTTP/2"
		! grep -q '^data: \[DONE\]' "$d/$i.b" || fail "$i was not cut"
		(($(sse_events "$d/$i") >= 1)) || fail "$i got no event before the abort"
	done
	wait_state released 4
	assert_books_balanced
	assert_equal "$(state_field decisions)" 4
	assert_equal "$(state_field unknown_releases)" 0
	assert_equal "$(state_field expired)" 0
	assert_equal "$(stubs_outcomes)" "aborted at the stubs: 4, finished: 0"
	echo "# reset streams: 4, HAProxy logged $(awk '$1 == "dbk1" { print substr($6, 1, 2) }' "$d/haproxy.log" | sort | uniq -c | awk '{ printf "%s%s %s", s, $2, $1; s = ", " }')" >&3
}

# start_ttft_h2: four stubs, the agent on --policy ttft following
# HAProxy's backend and scraping each stub (so that it knows their
# contexts), HAProxy with the h2 listeners.
start_ttft_h2() {
	start_stubs
	local i scrape=()
	for i in 0 1 2 3; do
		scrape+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}")
	done
	start_agent --policy ttft --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 \
		"${scrape[@]}" "$@"
	start_haproxy_h2
	wait_state runtime_api_up true
	for i in 0 1 2 3; do
		wait_until 10 models_known "vllm$i" || fail "vllm$i never scraped"
	done
}

# h2_stream_body BASE PATH FILE [CURL ARGS...]: POSTs FILE over h2 as a
# body of unknown size (curl -T - reads stdin as it goes and sends no
# Content-Length), BASE.h, BASE.b, BASE.rc as h2_send.
h2_stream_body() {
	local base=$1 path=$2 body=$3 rc=0
	shift 3
	curl -s -N -k --http2 --max-time 60 -D "$base.h" -o "$base.b" -X POST -T - \
		-H 'Content-Type: application/json' "$@" "$(h2_url "$path")" <"$body" || rc=$?
	echo "$rc" >"$base.rc"
	return "$rc"
}

@test "h2: a body without Content-Length is whole when small, a floor when long (to the longest context)" {
	start_ttft_h2
	local d=$BATS_TEST_TMPDIR
	# Small, no length: the sample is the whole JSON document, so its size
	# is known after all.
	completion_body 4 false 300 >"$d/small.json"
	h2_stream_body "$d/s" /v1/completions "$d/small.json"
	assert_equal "$(proto "$d/s") $(cat "$d/s.rc") $(status "$d/s")" "HTTP/2 0 200"
	[ -n "$(header "$d/s" X-Dbucket-Ttft-Ms)" ] || fail "not routed by the agent"
	assert_equal "$(unsized)" 0
	# 80 KB, about 20,000 tokens, past a short stub's 16,384: with its
	# Content-Length the agent knows it...
	words 51 80000 >"$d/k.t"
	prompt_body "$d/k.t" 1 >"$d/k.json"
	h2_send "$d/kl" /v1/completions "$d/k.json"
	assert_equal "$(proto "$d/kl") $(status "$d/kl")" "HTTP/2 200"
	[[ $(header "$d/kl" X-Served-By) == vllm[23] ]] || fail "80 KB with a length went to $(header "$d/kl" X-Served-By)"
	assert_equal "$(unsized)" 0
	# ...without one, HAProxy held part of it when the agent asked: only a
	# floor, so it goes where the longest context is, and reaches it whole.
	words 52 80000 >"$d/u.t"
	prompt_body "$d/u.t" 1 >"$d/u.json"
	h2_stream_body "$d/ku" /v1/completions "$d/u.json"
	assert_equal "$(proto "$d/ku") $(cat "$d/ku.rc") $(status "$d/ku")" "HTTP/2 0 200"
	[[ $(header "$d/ku" X-Served-By) == vllm[23] ]] || fail "80 KB without a length went to $(header "$d/ku" X-Served-By)"
	(($(jq -r .usage.prompt_tokens "$d/ku.b") > 16384)) || fail "the stub read $(cat "$d/ku.b")"
	assert_equal "$(jq -r .usage.prompt_tokens "$d/ku.b")" "$(jq -r .usage.prompt_tokens "$d/kl.b")"
	assert_equal "$(unsized)" 1
	wait_state released 3
	assert_books_balanced
}

@test "h2 with the priority filter: the stub gets the class and a whole body, with and without Content-Length" {
	export DBK_PRIORITY_LUA=$REPO/haproxy/dbucket-priority.lua
	STUB_ARGS="--verbose --scheduling-policy priority"
	start_stubs
	start_agent --policy ttft
	start_haproxy_h2
	local d=$BATS_TEST_TMPDIR b
	completion_body 2 false 300 >"$d/small.json"
	# 40 KB (10,000 tokens, any stub holds it): past HAProxy's 16 KB
	# buffer, so the filter sees it in parts.
	words 9 40000 >"$d/big.t"
	prompt_body "$d/big.t" 2 >"$d/big.json"
	for b in small big; do
		h2_send "$d/${b}l" /v1/completions "$d/$b.json" -H 'X-Request-Class: sheddable'
		h2_stream_body "$d/${b}u" /v1/completions "$d/$b.json" -H 'X-Request-Class: sheddable'
		assert_equal "$b $(proto "$d/${b}l") $(status "$d/${b}l") $(proto "$d/${b}u") $(status "$d/${b}u")" \
			"$b HTTP/2 200 HTTP/2 200"
		# The stub parsed all of it both ways: the same prompt.
		assert_equal "$b $(jq -r .usage.prompt_tokens "$d/${b}u.b")" "$b $(jq -r .usage.prompt_tokens "$d/${b}l.b")"
	done
	wait_until 10 priorities_logged 4 || fail "the stubs logged fewer than 4 requests"
	assert_equal "$(priorities)" "2 2 2 2 "
	# The big one without a length was past the sample: no Content-Length
	# reached HAProxy for the filter to fix.
	assert_equal "$(unsized)" 1
	wait_state released 4
	assert_books_balanced
}
