#!/usr/bin/env bats
# dbucket-sim's command line: every option --help lists is accepted, every
# policy it names runs, --stall-weight and --engine-speed reach the ttft
# policy, --spread-ticks spreads the arrivals a trace recorded in one tick,
# --lb-sticky keeps a conversation on one of several balancers, --gpu
# gives a list of GPUs to the instances in turn, and
# --slo-capacity prints a capacity per policy with leastconn's as the
# unit, and a fleet that changes (--scale, --ramp, a failing instance, a
# slow one, --observe-l7, --weights) accounts for every request and never routes
# one to an instance that is out; contrib/sim/matrix.sh prints a row per
# configuration it is told. Model time only: no sockets, seconds.

load helpers

MOONCAKE=$REPO/contrib/traces/mooncake_conversation_trace.jsonl

@test "dbucket-sim --help tells the truth: options and policies" {
	run "$BUILD/dbucket-sim" --help
	assert_success
	assert_output --partial "--slo-capacity"
	local opt p n=0
	for opt in $(grep -oE '^ +--[a-z-]+' <<<"$output" | sort -u); do
		[ "$opt" = --help ] || [ "$opt" = --version ] && continue
		run "$BUILD/dbucket-sim" "$opt" 2>&1
		refute_output --partial "unknown option"
		n=$((n + 1))
	done
	[ "$n" -ge 42 ] || fail "--help lists $n options, not the 42 besides --help and --version"
	# Every policy the table knows runs to the end on a small slice.
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 150 --policy all
	assert_success
	for p in rr lc plain dynamic clairvoyant cache_aware cache_aware_legacy \
		power_of_two power_of_two_informed consistent_hash llm_d llm_d_active \
		llm_d_latency prefixaware; do
		grep -qE "^$p +150 +0 " <<<"$output" || fail "no complete row for $p"
	done
	# consistent_hash's other ring layouts run by name, not in all.
	refute_output --partial "consistent_hash_seed"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 150 \
		--policy consistent_hash_seed1,consistent_hash_seed2,consistent_hash_seed3
	assert_success
	for p in 1 2 3; do
		grep -qE "^consistent_hash_seed$p +150 +0 " <<<"$output" || fail "no row for seed $p"
	done
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --policy nosuch
	assert_failure 2
	assert_output --partial "unknown policy 'nosuch'"
}

@test "--log-level debug: after each run, one event instance per instance, the run's requests and engine time in all" {
	local err=$BATS_TEST_TMPDIR/err p n sent busy
	"$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 300 --instances 4 --fail-instance 2 \
		--fail-share 0.5 --policy lc,ttft --log-level debug --json "$BATS_TEST_TMPDIR/r.json" >/dev/null 2>"$err"
	for p in lc ttft; do
		n=$(grep -c "event=instance policy=$p " "$err")
		[ "$n" -eq 4 ] || fail "$p: $n instance events, not 4"
		# Every request the trace offered was sent somewhere, the failing
		# instance's 500s included.
		sent=$(grep "event=instance policy=$p " "$err" | sed 's/.* requests=\([0-9]*\) .*/\1/' | awk '{ t += $1 } END { print t }')
		[ "$sent" -eq 300 ] || fail "$p: $sent requests sent, not 300"
		# The instances' engine time adds up to the run's.
		busy=$(grep "event=instance policy=$p " "$err" | sed 's/.* busy_s=\([0-9.]*\) .*/\1/' | awk '{ t += $1 } END { print t }')
		jq -e --arg p "$p" --argjson b "$busy" '.policies[] | select(.policy == $p) | (.busy_s - $b | fabs) < 0.01' \
			"$BATS_TEST_TMPDIR/r.json" >/dev/null || fail "$p: the instances' busy_s sum to $busy"
	done
	# The failing instance was sent requests under lc (its 500s end at once).
	grep -qE "event=instance policy=lc instance=2 requests=[1-9]" "$err"
	# At the default level, nothing of it.
	"$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 50 --policy lc >/dev/null 2>"$err"
	! grep -q "event=instance" "$err" || fail "instance events at info"
}

