#!/usr/bin/env bats
# The launcher `dbucket`: the reference proxy's command line in front of
# HAProxy and dbucket-spoa. Its routing against the parity tool, its
# refusals, the configuration it writes, its supervision of the two
# children, `make install` and the man pages. Loopback only; every
# process is started and stopped by pid.

load helpers

setup() {
	[ -x "$BUILD/dbucket" ] ||
		fail "no $BUILD/dbucket: run make"
	dbk_env
	RT=$BATS_TEST_TMPDIR/rt
	LOG=$BATS_TEST_TMPDIR/launcher.log
	: >"$LOG"
	L_PID= L_AGENT= L_HAPROXY= BACKENDS_PID= L_FROM=1
	STUB_PIDS=() CLIENT_PIDS=()
}

teardown() {
	local p
	for p in "${CLIENT_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${CLIENT_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	stop_launcher
	# The lines test's writer (its pid is there once the agent started).
	if [ -s "$BATS_TEST_TMPDIR/noise.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/noise.pid")" 2>/dev/null || true
	fi
	# Whatever the launcher left (it should leave nothing).
	for p in $L_AGENT $L_HAPROXY; do kill -KILL "$p" 2>/dev/null || true; done
	if [ -n "$BACKENDS_PID" ]; then
		kill "$BACKENDS_PID" 2>/dev/null
		wait "$BACKENDS_PID" 2>/dev/null || true
	fi
	for p in "${STUB_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${STUB_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "--- launcher.log" >&3
		tail -n 40 "$LOG" >&3 2>/dev/null || true
	fi
	return 0
}

# start_launcher ARGS...: build/dbucket with ARGS (the runtime directory
# is $RT unless ARGS name one), in the background; returns once it says
# "ready" (bounded, 60 s), with L_PID, L_AGENT and L_HAPROXY set.
start_launcher() {
	local rt=(--runtime-dir "$RT") a
	for a in "$@"; do [ "$a" = --runtime-dir ] && rt=(); done
	launcher_log_starts
	"$BUILD/dbucket" "${rt[@]}" "$@" 2>>"$LOG" </dev/null 3>&- &
	L_PID=$!
	wait_launcher_log 'dbucket: ready' || return 1
	L_AGENT=$(launcher_pid dbucket-spoa)
	L_HAPROXY=$(launcher_pid haproxy)
	[ -n "$L_AGENT" ] && [ -n "$L_HAPROXY" ]
}

# A launcher about to start writes to $LOG from its next line on: what
# the helpers below read, so that an earlier launcher's "ready" or pids
# in the same log are not taken for this one's.
launcher_log_starts() {
	L_FROM=$(($(wc -l <"$LOG") + 1))
}

# This launcher's part of $LOG.
launcher_log() {
	tail -n +"$L_FROM" "$LOG"
}

# The pid of the latest "started NAME (pid N)" or "restarted NAME (pid N)".
launcher_pid() {
	launcher_log | grep -oE "started $1 \(pid [0-9]+\)" | tail -n 1 | grep -oE '[0-9]+'
}

# Waits (bounded, 60 s) for a line of the launcher's log matching $1,
# failing early if the launcher has exited. The bound is generous because
# the sanitized launcher starts HAProxy, the agent and four stubs on two
# shared cores: 20 s was once not enough on a loaded CI machine.
wait_launcher_log() {
	dbk_wait_until 60 launcher_said_or_gone "$1" || true
	launcher_log | grep -qE -- "$1" && return 0
	# What it said instead: a start-up that fails now and then under the
	# sanitizers is otherwise seen only as a missing line.
	echo "no '$1' in the launcher's log; its last lines:" >&2
	tail -n 30 "$LOG" >&2
	return 1
}

launcher_said_or_gone() {
	launcher_log | grep -qE -- "$1" || dbk_gone "$L_PID"
}

# SIGTERM to the launcher; L_RC is its exit status.
stop_launcher() {
	[ -n "$L_PID" ] || return 0
	kill -TERM "$L_PID" 2>/dev/null
	L_RC=0
	wait "$L_PID" 2>/dev/null || L_RC=$?
	L_PID=
}

