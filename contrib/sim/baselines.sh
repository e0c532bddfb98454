#!/usr/bin/env bash
# The simulator's baselines for BENCHMARKS.md: for each trace (Mooncake,
# Azure), fleet size (4, 64) and profile (equal, demo), one run of every
# policy at the reference load (latency, goodput, prefix-cache hit rate)
# and the SLO-capacity search of every policy (ratio to lc). Prints the
# exact dbucket-sim command of each step before its output.
#
#   contrib/sim/baselines.sh [--out DIR] [--only TRACE-N-PROFILE,...]
#        [--tolerance X] [--max-evals N] [--no-prefix-caching]
#        [--policy LIST] [--lb-nodes K [--lb-sticky]] [--spread-ticks]
#   contrib/sim/baselines.sh --report [--out DIR]
#
# --policy passes a policy list to dbucket-sim (default: all); --lb-nodes K
# models K load balancers for the ttft policy and suffixes every output
# name with -kK (keep lc in the list: capacities are ratios to it), and
# --lb-sticky sends each conversation to one of them (name -kK-sticky);
# --spread-ticks spreads arrivals recorded in the same tick over it
# (dbucket-sim --spread-ticks) and suffixes every name with -spread.
# --report runs nothing: it prints, from the JSON files in DIR, one
# markdown table per configuration (latencies in ms of model time at the
# reference load, the SLO attainment there, the prefix-cache hit rate, and
# the SLO capacity as a ratio to lc's). A name --only does not know, or a
# second run into a DIR another is still writing into, is refused (exit 2).
#
# Configurations run in this order (the equal profile first):
# mooncake-4-equal azure-4-equal mooncake-64-equal azure-64-equal, then
# the same with -demo. The capacity search: tolerance 0.05, at most 9
# simulations per policy, from the reference load.
#
# Slices: the live benchmark's (contrib/bench-policies.sh), Mooncake trace
# seconds 0-900 (2,714 requests), Azure 0-1200 (5,985 requests), so that
# live and simulated tables describe the same requests.
# Reference loads: the rate factor that offers 75% of what leastconn
# saturates at on four instances without caching (contrib/bench-policies.sh
# --calibrate), x16 for 64 instances (the same load per instance).
# Targets: 85% of requests within TTFT 2 s and TPOT 100 ms for Mooncake
# (its 3-second arrival ticks keep every policy below 90% at any load),
# 90% for Azure. Model time only, one core: about an hour.
set -eu
cd "$(dirname "$0")/../.."
. contrib/lib.sh
BUILD=${DBK_BUILD:-build}
out=build/sim-baselines only="" tol=0.05 evals=9 extra=() report=0 suffix=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--tolerance) tol=$2; shift 2 ;;
	--max-evals) evals=$2; shift 2 ;;
	--no-prefix-caching) extra+=(--no-prefix-caching); shift ;;
	--policy) extra+=(--policy "$2"); shift 2 ;;
	--lb-nodes) extra+=(--lb-nodes "$2"); suffix=$suffix-k$2; shift 2 ;;
	--lb-sticky) extra+=(--lb-sticky); suffix=$suffix-sticky; shift ;;
	--spread-ticks) extra+=(--spread-ticks); suffix=$suffix-spread; shift ;;
	--report) report=1; shift ;;
	-h|--help) dbk_usage; exit 0 ;;
	*) dbk_bad_option "$1" ;;
	esac
done

