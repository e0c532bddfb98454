#!/usr/bin/env bash
# The agent alone, without HAProxy: dbucket-spoa pinned to one core, the
# SPOP load client (build/dbucket-spop-load, playing HAProxy 2.6) pinned to
# the other, against the do-nothing agent (build/dbucket-null-agent) under
# the same client. Reports, per body size:
#   - decisions/s and send-to-ACK latency (p50, p99) seen by the client;
#   - the agent's CPU time per decision (user + system, from /proc), the
#     cost that does not depend on whether the client or the agent was the
#     bottleneck; each as a ratio to the null agent;
# with and without --release (completion lines sent back, so leases are
# released and the agent runs in steady state). Then the agent's memory
# (VmRSS) at start, at N leases in flight (no release) and once they are
# released. Configurations alternate over the rounds; medians are shown.
#
#   contrib/bench-agent.sh [--rounds N] [--seconds S] [--connections C]
#                          [--depth D] [--bodies "100 6000"] [--leases N]
#                          [--callgrind]
#
# SPOA_ARGS replaces dbucket-spoa's balancing flags (default
# --enable-dynamic-bucket; e.g. "--policy ttft"), as in bench-overhead.sh;
# SPOA_SERVERS its server names (vllm0 vllm1 vllm2 vllm3), after them: with
# --pool in SPOA_ARGS, the last pool's.
#
# --callgrind instead counts instructions (valgrind's callgrind, exact and
# independent of the machine's load): both agents serve 2000 and then 6000
# released decisions, and the difference over 4000 gives the instructions
# of one decision (its completion line included), with dbucket-spoa's
# share by function.
#
# Loopback only; every process is stopped by pid on exit. About a minute
# with the defaults.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

rounds=2 seconds=3 conns=4 depth=16 bodies="100 6000" leases=100000 callgrind=0
dbk_options "--rounds rounds
--seconds seconds
--connections conns
--depth depth
--bodies bodies
--leases leases
--callgrind callgrind=1" "$@"
dbk_need_bins dbucket-spoa dbucket-null-agent dbucket-spop-load
dbk_need_cmds curl jq
if [ "$callgrind" = 1 ]; then
	if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
		echo "bench-agent: --callgrind needs valgrind (apt-get install valgrind)" >&2
		exit 2
	fi
fi

# One core for the agent, one for the client, when there are two.
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_AGENT="taskset -c 0" PIN_CLIENT="taskset -c 1"
else
	PIN_AGENT="" PIN_CLIENT=""
	echo "bench-agent: fewer than 2 cores (or no taskset): not pinning" >&2
fi

dbk_tmp_dir

stop() { # stop PID [SECONDS]: TERM, then KILL after SECONDS (5)
	dbk_stop "${2:-5}" "$1"
	dbk_forget "$1"
}
cpu_ticks() { # user + system clock ticks of PID
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}
rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}
field() { # field NAME LINE: the value of NAME=... in a result line
	echo "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'
}

SPOP=$(dbk_port) RING=$(dbk_port) ADMIN=$(dbk_port)
AGENT_PID=
WRAP=()                 # a command the agent runs under (valgrind)
start_agent() { # start_agent null|spoa
	if [ "$1" = null ]; then
		$PIN_AGENT "${WRAP[@]+"${WRAP[@]}"}" "$BUILD/dbucket-null-agent" --listen "127.0.0.1:$SPOP" \
			--completion-listen "127.0.0.1:$RING" 2>>"$tmp/agent.log" &
	else
		# Lease limit out of the way: a run without release piles up
		# a few hundred thousand leases per second.
		$PIN_AGENT "${WRAP[@]+"${WRAP[@]}"}" "$BUILD/dbucket-spoa" --listen "127.0.0.1:$SPOP" \
			--completion-listen "127.0.0.1:$RING" --admin-listen "127.0.0.1:$ADMIN" \
			--log-level warn --max-leases 100000000 ${SPOA_ARGS:---enable-dynamic-bucket} \
			${SPOA_SERVERS:-vllm0 vllm1 vllm2 vllm3} 2>>"$tmp/agent.log" &
	fi
	AGENT_PID=$!
	pids+=("$AGENT_PID")
	dbk_wait_port "$SPOP"
	# Under valgrind on a busy machine the completion listener may open
	# well after the SPOP one: the client's --release connects to it.
	dbk_wait_port "$RING"
}