# The agent's admin pages are on the launcher's admin socket here, so
# that helpers.bash's state_field and wait_state read the launcher's agent.
agent_get() {
	curl -s --max-time 5 --unix-socket "$RT/admin.sock" "http://localhost$1"
}

# The four Lua test backends (tests/e2e/backends.cfg) in an HAProxy of
# their own, on $DBK_STUB0..3.
start_backends() {
	cat >"$BATS_TEST_TMPDIR/backends-defaults.cfg" <<-'EOF'
	defaults
	    mode http
	    timeout connect 5s
	    timeout client 60s
	    timeout server 60s
	EOF
	haproxy -db -f "$BATS_TEST_TMPDIR/backends-defaults.cfg" -f "$REPO/tests/e2e/backends.cfg" \
		2>>"$BATS_TEST_TMPDIR/backends.log" </dev/null 3>&- &
	BACKENDS_PID=$!
	local i
	for i in 0 1 2 3; do dbk_wait_port $((DBK_PORT + 4 + i)) || return 1; done
}

# Four vLLM stubs on $DBK_STUB0..3: two short (small context), two long.
start_stubs() {
	local i size
	for i in 0 1 2 3; do
		if ((i < 2)); then size=(--max-model-len 32768); else size=(--max-model-len 131072); fi
		"$BUILD/vllm-stub" --host 127.0.0.1 --port $((DBK_PORT + 4 + i)) --name "vllm$i" \
			--time-scale 10 "${size[@]}" >"$BATS_TEST_TMPDIR/stub$i.out" \
			2>>"$BATS_TEST_TMPDIR/stub$i.log" </dev/null 3>&- &
		STUB_PIDS+=($!)
	done
	for i in 0 1 2 3; do dbk_wait_port $((DBK_PORT + 4 + i)) || return 1; done
}

# The reference's flags for the four test servers.
SERVERS=()
servers_flags() {
	SERVERS=(--server-hosts 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1
		--server-ports $((DBK_PORT + 4)) $((DBK_PORT + 5)) $((DBK_PORT + 6)) $((DBK_PORT + 7)))
}

# hdr FILE NAME: a response header's value.
hdr() {
	tr -d '\r' <"$1" | awk -v n="$(tr '[:upper:]' '[:lower:]' <<<"$2"):" \
		'tolower($1) == n { print $2 }'
}

@test "--help shows the reference's flags, with its defaults, and ours" {
	run "$BUILD/dbucket" --help
	assert_success
	local f
	for f in --host --port --server-hosts --server-ports --enable-dynamic-bucket \
		--server-group-threshold --max-request-tokens --max-retries --retry-delay \
		--print-config --runtime-dir --agent --haproxy --policy --force --scrape-interval \
		--scrape-timeout; do
		assert_output --partial "  $f"
	done
	assert_output --partial "(8000)"
	assert_output --partial "(32768)"
	assert_output --partial "(131072)"
	assert_output --partial "(0.001)"
	run "$BUILD/dbucket" -h
	assert_success
	assert_line --index 0 --regexp '^usage: dbucket '
}

@test "unequal hosts and ports fail with exit 2 and the reference's message, starting nothing" {
	run "$BUILD/dbucket" --runtime-dir "$RT" --server-hosts 127.0.0.1 127.0.0.1 --server-ports 8100
	assert_failure 2
	assert_line --index 0 --regexp '^usage: dbucket '
	assert_output --partial "dbucket: error: Number of dp hosts must match number of dp ports"
	[ ! -e "$RT" ]
	# argparse's other messages, word for word.
	run "$BUILD/dbucket" --port eighty
	assert_failure 2
	assert_output --partial "dbucket: error: argument --port: invalid int value: 'eighty'"
	run "$BUILD/dbucket" --server 1
	assert_failure 2
	assert_output --partial "dbucket: error: ambiguous option: --server could match --server-hosts, --server-ports, --server-group-threshold"
	run "$BUILD/dbucket" --server-hosts
	assert_failure 2
	assert_output --partial "dbucket: error: argument --server-hosts: expected at least one argument"
	run "$BUILD/dbucket" vllm0 --bogus
	assert_failure 2
	assert_output --partial "dbucket: error: unrecognized arguments: vllm0 --bogus"
	# What the reference would only find out at start-up.
	run "$BUILD/dbucket" --enable-dynamic-bucket
	assert_failure 2
	assert_output --partial "at least 2 servers"
	run "$BUILD/dbucket" --server-ports 70000
	assert_failure 2
	assert_output --partial "70000 is not a TCP port"
}