@test "lc_per_node: lc decision for decision with one balancer; with --lb-nodes each node counts its own; not in all" {
	local args=(--trace "$MOONCAKE" --max-requests 400 --instances 4 --rate-factor 2)
	# Its rows but the name and the wall time.
	rows() { grep -E "^$1 " <<<"$output" | awk '{ $1 = ""; $NF = "" } { print }'; }
	run "$BUILD/dbucket-sim" "${args[@]}" --policy lc,lc_per_node
	assert_success
	[ -n "$(rows lc)" ] && [ "$(rows lc)" = "$(rows lc_per_node)" ] || fail "one node is not lc"
	# Four nodes, each seeing a quarter of the connections: other choices.
	run "$BUILD/dbucket-sim" "${args[@]}" --policy lc,lc_per_node --lb-nodes 4
	assert_success
	[ "$(rows lc)" != "$(rows lc_per_node)" ] || fail "four nodes chose as one"
	local four=$(rows lc_per_node)
	# Sticky conversations split the arrivals otherwise.
	run "$BUILD/dbucket-sim" "${args[@]}" --policy lc_per_node --lb-nodes 4 --lb-sticky
	assert_success
	[ "$(rows lc_per_node)" != "$four" ] || fail "--lb-sticky changed nothing"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 20 --policy all
	assert_success
	refute_output --partial "lc_per_node"
}

# option_reaches_ttft OPTION KEY DEFAULT OTHER BAD LOW WHY_OTHER [ARGS...]:
# OPTION reaches the ttft policy (Mooncake, 400 requests at rate 2, the
# ttft policy and ARGS...): given DEFAULT, ttft's rows (but for the
# first one's wall time) are those of a run without it; given OTHER,
# they differ; the JSON setup records KEY as DEFAULT untold and OTHER
# given; BAD is refused with exit 2, the message naming LOW as the
# bound. WHY_OTHER says why OTHER should change the choices.
option_reaches_ttft() {
	local opt=$1 key=$2 default=$3 other=$4 bad=$5 low=$6 why_other=$7
	shift 7
	local args=(--trace "$MOONCAKE" --max-requests 400 --rate-factor 2 --policy ttft "$@")
	ttft_rows() { grep "^ttft " <<<"$output" | awk 'NR == 1 { $NF = "" } { print }'; }
	run "$BUILD/dbucket-sim" "${args[@]}" --json "$BATS_TEST_TMPDIR/default.json"
	assert_success
	local by_default=$(ttft_rows)
	run "$BUILD/dbucket-sim" "${args[@]}" "$opt" "$default"
	assert_success
	[ "$(ttft_rows)" = "$by_default" ] || fail "$default is not the default"
	run "$BUILD/dbucket-sim" "${args[@]}" "$opt" "$other" --json "$BATS_TEST_TMPDIR/other.json"
	assert_success
	[ "$(ttft_rows)" != "$by_default" ] || fail "$opt $other changed nothing ($why_other)"
	run jq -c ".setup.$key" "$BATS_TEST_TMPDIR/default.json" "$BATS_TEST_TMPDIR/other.json"
	assert_output "$default
$other"
	run "$BUILD/dbucket-sim" "${args[@]}" "$opt" "$bad"
	assert_failure 2
	assert_output --partial "$opt wants a number from $low"
}

@test "--engine-speed: the agent's model speed, 1 by default, slower a different choice, 0 refused" {
	option_reaches_ttft --engine-speed engine_speed 1 0.4 0 0.001 \
		"priced at an A100's pace, queues drain slower in the books" --gpu a100
}

@test "--stall-weight: the agent's weight by default, 0 a different choice, negative refused" {
	option_reaches_ttft --stall-weight stall_weight 0.2 0 -1 0 \
		"overloaded, with long prompts, the greedy choice is another one"
}

