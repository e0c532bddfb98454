#!/usr/bin/env bash
# What a hung agent costs each request. The agent is stopped (SIGSTOP:
# its sockets stay open, nothing answers) while a client posts one request
# after another for a while; latencies are compared, side by side in one
# run, between haproxy/haproxy.cfg as shipped and the same without
# `on-marked-down shutdown-sessions` on the agent's server line (what
# HAProxy 2.6 does then: it goes on sending to the open SPOP connections
# and waits the SPOE processing timeout for every request).
#
#   contrib/bench-hung-agent.sh [--seconds S] [--processing MS]
#
# For each configuration: mean latency with the agent healthy, then with
# it hung over S seconds (default 10; the health check marks it DOWN after
# 1 to 2 s of them), and over the second half of that window, each also as
# a ratio to healthy. --processing is the SPOE processing timeout (the
# shipped 50 ms by default). Backends are HAProxy answering from memory;
# everything listens on 127.0.0.1 and is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

seconds=10
processing=50
dbk_options "--seconds seconds
--processing processing" "$@"

dbk_tmp_dir
base=$(dbk_ports 8)
dbk_start_fast_backends "$base"
export DBK_BIND=127.0.0.1:$((base + 4)) DBK_AGENT=127.0.0.1:$((base + 5))
export DBK_COMPLETIONS=127.0.0.1:$((base + 6)) DBK_STATS_BIND=127.0.0.1:$((base + 7))
export DBK_STATS_SOCKET=$tmp/haproxy.sock DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
export DBK_SPOE_PROCESSING=${processing}ms
sed 's/ on-marked-down shutdown-sessions//' haproxy/haproxy.cfg >"$tmp/without.cfg"
printf '{"model":"m","max_tokens":16,"prompt":"%s"}' "$(head -c 1000 /dev/zero | tr '\0' a)" \
	>"$tmp/body.json"

# Seconds per request, one a line, for $1 seconds.
requests_for() {
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		curl -s -o /dev/null --max-time 5 -X POST --data-binary "@$tmp/body.json" \
			-w '%{time_total}\n' "http://$DBK_BIND/v1/completions"
	done
}

mean_ms() {
	awk '{ s += $1 } END { printf "%.1f", NR ? 1000 * s / NR : 0 }'
}

# run NAME CFG: one configuration, healthy then hung.
run() {
	local name=$1 cfg=$2 agent hap healthy hung second
	"$BUILD/dbucket-spoa" --enable-dynamic-bucket --listen "$DBK_AGENT" \
		--completion-listen "$DBK_COMPLETIONS" --admin-listen none vllm0 vllm1 vllm2 vllm3 \
		2>"$tmp/agent-$name.log" &
	agent=$!
	pids+=("$agent")
	dbk_wait_port $((base + 5))
	haproxy -f "$cfg" 2>"$tmp/haproxy-$name.log" &
	hap=$!
	pids+=("$hap")
	dbk_wait_port $((base + 4))
	requests_for 2 >/dev/null           # warm up: SPOP connections open
	healthy=$(requests_for 3 | mean_ms)
	kill -STOP "$agent"
	requests_for "$seconds" >"$tmp/hung-$name.txt"
	kill -CONT "$agent"
	hung=$(mean_ms <"$tmp/hung-$name.txt")
	local n
	n=$(wc -l <"$tmp/hung-$name.txt")
	second=$(tail -n $((n / 2)) "$tmp/hung-$name.txt" | mean_ms)
	kill "$hap" "$agent"
	wait "$hap" "$agent" 2>/dev/null || true
	pids=("${pids[0]}")                  # the backends only, again
	awk -v n="$name" -v h="$healthy" -v g="$hung" -v s="$second" -v c="$n" 'BEGIN {
		printf "%-26s healthy %6.1f ms  hung %6.1f ms (x%.1f, %d requests)  hung, 2nd half %6.1f ms (x%.1f)\n",
			n, h, g, g / h, c, s, s / h }'
}

echo "SPOE processing timeout ${processing} ms, agent hung for ${seconds} s"
run without-shutdown-sessions "$tmp/without.cfg"
run shipped haproxy/haproxy.cfg