@test "--print-config writes a production configuration that passes haproxy -c" {
	local out=$BATS_TEST_TMPDIR/prod
	servers_flags
	run "$BUILD/dbucket" --print-config "$out" --host 0.0.0.0 "${SERVERS[@]}" \
		--enable-dynamic-bucket --server-group-threshold 16384
	assert_success
	local f
	for f in haproxy.cfg dbucket.spoe.conf dbucket-spoa.env README.dbucket; do
		[ -s "$out/$f" ] || fail "$f is missing or empty"
		assert_line "wrote $out/$f"
	done
	# -V: HAProxy 3.x says nothing on success without it.
	run haproxy -c -V -f "$out/haproxy.cfg"
	assert_success
	assert_output --partial "Configuration file is valid"
	# Four servers, in order, with concrete addresses.
	run grep -c '^    server vllm[0-3] "127.0.0.1:' "$out/haproxy.cfg"
	assert_output 4
	grep -q "^    bind \"0.0.0.0:8000\"$" "$out/haproxy.cfg"
	grep -q "^    filter spoe engine dbucket config \"$out/dbucket.spoe.conf\"$" "$out/haproxy.cfg"
	grep -q '^    stats socket "/run/haproxy/admin.sock" mode 660 level admin group haproxy$' \
		"$out/haproxy.cfg"
	# The agent's options for the unit, and a command line for others.
	grep -q '^DBUCKET_SPOA_OPTS="--policy ttft --enable-dynamic-bucket --server-group-threshold 16384 ' \
		"$out/dbucket-spoa.env"
	grep -q -- "dbucket-spoa --haproxy-socket /run/haproxy/admin.sock --policy ttft --enable-dynamic-bucket" \
		"$out/README.dbucket"
	# The agent accepts the options the env file gives it.
	local opts
	opts=$(sed -n 's/^DBUCKET_SPOA_OPTS="\(.*\)"$/\1/p' "$out/dbucket-spoa.env")
	run "$BUILD/dbucket-spoa" $opts --admin-listen none --completion-listen none --help
	assert_success
}

@test "--print-config replaces nothing without --force, and with it keeps each old file as .bak" {
	local out=$BATS_TEST_TMPDIR/etc
	mkdir "$out"
	# An operator's own haproxy.cfg where the configuration is printed.
	echo "# the operator's" >"$out/haproxy.cfg"
	run "$BUILD/dbucket" --print-config "$out" --server-hosts a b --server-ports 1 2
	assert_failure 1
	assert_output --partial "dbucket: $out/haproxy.cfg exists"
	assert_output --partial "nothing written"
	assert_output --partial "--force"
	assert_equal "$(cat "$out/haproxy.cfg")" "# the operator's"
	run ls -A "$out"
	assert_output haproxy.cfg

	run "$BUILD/dbucket" --print-config "$out" --server-hosts a b --server-ports 1 2 --force
	assert_success
	assert_line "replaced $out/haproxy.cfg (the old one is $out/haproxy.cfg.bak)"
	assert_line "wrote $out/dbucket.spoe.conf"
	assert_equal "$(cat "$out/haproxy.cfg.bak")" "# the operator's"
	grep -q '^backend vllm$' "$out/haproxy.cfg"
	# --force again: the previous print becomes the .bak.
	cp "$out/haproxy.cfg" "$BATS_TEST_TMPDIR/first.cfg"
	run "$BUILD/dbucket" --print-config "$out" --server-hosts a b --server-ports 1 2 --force
	assert_success
	assert_line "replaced $out/dbucket-spoa.env (the old one is $out/dbucket-spoa.env.bak)"
	cmp "$BATS_TEST_TMPDIR/first.cfg" "$out/haproxy.cfg.bak"
	# --force alone means nothing.
	run "$BUILD/dbucket" --force
	assert_failure 2
	assert_output --partial "argument --force: only with --print-config"
}

