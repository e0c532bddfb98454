# End-to-end world with four vLLM stubs (build/vllm-stub) instead of the
# Lua test backends: HAProxy runs with haproxy/haproxy.cfg alone, as in
# production. Everything started here (stubs, background clients, socat
# relays) is recorded by pid and stopped by pid in stubs_teardown.
#
#   setup()    { stubs_setup; }
#   teardown() { stubs_teardown; }
#   start_stubs [SCALE]; start_agent ...; start_haproxy_stubs

load helpers

# Short group (vllm0, vllm1): a 16k context and a small KV cache; long
# group (vllm2, vllm3): the stub's full size. A body above 16384 tokens
# (64 KiB) but below the 32768-token threshold lands on a short server and
# is too long for it.
SHORT_MAX_MODEL_LEN=16384
SHORT_KV=65536
LONG_MAX_MODEL_LEN=131072
LONG_KV=430000
# Default model clock: real time. Tests pick the token counts that make
# their streams as long as they need (about 7.6 ms a token when lightly
# loaded, a little more per token as the batch grows).
STUB_SCALE=${STUB_SCALE:-1}

stubs_setup() {
	dbk_env
	STUB_PID=()
	STUB_PORT=()
	CLIENT_PIDS=()
	RELAY_PIDS=()
}

# start_stub I [SCALE] [PORT]: stub vllmI (short or long group by I) on
# PORT (default: any free one), exports DBK_VLLMi; returns once it
# listens (bounded, ~5 s). STUB_ARGS (words) are passed to the stub.
start_stub() {
	local i=$1 scale=${2:-$STUB_SCALE} port=${3:-0}
	# Its own line: in one "local", $i would still be the caller's.
	local out="$BATS_TEST_TMPDIR/stub$i.out"
	local -a size
	if ((i < 2)); then
		size=(--max-model-len "$SHORT_MAX_MODEL_LEN" --kv-capacity-tokens "$SHORT_KV")
	else
		size=(--max-model-len "$LONG_MAX_MODEL_LEN" --kv-capacity-tokens "$LONG_KV")
	fi
	: >"$out"
	"$BUILD/vllm-stub" --host 127.0.0.1 --port "$port" --name "vllm$i" --time-scale "$scale" \
		"${size[@]}" ${STUB_ARGS:+$STUB_ARGS} >"$out" 2>>"$BATS_TEST_TMPDIR/stub$i.log" 3>&- &
	STUB_PID[i]=$!
	local line
	dbk_wait_until 5 stub_started "${STUB_PID[i]}" "$out" || true
	line=$(grep -so 'listening on 127\.0\.0\.1:[0-9]*' "$out") || true
	[ -n "$line" ] || { echo "stub vllm$i did not start" >&2; cat "$BATS_TEST_TMPDIR/stub$i.log" >&2; return 1; }
	STUB_PORT[i]=${line##*:}
	export "DBK_VLLM$i=127.0.0.1:${STUB_PORT[i]}"
}

# stub_started PID OUT: the stub says where it listens, or has exited.
stub_started() {
	grep -sq 'listening on 127\.0\.0\.1:[0-9]' "$2" || ! kill -0 "$1" 2>/dev/null
}

# start_stubs [SCALE]: the four stubs, DBK_VLLM0..3 exported.
start_stubs() {
	local i
	for i in 0 1 2 3; do
		start_stub "$i" "${1:-$STUB_SCALE}" || return 1
	done
}

# start_model_fleet SCALE ARGS_OF [AGENT ARGS...]: the four stubs at
# model clock SCALE, stub I started with the words `ARGS_OF I` prints,
# the agent following HAProxy's backend and scraping each of them, then
# HAProxy; returns once the agent knows every server's models.
start_model_fleet() {
	local scale=$1 args_of=$2 i scrape=()
	shift 2
	for i in 0 1 2 3; do
		STUB_ARGS=$("$args_of" "$i") start_stub "$i" "$scale" || return 1
		scrape+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}")
	done
	start_agent --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 "${scrape[@]}" "$@"
	start_haproxy_stubs
	wait_state runtime_api_up true
	for i in 0 1 2 3; do
		wait_until 10 models_known "vllm$i" || fail "vllm$i's models never known"
	done
}

