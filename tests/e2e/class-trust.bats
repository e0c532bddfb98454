#!/usr/bin/env bats
# Issue 28, the class a client may give itself, through haproxy/haproxy.cfg
# and four vLLM stubs: the X-Request-Class header lowers a request's class
# but never raises it past the default, the path rule or the API key's
# class from the map; a client DBK_TRUSTED_CLASS_SRC lists may raise it
# (the map's class still wins); a value not known changes nothing. Seen
# twice: the class HAProxy logs (the last field, the txn.dbk_class the
# SPOE message carries) and the agent's admitted count per class.

load stubs

setup() {
	stubs_setup
	completion_body 2 false >"$BATS_TEST_TMPDIR/small.json"
	SENT=0
	LAUNCHER_PID=
}
teardown() {
	if [ -n "$LAUNCHER_PID" ]; then
		kill -TERM "$LAUNCHER_PID" 2>/dev/null || true
		wait "$LAUNCHER_PID" 2>/dev/null || true
	fi
	stubs_teardown
}

# ask CLASS [CURL ARGS...]: one small completion, with X-Request-Class
# CLASS unless it is "-"; it must be served.
ask() {
	local -a h=()
	[ "$1" = - ] || h=(-H "X-Request-Class: $1")
	shift
	SENT=$((SENT + 1))
	send "$BATS_TEST_TMPDIR/r$SENT" /v1/completions "$BATS_TEST_TMPDIR/small.json" \
		"$DBK_PORT" "${h[@]}" "$@" || fail "request $SENT: curl failed"
	[ "$(status "$BATS_TEST_TMPDIR/r$SENT")" = 200 ] || fail "request $SENT: not served"
}

logged() { [ "$(grep -c '"POST /v1/completions HTTP/1.1" ' "$BATS_TEST_TMPDIR/haproxy.log")" -ge "$1" ]; }

# classes: the class HAProxy logged for each request, in order (each is
# sent once the one before it was answered).
classes() {
	wait_until 10 logged "$SENT" || fail "HAProxy logged fewer than $SENT requests"
	grep -o '"POST /v1/completions HTTP/1.1" [^ ]*$' "$BATS_TEST_TMPDIR/haproxy.log" |
		awk '{ printf "%s%s", sep, $NF; sep = " " } END { print "" }'
}

# admitted: the agent's admitted counts, critical standard sheddable.
admitted() {
	state_snapshot
	[ -n "$STATE" ] || fail "no /state from the agent"
	echo "$(state_get admitted_critical) $(state_get admitted_standard) $(state_get admitted_sheddable)"
}

@test "without a trusted source the header lowers a request's class, never raises it, and a value not known changes nothing" {
	start_ttft_world
	local c
	for c in - critical CRITICAL 0 standard sheddable Sheddable 2 1 urgent "" "critical, 2"; do
		ask "$c"
	done
	run classes
	assert_output "standard standard standard standard standard sheddable sheddable sheddable standard standard standard sheddable"
	run admitted
	assert_output "0 8 4"
	assert_equal "bad_class $(state_field bad_class)" "bad_class 0"
}

@test "a client DBK_TRUSTED_CLASS_SRC lists may raise its class; another on the same host may not" {
	echo 127.0.0.2 >"$BATS_TEST_TMPDIR/trusted.lst"
	export DBK_TRUSTED_CLASS_SRC=$BATS_TEST_TMPDIR/trusted.lst
	start_ttft_world
	ask critical --interface 127.0.0.2
	ask critical
	ask sheddable --interface 127.0.0.2
	ask 0 --interface 127.0.0.2
	ask - --interface 127.0.0.2
	run classes
	assert_output "critical standard sheddable 0 standard"
	run admitted
	assert_output "2 2 1"
}

@test "an API key's class from the map bounds what its header may ask, trusted or not, and any client may lower it" {
	printf 'sk-chat critical\nsk-batch sheddable\n' >"$BATS_TEST_TMPDIR/classes.map"
	echo 127.0.0.2 >"$BATS_TEST_TMPDIR/trusted.lst"
	export DBK_CLASSES_MAP=$BATS_TEST_TMPDIR/classes.map
	export DBK_TRUSTED_CLASS_SRC=$BATS_TEST_TMPDIR/trusted.lst
	start_ttft_world
	local chat=(-H 'Authorization: Bearer sk-chat') batch=(-H 'Authorization: Bearer sk-batch')
	ask - "${chat[@]}"
	ask critical "${batch[@]}"
	ask critical "${batch[@]}" --interface 127.0.0.2
	ask standard "${chat[@]}"
	ask sheddable "${chat[@]}" --interface 127.0.0.2
	ask critical -H 'Authorization: Bearer sk-unknown'
	run classes
	assert_output "critical sheddable sheddable standard sheddable standard"
	run admitted
	assert_output "1 2 3"
}

launcher_ready() { grep -q 'dbucket: ready' "$BATS_TEST_TMPDIR/launcher.log"; }

@test "the launcher's --trusted-class-src: those clients' header may raise their class, the others' only lower it" {
	start_stubs
	local rt=$BATS_TEST_TMPDIR/rt
	"$BUILD/dbucket" --runtime-dir "$rt" --host 127.0.0.1 --port "$DBK_PORT" \
		--server-hosts 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 --server-ports "${STUB_PORT[@]}" \
		--trusted-class-src 127.0.0.2 10.0.0.0/8 \
		2>>"$BATS_TEST_TMPDIR/launcher.log" </dev/null 3>&- &
	LAUNCHER_PID=$!
	wait_until 60 launcher_ready || fail "the launcher never said it was ready"
	ask critical --interface 127.0.0.2
	ask critical
	ask sheddable
	ask 0
	# Its agent's /state, on the runtime directory's admin socket.
	agent_get() { curl -s --max-time 5 --unix-socket "$rt/admin.sock" "http://localhost$1"; }
	run admitted
	assert_output "1 2 1"
}