@test "by default the agent runs --policy ttft, scraping every server where --server-hosts/--server-ports say" {
	start_stubs
	servers_flags
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" --enable-dynamic-bucket
	local argv i
	argv=$(tr '\0' ' ' <"/proc/$L_AGENT/cmdline")
	[[ $argv == *"--policy ttft "* ]] || fail "agent: $argv"
	for i in 0 1 2 3; do
		[[ $argv == *"--scrape vllm$i=http://127.0.0.1:$((DBK_PORT + 4 + i)) "* ]] || fail "agent: $argv"
	done
	# Every stub scraped, its max_model_len read (the short group's 32768).
	dbk_wait_until 20 scraped_all || true
	scraped_all || fail "$(agent_get /metrics | grep -E '^dbucket_(scrape_up|vllm_max_model_len)')"
	# A prompt longer than the short group holds (35000 tokens) goes to
	# the long group, which can hold it, and is served.
	{
		printf '{"model":"stub-model","max_tokens":4,"prompt":"'
		head -c 139940 /dev/zero | tr '\0' 'a'
		printf '"}'
	} >"$BATS_TEST_TMPDIR/long.json"
	for i in 1 2 3; do
		run curl -s -o /dev/null -w '%{http_code}' --max-time 30 -D "$BATS_TEST_TMPDIR/l.h" \
			-H 'Content-Type: application/json' --data-binary "@$BATS_TEST_TMPDIR/long.json" \
			"http://127.0.0.1:$DBK_PORT/v1/completions"
		assert_output 200
		[[ $(hdr "$BATS_TEST_TMPDIR/l.h" x-served-by) == vllm[23] ]]
	done
	# --help says which flags apply to which policy.
	run "$BUILD/dbucket" --help
	assert_output --partial "--policy NAME         how the agent picks each request's server (ttft)"
	assert_output --partial "These three decide under --policy reference"
}

# All four stubs scraped, with their context limits.
scraped_all() {
	local m
	m=$(agent_get /metrics)
	[ "$(grep -c '^dbucket_scrape_up{server="vllm[0-3]"} 1$' <<<"$m")" = 4 ] &&
		grep -q '^dbucket_vllm_max_model_len{server="vllm0"} 32768$' <<<"$m" &&
		grep -q '^dbucket_vllm_max_model_len{server="vllm3"} 131072$' <<<"$m"
}

@test "the generated configuration is the sample's, with concrete addresses" {
	local out=$BATS_TEST_TMPDIR/prod
	servers_flags
	# --max-retries 4 is the sample's `retries 3`.
	run "$BUILD/dbucket" --print-config "$out" "${SERVERS[@]}" --enable-dynamic-bucket \
		--max-retries 4
	assert_success
	# Directives only; every quoted address or path and the production
	# user, group and socket owner set aside.
	normalise() {
		sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' \
			-e '/^    \(user\|group\) haproxy$/d' -e 's/ group haproxy$//' \
			-e 's/ mode 6[06]0 level admin/ level admin/' \
			-e '/^    \(bind\|log\|server [a-z0-9]*\|stats socket\|filter spoe engine dbucket config\|errorfile [0-9]*\) /s/"[^"]*"/"ADDR"/' "$1"
	}
	diff <(normalise "$REPO/haproxy/haproxy.cfg") <(normalise "$out/haproxy.cfg")
	diff <(normalise "$REPO/haproxy/dbucket.spoe.conf") <(normalise "$out/dbucket.spoe.conf")
}

