#!/usr/bin/env bash
# Overhead of the agent: requests/s through HAProxy with the dbucket SPOE
# filter against the same HAProxy without it, same backends, same client
# (wrk), alternating configurations over several rounds in one run. Prints
# the ratio; absolute numbers depend on the machine and are not a gate.
#
#   contrib/bench-overhead.sh [--rounds N] [--seconds S] [--connections C] [--body BYTES]
#
# Everything listens on 127.0.0.1 and is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD=${DBK_BUILD:-$REPO/build}

rounds=3 seconds=5 conns=32 body=100
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--connections) conns=$2; shift 2 ;;
	--body) body=$2; shift 2 ;;
	-h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-overhead: unknown option $1" >&2; exit 2 ;;
	esac
done
command -v wrk >/dev/null || { echo "bench-overhead: wrk is missing (make deps)" >&2; exit 2; }
[ -x "$BUILD/dbucket-spoa" ] || { echo "bench-overhead: build first (make)" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

port() { # a free loopback port
	local p
	for _ in $(seq 200); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	return 1
}
wait_port() {
	for _ in $(seq 250); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.02
	done
	echo "bench-overhead: nothing on port $1" >&2
	return 1
}

# Fast backends: HAProxy answering from memory.
{
	echo "defaults"
	echo "  mode http"
	echo "  timeout client 30s"
	echo "  timeout server 30s"
	echo "  timeout connect 5s"
	for i in 0 1 2 3; do
		p=$(port)
		export "DBK_VLLM$i=127.0.0.1:$p"
		echo "frontend b$i"
		echo "  bind 127.0.0.1:$p"
		echo "  http-request return status 200 content-type application/json string '{\"ok\":true}' hdr X-Served-By vllm$i"
	done
} >"$tmp/backends.cfg"
haproxy -f "$tmp/backends.cfg" 2>"$tmp/backends.log" &
pids+=($!)

AGENT_PORT=$(port)
export DBK_AGENT=127.0.0.1:$AGENT_PORT
export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --enable-dynamic-bucket --log-level warn \
	--max-leases 100000000 vllm0 vllm1 vllm2 vllm3 2>"$tmp/agent.log" &
pids+=($!)
wait_port "$AGENT_PORT"

# The same configuration with and without the SPOE filter.
grep -v -e 'filter spoe' -e 'send-spoe-group' haproxy/haproxy.cfg |
	sed 's/^global$/global\n    log stderr format raw local0 err/' >"$tmp/plain.cfg"
sed 's/^    log stderr format raw local0 info$/    log stderr format raw local0 err/' \
	haproxy/haproxy.cfg >"$tmp/spoe.cfg"
sed -i 's/^    log stderr format raw local0 info$/    log stderr format raw local0 err/' "$tmp/plain.cfg"

PLAIN_PORT=$(port)
DBK_BIND=127.0.0.1:$PLAIN_PORT haproxy -f "$tmp/plain.cfg" 2>"$tmp/plain.log" &
pids+=($!)
SPOE_PORT=$(port)
DBK_BIND=127.0.0.1:$SPOE_PORT haproxy -f "$tmp/spoe.cfg" 2>"$tmp/spoe.log" &
pids+=($!)
wait_port "$PLAIN_PORT"
wait_port "$SPOE_PORT"

pad=$((body - 40))
[ $pad -ge 0 ] || pad=0
prompt=$(head -c "$pad" /dev/zero | tr '\0' 'a')
cat >"$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"m","max_tokens":16,"prompt":"$prompt"}'
LUA

rps() { # rps PORT: requests/s of one wrk run
	wrk -t 1 -c "$conns" -d "${seconds}s" -s "$tmp/post.lua" "http://127.0.0.1:$1/v1/completions" |
		awk '/^Requests\/sec/ { print $2 }
		     /Non-2xx/ { print "non2xx " $NF > "/dev/stderr" }'
}

echo "body=${body}B connections=$conns seconds=$seconds rounds=$rounds (wrk, 1 thread)"
printf '%-6s %14s %14s %8s\n' round "plain req/s" "dbucket req/s" ratio
sum_plain=0 sum_spoe=0
for r in $(seq "$rounds"); do
	a=$(rps "$PLAIN_PORT")
	b=$(rps "$SPOE_PORT")
	awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN { printf "%-6s %14s %14s %8.3f\n", r, a, b, b / a }'
	sum_plain=$(awk -v s="$sum_plain" -v a="$a" 'BEGIN { print s + a }')
	sum_spoe=$(awk -v s="$sum_spoe" -v b="$b" 'BEGIN { print s + b }')
done
awk -v a="$sum_plain" -v b="$sum_spoe" 'BEGIN { printf "overall ratio dbucket/plain = %.3f\n", b / a }'
grep -c . "$tmp/agent.log" >/dev/null && grep -E 'level=(warn|error)' "$tmp/agent.log" | head -5 || true