if [ "$report" = 1 ]; then
	for f in "$out"/*-capacity.json; do
		[ -e "$f" ] || continue
		base=${f%-capacity.json}
		[ -e "$base.json" ] || continue
		jq -r '.setup | "**\(.trace)**, \(.instances) instances, \(if .short_kv_capacity_tokens == .long_kv_capacity_tokens then "equal" else "demo" end) profile, trace seconds \(.start_s)-\(.start_s + .duration_s), \(.requests) requests, rate factor \(.rate_factor):\n"' "$base.json"
		echo "| policy | good/s | SLO met | TTFT s p50 | TTFT s p99 | TTFT l p50 | TTFT l p99 | TPOT p50 | TPOT p99 | E2E p99 | fail | hit % | SLO capacity | vs lc |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		jq -r --slurpfile cap "$f" '
			def r(x): if x == null then "-" else (x * 10 | round / 10 | tostring) end;
			def i(x): if x == null then "-" else (x | round | tostring) end;
			.policies[] as $p
			| ($cap[0].capacity[] | select(.policy == $p.policy)) as $c
			| [$p.policy,
			   ($p.classes.all.goodput * 100 | round / 100 | tostring),
			   r($p.classes.all.good / $p.classes.all.requests * 100) + "%",
			   i($p.classes.short.ttft_ms.p50), i($p.classes.short.ttft_ms.p99),
			   (if $p.classes.long.requests > 0 then i($p.classes.long.ttft_ms.p50) else "-" end),
			   (if $p.classes.long.requests > 0 then i($p.classes.long.ttft_ms.p99) else "-" end),
			   r($p.classes.all.tpot_ms.p50), r($p.classes.all.tpot_ms.p99),
			   i($p.classes.all.e2e_ms.p99), ($p.classes.all.failed | tostring),
			   r(if $p.prefix_cache_queries > 0 then $p.prefix_cache_hits / $p.prefix_cache_queries * 100 else 0 end),
			   (if $c.rate_factor > 0 then ($c.rate_factor * 1000 | round / 1000 | tostring) else "none (max \($c.best_attainment * 1000 | round / 10)% at \($c.best_attainment_rate_factor * 1000 | round / 1000))" end),
			   (if $c.ratio_to_lc == null then "-" else ($c.ratio_to_lc * 100 | round / 100 | tostring) end)]
			| "| " + join(" | ") + " |"' "$base.json"
		echo
	done
	exit 0
fi
dbk_need_bins dbucket-sim
# The configurations, in the order they run; --only is checked against
# these names, made by the same loops that run them.
profiles=(equal demo) sizes=(4 64) traces=(mooncake azure) names=,
for profile in "${profiles[@]}"; do
	for n in "${sizes[@]}"; do
		for trace in "${traces[@]}"; do names+=$trace-$n-$profile,; done
	done
done
dbk_only_known "$names" "$only"
mkdir -p "$out"
dbk_lock_dir "$out"

run() { # run NAME ARGS...: prints the command, runs it, keeps its output
	local name=$1
	shift
	echo "\$ $BUILD/dbucket-sim $*"
	nice -n 5 "$BUILD/dbucket-sim" "$@" ${extra[@]+"${extra[@]}"} --json "$out/$name.json" | tee "$out/$name.txt"
	echo
}

for profile in "${profiles[@]}"; do
	for n in "${sizes[@]}"; do
		for trace in "${traces[@]}"; do
			case $trace in
			mooncake) file=contrib/traces/mooncake_conversation_trace.jsonl rf4=0.75 target=0.85 dur=900 ;;
			azure) file=contrib/traces/AzureLLMInferenceTrace_conv.csv rf4=11 target=0.90 dur=1200 ;;
			esac
			rf=$(awk -v r="$rf4" -v n="$n" 'BEGIN { printf "%g", r * n / 4 }')
			name=$trace-$n-$profile
			if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
			name=$name$suffix
			pflag=()
			[ "$profile" = demo ] && pflag=(--demo-profile)
			echo "== $name"
			run "$name" --trace "$file" --duration-s "$dur" --instances "$n" \
				--rate-factor "$rf" ${pflag[@]+"${pflag[@]}"}
			run "$name-capacity" --trace "$file" --duration-s "$dur" --instances "$n" \
				--rate-factor "$rf" \
				${pflag[@]+"${pflag[@]}"} --slo-capacity --slo-attainment "$target" \
				--slo-tolerance "$tol" --slo-max-evals "$evals"
		done
	done
done