@test "with --policy reference and four backends, a sequence is routed exactly as the parity tool predicts" {
	# Every request is held in flight (X-Delay-Ms) until the whole
	# sequence has been decided, so no completion releases load in
	# between: the parity tool's dispatch-only prediction applies.
	start_backends
	servers_flags
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" \
		--enable-dynamic-bucket --server-group-threshold 8192 --policy reference
	# The reference's algorithm, on its own books: nothing scraped.
	run grep -c -- '--scrape' <(tr '\0' '\n' <"/proc/$L_AGENT/cmdline")
	assert_output 0
	parity_want
	local sizes=("${PARITY_SIZES[@]}") i
	local n=${#sizes[@]}

	# All requests end together, 4 s + 500 ms a request after the first
	# (room for a machine shared with other jobs).
	local t0=${EPOCHREALTIME/[.,]/} end delay now
	end=$((t0 / 1000 + 4000 + 500 * n))
	for i in "${!sizes[@]}"; do
		body_of_size "${sizes[$i]}" >"$BATS_TEST_TMPDIR/r$i.json"
		now=${EPOCHREALTIME/[.,]/}
		delay=$((end - now / 1000))
		[ "$delay" -ge 500 ] || fail "request $i: the sequence is running late"
		curl -s -o /dev/null --max-time 40 -D "$BATS_TEST_TMPDIR/r$i.h" -X POST \
			-H 'Content-Type: application/json' -H "X-Delay-Ms: $delay" \
			--data-binary "@$BATS_TEST_TMPDIR/r$i.json" \
			"http://127.0.0.1:$DBK_PORT/v1/completions" </dev/null 3>&- &
		CLIENT_PIDS+=($!)
		# Decided, and nothing released yet (one instant: the sequence
		# has half a second a request).
		wait_until 10 snapshot_is decisions $((i + 1))
		assert_equal "leases=$(state_get leases)" "leases=$((i + 1))"
	done
	local p
	for p in "${CLIENT_PIDS[@]}"; do wait "$p"; done
	CLIENT_PIDS=()

	local redirects=0 wgroup wserver wscore
	for i in "${!sizes[@]}"; do
		read -r _ wgroup wserver wscore <<<"${WANT[$i]}"
		local h=$BATS_TEST_TMPDIR/r$i.h
		assert_equal "r$i $(head -n 1 "$h" | awk '{print $2}')" "r$i 200"
		# Served there (the backend says so), decided as predicted.
		assert_equal "r$i $(hdr "$h" x-served-by) $(hdr "$h" x-dbucket-group) $(hdr "$h" x-dbucket-score)" \
			"r$i vllm$wserver $wgroup $wscore"
		[ "$(hdr "$h" x-dbucket-redirected)" = 1 ] && redirects=$((redirects + 1))
	done
	[ "$redirects" -ge 2 ]
	# Then every lease comes back through the completion ring.
	wait_state leases 0
	assert_equal "released=$(state_field released)" "released=$n"
}

@test "with four vLLM stubs, completions and streams are served, and /healthcheck answers like the reference" {
	start_stubs
	servers_flags
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" --enable-dynamic-bucket \
		--policy reference
	run curl -s --max-time 5 "http://127.0.0.1:$DBK_PORT/healthcheck"
	assert_output '{"status": "ok", "server_instances": 4}'
	run curl -s --max-time 10 -o /dev/null -w '%{http_code}' -D "$BATS_TEST_TMPDIR/s.h" \
		-H 'Content-Type: application/json' \
		-d '{"model":"stub-model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":8}' \
		"http://127.0.0.1:$DBK_PORT/v1/chat/completions"
	assert_output 200
	assert_equal "$(hdr "$BATS_TEST_TMPDIR/s.h" x-served-by)" vllm0
	# 140000 bytes = 35000 tokens: the long group.
	{
		printf '{"model":"stub-model","stream":true,"max_tokens":16,"prompt":"'
		head -c 139940 /dev/zero | tr '\0' 'a'
		printf '"}'
	} >"$BATS_TEST_TMPDIR/long.json"
	run curl -s -N --max-time 30 -D "$BATS_TEST_TMPDIR/l.h" -H 'Content-Type: application/json' \
		--data-binary "@$BATS_TEST_TMPDIR/long.json" "http://127.0.0.1:$DBK_PORT/v1/completions"
	assert_success
	assert_output --partial 'data: [DONE]'
	assert_equal "$(hdr "$BATS_TEST_TMPDIR/l.h" x-served-by)" vllm2
	assert_equal "$(hdr "$BATS_TEST_TMPDIR/l.h" x-dbucket-group)" 1
	wait_state leases 0
	# The run's own configuration is valid as written.
	run haproxy -c -f "$RT/haproxy.cfg"
	assert_success
}

@test "SIGTERM stops HAProxy and the agent, removes what the launcher made, and exits 0" {
	start_backends
	servers_flags
	# The default runtime directory: a new one under $TMPDIR.
	mkdir "$BATS_TEST_TMPDIR/tmp"
	launcher_log_starts
	TMPDIR=$BATS_TEST_TMPDIR/tmp XDG_RUNTIME_DIR= \
		"$BUILD/dbucket" --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" \
		--enable-dynamic-bucket 2>>"$LOG" </dev/null 3>&- &
	L_PID=$!
	wait_launcher_log 'dbucket: ready'
	L_AGENT=$(launcher_pid dbucket-spoa)
	L_HAPROXY=$(launcher_pid haproxy)
	local made
	made=$(ls -d "$BATS_TEST_TMPDIR"/tmp/dbucket.*)
	[ -S "$made/spoa.sock" ] && [ -S "$made/haproxy.sock" ] && [ -S "$made/admin.sock" ]
	run curl -s --max-time 5 "http://127.0.0.1:$DBK_PORT/healthcheck"
	assert_output --partial '"status": "ok"'
	stop_launcher
	assert_equal "exit=$L_RC" "exit=0"
	dbk_gone "$L_AGENT" || fail "the agent (pid $L_AGENT) still runs"
	dbk_gone "$L_HAPROXY" || fail "haproxy (pid $L_HAPROXY) still runs"
	[ ! -e "$made" ] || fail "$made is still there"
	run grep -E 'dbucket-spoa \(pid [0-9]+\) exited with status 0' "$LOG"
	assert_success

	# A runtime directory that existed keeps existing, emptied of ours.
	mkdir "$RT"
	touch "$RT/keep"
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}"
	kill -INT "$L_PID"
	L_RC=0
	wait "$L_PID" || L_RC=$?
	L_PID=
	assert_equal "exit=$L_RC" "exit=0"
	dbk_gone "$L_AGENT" && dbk_gone "$L_HAPROXY"
	run grep -E "dbucket-spoa \(pid $L_AGENT\) exited with status 0" <(launcher_log)
	assert_success
	run ls -A "$RT"
	assert_output keep
}

