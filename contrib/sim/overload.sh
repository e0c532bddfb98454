#!/usr/bin/env bash
# Issue 28's overload table for BENCHMARKS.md: a policy offered 0.8x to
# 2.5x its own SLO capacity without admission, with classes 30:50:20
# (critical, standard, sheddable: the longest prompts), with and without
# --admission, beside llm_d_shed (llm-d behind the GIE's saturation-based
# shedding) at the same rates. Prints each dbucket-sim command (on
# stderr), then one markdown row per policy and factor: each class's
# share within the objectives and goodput, without admission / with
# dbucket's / the GIE peer's, and the requests shed by either.
#
#   contrib/sim/overload.sh [--out DIR] NAME CAPACITIES -- DBUCKET-SIM-ARGS...
#
# NAME names the outputs (DIR/NAME-POLICY-X-VARIANT.json, DIR from
# --out, default /tmp/overload); CAPACITIES is policy=rate,... as
# dbucket-sim --slo-capacity found them (the rate factor of each policy's
# own capacity without admission); the arguments after -- give the trace,
# its slice and the fleet (no --rate-factor, no --policy). With
# DBK_SHED_RETRY=1 every run adds --shed-retry; with DBK_OVERLOAD_REPORT=1
# nothing runs, the rows come from the JSON files already in DIR. A
# missing NAME or CAPACITIES, or a second run into a DIR another is still
# writing into, is refused (exit 2).
set -eu
cd "$(dirname "$0")/../.."
. contrib/lib.sh
BUILD=${DBK_BUILD:-build}
out=/tmp/overload
case ${1:-} in -h | --help) dbk_usage && exit 0 ;; esac
if [ "${1:-}" = --out ]; then
	out=$2
	shift 2
fi
[ $# -ge 2 ] || {
	echo "$DBK_WHO: NAME and CAPACITIES are required (see --help)" >&2
	exit 2
}
name=$1 caps=$2
shift 2
[ "${1:-}" = -- ] && shift
[[ $caps =~ ^[a-z_0-9]+=[0-9.]+(,[a-z_0-9]+=[0-9.]+)*$ ]] || {
	echo "$DBK_WHO: CAPACITIES is policy=rate,... (as dbucket-sim --slo-capacity found them), not '$caps'" >&2
	exit 2
}
mkdir -p "$out"
if [ -z "${DBK_OVERLOAD_REPORT:-}" ]; then
	dbk_need_bins dbucket-sim
	dbk_lock_dir "$out"
fi
retry=()
[ "${DBK_SHED_RETRY:-0}" = 1 ] && retry=(--shed-retry)

run() { # run FILE ARGS...: prints the command, runs it quietly
	local file=$1
	shift
	echo "\$ $BUILD/dbucket-sim $* ${retry[*]+"${retry[*]}"} --json $file" >&2
	nice -n 5 "$BUILD/dbucket-sim" "$@" ${retry[@]+"${retry[@]}"} --json "$file" >/dev/null
}

# One row per policy and factor from its two runs (OFF without admission,
# ON with it and the GIE peer; ON empty for lc): each class's share
# within the objectives, none / dbucket / GIE; the requests shed
# (standard + sheddable), dbucket / GIE; goodput (all classes, requests
# within the objectives a second) none / dbucket / GIE.
row() { # row POLICY X OFF ON
	jq -rn --arg p "$1" --arg x "$2" --slurpfile off "$3" --slurpfile on "${4:-$3}" \
		--arg has_on "${4:+1}" '
		def pick($f; $name): $f[0].policies[] | select(.policy == $name);
		def pct: . * 1000 | round / 10 | tostring;
		def shed: [.priority_classes[].shed] | add | tostring;
		pick($off; $p) as $n |
		(if $has_on == "1" then [pick($on; $p), pick($on; "llm_d_shed")] else [] end) as $o |
		def three($k): ([$n] + $o | map(.priority_classes[$k].attainment | pct) | join(" / "));
		["\($p)", $x, three("critical"), three("standard"), three("sheddable"),
		 ($o | map(shed) | join(" / ")),
		 ([$n] + $o | map(.classes.all.goodput * 1000 | round / 1000 | tostring)
		  | join(" / "))]
		| "| " + join(" | ") + " |"'
}

echo "| policy | x capacity | critical within % | standard within % | sheddable within % | shed: dbucket / GIE | goodput (req/s) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for pc in ${caps//,/ }; do
	pol=${pc%%=*} cap=${pc#*=}
	for x in 0.8 1.0 1.5 2.0 2.5; do
		rf=$(awk -v c="$cap" -v x="$x" 'BEGIN { printf "%.6g", c * x }')
		base=$out/$name-$pol-$x
		[ -n "${DBK_OVERLOAD_REPORT:-}" ] ||
			run "$base-off.json" "$@" --rate-factor "$rf" --policy "$pol" \
				--classes 30,50,20
		if [ "$pol" = lc ]; then # the baseline: no admission
			row "$pol" "$x" "$base-off.json"
			continue
		fi
		[ -n "${DBK_OVERLOAD_REPORT:-}" ] ||
			run "$base-on.json" "$@" --rate-factor "$rf" --policy "$pol,llm_d_shed" \
				--classes 30,50,20 --admission
		row "$pol" "$x" "$base-off.json" "$base-on.json"
	done
done
