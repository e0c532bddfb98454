#!/usr/bin/env bats
# The agent's command line and its process hygiene: help, refusals with a
# clear message and exit 2, socket modes, privilege drop, clean exit.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
	[ -z "${RUN_DIR:-}" ] || rm -rf "$RUN_DIR"
}

@test "--help tells the truth: every option it lists is accepted" {
	run "$BUILD/dbucket-spoa" --help
	assert_success
	assert_output --partial "--enable-dynamic-bucket"
	local opt
	for opt in $(grep -oE '^  --[a-z-]+' <<<"$output"); do
		[ "$opt" = --help ] || [ "$opt" = --version ] && continue
		run "$BUILD/dbucket-spoa" "$opt" 2>&1
		refute_output --partial "unknown option"
	done
	run "$BUILD/dbucket-spoa" --version
	assert_success
	assert_output --regexp '^dbucket-spoa [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "every program answers --version with the one version lib/version.h holds" {
	local want b n=0
	want=$(sed -n 's/^#define DBK_VERSION "\(.*\)"$/\1/p' "$REPO/agent/lib/version.h")
	[ -n "$want" ] || fail "no DBK_VERSION in agent/lib/version.h"
	# Every program the build makes, the test tools too (unit test
	# binaries aside): a new one cannot be forgotten.
	for b in "$BUILD"/*; do
		[ -f "$b" ] && [ -x "$b" ] || continue
		case ${b##*/} in test_*) continue ;; esac
		run timeout 5 "$b" --version
		assert_success
		assert_output "${b##*/} $want"
		n=$((n + 1))
	done
	[ "$n" -ge 9 ] || fail "only $n programs in $BUILD"
}

@test "durations take ms, s or m, and a bare number keeps the option's unit" {
	run "$BUILD/dbucket-spoa" --help
	assert_output --partial "(500ms, 2s, 1m; a bare number is ms)"
	assert_output --partial "(500ms, 2s, 1m; a bare number is s)"
	start_agent --lease-ttl 2m --poll-interval 1s --scrape-interval 250ms \
		--scrape-timeout 2s --outlier-window 1m --outlier-base-ejection 5s \
		--outlier-max-ejection 5m --idle-timeout 90s
	grep -q 'event=started .*lease_ttl_s=120$' "$BATS_TEST_TMPDIR/agent.log" ||
		fail "--lease-ttl 2m is not 120 s: $(cat "$BATS_TEST_TMPDIR/agent.log")"
	stop_agent
	: >"$BATS_TEST_TMPDIR/agent.log"
	start_agent --lease-ttl 30
	grep -q 'event=started .*lease_ttl_s=30$' "$BATS_TEST_TMPDIR/agent.log" ||
		fail "a bare --lease-ttl 30 is not 30 s"
	stop_agent
	run "$BUILD/dbucket-spoa" --lease-ttl 1500ms a
	assert_failure 2
	assert_output --partial "--lease-ttl wants a duration from 1 to 604800 s (500ms, 2s, 1m), got '1500ms'"
	run "$BUILD/dbucket-spoa" --scrape-interval 2h a
	assert_failure 2
	assert_output --partial "--scrape-interval wants a duration"
	# The launcher's scrape flags take the same forms.
	run "$BUILD/dbucket" --print-config "$BATS_TEST_TMPDIR/pc" --policy ttft \
		--scrape-interval 2s --scrape-timeout 1500ms --server-hosts a b --server-ports 1 2
	assert_success
	grep -rq -- '--scrape-interval 2000 --scrape-timeout 1500' "$BATS_TEST_TMPDIR/pc" ||
		fail "the launcher did not pass 2s and 1500ms as 2000 and 1500 ms"
}

@test "invalid setups fail at start with a clear message and exit 2" {
	run "$BUILD/dbucket-spoa" --enable-dynamic-bucket only
	assert_failure 2
	assert_output --partial "at least 2 servers"
	run "$BUILD/dbucket-spoa" --server-group-threshold 131072 a b
	assert_failure 2
	assert_output --partial "must be below --max-request-tokens"
	run "$BUILD/dbucket-spoa" a b a
	assert_failure 2
	assert_output --partial "named twice"
	run "$BUILD/dbucket-spoa" --bogus a
	assert_failure 2
	assert_output --partial "unknown option '--bogus'"
	run "$BUILD/dbucket-spoa"
	assert_failure 2
	assert_output --partial "no servers"
}

@test "a port already taken is a clear start-up error" {
	start_agent
	run "$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen none --admin-listen none a
	assert_failure
	assert_output --partial "cannot listen for spop on $DBK_AGENT"
}

@test "udp@ is for completions only, and a bad address is refused at parse time with exit 2" {
	run "$BUILD/dbucket-spoa" --listen "udp@$DBK_AGENT" --completion-listen none --admin-listen none a
	assert_failure 2
	assert_output --partial "--listen udp@$DBK_AGENT: udp@ is for --completion-listen only"
	run "$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen udp@unix:/tmp/x \
		--admin-listen none a
	assert_failure 2
	assert_output --partial "a UDP address is HOST:PORT or [IPV6]:PORT"
	run "$BUILD/dbucket-spoa" --admin-listen 127.0.0.1:99999 a
	assert_failure 2
	assert_output --partial "--admin-listen: bad port in '127.0.0.1:99999'"
	run "$BUILD/dbucket-spoa" --listen abns@agent a
	assert_failure 2
	assert_output --partial "'abns@' addresses are not supported"
}

