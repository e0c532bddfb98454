# shellcheck shell=bash
# Sourced by the contrib/*.sh scripts, after they cd to the repository,
# and by the e2e tests (tests/e2e/helpers.bash): loopback ports, bounded
# waits, the processes they start, the command line, /state fields.
# Messages start with the name of the script that sourced this file
# (contrib/soak.sh: "soak").

DBK_WHO=${0##*/}
DBK_WHO=${DBK_WHO%.sh}

# HAPROXY=/path/to/haproxy runs that HAProxy instead of the one in PATH:
# it comes first in PATH as "haproxy" (a link in DBK_HAPROXY_BIN, by
# default build/haproxy-bin; the e2e tests set their own), so that the
# scripts' own "haproxy", every program they start, and a pid taken with
# $! are HAProxy's.
if [ -n "${HAPROXY:-}" ] && [ "$HAPROXY" != haproxy ]; then
	DBK_HAPROXY_BIN=${DBK_HAPROXY_BIN:-$PWD/build/haproxy-bin}
	mkdir -p "$DBK_HAPROXY_BIN" &&
		ln -sfn "$(readlink -f "$HAPROXY")" "$DBK_HAPROXY_BIN/haproxy" &&
		case ":$PATH:" in
		*":$DBK_HAPROXY_BIN:"*) ;;
		*) PATH=$DBK_HAPROXY_BIN:$PATH ;;
		esac
fi

# The sample haproxy.cfg's JSON error answers, from this repository
# (installed, they are in /etc/haproxy/dbucket-errors): every script and
# e2e test that runs HAProxy on the sample needs them.
DBK_ERRORS_DIR=${DBK_ERRORS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../haproxy/errors" && pwd)}
export DBK_ERRORS_DIR

# Ports come from below the ephemeral range: a port in it may be taken
# at any time as the source port of some outgoing connection.
DBK_EPHEMERAL_LOW=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)

dbk_in_use() { # dbk_in_use PORT: something accepts on 127.0.0.1:PORT
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A port probed free is bound later, by the program it is handed to: in
# between, another picker of ours (a test running beside, or a second
# dbk_ports in the same test, its first block not bound yet) could pick
# it too. So each pick is claimed: a file per port in DBK_PORTS_DIR
# holding the claimer's pid ($$: the script, or the bats test), picks are
# made one at a time (flock), and a claim goes once its claimer has
# exited. Other programs take their ports from the ephemeral range, which
# we leave alone. Where the program can take an inherited socket
# (dbucket-spoa's and HAProxy's fd@N), dbk_bind_run below closes the race
# altogether. DBK_PORTS_LOW and DBK_PORTS_HIGH (excluded) bound the range.
DBK_PORTS_DIR=${DBK_PORTS_DIR:-${TMPDIR:-/tmp}/dbucket-ports-$(id -u)}

dbk_ports_sweep() { # drops the claims of claimers that have exited
	local f pid
	for f in "$DBK_PORTS_DIR"/[0-9]*; do
		[ -e "$f" ] || continue
		read -r pid <"$f" 2>/dev/null || pid=
		if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -f "$f"; fi
	done
}

dbk_ports() { # dbk_ports N: the first of N free consecutive loopback ports, claimed
	local n=$1 lo=${DBK_PORTS_LOW:-10000} hi=${DBK_PORTS_HIGH:-$DBK_EPHEMERAL_LOW}
	local b i k lock rc=1
	mkdir -p "$DBK_PORTS_DIR" && exec {lock}>>"$DBK_PORTS_DIR/lock" || return 1
	if flock -w 30 "$lock"; then
		dbk_ports_sweep
		for ((i = 0; i < 200 && rc; i++)); do
			b=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo - n + 1)))
			for ((k = 0; k < n; k++)); do
				[ -e "$DBK_PORTS_DIR/$((b + k))" ] && break
				dbk_in_use $((b + k)) && break
			done
			[ "$k" -eq "$n" ] || continue
			for ((k = 0; k < n; k++)); do echo "$$" >"$DBK_PORTS_DIR/$((b + k))"; done
			echo "$b"
			rc=0
		done
	fi
	exec {lock}>&-
	return $rc
}