models_known() { [ "$(server_field "$1" models)" != null ]; }

# kill_stub I [SIGNAL]: stops stub vllmI by pid (default SIGKILL) and
# reaps it.
kill_stub() {
	local i=$1 sig=${2:-KILL}
	[ -n "${STUB_PID[i]:-}" ] || return 0
	kill "-$sig" "${STUB_PID[i]}" 2>/dev/null || true
	wait "${STUB_PID[i]}" 2>/dev/null || true
	STUB_PID[i]=
}

# HAProxy with the repository's configuration only (no test backends).
start_haproxy_stubs() {
	haproxy -f "$REPO/haproxy/haproxy.cfg" 2>>"$BATS_TEST_TMPDIR/haproxy.log" 3>&- &
	HAPROXY_PID=$!
	dbk_wait_port "$DBK_PORT"
}

# start_ttft_world: four stubs, the agent on --policy ttft and HAProxy
# with the repository's configuration in front.
start_ttft_world() {
	start_stubs || return 1
	start_agent --policy ttft || return 1
	start_haproxy_stubs
}

# kill_agent: SIGKILL, no summary, no clean close.
kill_agent() {
	kill -KILL "$AGENT_PID" 2>/dev/null || true
	wait "$AGENT_PID" 2>/dev/null || true
	AGENT_PID=
}

# start_relay LISTEN_PORT TARGET_PORT: a socat TCP relay on loopback,
# one child per connection. RELAY_PID is the listener.
start_relay() {
	socat "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$2" \
		2>>"$BATS_TEST_TMPDIR/relay.log" </dev/null >/dev/null 3>&- &
	RELAY_PID=$!
	RELAY_PIDS+=("$RELAY_PID")
	dbk_wait_port "$1"
}

# stop_relay: the listener and the children it forked for connections,
# SIGKILL, by pid.
stop_relay() {
	[ -n "${RELAY_PID:-}" ] || return 0
	local kids
	kids=$(ps -o pid= --ppid "$RELAY_PID" 2>/dev/null) || true
	kill -KILL "$RELAY_PID" $kids 2>/dev/null || true
	wait "$RELAY_PID" 2>/dev/null || true
	RELAY_PID=
}

# ---- requests -------------------------------------------------------

# completion_body MAX_TOKENS STREAM [PROMPT_BYTES] [MODEL]: a completions
# request with ignore_eos and, when streaming, the usage chunk.
completion_body() {
	local mt=$1 stream=$2 pb=${3:-40} model=${4:-stub-model} so=""
	[ "$stream" = true ] && so='"stream_options":{"include_usage":true},'
	printf '{"model":"%s","max_tokens":%d,"ignore_eos":true,"stream":%s,%s"prompt":"' \
		"$model" "$mt" "$stream" "$so"
	head -c "$pb" /dev/zero | tr '\0' 'a'
	printf '"}'
}

# chat_body MAX_TOKENS STREAM [CONTENT_BYTES]
chat_body() {
	local mt=$1 stream=$2 pb=${3:-40} so=""
	[ "$stream" = true ] && so='"stream_options":{"include_usage":true},'
	printf '{"model":"stub-model","max_tokens":%d,"ignore_eos":true,"stream":%s,%s"messages":[{"role":"user","content":"' \
		"$mt" "$stream" "$so"
	head -c "$pb" /dev/zero | tr '\0' 'a'
	printf '"}]}'
}

# send BASE PATH BODYFILE [PORT] [CURL ARGS...]: POSTs BODYFILE and keeps
# BASE.h (headers), BASE.b (body) and BASE.rc (curl's exit code). PORT
# defaults to the proxy.
send() {
	local base=$1 path=$2 body=$3 port=${4:-$DBK_PORT}
	local rc=0
	shift 4 2>/dev/null || shift $#
	curl -s -N --max-time 60 -D "$base.h" -o "$base.b" -H 'Content-Type: application/json' \
		--data-binary "@$body" "$@" "http://127.0.0.1:$port$path" || rc=$?
	echo "$rc" >"$base.rc"
	return "$rc"
}

