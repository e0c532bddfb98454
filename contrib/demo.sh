#!/usr/bin/env bash
# The main job, end to end on this machine: four vLLM stubs (two for the
# short group with less KV cache, two for the long group), dbucket-spoa and
# HAProxy with the repository's configurations; one short request and one
# long streaming request routed through it; where each went and the
# agent's view of the load. Everything started is stopped on exit.
#
#   contrib/demo.sh [--keep]     --keep: leave it running until Ctrl-C
#   contrib/demo.sh --ports      list the ports it would use, and exit
#
# Ports (all on 127.0.0.1): one block of nine from DBK_DEMO_PORT (default
# 8000): the proxy on it, stubs on +1..+4, the agent's SPOP, completion
# and admin listeners on +5..+7, HAProxy's own metrics on +8.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

base=${DBK_DEMO_PORT:-8000}
port_proxy=$base
port_stub=$((base + 1))            # +1..+4, vllm0..vllm3
port_agent=$((base + 5))
port_completions=$((base + 6))
port_admin=$((base + 7))
port_stats=$((base + 8))

keep=0
case "${1:-}" in
--keep) keep=1 ;;
--ports)
	echo "proxy $port_proxy"
	for i in 0 1 2 3; do echo "vllm$i $((port_stub + i))"; done
	echo "agent $port_agent"
	echo "completions $port_completions"
	echo "admin $port_admin"
	echo "haproxy-metrics $port_stats"
	exit 0 ;;
"") ;;
-h|--help) dbk_usage; exit 0 ;;
*) dbk_bad_option "$1" ;;
esac
dbk_need_cmds jq socat curl
dbk_tmp_dir
run=$tmp

for ((p = base; p <= port_stats; p++)); do
	if dbk_in_use "$p"; then
		echo "demo: port $p is taken; set DBK_DEMO_PORT to another base" >&2
		exit 1
	fi
done

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

say "Starting four vLLM stubs (clock 10x faster than real time)"
# Short group: a 32k context and a small KV cache; long group: full size.
for i in 0 1 2 3; do
	if [ "$i" -lt 2 ]; then
		extra=(--max-model-len 32768 --kv-capacity-tokens 120000)
	else
		extra=(--max-model-len 131072 --kv-capacity-tokens 430000)
	fi
	"$BUILD/vllm-stub" --port $((port_stub + i)) --name "vllm$i" --time-scale 10 \
		"${extra[@]}" >"$run/stub$i.log" 2>&1 &
	pids+=($!)
	echo "  vllm$i on 127.0.0.1:$((port_stub + i)) (${extra[*]})"
done

export DBK_BIND=127.0.0.1:$port_proxy
export DBK_AGENT=127.0.0.1:$port_agent
export DBK_COMPLETIONS=127.0.0.1:$port_completions DBK_COMPLETIONS_UDP=127.0.0.1:$port_completions
admin=127.0.0.1:$port_admin
export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
export DBK_DEBUG_HEADERS=1
for i in 0 1 2 3; do export "DBK_VLLM$i=127.0.0.1:$((port_stub + i))"; done

export DBK_STATS_SOCKET=$run/haproxy.sock
export DBK_STATS_BIND=127.0.0.1:$port_stats

say "Starting HAProxy with haproxy/haproxy.cfg"
haproxy -f haproxy/haproxy.cfg 2>"$run/haproxy.log" &
pids+=($!)
dbk_wait_port "$port_proxy"
echo "  clients use http://$DBK_BIND; runtime API on $DBK_STATS_SOCKET"

say "Starting dbucket-spoa (policy ttft: the earliest predicted first token)"
# No server names: the agent reads them, in order, and their addresses
# from HAProxy's runtime API, follows their states from there and scrapes
# each stub's /metrics and /v1/models (the short group's 32768-token
# context is a hard rule).
"$BUILD/dbucket-spoa" --policy ttft --listen "$DBK_AGENT" \
	--completion-listen "$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS_UDP" \
	--admin-listen "$admin" --haproxy-socket "$DBK_STATS_SOCKET" 2>"$run/agent.log" &
pids+=($!)
echo "  SPOP on $DBK_AGENT, completions on $DBK_COMPLETIONS, admin on http://$admin"
for i in 0 1 2 3; do dbk_wait_port $((port_stub + i)); done
dbk_wait_port "$port_admin"
# HAProxy reconnects to the agent on the next request; wait (bounded) for
# the agent's health check to pass so the first request is routed by it.
agent_up() {
	echo "show servers state dbucket-agents" | socat -t 2 - "UNIX-CONNECT:$DBK_STATS_SOCKET" 2>/dev/null |
		awk '$4 == "agent1" && $6 == 2 { found = 1 } END { exit !found }'
}
dbk_wait_until 5 agent_up || true
# HAProxy's ring retries its connection to the agent on its own schedule:
# wait (bounded) until it is up, so that no completion line waits for it.
ring_up() { [ "$(dbk_state_field "$admin" completion_links)" -ge 1 ] 2>/dev/null; }
dbk_wait_until 5 ring_up || true

show() { # show HEADERS-FILE: where a request went, and what the agent predicted
	local st s b g r sc tt hit
	read -r st s b g r sc tt hit < <(dbk_routing <"$1")
	printf '  HTTP %s, served by %s: bucket %s, group %s, redirected %s, score %s\n' "$st" "$s" "$b" "$g" "$r" "$sc"
	# The agent predicts on H100 timings; these stubs run 10 times slower.
	[ -z "$tt" ] || printf '  predicted: first token in %s ms on an H100, %s prompt tokens from its prefix cache\n' "$tt" "$hit"
}

state() { curl -s "http://$admin/state" | sed 's/^/    /'; }
leases_are() { [ "$(dbk_state_field "$admin" leases)" = "$1" ]; }
wait_leases() { # wait_leases N: until the agent holds N leases (bounded, 5 s)
	dbk_wait_until 5 leases_are "$1" && return 0
	echo "  (the agent still holds other than $1 leases)"
}

say "1. A long completions request, streamed: about 140,000 bytes, 35,000 tokens"
{
	printf '{"model":"stub-model","stream":true,"max_tokens":2000,"ignore_eos":true,"prompt":"'
	head -c 139910 /dev/zero | tr '\0' 'a'
	printf '"}'
} >"$run/long.json"
curl -s -N -D "$run/h2" http://$DBK_BIND/v1/completions -H 'Content-Type: application/json' \
	--data-binary "@$run/long.json" >"$run/b2" &
long=$!
wait_leases 1
echo "  in flight; the agent's view now (GET http://$admin/state):"
state

say "2. A short chat request while the long one streams"
curl -s -D "$run/h1" -o "$run/b1" http://$DBK_BIND/v1/chat/completions \
	-H 'Content-Type: application/json' \
	-d '{"model":"stub-model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":16}'
show "$run/h1"
echo "  body: $(head -c 150 "$run/b1")..."

say "3. The long request ends"
wait "$long"
show "$run/h2"
echo "  $(grep -c '^data: {' "$run/b2") SSE chunks, then: $(grep '^data: \[DONE\]' "$run/b2")"

say "4. The agent's view once both have finished: every lease released"
wait_leases 0
state

if [ "$keep" -eq 1 ]; then
	say "Running. Try: curl http://$DBK_BIND/healthcheck ; curl http://$admin/metrics"
	echo "  logs in $run; Ctrl-C stops everything"
	wait
fi
