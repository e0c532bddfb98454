#!/usr/bin/env bats
# dbucket-bench against one vLLM stub on loopback: a Mooncake slice is
# replayed whole and measured; --spread-ticks spreads the trace's ticks as
# dbucket-sim does, and is said so; wrong combinations are refused before
# anything is sent. The stub runs its model clock 20 times faster than
# real time, as does the bench.

load stubs

MOONCAKE=$REPO/contrib/traces/mooncake_conversation_trace.jsonl

setup() { stubs_setup; }
teardown() { stubs_teardown; }

bench() {
	"$BUILD/dbucket-bench" --trace "$MOONCAKE" --url "http://$DBK_VLLM2" --time-scale 20 \
		--max-requests 30 --max-model-len 131072 "$@"
}

@test "dbucket-bench replays a slice through a stub; --spread-ticks spreads its ticks" {
	start_stub 2 20
	run bench --json "$BATS_TEST_TMPDIR/as.json" --csv "$BATS_TEST_TMPDIR/as.csv"
	assert_success
	refute_output --partial "ticks spread"
	# The first 30 requests arrive in four ticks as recorded (0, 3, 6,
	# 9 s); spread, at 30 distinct times.
	local ticks=$(tail -n +2 "$BATS_TEST_TMPDIR/as.csv" | cut -d, -f2 | sort -u | wc -l)
	[ "$ticks" -eq 4 ] || fail "$ticks distinct arrivals as recorded, not 4"
	run jq -r '.config.spread_ticks, .selection.requests' "$BATS_TEST_TMPDIR/as.json"
	assert_success
	assert_output "false
30"
	run bench --spread-ticks --json "$BATS_TEST_TMPDIR/sp.json" --csv "$BATS_TEST_TMPDIR/sp.csv"
	assert_success
	assert_output --partial "ticks spread: 12031 of the trace's arrivals moved"
	run jq -r '.config.spread_ticks, .selection.spread' "$BATS_TEST_TMPDIR/sp.json"
	assert_output "true
12031"
	# Every request answered (ok is the 12th column).
	local ok=$(tail -n +2 "$BATS_TEST_TMPDIR/sp.csv" | cut -d, -f12 | grep -c '^1$\|^true$')
	[ "$ok" -eq 30 ] || fail "$ok of 30 requests answered"
	local distinct=$(tail -n +2 "$BATS_TEST_TMPDIR/sp.csv" | cut -d, -f2 | sort -u | wc -l)
	[ "$distinct" -eq 30 ] || fail "$distinct distinct arrivals, not 30"
}

@test "dbucket-bench refuses what it cannot do before sending anything" {
	run "$BUILD/dbucket-bench" --synthetic short=1:100 --rate 10 --max-requests 5 --spread-ticks
	assert_failure 2
	assert_output --partial "--spread-ticks is for trace files"
	run "$BUILD/dbucket-bench" --trace "$MOONCAKE" --url http://192.0.2.1:8000 --max-requests 1
	assert_failure 2
	assert_output --partial "not a loopback address"
	run "$BUILD/dbucket-bench" --trace "$BATS_TEST_TMPDIR/none.jsonl"
	assert_failure 2
}

@test "bench-policies --traces code: the seeded short-prompt trace, the same file twice, calibrated near its default" {
	local out=$BATS_TEST_TMPDIR/cal
	run "$REPO/contrib/bench-policies.sh" --calibrate --traces code --quick --out "$out"
	assert_success
	assert_output --partial "== code, trace seconds 0..300"
	[ "$(wc -l <"$out/code97.jsonl")" -eq 30000 ]
	local first=$(md5sum <"$out/code97.jsonl")
	python3 "$REPO/contrib/traces/synth/code.py" 97 30000 >"$BATS_TEST_TMPDIR/again.jsonl"
	[ "$(md5sum <"$BATS_TEST_TMPDIR/again.jsonl")" = "$first" ]
	# The default rate factor offers 60-90% of leastconn's saturation in
	# the simulator (75% when it was chosen).
	local pct=$(sed -n 's/^saturation: .*(default [0-9.]*: \([0-9]*\)%)$/\1/p' <<<"$output")
	[ -n "$pct" ] && [ "$pct" -ge 60 ] && [ "$pct" -le 90 ] || fail "default offers ${pct:-?}% of saturation"
}

@test "bench-policies --max-num-batched-tokens: the simulator is told the stubs' budget; a bad one is refused" {
	run "$REPO/contrib/bench-policies.sh" --calibrate --traces code --quick --max-num-batched-tokens 0
	assert_failure 2
	assert_output --partial "--max-num-batched-tokens wants a token count"
	run "$REPO/contrib/bench-policies.sh" --calibrate --traces code --quick --max-num-batched-tokens 2k
	assert_failure 2
	# Runs already made had their own budget, which their setup says.
	run "$REPO/contrib/bench-agreement.sh" --from "$BATS_TEST_TMPDIR" --max-num-batched-tokens 2048
	assert_failure 2
	assert_output --partial "the runs' own setup gives the budget"
	local out=$BATS_TEST_TMPDIR/cal
	run "$REPO/contrib/bench-policies.sh" --calibrate --traces code --quick --out "$out"
	assert_success
	local untold=$(grep -E '^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+' <<<"$output")
	run "$REPO/contrib/bench-policies.sh" --calibrate --traces code --quick --out "$out" \
		--max-num-batched-tokens 2048
	assert_success
	local told=$(grep -E '^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+' <<<"$output")
	# Steps of 2048 tokens, not the H100's 8192: near saturation (the
	# sweep's last five rates) every median first token comes later.
	[ -n "$untold" ] && [ "$(wc -l <<<"$told")" -eq "$(wc -l <<<"$untold")" ] || fail "no sweep"
	paste <(awk '{ print $4 }' <<<"$untold" | tail -5) <(awk '{ print $4 }' <<<"$told" | tail -5) |
		awk '$2 <= $1 { bad = 1 } END { exit bad }' || fail "the budget did not reach the simulator"
}