TCK=$(getconf CLK_TCK)
# measure AGENT BODY RELEASE: one client run against a fresh agent; appends
# "agent body release rate p50 p99 cpu_us_per_decision errors" to results.
measure() {
	local agent=$1 body=$2 rel=$3 line t0 t1 args=()
	start_agent "$agent"
	[ "$rel" = yes ] && args=(--release "127.0.0.1:$RING")
	t0=$(cpu_ticks "$AGENT_PID")
	line=$($PIN_CLIENT "$BUILD/dbucket-spop-load" --connect "127.0.0.1:$SPOP" \
		--connections "$conns" --depth "$depth" --seconds "$seconds" \
		--body-bytes "$body" "${args[@]+"${args[@]}"}" 2>>"$tmp/client.log" | grep '^result') || true
	t1=$(cpu_ticks "$AGENT_PID")
	stop "$AGENT_PID"
	[ -n "$line" ] || { echo "bench-agent: no result from the client (see below)" >&2; cat "$tmp/client.log" >&2; exit 1; }
	# The ticks cover the whole run, drain included, and so does the
	# count of ACKs (acked), not only the decisions of the window.
	awk -v a="$agent" -v b="$body" -v r="$rel" -v rate="$(field rate "$line")" \
		-v p50="$(field p50_us "$line")" -v p99="$(field p99_us "$line")" \
		-v e="$(field errors "$line")" -v dt=$((t1 - t0)) -v tck="$TCK" -v n="$(field acked "$line")" \
		'BEGIN { printf "%s %s %s %s %s %s %.3f %s\n", a, b, r, rate, p50, p99, (n > 0 ? dt / tck * 1e6 / n : 0), e }' \
		>>"$tmp/results"
	echo "  $agent body=${body}B release=$rel: $(echo "$line" | cut -d' ' -f6-13)" >&2
}

if [ "$callgrind" = 1 ]; then
	# Inclusive instructions by function of one callgrind output.
	ann() {
		callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$1" 2>/dev/null |
			awk '/^ *[0-9,]+ +\( *[0-9.]+%\)/ {
				l = $0; sub(/^ */, "", l); v = l; sub(/ .*/, "", v); gsub(",", "", v)
				sub(/^[0-9,]+ +\( *[0-9.]+%\) +/, "", l); sub(/ \[.*$/, "", l)
				print v "\t" l }' | sort -t "$(printf '\t')" -k2
	}
	echo "== instructions per decision (callgrind; $conns connections x $depth, leases released)" >&2
	for body in $bodies; do
		for agent in null spoa; do
			for n in 2000 6000; do
				WRAP=(valgrind --tool=callgrind "--callgrind-out-file=$tmp/cg-$agent-$body-$n.out")
				start_agent "$agent"
				"$BUILD/dbucket-spop-load" --connect "127.0.0.1:$SPOP" --connections "$conns" \
					--depth "$depth" --total "$n" --body-bytes "$body" --release "127.0.0.1:$RING" \
					--timeout 300 >/dev/null 2>>"$tmp/client.log" ||
					{ echo "bench-agent: client failed" >&2; cat "$tmp/client.log" >&2; exit 1; }
				sleep 0.5   # the last completion lines reach the agent
				stop "$AGENT_PID" 60
				ann "$tmp/cg-$agent-$body-$n.out" >"$tmp/cg-$agent-$body-$n.txt"
			done
			join -t "$(printf '\t')" -1 2 -2 2 "$tmp/cg-$agent-$body-2000.txt" "$tmp/cg-$agent-$body-6000.txt" |
				awk -F'\t' '{ printf "%.0f\t%s\n", ($3 - $2) / 4000, $1 }' | sort -rn >"$tmp/cg-$agent-$body.per"
		done
		null_ir=$(awk -F'\t' '$2 == "PROGRAM TOTALS" { print $1 }' "$tmp/cg-null-$body.per")
		spoa_ir=$(awk -F'\t' '$2 == "PROGRAM TOTALS" { print $1 }' "$tmp/cg-spoa-$body.per")
		echo
		echo "body ${body} B: dbucket-null-agent $null_ir instructions/decision, dbucket-spoa $spoa_ir ($(awk -v a="$spoa_ir" -v b="$null_ir" 'BEGIN { printf "%.1f", a / b }')x)"
		echo "dbucket-spoa, inclusive instructions per decision by function (>= 2 %, below the event loop):"
		# Recursion levels (name'2) and a name listed twice are shown once.
		awk -F'\t' -v t="$spoa_ir" '$1 >= 0.02 * t && $1 < 0.97 * t && $2 !~ /\x27[0-9]+$/ {
			f = $2; sub(/^.*\//, "", f); if (seen[f]++) next
			printf "  %8d %5.1f%%  %s\n", $1, 100 * $1 / t, f }' "$tmp/cg-spoa-$body.per" | head -30
	done
	exit 0
fi

echo "== agent alone: $conns connections x $depth in flight, ${seconds}s per run, $rounds rounds" >&2
echo "   agent: ${PIN_AGENT:-unpinned}; client: ${PIN_CLIENT:-unpinned}" >&2
: >"$tmp/results"
for r in $(seq "$rounds"); do
	echo "round $r" >&2
	for body in $bodies; do
		measure null "$body" no
		measure spoa "$body" no
		measure spoa "$body" yes
	done
done

