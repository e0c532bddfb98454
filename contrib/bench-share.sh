#!/usr/bin/env bash
# Several HAProxy nodes live, sharing the agents' books or not (issue 31):
# four vLLM stubs, and in front of them one node, or K nodes each with its
# own HAProxy (haproxy/haproxy.cfg plus a peers section and the books
# table) and its own dbucket-spoa --policy ttft; the same slice of a
# trace replayed by K dbucket-bench processes, each sending its random
# share (dbucket-bench --node I/K) to its node, as dbucket-sim --lb-nodes
# K assigns them. Four runs, one after the other, everything started
# afresh for each:
#   one       one node, every request
#   random    K nodes, books not shared
#   shared    K nodes, --share-books (the agents read and write the table
#             every --share-interval)
#   sessions  K nodes, books shared and HAProxy's session table
#             (DBK_SESSION_TABLE: where each conversation's last request
#             went, agent/session_hint.h; dbucket-bench sends X-Session-Id)
# Prints, per run, the requests, those within both objectives (TTFT and
# TPOT, as dbucket-sim's attainment), attainment, TTFT p50/p99 and TPOT
# p50 pooled over the K clients, and each run's attainment as a ratio to
# one node's.
#
#   contrib/bench-share.sh [--nodes K] [--start S] [--duration D]
#       [--rate-factor F] [--time-scale S] [--share-interval MS]
#       [--no-spread] [--out DIR]
#
# Mooncake, by default seconds 1200-1800 (the slice BENCHMARKS.md's
# several-balancers tables use) at rate factor 1.0, ticks spread, the
# stubs' clock 10 times real time (a run: about a minute). Everything
# listens on 127.0.0.1 and is stopped by pid. KEEP_TMP=1 keeps the logs.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}
TRACE=${DBK_TRACES:-$REPO/contrib/traces}/mooncake_conversation_trace.jsonl

k=2 start=1200 dur=600 rf=1.0 scale=10 share_ms=10 spread=1 out=$REPO/build/bench-share
dbk_options "--nodes k
--start start
--duration dur
--rate-factor rf
--time-scale scale
--share-interval share_ms
--no-spread spread=0
--out out" "$@"
dbk_need_bins vllm-stub dbucket-spoa dbucket-bench
dbk_need_cmds haproxy jq awk
[ "$k" -ge 2 ] && [ "$k" -le 8 ] || { echo "$DBK_WHO: --nodes 2 to 8" >&2; exit 2; }
mkdir -p "$out"
dbk_tmp_dir
SLO_TTFT=2000 SLO_TPOT=100
# The sample, its log at level err (its completion ring keeps its lines).
dbk_quiet_cfg "$tmp/dbucket.cfg"
export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
spread_flag=()
[ "$spread" = 1 ] && spread_flag=(--spread-ticks)

# The peers of n nodes and the books table, on ports from BASE.
peers_cfg() { # peers_cfg N BASE
	local i
	echo "peers dbk"
	for ((i = 1; i <= $1; i++)); do echo "    peer n$i 127.0.0.1:$(($2 + i))"; done
	echo "backend dbk_books"
	echo "    stick-table type string len 64 size 4k expire 10s peers dbk store gpt0,gpc0,gpc1,http_req_cnt,bytes_in_cnt"
	echo "backend dbk_sessions"
	echo "    stick-table type string len 64 size 100k expire 30m peers dbk store gpt(2)"
}