# send_bg BASE PATH BODYFILE [PORT] [CURL ARGS...]: send in the background,
# its pid appended to CLIENT_PIDS (and left in LAST_PID).
send_bg() {
	send "$@" </dev/null >/dev/null 2>&1 3>&- &
	LAST_PID=$!
	CLIENT_PIDS+=("$LAST_PID")
}

# curl_bg BASE PATH BODYFILE [CURL ARGS...]: like send_bg, but the pid in
# LAST_PID is curl's own, so that killing it aborts the transfer (no
# BASE.rc).
curl_bg() {
	local base=$1 path=$2 body=$3
	shift 3
	curl -s -N --max-time 60 -D "$base.h" -o "$base.b" -H 'Content-Type: application/json' \
		--data-binary "@$body" "$@" "http://127.0.0.1:$DBK_PORT$path" </dev/null >/dev/null 2>&1 3>&- &
	LAST_PID=$!
	CLIENT_PIDS+=("$LAST_PID")
}

# has_events BASE N: BASE.b holds at least N events.
has_events() {
	local c
	c=$(grep -sc '^data: {' "$1.b") || true
	((${c:-0} >= $2))
}

# wait_events BASE N: waits (bounded, 10 s) until BASE.b holds N events.
wait_events() {
	dbk_wait_until 10 has_events "$1" "$2" && return 0
	echo "$1 never got $2 events" >&2
	return 1
}

# stub_metric I NAME: the value of stub vllmI's metric NAME (its first
# sample, whatever its labels), from its /metrics.
stub_metric() {
	curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[$1]}/metrics" |
		awk -v n="$2" 'index($0, n "{") == 1 || $1 == n { print $NF + 0; exit }'
}

# scrape_metric NAME{LABELS}: its value in the agent's /metrics.
scrape_metric() {
	agent_get /metrics | awk -v m="$1" '$1 == m { print $2 }'
}

# served_by_each N [distinct]: sends N short completions through HAProxy
# and prints how many each server answered ("vllm0=K ..."), every one a
# 200. The prompts are alike, or with "distinct" each its own, so that no
# server's cache draws them (ttft sends alike prompts where the first
# was cached).
served_by_each() {
	local d=$BATS_TEST_TMPDIR i
	completion_body 4 false 300 >"$d/short.json"
	for ((i = 1; i <= $1; i++)); do
		if [ "${2:-}" = distinct ]; then
			sed "s/\"prompt\":\"/&request $i /" "$d/short.json" >"$d/s$i.json"
			send_bg "$d/s$i" /v1/completions "$d/s$i.json"
		else
			send_bg "$d/s$i" /v1/completions "$d/short.json"
		fi
	done
	wait_clients
	for ((i = 1; i <= $1; i++)); do
		[ "$(status "$d/s$i")" = 200 ] || fail "s$i: $(status "$d/s$i")"
		header "$d/s$i" X-Served-By
	done | sort | uniq -c | awk '{ printf "%s=%s\n", $2, $1 }'
}

# wait_clients: waits for every background client (each bounded by curl's
# --max-time) and empties CLIENT_PIDS.
wait_clients() {
	local p
	for p in "${CLIENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	CLIENT_PIDS=()
}

# header BASE NAME: the value of response header NAME in BASE.h (last
# response), empty when absent.
header() {
	tr -d '\r' <"$1.h" | awk -v n="$(tr '[:upper:]' '[:lower:]' <<<"$2"):" '
		/^HTTP\// { v = "" }
		tolower($1) == n { $1 = ""; sub(/^ /, ""); v = $0 }
		END { print v }'
}

# status BASE: the HTTP status of the last response in BASE.h.
status() {
	tr -d '\r' <"$1.h" | awk '/^HTTP\// { s = $2 } END { print s }'
}

# sse_events BASE: the number of "data: {...}" events in BASE.b.
sse_events() {
	grep -c '^data: {' "$1.b"
}

# sse_done BASE: succeeds when the last non-empty line is data: [DONE].
sse_done() {
	[ "$(grep -v '^$' "$1.b" | tail -n 1)" = "data: [DONE]" ]
}

