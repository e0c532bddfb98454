#!/usr/bin/env bash
# LoRA adapters, live (issue 27): four vLLM stubs of one base model, each
# serving the same adapters with --max-loras GPU slots, behind HAProxy
# 2.6, once with HAProxy's leastconn alone and once with dbucket-spoa
# --policy ttft, the same requests side by side in one run. The
# adapters' traffic has Zipf popularity (adapter k gets a share in
# proportion to 1/k): one dbucket-bench per adapter, all at once, each
# with its share of the rate and of the requests. Prints, per run, the
# adapters the stubs read per 1,000 requests (vllm_stub_lora_loads_total,
# the stub's own counter), the share of requests within TTFT 2 s and
# TPOT 100 ms, and the TTFT p50 and p99 over all requests; keeps every
# output in --out.
#
#   contrib/bench/lora-live.sh [--rate R] [--requests N] [--adapters A]
#        [--max-loras M] [--lora-load-ms L] [--time-scale S] [--mix MIX]
#        [--out DIR]
#
#   --rate R          Poisson arrivals of all adapters together, requests
#                     per second of model time (default 8)
#   --requests N      requests per run, all adapters (default 400)
#   --adapters A      adapters, all served by every stub (default 8)
#   --max-loras M     GPU slots per stub (default 2)
#   --lora-load-ms L  what reading an adapter costs a step, model ms
#                     (default 50, the stub's)
#   --time-scale S    the stubs' model clock runs S times real time; every
#                     latency is reported in model time (default 5)
#   --mix MIX         dbucket-bench --synthetic (default
#                     chat=1:500-3000:50-200)
#   --out DIR         results (default build/lora-live)
#   --base-build DIR  also a run "ttft-base" with DIR/dbucket-spoa (another
#                     build's agent, e.g. main's, for its figures beside
#                     these)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=contrib/lib.sh
. contrib/lib.sh

rate=8 requests=400 adapters=8 max_loras=2 load_ms=50 scale=5 out=build/lora-live base_build=
mix=chat=1:500-3000:50-200
dbk_options "--rate rate
--requests requests
--adapters adapters
--max-loras max_loras
--lora-load-ms load_ms
--time-scale scale
--mix mix
--out out
--base-build base_build" "$@"
BUILD=${BUILD:-build}
dbk_need_bins vllm-stub dbucket-spoa dbucket-bench
dbk_need_cmds haproxy curl jq awk
mkdir -p "$out"
dbk_tmp_dir

modules=()
for ((k = 1; k <= adapters; k++)); do modules+=("a$k=/lora/a$k"); done
# Adapter k's share of the traffic: (1/k) / H(A).
share() { awk -v k="$1" -v a="$adapters" 'BEGIN { for (i = 1; i <= a; i++) h += 1 / i; print 1 / k / h }'; }

# The stubs' adapter reads so far, all four.
loads() {
	local i n=0 v
	for i in 0 1 2 3; do
		v=$(curl -s --max-time 5 "http://$(eval echo "\$DBK_VLLM$i")/metrics" |
			awk '$1 == "vllm_stub_lora_loads_total" { print $2 + 0 }')
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

dbk_quiet_cfg "$tmp/dbucket.cfg"
grep -v -e 'filter spoe' -e 'send-spoe-group' -e 'log ring@' "$tmp/dbucket.cfg" >"$tmp/lc.cfg"

# run LABEL [AGENT]: one whole run, everything started afresh; "lc"
# without an agent, the others with AGENT (default this build's).
run() {
	local label=$1 spoa=${2:-$BUILD/dbucket-spoa} i k base cfg=$tmp/dbucket.cfg agent=
	base=$(dbk_ports 9)
	dbk_live_env "$base" "$tmp/haproxy-$label.sock" "$PWD/haproxy/dbucket.spoe.conf"
	local admin=127.0.0.1:$((base + 3)) scrape=()
	for i in 0 1 2 3; do
		export "DBK_VLLM$i=127.0.0.1:$((base + 4 + i))"
		"$BUILD/vllm-stub" --port $((base + 4 + i)) --name "vllm$i" --time-scale "$scale" \
			--model base --enable-lora --max-loras "$max_loras" --lora-load-ms "$load_ms" \
			--lora-modules "${modules[@]}" >"$tmp/stub$i-$label.out" 2>&1 &
		pids+=($!)
		scrape+=(--scrape "vllm$i=http://127.0.0.1:$((base + 4 + i))")
	done
	for i in 0 1 2 3; do dbk_wait_port $((base + 4 + i)); done
	if [ "$label" = lc ]; then
		cfg=$tmp/lc.cfg
	else
		"$spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
			--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "$admin" \
			--policy ttft --engine-speed "$scale" \
			--scrape-interval "$(awk -v s="$scale" 'BEGIN { printf "%d", 100 / s < 10 ? 10 : 100 / s }')" \
			"${scrape[@]}" vllm0 vllm1 vllm2 vllm3 2>"$tmp/agent-$label.log" &
		agent=$!
		pids+=("$agent")
		dbk_wait_port "${admin##*:}"
	fi
	haproxy -f "$cfg" 2>"$tmp/haproxy-$label.log" &
	local hap=$!
	pids+=("$hap")
	dbk_wait_port "$base"
	local before benches=()
	before=$(loads)
	for ((k = 1; k <= adapters; k++)); do
		local s n
		s=$(share "$k")
		n=$(awk -v s="$s" -v r="$requests" 'BEGIN { n = int(s * r + 0.5); print n < 1 ? 1 : n }')
		"$BUILD/dbucket-bench" --synthetic "$mix" --seed "$k" --model "a$k" \
			--rate "$(awk -v s="$s" -v r="$rate" 'BEGIN { print s * r }')" --max-requests "$n" \
			--url "http://$DBK_BIND" --time-scale "$scale" --slo-ttft-ms 2000 \
			--slo-tpot-ms 100 --timeout 600 --json "$out/$label-a$k.json" \
			>"$out/$label-a$k.txt" 2>&1 &
		benches+=($!)
	done
	for i in "${benches[@]}"; do wait "$i"; done
	echo "$(($(loads) - before))" >"$out/$label.loads"
	dbk_stop 5 "$hap" $agent "${pids[@]}"
	pids=()
}

runs=(lc ttft)
run lc
run ttft
if [ -n "$base_build" ]; then
	run ttft-base "$base_build/dbucket-spoa"
	runs+=(ttft-base)
fi
printf '%-9s %9s %9s %10s %9s %9s %9s\n' run requests completed "loads/1k" "within%" "ttft_p50" "ttft_p99"
for label in "${runs[@]}"; do
	jq -s --argjson loads "$(cat "$out/$label.loads")" -r --arg l "$label" '
		[.[].results.total] as $t
		| ($t | map(.requests) | add) as $n
		| ($t | map(.completed) | add) as $c
		| ($t | map(.good) | add) as $g
		# Percentiles over adapters: the request-weighted mean of each
		# bench'"'"'s, as one bench per adapter reports its own.
		| ([$t[] | .ttft_ms.median * .completed] | add / $c) as $p50
		| ([$t[] | .ttft_ms.p99 * .completed] | add / $c) as $p99
		| "\($l) \($n) \($c) \(1000 * $loads / $n | . * 10 | round / 10) \(100 * $g / $n | . * 10 | round / 10) \($p50 | round) \($p99 | round)"' \
		"$out/$label"-a*.json | awk '{ printf "%-9s %9s %9s %10s %9s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7 }'
done
echo "(ttft p50/p99: model ms, each adapter's weighted by its requests; logs in $out)"