# Medians over the rounds, and ratios to the null agent of the same body.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sel() { # sel AGENT BODY RELEASE COLUMN: the median of that column
	awk -v a="$1" -v b="$2" -v r="$3" -v c="$4" '$1 == a && $2 == b && $3 == r { print $c }' "$tmp/results" | median
}
printf '\n%-6s %-18s %-8s %12s %8s %8s %12s %10s %10s %7s\n' body agent release "decisions/s" "p50 us" "p99 us" "cpu us/dec" "rate/null" "cpu/null" errors
md="| body | agent | release | decisions/s | p50 µs | p99 µs | agent CPU µs/decision | rate vs null | CPU vs null |
|---|---|---|---:|---:|---:|---:|---:|---:|"
for body in $bodies; do
	null_rate=$(sel null "$body" no 4)
	null_cpu=$(sel null "$body" no 7)
	for cfg in "null no" "spoa no" "spoa yes"; do
		read -r agent rel <<<"$cfg"
		rate=$(sel "$agent" "$body" "$rel" 4) p50=$(sel "$agent" "$body" "$rel" 5)
		p99=$(sel "$agent" "$body" "$rel" 6) cpu=$(sel "$agent" "$body" "$rel" 7)
		errs=$(awk -v a="$agent" -v b="$body" -v r="$rel" \
			'$1 == a && $2 == b && $3 == r { s += $8 } END { print s + 0 }' "$tmp/results")
		name=dbucket-spoa
		[ "$agent" = null ] && name=dbucket-null-agent
		read -r rate p50 p99 cpu rrate rcpu < <(awk -v rate="$rate" -v nr="$null_rate" -v cpu="$cpu" \
			-v nc="$null_cpu" -v p50="$p50" -v p99="$p99" 'BEGIN { printf "%.0f %.1f %.1f %.2f %.2f %.2f\n",
				rate, p50, p99, cpu, (nr > 0 ? rate / nr : 0), (nc > 0 ? cpu / nc : 0) }')
		printf '%-6s %-18s %-8s %12s %8s %8s %12s %10s %10s %7s\n' "${body}B" "$name" "$rel" \
			"$rate" "$p50" "$p99" "$cpu" "$rrate" "$rcpu" "$errs"
		md="$md
| ${body} B | $name | $rel | $rate | $p50 | $p99 | $cpu | $rrate | $rcpu |"
	done
done

# Memory: a fresh agent, N leases in flight (their completion lines held by
# the client), then released.
echo >&2
echo "== memory: $leases leases in flight, then released" >&2
start_agent spoa
rss0=$(rss_kb "$AGENT_PID")
: >"$tmp/hold.out"
$PIN_CLIENT "$BUILD/dbucket-spop-load" --connect "127.0.0.1:$SPOP" --connections "$conns" \
	--depth "$depth" --total "$leases" --body-bytes 100 --release "127.0.0.1:$RING" \
	--defer-release --timeout 120 >"$tmp/hold.out" 2>>"$tmp/client.log" &
client=$!
pids+=("$client")
holding_or_gone() { grep -q '^holding' "$tmp/hold.out" || dbk_gone "$client"; }
DBK_POLL_MS=100 dbk_wait_until 60 holding_or_gone || true
grep -q '^holding' "$tmp/hold.out" || { echo "bench-agent: the client did not reach $leases leases" >&2; cat "$tmp/hold.out" "$tmp/client.log" >&2; exit 1; }
state_leases() { dbk_state_field "127.0.0.1:$ADMIN" leases; }
no_lease() { [ "$(state_leases)" = 0 ]; }
held=$(state_leases)
rss1=$(rss_kb "$AGENT_PID")
kill -USR1 "$client"
wait "$client" || true
dbk_forget "$client"
DBK_POLL_MS=100 dbk_wait_until 10 no_lease || true
left=$(state_leases)
rss2=$(rss_kb "$AGENT_PID")
stop "$AGENT_PID"

awk -v a="$rss0" -v b="$rss1" -v c="$rss2" -v n="$held" -v l="$left" 'BEGIN {
	printf "\n%-34s %10s %8s\n", "dbucket-spoa", "VmRSS kB", "leases"
	printf "%-34s %10d %8d\n", "at start", a, 0
	printf "%-34s %10d %8d\n", "with leases in flight (no release)", b, n
	printf "%-34s %10d %8s\n", "after their completion lines", c, l
	printf "per lease: %.0f bytes\n", (n > 0 ? (b - a) * 1024 / n : 0)
}'
mdmem="| dbucket-spoa | VmRSS | leases |
|---|---:|---:|
| at start | $rss0 kB | 0 |
| $held leases in flight | $rss1 kB | $held |
| after release | $rss2 kB | $left |"

echo
echo "Markdown:"
echo
echo "$md"
echo
echo "$mdmem"
echo
echo "(dbucket-spop-load: $conns connections, depth $depth, ${seconds}s x $rounds rounds; agent ${PIN_AGENT:-unpinned}, client ${PIN_CLIENT:-unpinned}; medians)"
if grep -qE 'level=(warn|error)' "$tmp/agent.log"; then
	echo "agent warnings:" >&2
	grep -E 'level=(warn|error)' "$tmp/agent.log" | head -5 >&2
fi