# stream_ok BASE EVENTS: the stream in BASE ended well: curl's exit code
# 0, status 200, EVENTS events, then data: [DONE].
stream_ok() {
	[ "$(cat "$1.rc") $(status "$1") $(sse_events "$1")" = "0 200 $2" ] && sse_done "$1"
}

# stub_finished I REASON: how many requests stub vllmI finished for
# REASON (stop, length, abort: vLLM's finished_reason), from its /metrics.
stub_finished() {
	curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[$1]}/metrics" |
		awk -v r="finished_reason=\"$2\"" '
			index($0, "vllm:request_success_total{") == 1 && index($0, r) { v = $NF + 0 }
			END { print v + 0 }'
}

# stub_idle I: stub vllmI runs no request.
stub_idle() {
	[ "$(stub_metric "$1" vllm:num_requests_running)" = 0 ]
}

# stubs_outcomes: once the four stubs run nothing (bounded, 5 s each),
# "aborted at the stubs: A, finished: F" over them all: the requests
# they stopped for an abort, and those they finished by themselves.
stubs_outcomes() {
	local i aborted=0 finished=0
	for i in 0 1 2 3; do
		wait_until 5 stub_idle "$i" || return 1
	done
	for i in 0 1 2 3; do
		aborted=$((aborted + $(stub_finished "$i" abort)))
		finished=$((finished + $(stub_finished "$i" length) + $(stub_finished "$i" stop)))
	done
	echo "aborted at the stubs: $aborted, finished: $finished"
}

# prompt_body TEXT_FILE MAX_TOKENS: a completions request whose prompt is
# the file's text (letters and spaces only: no JSON escaping needed).
prompt_body() {
	printf '{"model":"stub-model","max_tokens":%d,"ignore_eos":true,"prompt":"' "$2"
	cat "$1"
	printf '"}'
}

# words SEED BYTES: BYTES of text that differs by SEED.
words() {
	awk -v s="$1" -v n="$2" 'BEGIN {
		srand(s); o = "";
		while (length(o) < n) o = o sprintf("w%d ", int(rand() * 1000000));
		printf "%s", substr(o, 1, n) }'
}

# priorities: the priority of every request the stubs logged (stubs
# started with --verbose --scheduling-policy priority), sorted.
priorities() {
	cat "$BATS_TEST_TMPDIR"/stub?.log | grep -o ' priority=-\?[0-9]*' | cut -d= -f2 | sort -n | tr '\n' ' '
}

# priorities_logged N: the stubs logged N requests with their priority.
priorities_logged() { [ "$(cat "$BATS_TEST_TMPDIR"/stub?.log | grep -c ' priority=')" -ge "$1" ]; }

# normalise FILE: the body with what differs between two runs of the
# same request (ids, creation times) replaced by constants.
normalise() {
	sed -E 's/"id":"(cmpl|chatcmpl)-[0-9a-f]+"/"id":"ID"/g; s/"created":[0-9]+/"created":0/g' "$1"
}

# stub_port_of NAME: the port of the stub called NAME (vllmI).
stub_port_of() {
	echo "${STUB_PORT[${1#vllm}]}"
}

# same_as_direct BASE PATH BODY: sends BODY straight to the stub that
# served BASE (X-Served-By) and checks that both answers have the same
# status, Content-Type and, ids and creation times aside, the same bytes.
same_as_direct() {
	local base=$1 srv port
	srv=$(header "$base" X-Served-By)
	port=$(stub_port_of "$srv")
	[ -n "$port" ] || fail "no stub behind X-Served-By '$srv'"
	send "$base.direct" "$2" "$3" "$port"
	assert_equal "$(status "$base")" "$(status "$base.direct")"
	assert_equal "$(header "$base" Content-Type)" "$(header "$base.direct" Content-Type)"
	normalise "$base.b" >"$base.n"
	normalise "$base.direct.b" >"$base.direct.n"
	if ! cmp -s "$base.n" "$base.direct.n"; then
		diff "$base.n" "$base.direct.n" | head -n 10 >&2
		fail "the body through HAProxy differs from the stub's own"
	fi
}

