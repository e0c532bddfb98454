#!/usr/bin/env bash
# Simulator-live agreement: the same four instances, trace slice, rate
# factor and time scale, once live (contrib/bench-policies.sh: vllm-stub x4,
# HAProxy, dbucket-spoa, dbucket-bench) and once in dbucket-sim; prints
# TTFT p50 and p99 (all requests, short and long prompts) of both and
# their relative difference, (live - sim) / sim, against a tolerance.
#
#   contrib/bench-agreement.sh [--quick] [--traces mooncake,azure,code]
#        [--policies lc,dynamic] [--profile equal|demo] [--repeats N]
#        [--untie MS | --spread-ticks] [--tolerance PCT] [--out DIR]
#        [--from DIR] [--time-scale S] [--rate-factor F] [--start S]
#        [--duration D] [--max-num-batched-tokens N]
#
# --from DIR compares the live runs already in DIR (the results of a
# contrib/bench-policies.sh run, e.g. build/bench after `make bench`)
# instead of running them again: nothing live is started.
# --max-num-batched-tokens N gives the stubs a step budget and tells it to
# the ttft agent (bench-policies.sh) and to dbucket-sim alike; a --from
# directory's own setup says which it ran with.
#
# Simulator columns: "sim" (no overhead: the engines alone); "sim+o", run
# with --overhead-ms o, what the live path adds to an idle request (the
# median TTFT of bench-policies.sh's 20 idle probe requests minus
# dbucket-sim's for the same requests, per policy and run: HAProxy, agent,
# connection setup, the stub's timers, all x the time scale); "sim band",
# the range over --overhead-ms 0, o/2, o, 3o/2, 2o, 3o: how far the
# simulated figure itself moves under a few ms of perturbation (tail
# percentiles of a loaded cluster move a lot). Verdict: yes = live within
# the tolerance (default 15%) of sim+o; band = not, but within the
# tolerance of the band; NO = neither. Exit status 1 if any NO.
# Mooncake runs at time scale 5 with its ties 20 ms apart (--time-scale
# and --untie change that; --spread-ticks replays Mooncake's ticks spread,
# live and simulated alike), Azure as in bench-policies.sh. About 11
# minutes with the defaults, 3 with --quick.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

traces=mooncake,azure policies=lc,dynamic profile=equal repeats=1 tol=15
out=$REPO/build/bench/agreement pass=() from="" scale=""
# Mooncake is replayed at time scale 5 (not make bench's 10) with its
# ties 20 ms apart (not 2): at 10, wall-time effects x10 move the
# short-prompt TTFT tail of dbucket dynamic by about 20% (BENCHMARKS.md).
mc_scale=5 untie=20
quick=0 rf="" start="" dur="" spread=0 batched=""
dbk_options "--quick quick=1
--time-scale scale
--rate-factor rf
--start start
--duration dur
--traces traces
--policies policies
--profile profile
--repeats repeats
--untie untie
--spread-ticks spread=1
--tolerance tol
--out out
--max-num-batched-tokens batched
--from from" "$@"
# Passed on to bench-policies.sh as given.
[ "$quick" = 0 ] || pass+=(--quick)
[ -z "$rf" ] || pass+=(--rate-factor "$rf")
[ -z "$start" ] || pass+=(--start "$start")
[ -z "$dur" ] || pass+=(--duration "$dur")
[ "$spread" = 0 ] || pass+=(--spread-ticks)
[ -z "$batched" ] || pass+=(--max-num-batched-tokens "$batched")
# A --from directory's runs had their budget: its setup says which.
[ -z "$from" ] || [ -z "$batched" ] || {
	echo "bench-agreement: --max-num-batched-tokens with --from: the runs' own setup gives the budget" >&2
	exit 2
}
dbk_need_cmds jq awk
dbk_need_bins dbucket-sim

mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d /tmp/dbucket-agree.XXXXXX)
child=""
trap '[ -n "$child" ] && { kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; }; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)

