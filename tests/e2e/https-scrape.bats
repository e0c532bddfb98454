#!/usr/bin/env bats
# https scrapes (issue 30 item 5): a vLLM served behind TLS, here a stub
# behind HAProxy terminating TLS on loopback with a certificate made by
# openssl in the test's directory. The agent scrapes it through libcurl
# when it trusts the certificate (--scrape-ca, or --scrape-insecure),
# says why not when it does not (and routes on its books meanwhile), and
# presents a client certificate to a server that asks for one. On main,
# --scrape https://... is refused at start.

load stubs

setup() {
	stubs_setup
	TLS_PID=
	local d=$BATS_TEST_TMPDIR
	# The server's certificate (self-signed, for 127.0.0.1), a stranger's
	# CA, and a client certificate (self-signed, trusted by the server).
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$d/srv.key" -out "$d/srv.pem" 2>/dev/null
	cat "$d/srv.pem" "$d/srv.key" >"$d/srv.crt"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=stranger \
		-keyout "$d/other.key" -out "$d/other.pem" 2>/dev/null
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=dbucket-agent \
		-keyout "$d/client.key" -out "$d/client.pem" 2>/dev/null
	start_stubs
}

teardown() {
	if [ -n "$TLS_PID" ]; then
		kill "$TLS_PID" 2>/dev/null || true
		wait "$TLS_PID" 2>/dev/null || true
	fi
	stubs_teardown
}

# start_tls [BIND_OPTIONS...]: HAProxy terminating TLS in front of stub
# vllm0 (its /metrics and /v1/models as they are), on a socket bound
# before it starts (dbk_bind_run), whose port is TLS_PORT.
start_tls() {
	local d=$BATS_TEST_TMPDIR
	cat >"$d/tls.cfg" <<EOF
global
  log stderr format raw local0 err
defaults
  mode http
  timeout client 10s
  timeout server 10s
  timeout connect 2s
frontend tls
  bind fd@10 ssl crt $d/srv.crt $*
  default_backend stub
backend stub
  server vllm0 127.0.0.1:${STUB_PORT[0]}
EOF
	dbk_bind_run "$d/tls.ports" l haproxy -f "$d/tls.cfg" 2>>"$d/tls.log" 3>&- &
	TLS_PID=$!
	dbk_bound_ports "$d/tls.ports"
	TLS_PORT=${DBK_BOUND[0]}
	dbk_wait_port "$TLS_PORT"
}

# scrape_tls ARGS...: the agent with --policy ttft scraping vllm0 at
# https://, the others at their plain ports, then ARGS.
scrape_tls() {
	local i
	local -a sa=(--scrape "vllm0=https://127.0.0.1:$TLS_PORT")
	for i in 1 2 3; do
		sa+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}")
	done
	start_agent --policy ttft "${sa[@]}" "$@"
}

# The agent's local ports of its established connections to the TLS port
# (/v1/models' own, closed after each answer, left out: it comes every
# 10 s and lives a few ms).
agent_ports() {
	ss -Htn state established "( dport = :$TLS_PORT )" | awk '{ print $3 }' | sort | head -1
}

scrapes_at_least() {
	[ "$(scrape_metric 'dbucket_scrapes_total{server="vllm0"}')" -ge "$1" ]
}

# vllm0's entry under /state's "scrape".
scraped0() {
	agent_get /state | jq -c '.scrape.servers[] | select(.name == "vllm0")'
}

# Whether vllm0 is scraped up with the stub's numbers (its short group's
# max_model_len, from /v1/models, and its KV pool from /metrics).
scraped0_up() {
	scraped0 | jq -e ".up and .max_model_len == $SHORT_MAX_MODEL_LEN and .gpu_blocks > 0" \
		>/dev/null
}