# assert_books_balanced: nothing in flight, every lease given back once:
# leases 0, every server's inflight and load 0 (never negative),
# decisions == released + expired + reclaimed + dropped (their server
# left HAProxy's backend).
assert_books_balanced() {
	state_snapshot
	assert_equal "leases=$(state_get leases)" "leases=0"
	refute [ -z "$STATE" ]
	# Any server's, bucket's or policy's "inflight" or "load", wherever
	# it stands in the document.
	jq -e '[.. | objects | select((.inflight // 0) != 0 or (.load // 0) != 0)] | length == 0' \
		<<<"$STATE" >/dev/null || fail "some load is still charged: $STATE"
	local d r x c g
	d=$(state_get decisions)
	r=$(state_get released)
	x=$(state_get expired)
	c=$(state_get reclaimed)
	g=$(state_get dropped)
	assert_equal "decisions=$d" "decisions=$((r + x + ${c:-0} + ${g:-0}))"
}

# haproxy_completions: HAProxy's completion lines (the dbk1 log lines).
haproxy_completions() {
	grep '^dbk1 ' "$BATS_TEST_TMPDIR/haproxy.log" 2>/dev/null
}

# fast_state_field FIELD VAR: sets VAR to /state's FIELD without forking
# (bash's /dev/tcp, one bulk read: about half a millisecond), for tight
# polling loops; VAR is empty on failure.
fast_state_field() {
	local fd buf=""
	printf -v "$2" '%s' ""
	exec {fd}<>"/dev/tcp/127.0.0.1/$ADMIN_PORT" 2>/dev/null || return 1
	printf 'GET /state HTTP/1.0\r\n\r\n' >&"$fd"
	# The agent closes after its answer: read to the end (bounded, 2 s).
	read -r -d "" -N 65536 -t 2 -u "$fd" buf || true
	exec {fd}>&-
	if [[ $buf =~ \"$1\":\ *([-0-9.]+) ]]; then
		printf -v "$2" '%s' "${BASH_REMATCH[1]}"
	fi
}

# now_us: the wall clock in microseconds, without forking.
now_us() {
	printf -v "$1" '%s' "${EPOCHREALTIME/[.,]/}"
}

# quantile Q: the Q-quantile (0..1, nearest rank) of the numbers on stdin.
quantile() {
	sort -n | awk -v q="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		r = int(q * NR + 0.999999); if (r < 1) r = 1; if (r > NR) r = NR
		print v[r] }'
}

stubs_teardown() {
	local p i
	for p in "${CLIENT_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${CLIENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for p in "${RELAY_PIDS[@]}"; do
		kill -KILL $(ps -o pid= --ppid "$p" 2>/dev/null) "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	# A test may leave the agent stopped (SIGSTOP): it must run to exit.
	[ -z "${AGENT_PID:-}" ] || kill -CONT "$AGENT_PID" 2>/dev/null || true
	dbk_teardown
	for i in "${!STUB_PID[@]}"; do
		[ -z "${STUB_PID[i]}" ] || kill "${STUB_PID[i]}" 2>/dev/null || true
	done
	for i in "${!STUB_PID[@]}"; do
		[ -z "${STUB_PID[i]}" ] || wait "${STUB_PID[i]}" 2>/dev/null || true
	done
	# Under the sanitizer build a report (a leak at exit included) fails
	# the test even when every assertion held.
	local f bad=0
	for f in "$BATS_TEST_TMPDIR"/agent.log "$BATS_TEST_TMPDIR"/stub?.log; do
		[ -f "$f" ] || continue
		if grep -qE 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:' "$f"; then
			echo "--- sanitizer report in $(basename "$f")" >&3
			grep -E -A 12 'ERROR: |runtime error:' "$f" | head -n 40 >&3
			bad=1
		fi
	done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		for i in 0 1 2 3; do
			[ -s "$BATS_TEST_TMPDIR/stub$i.log" ] || continue
			echo "--- stub$i.log" >&3
			tail -n 10 "$BATS_TEST_TMPDIR/stub$i.log" >&3
		done
	fi
	return "$bad"
}