@test "the launcher's lines stay whole while its children write to the same stderr" {
	# The agent, with a writer beside it that fills the shared stderr
	# with lines as fast as sh writes them (at most 3,000,000; stopped by
	# pid, here or in teardown). Before each of the launcher's lines was
	# one write, such a line could land between "dbucket: " and "ready"
	# (about one launcher line in ten here): three rounds of seven lines.
	cat >"$BATS_TEST_TMPDIR/noisy-agent" <<-EOF
	#!/bin/sh
	{
		n=0
		while [ \$n -lt 3000 ]; do
			i=0
			while [ \$i -lt 1000 ]; do echo "noise \$n.\$i"; i=\$((i + 1)); done
			n=\$((n + 1))
		done
	} >&2 &
	echo \$! >"$BATS_TEST_TMPDIR/noise.pid"
	exec "$BUILD/dbucket-spoa" "\$@"
	EOF
	chmod +x "$BATS_TEST_TMPDIR/noisy-agent"
	start_backends
	servers_flags
	local round
	for round in 1 2 3; do
		start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" --policy reference \
			--agent "$BATS_TEST_TMPDIR/noisy-agent"
		stop_launcher
		assert_equal "exit=$L_RC" "exit=0"
		kill "$(cat "$BATS_TEST_TMPDIR/noise.pid")" 2>/dev/null || true
		rm "$BATS_TEST_TMPDIR/noise.pid"
	done
	# The writer wrote throughout, before "ready" and after it.
	grep -q '^noise ' <(sed '/^dbucket: ready/q' "$LOG")
	grep -q '^noise ' <(sed '1,/^dbucket: ready/d' "$LOG")
	# Each of the launcher's lines is whole: its prefix starts a line and
	# nothing of another writer's follows it on that line.
	run grep -E '.dbucket: |^dbucket: .*noise [0-9]|^(ready|started|restarted) ' "$LOG"
	assert_output ""
	run grep -cE '^dbucket: (runtime directory|started dbucket-spoa|started haproxy|ready:|Terminated: stopping|haproxy \(pid|dbucket-spoa \(pid)' "$LOG"
	assert_output 21
}

