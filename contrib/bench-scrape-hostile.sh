#!/usr/bin/env bash
# What one hostile /metrics costs every decision (issue 29 item 3): an
# agent (--policy ttft) scraping four stubs every 100 ms while
# dbucket-spop-load (playing HAProxy) asks it for decisions, with all
# four stubs well behaved (baseline) and with vllm0 serving a hostile
# body (vllm-stub --metrics-fault FAULT: huge, 4 MB of families the
# agent does not read; many-series, label sets of one it reads). For
# each agent build given, both cases in alternating rounds, side by side
# in one run: the agent's CPU (user + system, /proc) over a window with
# no decisions (what scraping costs it), then the client's decision
# latency (p50, p99, max) over a window of load, with the hostile case's
# p99 as a ratio to the same build's baseline. The client keeps many
# decisions in flight (4 x 16): it waits for answers before sending
# more, so a stall of the agent's loop reaches p99 only when enough
# decisions are in flight to meet it (with 2 x 2 a 10 ms stall every
# 100 ms delays 4 decisions of thousands, and shows in max only).
#
#   contrib/bench-scrape-hostile.sh [--builds "DIR..."] [--fault FAULT]
#                                   [--rounds N] [--seconds S]
#                                   [--connections C] [--depth D]
#
# --builds: agent builds compared (default: this tree's build); the
# stubs are always this tree's (older stubs lack the faults). E.g.
#   contrib/bench-scrape-hostile.sh --builds "../main/build build"
# Loopback only; every process is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

builds=$BUILD fault=huge rounds=5 seconds=5 conns=4 depth=16
dbk_options "--builds builds
--fault fault
--rounds rounds
--seconds seconds
--connections conns
--depth depth" "$@"
dbk_need_bins vllm-stub dbucket-spop-load
dbk_need_cmds curl
for b in $builds; do
	[ -x "$b/dbucket-spoa" ] || { echo "bench-scrape-hostile: no $b/dbucket-spoa" >&2; exit 2; }
done
dbk_tmp_dir

field() { # field NAME LINE: the value of NAME=... in a result line
	echo "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# Four stubs per case, started once: vllm0 hostile in the hostile set.
base=$(dbk_ports 8)
stub() { # stub PORT NAME [ARGS...]
	"$BUILD/vllm-stub" --port "$1" --name "$2" --time-scale 10 "${@:3}" 2>>"$tmp/stub.log" &
	pids+=($!)
}
for i in 0 1 2 3; do
	stub $((base + i)) "vllm$i"
	if [ "$i" = 0 ]; then
		stub $((base + 4 + i)) "vllm$i" --metrics-fault "$fault"
	else
		stub $((base + 4 + i)) "vllm$i"
	fi
done
for i in 0 1 2 3 4 5 6 7; do dbk_wait_port $((base + i)); done

# measure BUILD CASE: one agent, one client window; appends
# "build case p50 p99 cpu_pct max errors" to results.
measure() {
	local b=$1 c=$2 off=0 sa=() i spop admin ring line t0 t1 apid
	[ "$c" = hostile ] && off=4
	for i in 0 1 2 3; do sa+=(--scrape "vllm$i=http://127.0.0.1:$((base + off + i))"); done
	spop=$(dbk_port) admin=$(dbk_port) ring=$(dbk_port)
	"$b/dbucket-spoa" --listen "127.0.0.1:$spop" --completion-listen "127.0.0.1:$ring" \
		--admin-listen "127.0.0.1:$admin" --policy ttft --scrape-interval 100 "${sa[@]}" \
		--log-level warn --max-leases 100000000 vllm0 vllm1 vllm2 vllm3 2>>"$tmp/agent.log" &
	apid=$!
	pids+=("$apid")
	dbk_wait_port "$spop"
	dbk_wait_port "$admin"
	# The hostile scrape has begun (vllm0 scraped, well or not) before the window.
	scraped() { curl -s "http://127.0.0.1:$admin/metrics" | grep -q '^dbucket_scrapes_total{server="vllm0"} [1-9]'; }
	dbk_wait_until 10 scraped || { echo "bench-scrape-hostile: vllm0 never scraped" >&2; exit 1; }
	t0=$(ticks "$apid")
	sleep "$seconds" # the CPU window, not a synchronisation
	t1=$(ticks "$apid")
	line=$("$BUILD/dbucket-spop-load" --connect "127.0.0.1:$spop" --connections "$conns" \
		--depth "$depth" --seconds "$seconds" --release "127.0.0.1:$ring" \
		2>>"$tmp/client.log" | grep '^result') || true
	dbk_stop 5 "$apid"
	dbk_forget "$apid"
	[ -n "$line" ] || { echo "bench-scrape-hostile: no result (see below)" >&2; cat "$tmp/client.log" >&2; exit 1; }
	awk -v b="$b" -v c="$c" -v p50="$(field p50_us "$line")" -v p99="$(field p99_us "$line")" \
		-v n="$(field max_us "$line")" -v e="$(field errors "$line")" -v dt=$((t1 - t0)) \
		-v hz="$hz" -v s="$seconds" \
		'BEGIN { printf "%s %s %s %s %.2f %s %s\n", b, c, p50, p99, 100 * dt / hz / s, n, e }' \
		>>"$tmp/results"
	echo "  $b $c: $(echo "$line" | cut -d' ' -f2-)" >&2
}

for r in $(seq "$rounds"); do
	echo "round $r ($(uptime | sed 's/.*load average/load average/'))" >&2
	for b in $builds; do
		if [ $((r % 2)) = 1 ]; then order="baseline hostile"; else order="hostile baseline"; fi
		for c in $order; do measure "$b" "$c"; done
	done
done

echo "fault=$fault rounds=$rounds seconds=$seconds connections=$conns depth=$depth (medians)"
printf '%-28s %-9s %8s %8s %9s %9s %9s %7s\n' build case "p50 us" "p99 us" "p99/base" "max us" "CPU %" errors
# col BUILD CASE N: the median of column N over the rounds.
col() {
	awk -v b="$1" -v c="$2" -v n="$3" '$1 == b && $2 == c { print $n }' "$tmp/results" | sort -n |
		awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
for b in $builds; do
	for c in baseline hostile; do
		p99=$(col "$b" "$c" 4)
		[ "$c" = baseline ] && bp99=$p99
		e=$(awk -v b="$b" -v c="$c" '$1 == b && $2 == c { e += $7 } END { print e + 0 }' "$tmp/results")
		printf '%-28s %-9s %8s %8s %9s %9s %9s %7s\n' "$b" "$c" "$(col "$b" "$c" 3)" "$p99" \
			"$(awk -v x="$p99" -v y="$bp99" 'BEGIN { printf "%.2f", (y > 0 ? x / y : 0) }')" \
			"$(col "$b" "$c" 6)" "$(col "$b" "$c" 5)" "$e"
	done
done