# dbk_bind_run FILE KINDS CMD [ARGS...]: CMD run with its sockets bound
# before it starts and inherited, so that no other process can take a
# port between its pick and its bind. KINDS has a letter a socket, on
# fds 10, 11, ... in order (which CMD takes as fd@10, ...): l a listening
# TCP socket, b a TCP socket bound and not listening (connections to it
# are refused: a server that is down), u a UDP socket on the port of the
# letter before it. Each is on 127.0.0.1, on a port the kernel picked.
# Their ports, a line each in order, are in FILE once all are bound,
# before CMD starts; read them with dbk_bound_ports. Bounded tries when a
# u's port is taken for UDP. It execs: run it in the background (&), and
# $! is CMD's pid.
dbk_bind_run() {
	exec python3 -c '
import fcntl, os, socket, sys
path, kinds, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
for _ in range(50):
    socks = []
    try:
        for k in kinds:
            if k == "u":
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind(("127.0.0.1", socks[-2].getsockname()[1]))
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", 0))
                if k == "l":
                    s.listen(128)
        break
    except OSError:
        for s in socks:
            s.close()
else:
    sys.exit("dbk_bind_run: no free ports for " + kinds)
with open(path + ".tmp", "w") as f:
    f.write("".join("%d\n" % s.getsockname()[1] for s in socks))
os.rename(path + ".tmp", path)
# Out of the way first, so that no socket sits on a target fd of another.
high = [fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, 200) for s in socks]
for s in socks:
    s.close()
for i, fd in enumerate(high):
    os.dup2(fd, 10 + i)
    os.close(fd)
os.execvp(cmd[0], cmd)
' "$@"
}

# dbk_bound_ports FILE: waits (5 s at most) for dbk_bind_run's FILE and
# puts its ports in the array DBK_BOUND.
# shellcheck disable=SC2034 # DBK_BOUND is the caller's
dbk_bound_ports() {
	DBK_BOUND=()
	dbk_wait_until 5 test -s "$1" || { echo "$DBK_WHO: no ports in $1" >&2; return 1; }
	mapfile -t DBK_BOUND <"$1"
}

# dbk_live_env BASE SOCKET SPOE: the sample configuration's addresses for one
# live run from port BASE on (frontend BASE, agent +1, completions +2
# over the ring's TCP and UDP, stats +8), its runtime socket at SOCKET,
# the SPOE configuration SPOE;
# HAProxy waits 500 ms for a decision unless told otherwise (on a shared
# machine 50 ms is not always enough, and a late decision is balanced by
# leastconn alone).
dbk_live_env() {
	export DBK_BIND=127.0.0.1:$1 DBK_AGENT=127.0.0.1:$(($1 + 1))
	export DBK_COMPLETIONS=127.0.0.1:$(($1 + 2)) DBK_COMPLETIONS_UDP=127.0.0.1:$(($1 + 2))
	export DBK_STATS_BIND=127.0.0.1:$(($1 + 8)) DBK_STATS_SOCKET=$2
	export DBK_SPOE_CONF=$3
	export DBK_SPOE_PROCESSING=${DBK_SPOE_PROCESSING:-500ms}
}

dbk_port() { # a free loopback port
	dbk_ports 1
}

# dbk_wait_until SECONDS COMMAND [ARGS...]: runs COMMAND every
# DBK_POLL_MS milliseconds (default 20) until it succeeds (returns 0) or
# SECONDS (a whole number) have passed on the wall clock (returns 1,
# silently: the caller says what it waited for). The tries are counted
# too, so that no clock oddity can make it spin for ever. For an event
# with no descriptor to block on: a port, a log line, a counter.
dbk_wait_until() {
	local secs=$1 ms=${DBK_POLL_MS:-20} tries deadline pause
	shift
	pause=$((ms / 1000)).$(printf '%03d' $((ms % 1000)))
	deadline=$((${EPOCHREALTIME/[.,]/} + secs * 1000000))
	for ((tries = secs * 1000 / ms; tries >= 0; tries--)); do
		"$@" && return 0
		((${EPOCHREALTIME/[.,]/} < deadline)) || return 1
		sleep "$pause"
	done
	return 1
}

