#!/usr/bin/env bash
# The matrix every routing change is checked against: 26 configurations
# (shared traces and generated ones; 4 to 64 instances; equal, demo and
# H100/A100 fleets; smaller budgets, seats and caches; bursts; two
# balancers), each policy's SLO capacity side by side in one run per
# configuration (search to 2%). Generates the synthetic traces it needs
# into DIR (contrib/traces/synth, fixed seeds: the same files every
# time), prints each command on stderr, then one markdown row per
# configuration: each policy's capacity (the rate factor; "none" where
# no rate reached the attainment, "~" where the search did not close).
#
#   contrib/sim/matrix.sh [--out DIR] [--only NAME,...] [--at RUN [--factors X,...]] [POLICY,...]
#
# POLICY,... defaults to lc,ttft. DIR defaults to /tmp/dbucket-matrix;
# DBK_BUILD names the build directory (default build). --only runs the
# named configurations (the first column) alone; a name the matrix does
# not have is refused (exit 2) before anything runs, as is a second run
# into a DIR another is still writing into.
#
# --at RUN runs each configuration at fixed rates instead of searching:
# X times (--factors, default 0.9,1) the capacity the first POLICY
# reached in RUN, another matrix's DIR. A capacity search on a flat or
# uneven curve moves by a whole step for a small change, and two builds
# compare best at the same rates. One row per configuration and factor;
# each policy's cell: the share of requests within both objectives (%),
# TTFT p99 and TPOT p50 (ms). A configuration RUN holds no capacity for
# (not run there, or "none") is refused before anything runs.
set -eu
cd "$(dirname "$0")/../.."
. contrib/lib.sh
BUILD=${DBK_BUILD:-build}
out=/tmp/dbucket-matrix only= at= factors=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2 && shift 2 ;;
	--only) only=,$2, && shift 2 ;;
	--at) at=$2 && shift 2 ;;
	--factors) factors=$2 && shift 2 ;;
	-h | --help) dbk_usage && exit 0 ;;
	-*) dbk_bad_option "$1" ;;
	*) break ;;
	esac
done
policies=${1:-lc,ttft}
[ -n "$at" ] || [ -z "$factors" ] || { echo "$DBK_WHO: --factors is for --at's runs" >&2 && exit 2; }
factors=${factors:-0.9,1}
[[ $factors =~ ^[0-9]*\.?[0-9]+(,[0-9]*\.?[0-9]+)*$ && ! ,$factors, =~ ,[0.]+, ]] ||
	{ echo "$DBK_WHO: --factors wants X,... (positive numbers), not $factors" >&2 && exit 2; }
[ -z "$at" ] || [ -d "$at" ] || { echo "$DBK_WHO: --at $at: no such directory" >&2 && exit 2; }
dbk_need_bins dbucket-sim
mkdir -p "$out"
dbk_lock_dir "$out"
cap=(--policy "$policies" --slo-capacity --slo-tolerance 0.02 --slo-max-evals 10)

trace() { # trace NAME: DIR/NAME.jsonl, generated once
	dbk_synth_trace "$1" "$out/$1.jsonl" && echo "$out/$1.jsonl"
}

MC=(--trace contrib/traces/mooncake_conversation_trace.jsonl --duration-s 900)
AZ=(--trace contrib/traces/AzureLLMInferenceTrace_conv.csv --duration-s 900)
# at_capacity NAME: the capacity the first policy reached in --at's run
# of NAME, empty (and success, for set -e) when it has none or no file.
at_capacity() {
	jq -r --arg p "${policies%%,*}" '.capacity[]? | select(.policy == $p and .rate_factor > 0)
		| .rate_factor' "$at/$1.json" 2>/dev/null || true
}

# at_rows NAME ARGS...: NAME's rows at --factors times its capacity in
# --at (read by the listing pass into at_base).
declare -A at_base=()
at_rows() {
	local name=$1 base=${at_base[$1]} x rate json
	shift
	for x in ${factors//,/ }; do
		rate=$(awk -v b="$base" -v x="$x" 'BEGIN { printf "%.6g", b * x }')
		json=$out/$name@$x.json
		echo "\$ $BUILD/dbucket-sim $* --policy $policies --rate-factor $rate --json $json" >&2
		nice -n 5 "$BUILD/dbucket-sim" "$@" --policy "$policies" --rate-factor "$rate" \
			--json "$json" >/dev/null
		jq -r --arg n "$name x$x ($rate)" '[$n] + [.policies[].classes.all
			| "\(.good * 1000 / .requests | round / 10)% · \(.ttft_ms.p99 | round) · \(.tpot_ms.p50 * 10 | round / 10)"]
			| "| " + join(" | ") + " |"' "$json"
	done
}