@test "HAProxy's spellings of an address: unix@, ipv4@, ipv6@, udp@ and [::1]:PORT" {
	RUN_DIR=$(mktemp -d /tmp/dbk-run.XXXXXX)
	local sock=$RUN_DIR/agent.sock
	"$BUILD/dbucket-spoa" --listen "unix@$sock" --listen "ipv6@[::1]:$AGENT_PORT" \
		--completion-listen "ipv4@$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS_UDP" \
		--admin-listen "[::1]:$ADMIN_PORT" a b 2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		curl -s --max-time 1 -o /dev/null "http://[::1]:$ADMIN_PORT/state" && break
		sleep 0.05
	done
	run curl -s --max-time 2 "http://[::1]:$ADMIN_PORT/state"
	assert_success
	assert_output --partial '"servers"'
	[ -S "$sock" ] || fail "no unix socket at $sock (unix@)"
	grep -q "event=listening for=spop addr=unix@$sock" "$BATS_TEST_TMPDIR/agent.log"
	grep -q "event=listening for=completions addr=ipv4@$DBK_COMPLETIONS" "$BATS_TEST_TMPDIR/agent.log" ||
		fail "$(cat "$BATS_TEST_TMPDIR/agent.log")"
	stop_agent
	assert_equal "$AGENT_RC" 0
	# unix@ sockets are removed at exit as unix: ones are.
	[ ! -e "$sock" ]
}

@test "unix sockets are 0660, handed to --user, and removed at exit" {
	# As systemd's RuntimeDirectory would: a directory the user owns (and
	# can reach: bats' own directories are private to root).
	RUN_DIR=$(mktemp -d /tmp/dbk-run.XXXXXX)
	chmod 755 "$RUN_DIR"
	chown nobody "$RUN_DIR"
	local sock=$RUN_DIR/agent.sock
	"$BUILD/dbucket-spoa" --listen "unix:$sock" --completion-listen none \
		--admin-listen "127.0.0.1:$ADMIN_PORT" --user nobody a b 2>>"$BATS_TEST_TMPDIR/agent.log" &
	AGENT_PID=$!
	dbk_wait_port "$ADMIN_PORT"
	run stat -c '%a %U' "$sock"
	assert_output "660 nobody"
	run ps -o user= -p "$AGENT_PID"
	assert_output "nobody"
	# A second agent on the same live socket is refused, not let to steal it.
	run "$BUILD/dbucket-spoa" --listen "unix:$sock" --completion-listen none --admin-listen none a
	assert_failure
	assert_output --partial "another process listens there"
	stop_agent
	assert_equal "$AGENT_RC" 0
	[ ! -e "$sock" ]
}

@test "a listener beyond loopback is allowed but warned about" {
	start_agent --admin-listen "0.0.0.0:$((ADMIN_PORT + 100))"
	run grep -c 'event=listening-beyond-this-host for=admin' "$BATS_TEST_TMPDIR/agent.log"
	assert_output 1
}

@test "make demo's ports are one contiguous block that DBK_DEMO_PORT moves whole" {
	local base=23000
	run env DBK_DEMO_PORT=$base "$REPO/contrib/demo.sh" --ports
	assert_success
	# name port, one a line: nine distinct ports, base .. base+8.
	assert_equal "${#lines[@]}" 9
	run bash -c "env DBK_DEMO_PORT=$base '$REPO/contrib/demo.sh' --ports | awk '{ print \$2 }' | sort -n | uniq | tr '\n' ' '"
	assert_output "$(seq -s ' ' $base $((base + 8))) "
}

@test "make install writes man pages that name its own PREFIX" {
	local dest=$BATS_TEST_TMPDIR/dest prefix=/tmp/dbk-prefix-$$
	local -a mk=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$REPO" BUILD="$BUILD"
		-o "$BUILD/dbucket-spoa" -o "$BUILD/dbucket")
	run "${mk[@]}" install DESTDIR="$dest" PREFIX="$prefix"
	assert_success
	local text
	text=$(cat "$dest$prefix/share/man/man8/dbucket-spoa.8" "$dest$prefix/share/man/man1/dbucket.1")
	grep -qF "$prefix/share/dbucket/" <<<"$text" || fail "the pages do not name $prefix/share/dbucket"
	grep -qF "$prefix/lib/systemd/system/dbucket\-spoa.service" <<<"$text" ||
		fail "the pages do not name the unit in $prefix/lib/systemd/system"
	run grep -nE '/usr/local/(share|lib)' <<<"$text"
	assert_output ''
	# The unit's user, as a package (debian/rules) sets it.
	rm -rf "$dest"
	run "${mk[@]}" install DESTDIR="$dest" PREFIX=/usr UNITDIR=/lib/systemd/system UNIT_USER=dbucket
	assert_success
	grep -q 'as user dbucket' "$dest/usr/share/man/man8/dbucket-spoa.8" || fail "no 'as user dbucket'"
	grep -qF '/lib/systemd/system/dbucket\-spoa.service' "$dest/usr/share/man/man8/dbucket-spoa.8"
	[ -f "$dest/lib/systemd/system/dbucket-spoa.service" ] || fail "UNITDIR is not where the unit went"
}

@test "the scripts' temp dir goes at exit unless KEEP_TMP is 1 (KEEP_TMP=0 is not 'keep')" {
	local v out dir
	for v in unset 0 1; do
		out=$(
			if [ "$v" != unset ]; then export KEEP_TMP=$v; else unset KEEP_TMP; fi
			bash -c '. "$1/contrib/lib.sh"; DBK_WHO=cli-test; dbk_tmp_dir; echo "$tmp"' _ "$REPO" 2>/dev/null
		)
		dir=$out
		[ -n "$dir" ]
		if [ "$v" = 1 ]; then
			[ -d "$dir" ]
			rm -rf "$dir"
		else
			[ ! -e "$dir" ]
		fi
	done
}