@test "--gpu: a list given to the instances in turn; names other than h100 and a100 refused" {
	local args=(--trace "$MOONCAKE" --max-requests 300 --rate-factor 2 --policy lc)
	# lc's median first token (the row's 7th column) on 4 H100s, then with
	# every other one an A100: later.
	run "$BUILD/dbucket-sim" "${args[@]}" --gpu h100
	assert_success
	local h100=$(awk '$1 == "lc" { print $7; exit }' <<<"$output")
	run "$BUILD/dbucket-sim" "${args[@]}" --gpu h100,a100 --json "$BATS_TEST_TMPDIR/mixed.json"
	assert_success
	assert_output --partial "4 x h100,a100 in turn; "
	local mixed=$(awk '$1 == "lc" { print $7; exit }' <<<"$output")
	((mixed > h100)) || fail "lc's TTFT p50: mixed $mixed ms, all H100 $h100 ms"
	run jq -r '.setup.gpu' "$BATS_TEST_TMPDIR/mixed.json"
	assert_output "h100,a100"
	for bad in b200 h100,, '' h100,h100x; do
		run "$BUILD/dbucket-sim" "${args[@]}" --gpu "$bad"
		assert_failure 2
		assert_output --partial "names other than h100 and a100"
	done
}

@test "--spread-ticks: a tick's arrivals spread, seeded, reported; Azure's left alone" {
	local args=(--trace "$MOONCAKE" --max-requests 300 --rate-factor 2 --policy lc)
	run "$BUILD/dbucket-sim" "${args[@]}" --json "$BATS_TEST_TMPDIR/as.json"
	assert_success
	refute_output --partial "ticks spread"
	local recorded=$(grep "^lc " <<<"$output" | head -1 | awk '{ $NF = ""; print }')
	run "$BUILD/dbucket-sim" "${args[@]}" --spread-ticks --json "$BATS_TEST_TMPDIR/sp.json"
	assert_success
	# Every Mooncake arrival shares its tick with others.
	assert_output --partial "ticks spread: 12031 of the trace's arrivals moved"
	local spread=$(grep "^lc " <<<"$output" | head -1 | awk '{ $NF = ""; print }')
	[ "$spread" != "$recorded" ] || fail "spreading the ticks changed nothing"
	run "$BUILD/dbucket-sim" "${args[@]}" --spread-ticks
	[ "$(grep "^lc " <<<"$output" | head -1 | awk '{ $NF = ""; print }')" = "$spread" ] ||
		fail "the same seed gave other arrivals"
	run jq -r '.setup.spread_ticks' "$BATS_TEST_TMPDIR/as.json" "$BATS_TEST_TMPDIR/sp.json"
	assert_output "false
true"
	# Azure's timestamps are distinct: nothing moves.
	run "$BUILD/dbucket-sim" --trace "$REPO/contrib/traces/AzureLLMInferenceTrace_conv.csv" \
		--max-requests 100 --policy lc --spread-ticks
	assert_success
	assert_output --partial "ticks spread: 0 of the trace's arrivals moved"
}

@test "--lb-sticky: a conversation back at the balancer that sent its last turn hits its prefix" {
	local args=(--trace "$MOONCAKE" --max-requests 600 --instances 16 --rate-factor 4
		--policy ttft)
	hit() { grep -A1 "^policy  *preempt" <<<"$output" | awk '$1 == "ttft" { print $NF }'; }
	run "$BUILD/dbucket-sim" "${args[@]}"
	assert_success
	local one=$(hit)
	run "$BUILD/dbucket-sim" "${args[@]}" --lb-nodes 4
	assert_success
	local scattered=$(hit)
	run "$BUILD/dbucket-sim" "${args[@]}" --lb-nodes 4 --lb-sticky --json "$BATS_TEST_TMPDIR/st.json"
	assert_success
	local sticky=$(hit)
	run jq -c '.setup | [.lb_nodes, .lb_sticky]' "$BATS_TEST_TMPDIR/st.json"
	assert_output "[4,true]"
	# Four balancers that each see a random quarter of a conversation
	# find its prefix less often than one; sticky ones as often as one.
	awk -v o="$one" -v r="$scattered" -v s="$sticky" \
		'BEGIN { exit !(r < o / 1.5 && s > o * 0.8) }' ||
		fail "hit %: one balancer $one, 4 scattered $scattered, 4 sticky $sticky"
	run "$BUILD/dbucket-sim" "${args[@]}" --lb-sticky
	assert_failure 2
	assert_output --partial "--lb-sticky needs --lb-nodes 2 or more"
}