# run NAME ARGS...: one row (with --at, one per factor); an argument @T
# is generated trace T. With listing set it only records NAME (and, with
# --at, whether RUN has its capacity), so that --only is checked against
# the matrix itself rather than a second copy of its names.
listing= names=, missing=
run() {
	local name=$1 json=$out/$1.json a args=()
	shift
	[ -z "$listing" ] || names+=$name,
	case $only in "" | *",$name,"*) ;; *) return 0 ;; esac
	if [ -n "$listing" ]; then
		if [ -n "$at" ]; then
			at_base[$name]=$(at_capacity "$name")
			[ -n "${at_base[$name]}" ] || missing+=" $name"
		fi
		return 0
	fi
	for a; do
		case $a in @*) args+=("$(trace "${a#@}")") ;; *) args+=("$a") ;; esac
	done
	set -- "${args[@]}"
	[ -z "$at" ] || { at_rows "$name" "$@" && return 0; }
	echo "\$ $BUILD/dbucket-sim $* ${cap[*]} --json $json" >&2
	nice -n 5 "$BUILD/dbucket-sim" "$@" "${cap[@]}" --json "$json" >/dev/null
	jq -r --arg n "$name" '[$n] + [.capacity[] | if .rate_factor > 0
		then (.rate_factor * 10000 | round / 10000 | tostring) + (if .closed then "" else " ~" end)
		else "none" end] | "| " + join(" | ") + " |"' "$json"
}

matrix() {
	run mc4 "${MC[@]}" --instances 4 --slo-attainment 0.85 --rate-factor 0.4
	run mc4b2048 "${MC[@]}" --instances 4 --max-num-batched-tokens 2048 --slo-attainment 0.85 --rate-factor 0.4
	run mc4mix "${MC[@]}" --instances 4 --gpu h100,a100 --slo-attainment 0.85 --rate-factor 0.4
	run az4 "${AZ[@]}" --instances 4 --slo-attainment 0.9 --rate-factor 10
	run az4mix "${AZ[@]}" --instances 4 --gpu h100,a100 --slo-attainment 0.9 --rate-factor 10
	run c97 --trace @code97 --instances 16 --max-requests 8000 --slo-attainment 0.9 --rate-factor 150
	run c97b2048 --trace @code97 --instances 16 --max-requests 8000 --max-num-batched-tokens 2048 --slo-attainment 0.9 --rate-factor 200
	run c97s64 --trace @code97 --instances 16 --max-requests 8000 --max-num-seqs 64 --slo-attainment 0.9 --rate-factor 135
	run c5 --trace @code5 --instances 16 --max-requests 8000 --slo-attainment 0.9 --rate-factor 150
	run c613mix --trace @code613 --instances 16 --gpu h100,a100 --max-model-len 16384 --max-requests 8000 --slo-attainment 0.9 --rate-factor 80
	run c97x4 --trace @code97 --instances 4 --max-requests 4000 --slo-attainment 0.9 --rate-factor 40
	run c97x4mix --trace @code97 --instances 4 --gpu h100,a100 --max-requests 4000 --slo-attainment 0.9 --rate-factor 30
	run ag71 --trace @ag71 --instances 4 --slo-attainment 0.9 --rate-factor 2.5
	run ag71mix --trace @ag71 --instances 4 --gpu h100,a100 --slo-attainment 0.9 --rate-factor 2.5
	run ag72 --trace @ag72 --instances 4 --slo-attainment 0.9 --rate-factor 2.5
	run ag709demo --trace @ag709 --instances 8 --demo-profile --slo-attainment 0.9 --rate-factor 4
	run ag709mix64 --trace @ag709 --instances 64 --gpu h100,a100 --slo-attainment 0.9 --rate-factor 20
	run mc64 "${MC[@]}" --instances 64 --slo-attainment 0.85 --rate-factor 6
	run c1201a100x4 --trace @code1201 --instances 4 --gpu a100 --max-requests 4000 --slo-attainment 0.9 --rate-factor 12
	run c1201demo64 --trace @code1201 --instances 64 --demo-profile --max-requests 20000 --slo-attainment 0.9 --rate-factor 300
	run ag1202s32 --trace @ag1202 --instances 4 --max-num-seqs 32 --slo-attainment 0.9 --rate-factor 2.5
	run ag1202kv --trace @ag1202 --instances 8 --kv-capacity-tokens 150000 --slo-attainment 0.9 --rate-factor 4
	run ag1202mix16k2 --trace @ag1202 --instances 16 --gpu h100,a100 --lb-nodes 2 --lb-share-ms 100 --lb-share-sessions --slo-attainment 0.9 --rate-factor 8
	run mc16mixramp "${MC[@]}" --instances 16 --gpu h100,a100 --ramp 0:1,100:2.5,150:1,300:2.5,350:1 --slo-attainment 0.85 --rate-factor 2
	run az16mix "${AZ[@]}" --instances 16 --gpu h100,a100 --slo-attainment 0.9 --rate-factor 40
	run c4611mix64 --trace @code4611 --instances 64 --gpu h100,a100 --max-requests 20000 --slo-attainment 0.9 --rate-factor 250
}

listing=1 matrix
dbk_only_known "$names" "$only"
[ -z "$missing" ] || {
	echo "$DBK_WHO: --at $at holds no capacity of ${policies%%,*} for:$missing" >&2
	exit 2
}
if [ -n "$at" ]; then
	echo "(within both objectives % · TTFT p99 ms · TPOT p50 ms, at X times ${policies%%,*}'s capacity in $at)"
	echo
fi
echo "| configuration | ${policies//,/ | } |"
echo "|---|$(echo "$policies" | sed 's/[^,]*/---:/g; s/,/|/g')|"

matrix
