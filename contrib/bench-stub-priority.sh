#!/usr/bin/env bash
# A benchmark, not a test: the first-token time of high-priority requests
# behind a flood of low-priority ones, on two stubs run side by side in
# one run, one --scheduling-policy fcfs and one priority, with the same
# flood and the same high-priority requests sent to both at once.
#
#   contrib/bench-stub-priority.sh [BUILD_DIR]
#   (SCALE, LOW, LOW_BYTES, LOW_TOKENS, HIGH, GAP, STUB_ARGS: see below)
#
# The flood: LOW requests (priority 10) of LOW_BYTES of prompt (4 bytes a
# token) and LOW_TOKENS of output, all at once; then, once both stubs have
# requests waiting, HIGH requests (priority 0) of 100 prompt tokens and
# one output token, GAP real seconds apart, each sent to both stubs
# together. With
# one output token, a request's end is its first token: curl's total time
# times --time-scale is its TTFT in model seconds. Prints each policy's
# high-priority TTFT (mean, p50, max) and the flood's mean end-to-end
# time, and the ratio fcfs/priority. Loopback only; every process it
# starts is stopped by its pid.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${1:-build}
SCALE=${SCALE:-1}
LOW=${LOW:-64}
LOW_BYTES=${LOW_BYTES:-32768}
LOW_TOKENS=${LOW_TOKENS:-64}
HIGH=${HIGH:-8}
GAP=${GAP:-1} # real seconds between two high-priority arrivals
STUB_ARGS=${STUB_ARGS:-} # more flags for both stubs (words)
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

declare -A port
for pol in fcfs priority; do
	# shellcheck disable=SC2086 # STUB_ARGS is words
	"$BUILD/vllm-stub" --port 0 --name "$pol" --time-scale "$SCALE" --scheduling-policy "$pol" \
		$STUB_ARGS >"$tmp/$pol.out" 2>"$tmp/$pol.log" &
	pids+=("$!")
	for _ in $(seq 50); do
		grep -q 'listening on' "$tmp/$pol.out" && break
		sleep 0.1
	done
	port[$pol]=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$pol.out")
	[ -n "${port[$pol]}" ] || { echo "stub $pol did not start: $(cat "$tmp/$pol.log")" >&2; exit 1; }
done

# body PRIORITY PROMPT_BYTES MAX_TOKENS TAG: a prompt of its own (TAG
# first), so that no two requests share a cached prefix.
body() {
	printf '{"model":"stub-model","priority":%d,"max_tokens":%d,"ignore_eos":true,"prompt":"%s ' "$1" "$3" "$4"
	head -c "$(($2 - ${#4} - 1))" /dev/zero | tr '\0' a
	printf '"}'
}
for i in $(seq "$LOW"); do body 10 "$LOW_BYTES" "$LOW_TOKENS" "low$i" >"$tmp/low$i.json"; done
for i in $(seq "$HIGH"); do body 0 400 1 "high$i" >"$tmp/high$i.json"; done

# post POLICY FILE OUT: one request, its total time (s) appended to OUT.
post() {
	curl -s -o /dev/null --max-time 600 -w '%{time_total}\n' -H 'Content-Type: application/json' \
		--data-binary "@$2" "http://127.0.0.1:${port[$1]}/v1/completions" >>"$3"
}

# post_both FILE KIND: FILE to both stubs at once, in the background.
post_both() {
	local pol
	for pol in fcfs priority; do
		post "$pol" "$1" "$tmp/$pol.$2" &
		pids+=("$!")
	done
}

waiting() {
	curl -s --max-time 5 "http://127.0.0.1:${port[$1]}/metrics" |
		awk '/^vllm:num_requests_waiting\{/ { print $2 + 0; exit }'
}

for i in $(seq "$LOW"); do post_both "$tmp/low$i.json" low; done
# The high-priority requests go in once both stubs queue the flood.
for _ in $(seq 100); do
	[ "$(waiting fcfs)" -gt 0 ] 2>/dev/null && [ "$(waiting priority)" -gt 0 ] 2>/dev/null && break
	sleep 0.05
done
echo "waiting when the high-priority requests start: fcfs $(waiting fcfs), priority $(waiting priority)"
for i in $(seq "$HIGH"); do
	post_both "$tmp/high$i.json" high
	sleep "$GAP" # pacing the arrivals, not waiting for anything
done
for p in "${pids[@]:2}"; do wait "$p" 2>/dev/null; done

# stats FILE: mean p50 max of its times, in model seconds.
stats() {
	sort -g "$1" | awk -v s="$SCALE" '{ v[NR] = $1 * s; t += v[NR] }
		END { printf "%.3f %.3f %.3f", t / NR, v[int((NR + 1) / 2)], v[NR] }'
}
printf 'flood: %d requests of %d prompt tokens, %d output tokens, priority 10; %d high-priority requests of 100 tokens, 1 output token, priority 0, %ss apart; --time-scale %s (model seconds)\n' \
	"$LOW" $((LOW_BYTES / 4)) "$LOW_TOKENS" "$HIGH" "$GAP" "$SCALE"
printf '%-9s %-28s %s\n' policy 'high TTFT mean/p50/max (s)' 'flood E2E mean (s)'
declare -A mean lowmean
for pol in fcfs priority; do
	read -r m p x <<<"$(stats "$tmp/$pol.high")"
	read -r lm _ _ <<<"$(stats "$tmp/$pol.low")"
	printf '%-9s %-28s %s\n' "$pol" "$m / $p / $x" "$lm"
	mean[$pol]=$m lowmean[$pol]=$lm
done
awk -v a="${mean[fcfs]}" -v b="${mean[priority]}" -v c="${lowmean[fcfs]}" -v d="${lowmean[priority]}" \
	'BEGIN { printf "high TTFT fcfs/priority: %.1fx; flood E2E priority/fcfs: %.2fx\n", a / b, d / c }'
for pol in fcfs priority; do
	printf '%s: %s requests served, preemptions %s\n' "$pol" \
		"$(($(wc -l <"$tmp/$pol.low") + $(wc -l <"$tmp/$pol.high")))" \
		"$(curl -s --max-time 5 "http://127.0.0.1:${port[$pol]}/metrics" | awk '/^vllm:num_preemptions_total\{/ { print $2; exit }')"
done