@test "--slo-capacity: one row per policy, leastconn's ratio 1, bounded runs" {
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 300 \
		--policy lc,plain,prefixaware --slo-capacity --slo-attainment 0.70 \
		--slo-max-evals 6 --json "$BATS_TEST_TMPDIR/cap.json"
	assert_success
	assert_output --partial "SLO capacity: highest rate factor with >= 70% of requests"
	grep -qE "^lc +[0-9.e+-]+ +1\.00 " <<<"$output" || fail "no lc row with ratio 1.00"
	# prefixaware sends everything to one instance (every prompt starts
	# with the same block): it meets the target at no load.
	grep -qE "^prefixaware +0 +0\.00 +max " <<<"$output" || fail "prefixaware should have none"
	run jq -r '.capacity | length, (.[] | select(.policy == "lc") | .ratio_to_lc),
		([.[].runs] | max <= 6)' "$BATS_TEST_TMPDIR/cap.json"
	assert_success
	assert_output "3
1
true"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --slo-capacity --slo-ttft-ms 0 \
		--slo-tpot-ms 0
	assert_failure 2
	assert_output --partial "needs an objective"
}

@test "a fleet that changes: every request accounted for, none sent to an instance that is out" {
	local json=$BATS_TEST_TMPDIR/fleet.json
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 1200 --rate-factor 2 \
		--ramp 0:1,30:2,70:1 --scale 0:2,40:4,80:2,120:3 --fail-instance 1 \
		--fail-from-s 50 --fail-share 0.5 --observe-l7 --weights 2,1 --json "$json"
	assert_success
	assert_output --partial "fleet: scale 0:2,40:4,80:2,120:3; ramp 0:1,30:2,70:1"
	assert_output --partial "phase 7: arrivals from 120 s, 3 instances"
	# One row per policy, wlc among them (the run has weights).
	run jq -r '[.policies[].policy] | length, (index("wlc") != null)' "$json"
	assert_output "17
true"
	# Phases start at every step of the scale, the ramp and the failure.
	run jq -c '[.policies[0].phases[].from_s]' "$json"
	assert_output "[0,30,40,50,70,80,120]"
	# Per policy: done + failed = offered, in all and in each phase; each
	# phase's requests went to instances present through it; nothing was
	# misrouted, no lease left; the failures are the failing instance's.
	run jq -r --argjson n "$(jq .setup.requests "$json")" '.policies[] |
		select((.classes.all.completed + .classes.all.failed) != $n
		or ([.phases[].offered] | add) != $n
		or ([.phases[] | select(.completed + .failed != .offered)] | length) > 0
		or ([.phases[] | select(.top_instance >= .instances)] | length) > 0
		or .misrouted != 0 or .leases_left != 0
		or .classes.all.failed != .server_errors + .too_long + .refused) | .policy' "$json"
	assert_success
	assert_output ""
	# The failing instance did fail requests, and HAProxy's mark-down
	# took it out at least once under least connections.
	run jq -r '.policies[] | select(.policy == "lc") | (.server_errors > 0), (.marked_down > 0)' "$json"
	assert_output "true
true"
	# The agent's policies eject the failing instance (the agent's outlier
	# detection) and send it far fewer requests than least connections.
	run jq -r '[.policies[] | {(.policy): .server_errors}] | add |
		(.ttft * 4 < .lc), (.plain * 4 < .lc), (.dynamic * 4 < .lc)' "$json"
	assert_output "true
true
true"
	# Without the new flags the JSON is as before: no phases.
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 100 --policy lc \
		--json "$BATS_TEST_TMPDIR/plain.json"
	assert_success
	refute_output --partial "the fleet:"
	run jq '.policies[0] | has("phases") or has("misrouted")' "$BATS_TEST_TMPDIR/plain.json"
	assert_output "false"
	# Schedules that cannot be.
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --scale 5:4
	assert_failure 2
	assert_output --partial "--scale: the first step is at 0 s"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --scale 0:2,10:4 --fail-instance 4
	assert_failure 2
	assert_output --partial "--fail-instance: 4 is not one of the 4 instances"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --weights 10,0
	assert_failure 2
	assert_output --partial "--weights: weight '0'"
}