dbk_gone() { # dbk_gone PID...: none of them runs any more (no waiting)
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}

dbk_stop() { # dbk_stop SECONDS PID...: TERM, SECONDS to exit, then KILL; reaped
	local secs=$1 p
	shift
	kill "$@" 2>/dev/null || true
	dbk_wait_until "$secs" dbk_gone "$@" || kill -9 "$@" 2>/dev/null || true
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# dbk_json_field NAME: the top-level field NAME of the JSON document on
# stdin (strings unquoted); nothing when it is absent or the input is no
# JSON (an agent not answering yet).
dbk_json_field() {
	jq -r --arg f "$1" 'if type == "object" and has($f) then .[$f] else empty end' 2>/dev/null
}

# dbk_state_field HOST:PORT NAME: field NAME of that agent's /state.
dbk_state_field() {
	curl -s --max-time 2 "http://$1/state" | dbk_json_field "$2"
}

dbk_wait_port() { # dbk_wait_port PORT: until something accepts on it (at most 5 s)
	dbk_wait_until 5 dbk_in_use "$1" && return 0
	echo "$DBK_WHO: nothing listens on port $1" >&2
	return 1
}

# dbk_usage: the calling script's leading comment block, its --help.
dbk_usage() {
	awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'
}

dbk_bad_option() { # dbk_bad_option OPTION: says so, exits 2
	echo "$DBK_WHO: unknown option $1 (see --help)" >&2
	exit 2
}

# dbk_synth_trace NAME FILE: FILE holds the synthetic trace NAME, made
# once (seeded: the same bytes on every machine): codeSEED is
# contrib/traces/synth/code.py SEED (30,000 requests), agSEED agentic.py
# SEED (300 sessions). A FILE already there is kept; a new one appears
# whole or not at all.
dbk_synth_trace() {
	[ -s "$2" ] && return 0
	local synth=${BASH_SOURCE[0]%/*}/traces/synth
	case $1 in
	code[0-9]*) python3 "$synth/code.py" "${1#code}" 30000 >"$2.tmp" ;;
	ag[0-9]*) python3 "$synth/agentic.py" "${1#ag}" 300 >"$2.tmp" ;;
	*)
		echo "$DBK_WHO: no synthetic trace named $1" >&2
		return 2
		;;
	esac && mv "$2.tmp" "$2"
}

# dbk_only_known KNOWN ONLY: exits 2 unless each name of the comma list
# ONLY is one of KNOWN (",a,b,"), so that a script's --only is checked
# before anything runs; a name it does not have used to run nothing.
dbk_only_known() {
	local name
	for name in ${2//,/ }; do
		case $1 in *",$name,"*) ;; *)
			echo "$DBK_WHO: --only: no configuration named '$name' (one of ${1:1:-1})" >&2
			exit 2
			;;
		esac
	done
}

# dbk_lock_dir DIR: this script alone writes into DIR until it exits, or
# it exits 2. Two runs into one directory overwrite each other's files
# between a write and its read, and each reports the other's figures.
dbk_lock_dir() {
	exec 9>"$1/.lock"
	flock -n 9 || {
		echo "$DBK_WHO: another run is writing into $1 (give this one its own --out)" >&2
		exit 2
	}
}

# dbk_options SPEC ARGS...: the script's command line. SPEC has a line an
# option: "--name var" sets var to the option's value, "--name var=VALUE"
# (a flag) sets var to VALUE. -h and --help print dbk_usage; anything
# else is refused (exit 2).
dbk_options() {
	local spec=$1 opt var found
	shift
	while [ $# -gt 0 ]; do
		case $1 in -h|--help) dbk_usage; exit 0 ;; esac
		found=
		while read -r opt var; do
			[ "$opt" = "$1" ] || continue
			found=1
			case $var in
			*=*) printf -v "${var%%=*}" '%s' "${var#*=}"; shift ;;
			*)
				[ $# -ge 2 ] || { echo "$DBK_WHO: $1 wants a value" >&2; exit 2; }
				printf -v "$var" '%s' "$2"
				shift 2 ;;
			esac
			break
		done <<<"$spec"
		[ -n "$found" ] || dbk_bad_option "$1"
	done
}

# dbk_wrk_options SPEC ARGS...: dbk_options with the wrk benches' own
# --rounds, --seconds, --connections and --bodies (into rounds, seconds,
# conns and bodies) before SPEC's.
dbk_wrk_options() {
	local spec="--rounds rounds
--seconds seconds
--connections conns
--bodies bodies
$1"
	shift
	dbk_options "$spec" "$@"
}

# dbk_rounds "ITEMS" CMD...: $rounds rounds over $bodies, each running
# CMD ITEM BODY for every ITEM, their order rotated after each round so
# that none always runs first; ROUND holds the round.
# shellcheck disable=SC2154,SC2034 # rounds and bodies are the caller's options, ROUND its
dbk_rounds() {
	local order=$1 r body item
	shift
	for r in $(seq "$rounds"); do
		ROUND=$r
		echo "round $r ($(uptime | sed 's/.*load average/load average/'))" >&2
		for body in $bodies; do
			for item in $order; do "$@" "$item" "$body"; done
		done
		order="${order#* } ${order%% *}"
	done
}

dbk_need_cmds() { # dbk_need_cmds CMD...: exits 2 unless each is in PATH
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || { echo "$DBK_WHO: $c is missing (make deps)" >&2; exit 2; }
	done
}

# dbk_routing: where a response on stdin (its headers, as curl -D writes
# them) says it went, with the test headers haproxy.cfg adds under
# DBK_DEBUG_HEADERS: "status server bucket group redirected score", then
# "ttft_ms hit_tokens" when the ttft policy predicted them.
dbk_routing() {
	tr -d '\r' | awk '
		NR == 1 { status = $2 }
		tolower($1) == "x-served-by:" { srv = $2 }
		tolower($1) == "x-dbucket-bucket:" { b = $2 }
		tolower($1) == "x-dbucket-group:" { g = $2 }
		tolower($1) == "x-dbucket-redirected:" { r = $2 }
		tolower($1) == "x-dbucket-score:" { s = $2 }
		tolower($1) == "x-dbucket-ttft-ms:" { t = $2 }
		tolower($1) == "x-dbucket-hit-tokens:" { h = $2 }
		END {
			if (t == "") print status, srv, b, g, r, s
			else print status, srv, b, g, r, s, t, h
		}'
}
# The benchmark's policy names and how tables print them; one list, so the
# live tables (bench-policies.sh) and the agreement report agree.
dbk_policy_label() { # dbk_policy_label NAME
	case $1 in
	rr) echo "HAProxy roundrobin" ;;
	lc) echo "HAProxy leastconn" ;;
	plain) echo "dbucket plain" ;;
	dynamic) echo "dbucket dynamic" ;;
	ttft) echo "dbucket ttft" ;;
	p2) echo "HAProxy random(2)" ;;
	chash) echo "HAProxy hdr consistent" ;;
	*) echo "$1" ;;
	esac
}
dbk_policy_labels() { # "name=label;..." of every policy, for awk -v
	local p
	for p in rr lc plain dynamic ttft p2 chash; do printf '%s=%s;' "$p" "$(dbk_policy_label "$p")"; done
}


# shellcheck disable=SC2154 # BUILD is the caller's
dbk_need_bins() { # dbk_need_bins NAME...: exits 2 unless each $BUILD/NAME is built
	local b
	for b in "$@"; do
		[ -x "$BUILD/$b" ] || { echo "$DBK_WHO: $BUILD/$b is missing (run make)" >&2; exit 2; }
	done
}

# dbk_tmp_dir: for a script that starts processes: tmp, a directory of its
# own; pids, the processes to stop; the traps that stop them and remove
# tmp on exit (dbk_cleanup), and exit on a signal.
dbk_tmp_dir() {
	tmp=$(mktemp -d "/tmp/dbucket-$DBK_WHO.XXXXXX")
	pids=()
	trap dbk_cleanup EXIT
	trap 'exit 130' INT TERM
}

# shellcheck disable=SC2154 # pids is the caller's
dbk_stop_pids() { # stops every process in the caller's array pids (dbk_stop, 5 s)
	[ ${#pids[@]} -eq 0 ] || dbk_stop 5 "${pids[@]}"
}

dbk_forget() { # dbk_forget PID...: drops them from the caller's array pids
	local kept=() p q
	for p in "${pids[@]}"; do
		for q in "$@"; do [ "$p" = "$q" ] && continue 2; done
		kept+=("$p")
	done
	pids=(${kept[@]+"${kept[@]}"})
}

# shellcheck disable=SC2154 # tmp is the caller's
dbk_cleanup() { # an EXIT trap: dbk_stop_pids, then $tmp goes unless KEEP_TMP is 1 (0 or unset: it goes)
	dbk_stop_pids
	if [ "${KEEP_TMP:-0}" != 0 ]; then echo "logs and configs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}

# Prints the configuration of fast backends: HAProxy answering from memory
# as vllm0..3 on ports BASE..BASE+3, the DBK_VLLMi that haproxy.cfg reads
# exported.
dbk_fast_backends() { # dbk_fast_backends BASE
	local i
	echo "global"
	echo "  log stderr format raw local0 err"
	echo "defaults"
	echo "  mode http"
	echo "  timeout client 30s"
	echo "  timeout server 30s"
	echo "  timeout connect 5s"
	for i in 0 1 2 3; do
		export "DBK_VLLM$i=127.0.0.1:$(($1 + i))"
		echo "frontend b$i"
		echo "  bind 127.0.0.1:$(($1 + i))"
		echo "  http-request return status 200 content-type application/json string '{\"ok\":true}' hdr X-Served-By vllm$i"
	done
}

# dbk_start_fast_backends BASE: dbk_fast_backends in an HAProxy of their
# own (configuration and log in $tmp), its pid in pids.
dbk_quiet_cfg() { # dbk_quiet_cfg OUT: haproxy/haproxy.cfg logging to stderr at level err only (the completion ring keeps its info-level lines)
	sed 's/^    log stderr format raw local0 info$/    log stderr format raw local0 err/' \
		haproxy/haproxy.cfg >"$1"
}

# dbk_front NAME PORT CFG AGENT RING [SPOE-CONF]: a front HAProxy on
# 127.0.0.1:PORT running CFG, its SPOE agent at AGENT, its completion
# ring and datagrams to RING, SPOE-CONF (default $DBK_SPOE_CONF, else
# none) for its filter; logs to $tmp/NAME.log, stats on $tmp/NAME.sock.
# Its pid is in DBK_FRONT_PID and in the caller's array pids.
dbk_front() {
	local stats
	stats=$(dbk_port)
	DBK_BIND=127.0.0.1:$2 DBK_STATS_BIND=127.0.0.1:$stats DBK_STATS_SOCKET=$tmp/$1.sock \
		DBK_AGENT=$4 DBK_COMPLETIONS=$5 DBK_COMPLETIONS_UDP=$5 \
		DBK_SPOE_CONF=${6:-${DBK_SPOE_CONF:-/dev/null}} haproxy -f "$3" 2>"$tmp/$1.log" &
	DBK_FRONT_PID=$!
	pids+=("$DBK_FRONT_PID")
}

dbk_start_fast_backends() {
	dbk_fast_backends "$1" >"$tmp/backends.cfg"
	haproxy -f "$tmp/backends.cfg" 2>"$tmp/backends.log" &
	pids+=($!)
}

# dbk_wrk_post_lua BYTES: a wrk script that POSTs a JSON completion
# request of BYTES bytes (at least 48) to wrk's URL.
dbk_wrk_post_lua() {
	local pad=$(($1 - 48))
	[ $pad -ge 0 ] || pad=0
	cat <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"m","max_tokens":16,"prompt":"' .. string.rep("a", $pad) .. '"}'
LUA
}