@test "if the launcher itself is killed (SIGKILL), HAProxy and the agent follow it" {
	start_backends
	servers_flags
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}"
	kill -KILL "$L_PID"
	wait "$L_PID" 2>/dev/null || true
	L_PID=
	dbk_wait_until 10 dbk_gone "$L_AGENT" "$L_HAPROXY" || true
	dbk_gone "$L_AGENT" || fail "the agent (pid $L_AGENT) outlived the launcher"
	dbk_gone "$L_HAPROXY" || fail "haproxy (pid $L_HAPROXY) outlived the launcher"
}

@test "a dead agent is restarted while HAProxy keeps serving; a dead HAProxy ends the launcher with 1" {
	start_backends
	servers_flags
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" --enable-dynamic-bucket \
		--policy reference
	local first=$L_AGENT
	kill -KILL "$first"
	wait_launcher_log 'restarted dbucket-spoa \(pid [0-9]+\)'
	L_AGENT=$(launcher_pid dbucket-spoa)
	[ "$L_AGENT" != "$first" ]
	# HAProxy never stopped; the new agent decides again once checked.
	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	dbk_wait_until 5 post_like "$BATS_TEST_TMPDIR/s.json" "200 vllm0 0 0 0 75" || true
	assert_equal "$POSTED" "200 vllm0 0 0 0 75"

	kill -KILL "$L_HAPROXY"
	L_RC=0
	wait "$L_PID" || L_RC=$?
	L_PID=
	assert_equal "exit=$L_RC" "exit=1"
	dbk_gone "$L_AGENT" || fail "the agent outlived the launcher"
	run grep 'haproxy was killed by signal 9' "$LOG"
	assert_success
	[ ! -e "$RT" ]
}

@test "a child that fails at start-up ends the launcher with 1 and leaves nothing" {
	servers_flags
	# The agent cannot start.
	run timeout 60 "$BUILD/dbucket" --runtime-dir "$RT" --agent /bin/false "${SERVERS[@]}"
	assert_failure 1
	assert_output --partial "dbucket-spoa exited with status 1 during start-up"
	[ ! -e "$RT" ]
	# HAProxy cannot bind its port: a stub has it (another HAProxy would
	# not do: HAProxy binds with SO_REUSEPORT, and both would listen).
	start_stubs
	run timeout 60 "$BUILD/dbucket" --runtime-dir "$RT" --host 127.0.0.1 \
		--port $((DBK_PORT + 4)) "${SERVERS[@]}"
	assert_failure 1
	assert_output --partial "haproxy exited with status"
	assert_output --regexp 'dbucket-spoa \(pid [0-9]+\) exited with status 0'
	[ ! -e "$RT" ]
	# Neither program found.
	run "$BUILD/dbucket" --haproxy /nonexistent/haproxy
	assert_failure 2
	assert_output --partial "--haproxy /nonexistent/haproxy: not an executable file"
	# A runtime directory too long for unix sockets.
	run "$BUILD/dbucket" --runtime-dir "/tmp/$(printf 'd%.0s' {1..120})"
	assert_failure 2
	assert_output --partial "too long for unix sockets"
}