@test "https: trusted with --scrape-ca, the server is scraped up with its own numbers" {
	start_tls
	scrape_tls --scrape-ca "$BATS_TEST_TMPDIR/srv.pem"
	wait_until 10 scraped0_up
	wait_log "event=scrape-up server=vllm0 url=https://127.0.0.1:$TLS_PORT/metrics"
	assert_equal "$(scrape_metric 'dbucket_scrape_up{server="vllm0"}')" 1
	assert_equal "$(scrape_metric 'dbucket_scrape_failures_total{server="vllm0"}')" 0
	# Kept alive: ten more scrapes (100 ms apart) on the connection the
	# first made, not a handshake each.
	local port0
	port0=$(agent_ports)
	[ -n "$port0" ] || fail "no connection to the TLS port"
	wait_until 10 scrapes_at_least $(($(scrape_metric 'dbucket_scrapes_total{server="vllm0"}') + 10))
	assert_equal "$(agent_ports)" "$port0"
	run grep -c "event=scrape-insecure" "$BATS_TEST_TMPDIR/agent.log"
	assert_output 0
}

@test "https: a CA that did not sign the server's certificate: down with the reason, routed on the books" {
	start_tls
	scrape_tls --scrape-ca "$BATS_TEST_TMPDIR/other.pem"
	start_haproxy_stubs
	wait_log 'event=scrape-down server=vllm0 url=https://[^ ]* reason="SSL certificate problem: [^"]*" cause=tls fallback=books'
	assert_equal "$(scrape_metric 'dbucket_scrape_down{server="vllm0",reason="tls"}')" 1
	assert_equal "$(scrape_metric 'dbucket_scrape_up{server="vllm1"}')" 1
	assert_equal "$(scraped0 | jq -r .down_reason)" tls
	# Backed off: a certificate that failed is not handshaken again every
	# 100 ms.
	[ "$(scraped0 | jq .backoff_ms)" -ge 1000 ]
	# Still routed (on the books): every request answered, vllm0 among
	# the servers (each prompt its own: alike ones all go where the
	# first was cached).
	local by
	by=$(served_by_each 24 distinct)
	grep -q '^vllm0=[1-9]' <<<"$by" || fail "vllm0 got no request: $by"
	wait_state released 24
	# One line for the change of state, not one per failed scrape.
	run grep -c 'event=scrape-down server=vllm0 ' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 1
}

@test "https: a self-signed server fails the default check; --scrape-insecure scrapes it, and says so" {
	start_tls
	scrape_tls
	wait_log 'event=scrape-down server=vllm0 .*reason="SSL certificate problem: self-signed certificate" cause=tls'
	stop_agent
	scrape_tls --scrape-insecure
	wait_log 'event=scrape-insecure reason="--scrape-insecure: https servers'"'"' certificates and names are not checked"'
	wait_until 10 scraped0_up
}

@test "https: a client certificate for a server that asks for one" {
	local d=$BATS_TEST_TMPDIR
	start_tls ca-file "$d/client.pem" verify required
	scrape_tls --scrape-ca "$d/srv.pem"
	wait_log 'event=scrape-down server=vllm0 .*reason="[^"]*alert certificate required[^"]*" cause=tls'
	stop_agent
	scrape_tls --scrape-ca "$d/srv.pem" --scrape-cert "$d/client.pem" --scrape-key "$d/client.key"
	wait_until 10 scraped0_up
}

@test "https: TLS files are checked at start" {
	run "$BUILD/dbucket-spoa" --scrape-ca "$BATS_TEST_TMPDIR/none.pem" \
		--scrape "a=https://127.0.0.1:1" a
	assert_failure 2
	assert_output --partial "--scrape-ca $BATS_TEST_TMPDIR/none.pem: No such file or directory"
	run "$BUILD/dbucket-spoa" --scrape-key "$BATS_TEST_TMPDIR/client.key" a
	assert_failure 2
	assert_output --partial "--scrape-key needs --scrape-cert"
	run "$BUILD/dbucket-spoa" --scrape "a=ftp://127.0.0.1:1" a
	assert_failure 2
	assert_output --partial "--scrape wants NAME=http[s]://HOST:PORT"
}
