#!/usr/bin/env bash
# A failing server, before and after outlier ejection. One of four vLLM
# stubs (vllm0) answers every completion with HTTP 500 at once while its
# /health and /metrics stay fine (vllm-stub --completion-fault 500); the
# other three serve. Through haproxy/haproxy.cfg, N requests from C
# clients (contrib/load-requests.sh), for each policy (reference, ttft)
# and each agent side by side in one run:
#   before   --main's agent (a build of the main branch: no ejection) and its
#            tree's haproxy/haproxy.cfg (no observe layer7; its bare %ID,
#            which is all that agent parses)
#   before+l7  the same with HAProxy's observe layer7 error-limit 10
#            on-error mark-down added to the servers
#   after    this tree's agent, its default ejection settings, HAProxy's
#            layer off (the sample with on-error fastinter, which only
#            speeds health checks up): the agent's ejection alone
#   after+l7 this tree's agent and HAProxy's layer, as shipped
# Prints per run: the share of requests answered by vllm0, the client
# failure ratio, and when the agent first ejected vllm0.
#
#   contrib/bench-outlier.sh --main DIR [--requests N] [--clients C] [--tokens T]
#
# DIR is the build directory of a checkout of the agent to compare with
# (its haproxy/haproxy.cfg is DIR/../haproxy); the stub is always this
# tree's: the "before" agent and its configuration are all that differ.
# Defaults: 600 requests, 4 clients, 64 tokens each (stubs at
# --time-scale 10). Loopback only; every process is stopped by pid on
# exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

requests=600
clients=4
tokens=64
main=
dbk_options "--requests requests
--clients clients
--tokens tokens
--main main" "$@"
dbk_need_bins dbucket-spoa vllm-stub
[ -n "$main" ] || { echo "$DBK_WHO: --main DIR is required (see --help)" >&2; exit 2; }
[ -x "$main/dbucket-spoa" ] || { echo "$DBK_WHO: no $main/dbucket-spoa" >&2; exit 2; }
main_cfg=$main/../haproxy/haproxy.cfg
[ -f "$main_cfg" ] || { echo "$DBK_WHO: no $main_cfg" >&2; exit 2; }

dbk_tmp_dir
cp "$main_cfg" "$tmp/before.cfg"
sed -E 's/^(    server vllm[0-9] .* check inter 2s)$/\1 observe layer7 error-limit 10 on-error mark-down/' \
	"$main_cfg" >"$tmp/before+l7.cfg"
grep -q 'observe layer7' "$tmp/before+l7.cfg" || { echo "$DBK_WHO: cannot add observe layer7 to $main_cfg" >&2; exit 2; }
sed 's/ on-error mark-down$/ on-error fastinter/' haproxy/haproxy.cfg >"$tmp/after.cfg"
grep -q 'on-error fastinter' "$tmp/after.cfg" || { echo "$DBK_WHO: no on-error mark-down in haproxy/haproxy.cfg" >&2; exit 2; }
base=$(dbk_ports 12)
export DBK_BIND=127.0.0.1:$base DBK_AGENT=127.0.0.1:$((base + 1))
export DBK_COMPLETIONS=127.0.0.1:$((base + 2)) DBK_COMPLETIONS_UDP=127.0.0.1:$((base + 2))
export DBK_STATS_BIND=127.0.0.1:$((base + 3)) DBK_STATS_SOCKET=$tmp/haproxy.sock
export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf DBK_DEBUG_HEADERS=1
printf '{"model":"stub-model","max_tokens":%d,"ignore_eos":true,"prompt":"%s"}' "$tokens" \
	"$(head -c 40 /dev/zero | tr '\0' a)" >"$tmp/body.json"

start_stubs() {
	local i fault
	for i in 0 1 2 3; do
		fault=none
		[ "$i" -eq 0 ] && fault=500
		"$BUILD/vllm-stub" --port $((base + 4 + i)) --name "vllm$i" --time-scale 10 \
			--completion-fault "$fault" >/dev/null 2>"$tmp/stub$i.log" &
		pids+=($!)
		export "DBK_VLLM$i=127.0.0.1:$((base + 4 + i))"
		dbk_wait_port $((base + 4 + i))
	done
}

# agent_up: HAProxy's check has the agent UP.
agent_up() {
	echo "show stat" | socat -t 5 - "UNIX-CONNECT:$DBK_STATS_SOCKET" 2>/dev/null |
		awk -F, '$1 == "dbucket-agents" && $2 == "agent1" { print $18 }' | grep -q '^UP'
}

# run NAME AGENT_BUILD POLICY CFG
run() {
	local name=$1 bin=$2 policy=$3 cfg=$4 agent hap i ej=- first
	local -a sa=()
	for i in 0 1 2 3; do sa+=(--scrape "vllm$i=http://127.0.0.1:$((base + 4 + i))"); done
	"$bin/dbucket-spoa" --policy "$policy" --listen "$DBK_AGENT" \
		--completion-listen "$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS" \
		--admin-listen none --haproxy-socket "unix:$DBK_STATS_SOCKET" "${sa[@]}" \
		vllm0 vllm1 vllm2 vllm3 2>"$tmp/agent-$name-$policy.log" &
	agent=$!
	pids+=("$agent")
	dbk_wait_port $((base + 1))
	haproxy -f "$cfg" 2>"$tmp/haproxy-$name-$policy.log" &
	hap=$!
	pids+=("$hap")
	dbk_wait_port "$base"
	dbk_wait_until 10 agent_up || echo "$DBK_WHO: the agent never came UP in HAProxy" >&2
	contrib/load-requests.sh "http://$DBK_BIND/v1/completions" "$tmp/body.json" "$requests" \
		"$clients" >"$tmp/load-$name-$policy.txt"
	first=$(sort -n "$tmp/load-$name-$policy.txt" | head -n 1 | cut -d' ' -f1)
	ts=$(grep -m1 'event=server-ejected server=vllm0' "$tmp/agent-$name-$policy.log" |
		sed -E 's/^ts=([^ ]+) .*/\1/') || true
	[ -z "$ts" ] || ej="$(($(date -d "$ts" +%s%3N) - first)) ms"
	dbk_stop 5 "$hap" "$agent"
	dbk_forget "$hap" "$agent"
	awk -v n="$name" -v p="$policy" -v e="$ej" '
		{ total++; if ($4 == "vllm0") drawn++; if ($3 != 200) failed++ }
		END { printf "%-9s %-9s requests %5d  drawn by vllm0 %5d (%5.1f%%)  failed %5d (%5.1f%%)  first ejection %s\n",
			p, n, total, drawn, 100 * drawn / total, failed, 100 * failed / total, e }' \
		"$tmp/load-$name-$policy.txt"
}

start_stubs
echo "$requests requests, $clients clients, $tokens tokens each; vllm0 answers HTTP 500"
for policy in reference ttft; do
	run before "$main" "$policy" "$tmp/before.cfg"
	run before+l7 "$main" "$policy" "$tmp/before+l7.cfg"
	run after "$BUILD" "$policy" "$tmp/after.cfg"
	run after+l7 "$BUILD" "$policy" haproxy/haproxy.cfg
done
