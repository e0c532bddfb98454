#!/usr/bin/env bash
# The simulator's baselines for BENCHMARKS.md: for each trace (Mooncake,
# Azure), fleet size (4, 64) and profile (equal, demo), one run of every
# policy at the reference load (latency, goodput, prefix-cache hit rate)
# and the SLO-capacity search of every policy (ratio to lc). Prints the
# exact dbucket-sim command of each step before its output.
#
#   contrib/sim/baselines.sh [--out DIR] [--only TRACE-N-PROFILE,...]
#        [--tolerance X] [--max-evals N] [--no-prefix-caching]
#
# Configurations run in this order (the equal profile first):
# mooncake-4-equal azure-4-equal mooncake-64-equal azure-64-equal, then
# the same with -demo. The capacity search: tolerance 0.05, at most 9
# simulations per policy, from the reference load.
#
# Reference loads: the rate factor that offers 75% of what leastconn
# saturates at on four instances without caching (contrib/bench-policies.sh
# --calibrate), x16 for 64 instances (the same load per instance).
# Targets: 85% of requests within TTFT 2 s and TPOT 100 ms for Mooncake
# (its 3-second arrival ticks keep every policy below 90% at any load),
# 90% for Azure. Model time only, one core: about an hour.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${DBK_BUILD:-build}
out=build/sim-baselines only="" tol=0.05 evals=9 extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--tolerance) tol=$2; shift 2 ;;
	--max-evals) evals=$2; shift 2 ;;
	--no-prefix-caching) extra+=(--no-prefix-caching); shift ;;
	-h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "baselines: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ -x "$BUILD/dbucket-sim" ] || { echo "baselines: $BUILD/dbucket-sim is missing (make)" >&2; exit 2; }
mkdir -p "$out"

run() { # run NAME ARGS...: prints the command, runs it, keeps its output
	local name=$1
	shift
	echo "\$ $BUILD/dbucket-sim $*"
	nice -n 5 "$BUILD/dbucket-sim" "$@" ${extra[@]+"${extra[@]}"} --json "$out/$name.json" | tee "$out/$name.txt"
	echo
}

for profile in equal demo; do
	for n in 4 64; do
		for trace in mooncake azure; do
			case $trace in
			mooncake) file=contrib/traces/mooncake_conversation_trace.jsonl rf4=0.75 target=0.85 ;;
			azure) file=contrib/traces/AzureLLMInferenceTrace_conv.csv rf4=11 target=0.90 ;;
			esac
			rf=$(awk -v r="$rf4" -v n="$n" 'BEGIN { printf "%g", r * n / 4 }')
			name=$trace-$n-$profile
			if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
			pflag=()
			[ "$profile" = demo ] && pflag=(--demo-profile)
			echo "== $name"
			run "$name" --trace "$file" --instances "$n" --rate-factor "$rf" ${pflag[@]+"${pflag[@]}"}
			run "$name-capacity" --trace "$file" --instances "$n" --rate-factor "$rf" \
				${pflag[@]+"${pflag[@]}"} --slo-capacity --slo-attainment "$target" \
				--slo-tolerance "$tol" --slo-max-evals "$evals"
		done
	done
done