@test "a slow instance: the setup line and JSON echo it, its phase bounds the phases" {
	local json=$BATS_TEST_TMPDIR/slow.json
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 300 --policy lc \
		--slow-instance 1 --slow-from-s 10 --slow-until-s 40 --slow-factor 3 --json "$json"
	assert_success
	assert_output --partial "instance 1's steps take 3x as long from 10 s until 40 s;"
	run jq -c '[.setup.slow_instance, .setup.slow_from_s, .setup.slow_until_s,
		.setup.slow_factor, [.policies[0].phases[].from_s]]' "$json"
	assert_output "[1,10,40,3,[0,10,40]]"
	# For ever: no end said, none in the JSON (it has no infinity).
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 100 --policy lc \
		--slow-instance 1 --json "$json"
	assert_success
	assert_output --partial "instance 1's steps take 2x as long from 0 s;"
	run jq -c '.setup | [has("slow_until_s"), .slow_factor]' "$json"
	assert_output "[false,2]"
}

@test "--classes and --admission: per-class books add up, critical never shed, off changes nothing" {
	local j=$BATS_TEST_TMPDIR
	# 1500 Mooncake requests at three times the load: well past capacity.
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 1500 --rate-factor 3 \
		--policy lc,ttft,llm_d_shed --json "$j/plain.json"
	assert_success
	refute_output --partial "Priority classes"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 1500 --rate-factor 3 \
		--policy lc,ttft,llm_d_shed --classes 30,50,20 --json "$j/off.json"
	assert_success
	assert_output --partial "Priority classes"
	# Classes alone shed nothing, except the GIE peer, which sheds on its own.
	run jq -r '.policies[] | [.policy, ([.priority_classes[].shed] | add)] | @tsv' "$j/off.json"
	assert_line --regexp '^lc	0$'
	assert_line --regexp '^ttft	0$'
	assert_line --regexp '^llm_d_shed	[1-9][0-9]*$'
	# Classes change no decision: the same goodput as without them.
	run jq -r '[.policies[] | select(.policy != "llm_d_shed") | .classes.all.good]' \
		"$j/plain.json"
	local before=$output
	run jq -r '[.policies[] | select(.policy != "llm_d_shed") | .classes.all.good]' \
		"$j/off.json"
	[ "$output" = "$before" ] || fail "classes alone changed the runs: $before -> $output"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --max-requests 1500 --rate-factor 3 \
		--policy lc,ttft,llm_d_shed --classes 30,50,20 --admission --json "$j/on.json"
	assert_success
	assert_output --partial "admission on: standard 0.5, sheddable 0.5 of 2000 ms"
	# Every class: offered = admitted + shed; 450 critical (30%), none shed;
	# all classes add up to the 1500; admission sheds under ttft and lc.
	run jq -r '.policies[] | .policy as $p | .priority_classes |
		[$p, (.critical.offered == 450 and .critical.shed == 0),
		 ([.[] | .offered == .admitted + .shed] | all),
		 ([.[].offered] | add), ([.[].shed] | add) > 0] | @tsv' "$j/on.json"
	assert_output "lc	true	true	1500	true
ttft	true	true	1500	true
llm_d_shed	true	true	1500	true"
	# And the ttft policy keeps its critical requests within the objective
	# far more often than without admission.
	run jq -r '[.policies[] | select(.policy == "ttft") | .priority_classes.critical.good]
		| .[0]' "$j/off.json"
	local off=$output
	run jq -r '.policies[] | select(.policy == "ttft") | .priority_classes.critical.good' \
		"$j/on.json"
	[ "$output" -gt "$off" ] || fail "critical within objective: $off without, $output with"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --classes 30,50
	assert_failure 2
	assert_output --partial "--classes: three shares"
	run "$BUILD/dbucket-sim" --trace "$MOONCAKE" --classes 30,0,20
	assert_failure 2
	assert_output --partial "--classes: weight '0'"
}