@test "make install DESTDIR=... PREFIX=/usr installs the binaries, samples, man pages and unit" {
	local dest=$BATS_TEST_TMPDIR/dest
	# A make of its own (not the one running `make test`, if any), which
	# installs the binaries under test as they are.
	local -a mk=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$BUILD"
		-o "$BUILD/dbucket-spoa" -o "$BUILD/dbucket")
	# Until the top-level Makefile includes contrib/install.mk.
	grep -q 'contrib/install.mk' "$REPO/Makefile" || mk+=(-f Makefile -f contrib/install.mk)
	run "${mk[@]}" install DESTDIR="$dest" PREFIX=/usr
	assert_success
	local f
	for f in usr/sbin/dbucket-spoa usr/bin/dbucket; do
		[ -x "$dest/$f" ] || fail "$f is not installed executable"
	done
	for f in usr/share/dbucket/haproxy.cfg usr/share/dbucket/dbucket.spoe.conf usr/share/dbucket/errors/503.http \
		usr/share/dbucket/dbucket-priority.lua \
		usr/share/dbucket/haproxy.service.d/dbucket.conf \
		usr/share/man/man8/dbucket-spoa.8 usr/share/man/man1/dbucket.1 \
		usr/lib/systemd/system/dbucket-spoa.service; do
		[ -f "$dest/$f" ] || fail "$f is not installed"
		[ "$(stat -c %a "$dest/$f")" = 644 ] || fail "$f is not mode 644"
	done
	[ ! -e "$dest/etc" ] || fail "something was installed in /etc"
	run grep '^ExecStart=' "$dest/usr/lib/systemd/system/dbucket-spoa.service"
	assert_output 'ExecStart=/usr/sbin/dbucket-spoa --haproxy-socket /run/haproxy/admin.sock $DBUCKET_SPOA_OPTS'
	# The installed launcher finds the installed agent (bin/../sbin).
	run "$dest/usr/bin/dbucket" --print-config "$BATS_TEST_TMPDIR/pc" --server-hosts a b \
		--server-ports 1 2 --enable-dynamic-bucket
	assert_success
	grep -q "^  $dest/usr/sbin/dbucket-spoa --haproxy-socket" "$BATS_TEST_TMPDIR/pc/README.dbucket"
	run "${mk[@]}" uninstall DESTDIR="$dest" PREFIX=/usr
	assert_success
	run find "$dest" -type f
	assert_output ""
}

@test "the man pages render cleanly and document every option of --help" {
	command -v man >/dev/null && command -v groff >/dev/null ||
		skip "man and groff are not installed (apt-get install man-db groff-base)"
	local page prog rendered opt
	for page in "$REPO/contrib/man/dbucket-spoa.8" "$REPO/contrib/man/dbucket.1"; do
		run bash -c 'MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null' _ "$page"
		assert_output ""
		run groff -man -ww -z "$page"
		assert_output ""
		rendered=$(MANWIDTH=80 man -l "$page" 2>/dev/null)
		[ -n "$rendered" ]
		prog=$(basename "$page" | sed 's/\.[18]$//')
		for opt in $("$BUILD/$prog" --help | grep -oE '(^|[ ,[])--[a-z][a-z-]+' | grep -oE -- '--[a-z-]+' | sort -u); do
			grep -qF -- "$opt" <<<"$rendered" || fail "$prog's --help has $opt, its man page does not"
		done
	done
}

@test "the launcher is quiet by default: no access log, each HAProxy warning once, no start-up noise" {
	start_backends
	servers_flags
	# A fifth server nothing listens on: HAProxy warns once that it is DOWN.
	local free
	free=$(dbk_port)
	# The Lua backends serve no vLLM /metrics: the reference scrapes none.
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" --enable-dynamic-bucket --policy reference \
		--server-hosts 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 127.0.0.1 \
		--server-ports $((DBK_PORT + 4)) $((DBK_PORT + 5)) $((DBK_PORT + 6)) $((DBK_PORT + 7)) "$free"
	local i
	for ((i = 0; i < 20; i++)); do
		curl -s -o /dev/null --max-time 5 -X POST --data-binary '{"prompt":"hi"}' \
			"http://127.0.0.1:$DBK_PORT/v1/completions"
	done
	wait_launcher_log 'vllm4 is DOWN'
	# Every request has been logged by now, had it been.
	wait_state completions 20
	run grep -c 'POST /v1/completions' "$LOG"
	assert_output 0
	run grep -c 'vllm4 is DOWN' "$LOG"
	assert_output 1
	run grep -c 'runtime-api-unreachable' "$LOG"
	assert_output 0
	assert_equal "$(state_field runtime_failures)" 0
	stop_launcher

	# --access-log: one line per request.
	: >"$LOG"
	start_launcher --host 127.0.0.1 --port "$DBK_PORT" "${SERVERS[@]}" --enable-dynamic-bucket \
		--policy reference --access-log
	for ((i = 0; i < 20; i++)); do
		curl -s -o /dev/null --max-time 5 -X POST --data-binary '{"prompt":"hi"}' \
			"http://127.0.0.1:$DBK_PORT/v1/completions"
	done
	wait_state completions 20
	dbk_wait_until 5 has_lines "$LOG" 'POST /v1/completions' 20 || true
	run grep -c 'POST /v1/completions' "$LOG"
	assert_output 20
}