if [ -n "$from" ]; then
	# Earlier live runs: their files carry no tag.
	ldir=$(cd "$from" && pwd) pre=""
	# bench-policies.sh's files, else this script's own (agree-*).
	[ -f "$ldir/${traces%%,*}-setup.txt" ] || pre=agree-
	for trace in ${traces//,/ }; do
		[ -f "$ldir/$pre$trace-setup.txt" ] || { echo "bench-agreement: no $trace run in $ldir" >&2; exit 2; }
	done
	profile=$(tr ' ' '\n' <"$ldir/$pre${traces%%,*}-setup.txt" | sed -n 's/^profile=//p')
else
	# The live runs (the policies script stops everything it starts).
	ldir=$out pre=agree-
	# One trace at a time (each its own time scale), in the background so
	# that a signal here stops it at once (its own trap stops everything
	# it started).
	for trace in ${traces//,/ }; do
		extra=()
		if [ "$trace" = mooncake ]; then
			extra=(--time-scale "${scale:-$mc_scale}")
			[ "$spread" = 1 ] || extra+=(--untie "$untie")
		elif [ -n "$scale" ]; then extra=(--time-scale "$scale"); fi
		contrib/bench-policies.sh ${pass[@]+"${pass[@]}"} "${extra[@]+"${extra[@]}"}" --no-plots --tag agree \
			--out "$out" --traces "$trace" --policies "$policies" --profile "$profile" \
			--repeats "$repeats" >"$tmp/live.txt" &
		child=$!
		rc=0
		wait "$child" || rc=$?
		child=""
		[ "$rc" -eq 0 ] || { cat "$tmp/live.txt" >&2; exit "$rc"; }
		sed -n '/^== /,$p' "$tmp/live.txt" | grep -v '^wall time\|^plots' >&2
	done
fi

setup_of() { tr ' ' '\n' <"$ldir/$pre$1-setup.txt" | sed -n "s/^$2=//p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
demo_flag=()
[ "$profile" = demo ] && demo_flag=(--demo-profile)

# Rows: trace policy metric live sim sim+o
: >"$tmp/rows"
for trace in ${traces//,/ }; do
	file=$(setup_of "$trace" file) start=$(setup_of "$trace" start) dur=$(setup_of "$trace" duration)
	# A results directory that was moved keeps its untied slice beside it.
	[ -f "$file" ] || file=$ldir/$(basename "$file")
	rf=$(setup_of "$trace" rate_factor) scale=$(setup_of "$trace" time_scale)
	sim_flags=()
	[ "$(setup_of "$trace" spread_ticks)" = 1 ] && sim_flags=(--spread-ticks)
	# The stubs' step budget, told to ttft live as here (0 or none: the
	# GPU's default): the engines are the stubs' whatever the policy.
	b=$(setup_of "$trace" batched)
	case $b in '' | 0) ;; *) sim_flags+=(--max-num-batched-tokens "$b") ;; esac
	# dbucket-sim's TTFT for the probe requests (idle engines).
	"$BUILD/dbucket-sim" --trace "$ldir/${pre}probe.jsonl" --rate-factor 4 --instances 4 "${demo_flag[@]+"${demo_flag[@]}"}" \
		--policy lc --json "$tmp/probe-sim.json" >/dev/null
	probe_sim=$(jq '.policies[0].classes.all.ttft_ms.p50' "$tmp/probe-sim.json")
	for p in ${policies//,/ }; do
		# Live: medians over repeats.
		probe_live=$(for f in "$ldir/$pre$trace-$p".probe.json "$ldir/$pre$trace-$p"-r[0-9]*.probe.json; do
			[ -f "$f" ] && jq '.results.total.ttft_ms.median' "$f"; done | median)
		oh=$(awk -v a="$probe_live" -v b="$probe_sim" 'BEGIN { o = a - b; printf "%.3f", (o > 0 ? o : 0) }')
		echo "$trace $p $oh $probe_live $probe_sim" >>"$tmp/overheads"
		# The simulator at overheads 0, o/2, o, 3o/2, 2o, 3o: "sim" is 0,
		# "sim+o" is o, and the spread over all six is how much the
		# simulated figure itself moves under a few ms of perturbation
		# (the band).
		for k in 0 0.5 1 1.5 2 3; do
			"$BUILD/dbucket-sim" --trace "$file" --start-s "$start" --duration-s "$dur" --rate-factor "$rf" \
				--instances 4 "${demo_flag[@]+"${demo_flag[@]}"}" ${sim_flags[@]+"${sim_flags[@]}"} --policy "$p" \
				--overhead-ms "$(awk -v o="$oh" -v k="$k" 'BEGIN { printf "%.3f", o * k }')" \
				--json "$tmp/sim-$k.json" >/dev/null
		done
		cp "$tmp/sim-0.json" "$tmp/sim0.json"
		cp "$tmp/sim-1.json" "$tmp/simo.json"
		cp "$tmp/simo.json" "$out/$pre$trace-$p.sim.json"
		for m in "all p50" "all p99" "short p50" "short p99" "long p50" "long p99"; do
			set -- $m
			bcls=$1
			[ "$1" = all ] && bcls=total
			bkey=$2
			[ "$2" = p50 ] && bkey=median
			# The replays' own results only: -rN.probe.json is the probe's.
			runs=$(for f in "$ldir/$pre$trace-$p".json "$ldir/$pre$trace-$p"-r[0-9]*.json; do
				case $f in *.probe.json|*.sim.json) continue ;; esac
				# (if, not &&: a glob that matched nothing must not
				# fail the substitution under set -e)
				if [ -f "$f" ]; then jq -r ".results.$bcls.ttft_ms.$bkey // empty" "$f"; fi
			done)
			live=$(echo "$runs" | grep . | median)
			lrange=$(echo "$runs" | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print (NR ? lo "-" hi : "-") }')
			s0=$(jq -r ".policies[0].classes.$1.ttft_ms.$2 // \"-\"" "$tmp/sim0.json")
			s1=$(jq -r ".policies[0].classes.$1.ttft_ms.$2 // \"-\"" "$tmp/simo.json")
			# No request in the class (Azure has no long prompt): nothing
			# to compare; "all" is then "short" again.
			[ "$live" = - ] && continue
			[ "$1" = all ] && [ "$(jq '.policies[0].classes.long.requests' "$tmp/sim0.json")" = 0 ] && continue
			band=$(for k in 0 0.5 1 1.5 2 3; do jq -r ".policies[0].classes.$1.ttft_ms.$2" "$tmp/sim-$k.json"; done |
				sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }')
			echo "$trace $p $1_$2 $live $s0 $s1 $band $lrange" >>"$tmp/rows"
		done
	done
done

report() { # report [md]
	awk -v labels="$(dbk_policy_labels)" -v tol="$tol" -v md="${1:-}" '
		function name(p,   n, kv, i, e) { # labels: dbk_policy_labels
			if (!nl) { n = split(labels, kv, ";"); for (i = 1; i < n; i++) { e = index(kv[i], "="); L[substr(kv[i], 1, e - 1)] = substr(kv[i], e + 1) }; nl = 1 }
			return p in L ? L[p] : p
		}
		function rel(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%+.1f%%", 100 * (a - b) / b) }
		function f(v) { return v == "-" ? "-" : sprintf("%.0f", v) }
		BEGIN {
			if (md) { print "| trace | policy | TTFT | live ms | live runs ms | sim ms | live vs sim | sim+o ms | live vs sim+o | sim band ms | verdict |"
				print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|" }
			else printf "%-9s %-18s %-10s %8s %13s %8s %8s %8s %9s %14s  %s\n", "trace", "policy", "TTFT", "live", "live runs", "sim", "vs sim", "sim+o", "vs sim+o", "sim band", "verdict (" tol "%)"
		}
		{
			r0 = rel($4, $5); r1 = rel($4, $6)
			# yes: within the tolerance of sim+o; band: not, but within
			# the tolerance of the band; NO: neither.
			if (r1 == "-") ok = "-"
			else if (($4 - $6) / $6 <= tol / 100 && ($6 - $4) / $6 <= tol / 100) ok = "yes"
			else if ($4 >= $7 * (1 - tol / 100) && $4 <= $8 * (1 + tol / 100)) ok = "band"
			else ok = "NO"
			if (ok == "NO") bad++
			m = $3; sub(/_/, " ", m)
			b = f($7) "-" f($8)
			split($9, lr, "-"); lv = (lr[2] == "") ? "-" : f(lr[1]) "-" f(lr[2])
			if (md) printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, name($2), m, f($4), lv, f($5), r0, f($6), r1, b, ok
			else printf "%-9s %-18s %-10s %8s %13s %8s %8s %8s %9s %14s  %s\n", $1, name($2), m, f($4), lv, f($5), r0, f($6), r1, b, ok
		}
		END { exit bad > 0 }' "$tmp/rows"
}

echo
echo "== simulator vs live: TTFT in ms of model time, 4 instances ($profile profile)"
for trace in ${traces//,/ }; do
	echo "   $trace: $(cut -d' ' -f2-6 "$ldir/$pre$trace-setup.txt")"
done
rc=0
report || rc=$?
echo
echo "live path overhead per idle request (model ms = probe TTFT live - sim), used as --overhead-ms for sim+o:"
awk '{ printf "   %s %s: %.1f ms (live probe %.1f, sim %.1f)\n", $1, $2, $3, $4, $5 }' "$tmp/overheads"
{
	echo "# Simulator-live agreement ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	for trace in ${traces//,/ }; do echo "- $trace: $(cut -d' ' -f2-7 "$ldir/$pre$trace-setup.txt")"; done
	[ -n "$from" ] && echo "- live runs from $ldir"
	echo "- tolerance ${tol}%; sim+o: dbucket-sim with --overhead-ms (live idle probe TTFT minus the simulator's):"
	awk '{ printf "  %s %s %.1f ms;", $1, $2, $3 } END { print "" }' "$tmp/overheads"
	echo
	report md || true
	echo
	echo '```'
	echo "contrib/bench-agreement.sh ${pass[*]+"${pass[*]}"}${from:+ --from $from}${scale:+ --time-scale $scale} --traces $traces --policies $policies --profile $profile --repeats $repeats$([ "$spread" = 1 ] || echo " --untie $untie")"
	echo '```'
} >"$out/agreement.md"
echo
echo "wall time $(($(date +%s) - t0)) s; $out/agreement.md"
exit "$rc"