@test "matrix.sh: one row per configuration named, a capacity per policy, the traces made once, unknown names refused" {
	local out=$BATS_TEST_TMPDIR/matrix
	# A name the matrix does not have is refused before anything runs.
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4,nosuch lc,ttft
	assert_failure 2
	assert_output --partial "no configuration named 'nosuch'"
	refute_output --partial "| c97x4 |"
	[ ! -e "$out/c97x4.json" ] || fail "c97x4 ran before nosuch was refused"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 lc,ttft
	assert_success
	# The header, its rule and one row.
	[ "$(grep -c '^|' <<<"$output")" -eq 3 ] || fail "not one row: $output"
	assert_line --regexp '^\| configuration \| lc \| ttft \|$'
	assert_line --regexp '^\| c97x4 \| [0-9.]+( ~)? \| [0-9.]+( ~)? \|$'
	# The row is the JSON the simulator wrote, rounded.
	local lc
	lc=$(jq -r '.capacity[] | select(.policy == "lc") | .rate_factor * 10000 | round / 10000' "$out/c97x4.json")
	assert_line --regexp "^\\| c97x4 \\| $lc( ~)? \\|"
	# The generated trace is code.py's, and a second run reuses it.
	[ "$(python3 "$REPO/contrib/traces/synth/code.py" 97 30000 | md5sum)" = "$(md5sum <"$out/code97.jsonl")" ]
	touch -d '2000-01-01' "$out/code97.jsonl"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 lc
	assert_success
	[ "$(stat -c %Y "$out/code97.jsonl")" -lt 1000000000 ] || fail "the trace was made again"
	run "$REPO/contrib/sim/matrix.sh" --bogus
	assert_failure 2
	assert_output --partial "unknown option --bogus"
}

@test "the trace generators: --help says how to call them, a bad SEED or count is refused, a seed gives the same file" {
	local g
	for g in code agentic; do
		run python3 "$REPO/contrib/traces/synth/$g.py" --help
		assert_success
		assert_line --regexp "^usage: $g.py \[-h\] SEED (REQUESTS|SESSIONS)$"
		run python3 "$REPO/contrib/traces/synth/$g.py"
		assert_failure 2
		assert_output --partial "usage: $g.py"
		refute_output --partial "Traceback"
		run python3 "$REPO/contrib/traces/synth/$g.py" 7x 10
		assert_failure 2
		assert_output --partial "invalid int value: '7x'"
		run python3 "$REPO/contrib/traces/synth/$g.py" 7 0
		assert_failure 2
		assert_output --partial "must be at least 1"
		refute_output --partial "Traceback"
	done
	# Ten requests, each a JSON line Mooncake's reader takes, the same twice.
	python3 "$REPO/contrib/traces/synth/code.py" 5 10 >"$BATS_TEST_TMPDIR/a.jsonl"
	python3 "$REPO/contrib/traces/synth/code.py" 5 10 >"$BATS_TEST_TMPDIR/b.jsonl"
	cmp "$BATS_TEST_TMPDIR/a.jsonl" "$BATS_TEST_TMPDIR/b.jsonl"
	[ "$(jq -s 'map(select(.timestamp >= 0 and .input_length >= 64 and (.hash_ids | length) >= 1)) | length' "$BATS_TEST_TMPDIR/a.jsonl")" -eq 10 ]
}

@test "matrix.sh --at: rows at fixed multiples of another run's capacity, each cell the simulator's figures; a run without that capacity refused" {
	local out=$BATS_TEST_TMPDIR/at run=$BATS_TEST_TMPDIR/run
	mkdir -p "$run"
	# Another matrix's output: ttft's capacity on c97x4 only.
	echo '{"capacity":[{"policy":"lc","rate_factor":0},{"policy":"ttft","rate_factor":30,"closed":true}]}' \
		>"$run/c97x4.json"
	# lc has none there ("none"), c5 no file: refused before anything runs.
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 --at "$run" lc,ttft
	assert_failure 2
	assert_output --partial "holds no capacity of lc for: c97x4"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4,c5 --at "$run" ttft
	assert_failure 2
	assert_output --partial "holds no capacity of ttft for: c5"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 --at "$run" --factors 0.5,0 ttft
	assert_failure 2
	assert_output --partial "--factors wants"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 --factors 0.5 ttft
	assert_failure 2
	assert_output --partial "--factors is for --at's runs"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 --at "$BATS_TEST_TMPDIR/nowhere" ttft
	assert_failure 2
	assert_output --partial "no such directory"
	[ ! -e "$out/c97x4@0.5.json" ] || fail "a configuration ran before the refusal"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 --at "$run" --factors 0.5,1 ttft,lc
	assert_success
	# The header, its rule and a row per factor (rates 15 and 30), after the legend.
	[ "$(grep -c '^|' <<<"$output")" -eq 4 ] || fail "not two rows: $output"
	assert_line --regexp '^\| configuration \| ttft \| lc \|$'
	[ "$(jq .setup.rate_factor "$out/c97x4@0.5.json")" = 15 ]
	[ "$(jq .setup.rate_factor "$out/c97x4@1.json")" = 30 ]
	# Each cell is what the simulator wrote for that policy at that rate.
	local f cells
	for f in 0.5 1; do
		cells=$(jq -r '[.policies[].classes.all | "\(.good * 1000 / .requests | round / 10)% · \(.ttft_ms.p99 | round) · \(.tpot_ms.p50 * 10 | round / 10)"] | join(" | ")' "$out/c97x4@$f.json")
		assert_line "| c97x4 x$f ($(jq .setup.rate_factor "$out/c97x4@$f.json")) | $cells |"
	done
	assert_line --regexp '^\| c97x4 x0.5 \(15\) \| [0-9.]+% · [0-9]+ · [0-9.]+ \| [0-9.]+% · [0-9]+ · [0-9.]+ \|$'
	# Half the load: no fewer requests within the objectives than at the capacity.
	local half full
	half=$(jq '.policies[0].classes.all.good' "$out/c97x4@0.5.json")
	full=$(jq '.policies[0].classes.all.good' "$out/c97x4@1.json")
	[ "$half" -ge "$full" ] || fail "ttft: $half within at half the rate, $full at the capacity"
}