# run NAME N SHARE: N nodes (SHARE 1: books shared; 2: and the session
# table), the slice replayed;
# the K clients' JSON in $tmp/NAME.I.json.
run() {
	local name=$1 n=$2 share=$3 i p base ports
	run_pids=()
	for i in 0 1 2 3; do
		p=$(dbk_port)
		export "DBK_VLLM$i=127.0.0.1:$p"
		"$BUILD/vllm-stub" --port "$p" --name "vllm$i" --time-scale "$scale" \
			--max-model-len 131072 --kv-capacity-tokens 430000 >/dev/null 2>"$tmp/$name.stub$i.log" &
		run_pids+=($!)
		pids+=($!)
		dbk_wait_port "$p"
	done
	base=$(dbk_ports $((8 * n + 10)))
	peers_cfg "$n" "$base" >"$tmp/peers.cfg"
	for ((i = 1; i <= n; i++)); do
		ports=$((base + 10 + 8 * (i - 1)))
		local -a st=()
		[ "$share" = 2 ] && st=(DBK_SESSION_TABLE=dbk_sessions)
		env ${st[@]+"${st[@]}"} DBK_BIND=127.0.0.1:$ports DBK_AGENT=127.0.0.1:$((ports + 1)) \
			DBK_COMPLETIONS=127.0.0.1:$((ports + 2)) DBK_COMPLETIONS_UDP=127.0.0.1:$((ports + 2)) \
			DBK_STATS_SOCKET=$tmp/n$i.sock DBK_STATS_BIND=127.0.0.1:$((ports + 3)) \
			haproxy -L "n$i" -f "$tmp/dbucket.cfg" -f "$tmp/peers.cfg" 2>"$tmp/$name.haproxy$i.log" &
		run_pids+=($!)
		pids+=($!)
		dbk_wait_port "$ports"
		local -a sh=()
		[ "$share" -ge 1 ] && sh=(--share-books dbk_books --node "n$i" --share-interval "$share_ms")
		# As bench-policies.sh runs ttft: scraped every 100 ms of model
		# time, the model sped up as the stubs' clock.
		"$BUILD/dbucket-spoa" --policy ttft --engine-speed "$scale" --scrape-interval \
			"$(awk -v s="$scale" 'BEGIN { v = int(100 / s); print v < 10 ? 10 : v }')" \
			--listen "127.0.0.1:$((ports + 1))" --completion-listen "127.0.0.1:$((ports + 2))" \
			--completion-listen "udp@127.0.0.1:$((ports + 2))" --admin-listen "127.0.0.1:$((ports + 4))" \
			--haproxy-socket "$tmp/n$i.sock" --log-level warn ${sh[@]+"${sh[@]}"} \
			2>"$tmp/$name.agent$i.log" &
		run_pids+=($!)
		pids+=($!)
		dbk_wait_port $((ports + 4))
	done
	# HAProxy's check marks each agent UP within a second or two.
	sleep 3
	local -a bench=()
	for ((i = 1; i <= n; i++)); do
		ports=$((base + 10 + 8 * (i - 1)))
		local -a node=()
		[ "$n" -gt 1 ] && node=(--node "$i/$n")
		"$BUILD/dbucket-bench" "$TRACE" --url "http://127.0.0.1:$ports" ${node[@]+"${node[@]}"} \
			--time-scale "$scale" --rate-factor "$rf" --start-offset "$start" --duration "$dur" \
			--max-model-len 131072 --timeout 600 ${spread_flag[@]+"${spread_flag[@]}"} \
			--slo-ttft-ms "$SLO_TTFT" --slo-tpot-ms "$SLO_TPOT" --json "$out/$name.$i.json" \
			>"$tmp/$name.bench$i.txt" 2>&1 &
		bench+=($!)
		pids+=($!)
	done
	local rc=0
	for p in "${bench[@]}"; do wait "$p" || rc=$?; dbk_forget "$p"; done
	dbk_stop 5 "${run_pids[@]}"
	dbk_forget "${run_pids[@]}"
	[ "$rc" -eq 0 ] || { echo "$DBK_WHO: $name: a client failed" >&2; cat "$tmp/$name.bench"*.txt >&2; exit 1; }
	# A request that failed is a run that measured something else.
	local f
	f=$(jq -s 'map(.results.total.failed) | add' "$out/$name".*.json)
	[ "$f" = 0 ] || echo "$DBK_WHO: $name: $f requests failed" >&2
}

# summary NAME: requests, good, attainment, TTFT p50 / p99, TPOT p50 over
# the run's clients (percentiles: the per-client ones weighted by
# requests, an approximation where K > 1).
summary() {
	jq -s -r '
		def w(f): (map(.results.total.requests * f) | add) / (map(.results.total.requests) | add);
		[ (map(.results.total.requests) | add), (map(.results.total.good) | add),
		  w(.results.total.ttft_ms.median), w(.results.total.ttft_ms.p99),
		  w(.results.total.tpot_ms.median) ] | @tsv' "$out/$1".*.json
}

t0=$(date +%s)
echo "$DBK_WHO: Mooncake seconds $start-$((start + dur)), rate factor $rf, spread $spread, time scale $scale; $k nodes" >&2
for r in "one 1 0" "random $k 0" "shared $k 1" "sessions $k 2"; do
	set -- $r
	printf '%s: %s ... ' "$DBK_WHO" "$1" >&2
	run "$@"
	echo "done ($(($(date +%s) - t0)) s)" >&2
done
printf '%-8s %6s %6s %7s %7s %9s %9s %9s\n' run nodes requests good attain ttft_p50 ttft_p99 tpot_p50
one=""
for r in "one 1" "random $k" "shared $k" "sessions $k"; do
	set -- $r
	read -r n g p50 p99 tpot < <(summary "$1")
	a=$(awk -v g="$g" -v n="$n" 'BEGIN { printf "%.4f", g / n }')
	[ -z "$one" ] && one=$a
	printf '%-8s %6s %6s %7s %7s %9.0f %9.0f %9.1f  (x%.3f)\n' "$1" "$2" "$n" "$g" "$a" "$p50" "$p99" "$tpot" \
		"$(awk -v a="$a" -v o="$one" 'BEGIN { print a / o }')"
done
