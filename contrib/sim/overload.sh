#!/usr/bin/env bash
# Issue 28's overload table for BENCHMARKS.md: a policy offered 0.8x to
# 2.5x its own SLO capacity without admission, with classes 30:50:20
# (critical, standard, sheddable: the longest prompts), with and without
# --admission, beside llm_d_shed (llm-d behind the GIE's saturation-based
# shedding) at the same rates. Prints each dbucket-sim command, then one
# markdown row per policy, factor and variant.
#
#   contrib/sim/overload.sh NAME CAPACITIES -- DBUCKET-SIM-ARGS...
#
# NAME names the outputs (DIR/NAME-POLICY-X-VARIANT.json, DIR from
# --out, default /tmp/overload); CAPACITIES is policy=rate,... as
# dbucket-sim --slo-capacity found them (the rate factor of each policy's
# own capacity without admission); the arguments after -- give the trace,
# its slice and the fleet (no --rate-factor, no --policy). With
# DBK_SHED_RETRY=1 every run adds --shed-retry.
set -eu
cd "$(dirname "$0")/../.."
BUILD=${DBK_BUILD:-build}
out=/tmp/overload
if [ "${1:-}" = --out ]; then
	out=$2
	shift 2
fi
name=$1 caps=$2
shift 2
[ "${1:-}" = -- ] && shift
mkdir -p "$out"
retry=()
[ "${DBK_SHED_RETRY:-0}" = 1 ] && retry=(--shed-retry)

run() { # run FILE ARGS...: prints the command, runs it quietly
	local file=$1
	shift
	echo "\$ $BUILD/dbucket-sim $* ${retry[*]+"${retry[*]}"} --json $file" >&2
	nice -n 5 "$BUILD/dbucket-sim" "$@" ${retry[@]+"${retry[@]}"} --json "$file" >/dev/null
}

# One row: policy, factor, variant, then each class's share within the
# objectives, the sheds, goodput (all classes, requests a second).
row() { # row FILE POLICY X VARIANT
	jq -r --arg p "$2" --arg x "$3" --arg v "$4" '
		.policies[] | select(.policy == $p) | .priority_classes as $c |
		[$p, $x, $v,
		 (100 * $c.critical.attainment | . * 10 | round / 10 | tostring) + "%",
		 (100 * $c.standard.attainment | . * 10 | round / 10 | tostring) + "%",
		 (100 * $c.sheddable.attainment | . * 10 | round / 10 | tostring) + "%",
		 ($c.standard.shed | tostring) + " / " + ($c.sheddable.shed | tostring),
		 (.classes.all.goodput | . * 1000 | round / 1000 | tostring)]
		| "| " + join(" | ") + " |"' "$1"
}

echo "| policy | x capacity | admission | critical within | standard within | sheddable within | shed (standard / sheddable) | goodput (req/s) |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
for pc in ${caps//,/ }; do
	pol=${pc%%=*} cap=${pc#*=}
	for x in 0.8 1.0 1.5 2.0 2.5; do
		rf=$(awk -v c="$cap" -v x="$x" 'BEGIN { printf "%.6g", c * x }')
		base=$out/$name-$pol-$x
		run "$base-off.json" "$@" --rate-factor "$rf" --policy "$pol" --classes 30,50,20
		row "$base-off.json" "$pol" "$x" none
		[ "$pol" = lc ] && continue # the baseline: no admission
		run "$base-on.json" "$@" --rate-factor "$rf" --policy "$pol,llm_d_shed" \
			--classes 30,50,20 --admission
		row "$base-on.json" "$pol" "$x" "dbucket"
		row "$base-on.json" llm_d_shed "$x" "GIE (at $pol's rate)"
	done
done