@test "baselines.sh: a --only name it does not have, or an unknown option, is refused before anything runs" {
	local out=$BATS_TEST_TMPDIR/baselines
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/baselines.sh" --out "$out" --only mooncake-4-equal,mooncak-4-demo
	assert_failure 2
	assert_output --partial "no configuration named 'mooncak-4-demo'"
	[ ! -e "$out/mooncake-4-equal.json" ] || fail "mooncake-4-equal ran before the bad name was refused"
	run "$REPO/contrib/sim/baselines.sh" --bogus
	assert_failure 2
	assert_output --partial "unknown option --bogus"
	# --help is the leading comment block, and nothing of the code.
	run "$REPO/contrib/sim/baselines.sh" --help
	assert_success
	assert_line --partial "contrib/sim/baselines.sh [--out DIR]"
	refute_output --partial "set -eu"
}

@test "matrix.sh and baselines.sh: a second run into a directory another is writing into is refused" {
	local out=$BATS_TEST_TMPDIR/busy
	mkdir -p "$out"
	# This shell holds the directory's lock, as a run in progress does.
	exec 9>"$out/.lock"
	flock -n 9
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 lc
	assert_failure 2
	assert_output --partial "another run is writing into $out"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/baselines.sh" --out "$out" --only mooncake-4-equal
	assert_failure 2
	assert_output --partial "another run is writing into $out"
	[ -z "$(ls "$out")" ] || fail "something was written: $(ls "$out")"
	# Released, the same run goes ahead.
	exec 9>&-
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/matrix.sh" --out "$out" --only c97x4 lc
	assert_success
	assert_line --regexp '^\| c97x4 \| [0-9.]+( ~)? \|$'
}

@test "overload.sh: one row per policy and factor, three columns each; bad arguments refused before anything runs" {
	local out=$BATS_TEST_TMPDIR/overload
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/overload.sh" --out "$out" o ttft
	assert_failure 2
	assert_output --partial "CAPACITIES is policy=rate"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/overload.sh" --out "$out"
	assert_failure 2
	assert_output --partial "NAME and CAPACITIES are required"
	[ ! -e "$out" ] || [ -z "$(ls "$out")" ] || fail "something ran: $(ls "$out")"
	run env DBK_BUILD="$BUILD" "$REPO/contrib/sim/overload.sh" --out "$out" o ttft=1.2 -- \
		--trace "$MOONCAKE" --duration-s 60 --instances 4
	assert_success
	# A factor's row: each class within the objectives without admission /
	# with dbucket's / the GIE peer's, and goodput likewise.
	[ "$(grep -c '^| ttft | ' <<<"$output")" -eq 5 ] || fail "not five rows: $output"
	assert_line --regexp '^\| ttft \| 2\.5 \| [0-9.]+ / [0-9.]+ / [0-9.]+ \|'
	[ -s "$out/o-ttft-0.8-off.json" ] && [ -s "$out/o-ttft-2.5-on.json" ]
}
