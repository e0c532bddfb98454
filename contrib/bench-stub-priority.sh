#!/usr/bin/env bash
# A benchmark, not a test: the first-token time of high-priority requests
# behind a flood of low-priority ones, on two stubs run side by side in
# one run, one --scheduling-policy fcfs and one priority, with the same
# flood and the same high-priority requests sent to both at once.
#
#   contrib/bench-stub-priority.sh [BUILD_DIR]
#   (SCALE, LOW, LOW_BYTES, LOW_TOKENS, HIGH, GAP, STUB_ARGS, THROUGH: see below)
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
#
# THROUGH=haproxy: the same through haproxy/haproxy.cfg (one stub behind
# each HAProxy, an agent beside each), both stubs priority: the bodies
# carry no priority, the flood is X-Request-Class: sheddable and the
# others standard; side "plain" is the sample as it is, side "lua" the
# sample with DBK_PRIORITY_LUA, which writes the class into the body.
set -u
cd "$(dirname "$0")/.." || exit 2
REPO=$PWD
BUILD=${1:-build}
SCALE=${SCALE:-1}
LOW=${LOW:-64}
LOW_BYTES=${LOW_BYTES:-32768}
LOW_TOKENS=${LOW_TOKENS:-64}
HIGH=${HIGH:-8}
GAP=${GAP:-1} # real seconds between two high-priority arrivals
STUB_ARGS=${STUB_ARGS:-} # more flags for both stubs (words)
THROUGH=${THROUGH:-} # haproxy: through HAProxy, with and without the priority filter
DBK_WHO=bench-stub-priority
. contrib/lib.sh
dbk_tmp_dir

if [ "$THROUGH" = haproxy ]; then
	sides=(plain lua)
	dbk_need_cmds haproxy
	unset DBK_PRIORITY_LUA
else
	sides=(fcfs priority)
fi
a=${sides[0]} b=${sides[1]}
declare -A port front
for pol in "${sides[@]}"; do
	sched=$pol
	[ "$THROUGH" = haproxy ] && sched=priority
	# shellcheck disable=SC2086 # STUB_ARGS is words
	"$BUILD/vllm-stub" --port 0 --name "$pol" --time-scale "$SCALE" --scheduling-policy "$sched" \
		$STUB_ARGS >"$tmp/$pol.out" 2>"$tmp/$pol.log" &
	pids+=("$!")
	for _ in $(seq 50); do
		grep -q 'listening on' "$tmp/$pol.out" && break
		sleep 0.1
	done
	port[$pol]=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$pol.out")
	[ -n "${port[$pol]}" ] || { echo "stub $pol did not start: $(cat "$tmp/$pol.log")" >&2; exit 1; }
	front[$pol]=${port[$pol]}
done

# Through HAProxy: each stub the only server of its own HAProxy (the
# sample, vllm0 alone), with its own agent.
if [ "$THROUGH" = haproxy ]; then
	for pol in "${sides[@]}"; do
		base=$(dbk_ports 3)
		front[$pol]=$base
		SERVER="    server vllm0 127.0.0.1:${port[$pol]}" awk '
			/^    server vllm[0-9] / { if (!done) print ENVIRON["SERVER"]; done = 1; next }
			{ print }' haproxy/haproxy.cfg >"$tmp/$pol.cfg"
		if [ "$pol" = lua ]; then
			DBK_PRIORITY_LUA=$REPO/haproxy/dbucket-priority.lua dbk_front "front-$pol" "$base" \
				"$tmp/$pol.cfg" "127.0.0.1:$((base + 1))" "127.0.0.1:$((base + 2))" \
				"$REPO/haproxy/dbucket.spoe.conf"
		else
			dbk_front "front-$pol" "$base" "$tmp/$pol.cfg" "127.0.0.1:$((base + 1))" \
				"127.0.0.1:$((base + 2))" "$REPO/haproxy/dbucket.spoe.conf"
		fi
		"$BUILD/dbucket-spoa" --listen "127.0.0.1:$((base + 1))" \
			--completion-listen "127.0.0.1:$((base + 2))" --log-level warn vllm0 \
			2>"$tmp/agent-$pol.log" &
		pids+=("$!")
		dbk_wait_port "$base"
	done
fi

# body PRIORITY PROMPT_BYTES MAX_TOKENS TAG: a prompt of its own (TAG
# first), so that no two requests share a cached prefix. Through HAProxy
# without a priority: the class gives it.
body() {
	local prio='"priority":'$1,
	[ "$THROUGH" = haproxy ] && prio=
	printf '{"model":"stub-model",%s"max_tokens":%d,"ignore_eos":true,"prompt":"%s ' "$prio" "$3" "$4"
	head -c "$(($2 - ${#4} - 1))" /dev/zero | tr '\0' a
	printf '"}'
}
for i in $(seq "$LOW"); do body 10 "$LOW_BYTES" "$LOW_TOKENS" "low$i" >"$tmp/low$i.json"; done
for i in $(seq "$HIGH"); do body 0 400 1 "high$i" >"$tmp/high$i.json"; done

# post SIDE FILE OUT: one request, its total time (s) appended to OUT;
# the flood (OUT *.low) sheddable through HAProxy.
post() {
	local -a class=()
	[ "$THROUGH" = haproxy ] && [ "${3##*.}" = low ] && class=(-H 'X-Request-Class: sheddable')
	curl -s -o /dev/null --max-time 600 -w '%{time_total}\n' -H 'Content-Type: application/json' \
		"${class[@]}" --data-binary "@$2" "http://127.0.0.1:${front[$1]}/v1/completions" >>"$3"
}

# post_both FILE KIND: FILE to both sides at once, in the background.
cpids=()
post_both() {
	local pol
	for pol in "${sides[@]}"; do
		post "$pol" "$1" "$tmp/$pol.$2" &
		pids+=("$!")
		cpids+=("$!")
	done
}

waiting() {
	curl -s --max-time 5 "http://127.0.0.1:${port[$1]}/metrics" |
		awk '/^vllm:num_requests_waiting\{/ { print $2 + 0; exit }'
}

for i in $(seq "$LOW"); do post_both "$tmp/low$i.json" low; done
# The high-priority requests go in once both stubs queue the flood.
for _ in $(seq 100); do
	[ "$(waiting "$a")" -gt 0 ] 2>/dev/null && [ "$(waiting "$b")" -gt 0 ] 2>/dev/null && break
	sleep 0.05
done
echo "waiting when the high-priority requests start: $a $(waiting "$a"), $b $(waiting "$b")"
for i in $(seq "$HIGH"); do
	post_both "$tmp/high$i.json" high
	sleep "$GAP" # pacing the arrivals, not waiting for anything
done
for p in "${cpids[@]}"; do wait "$p" 2>/dev/null; done

# stats FILE: mean p50 max of its times, in model seconds.
stats() {
	sort -g "$1" | awk -v s="$SCALE" '{ v[NR] = $1 * s; t += v[NR] }
		END { printf "%.3f %.3f %.3f", t / NR, v[int((NR + 1) / 2)], v[NR] }'
}
lo='priority 10' hi='priority 0'
[ "$THROUGH" = haproxy ] && lo='sheddable (X-Request-Class)' hi='standard (no class)'
printf 'flood: %d requests of %d prompt tokens, %d output tokens, %s; %d high-priority requests of 100 tokens, 1 output token, %s, %ss apart; --time-scale %s (model seconds)\n' \
	"$LOW" $((LOW_BYTES / 4)) "$LOW_TOKENS" "$lo" "$HIGH" "$hi" "$GAP" "$SCALE"
printf '%-9s %-28s %s\n' side 'high TTFT mean/p50/max (s)' 'flood E2E mean (s)'
declare -A mean lowmean
for pol in "${sides[@]}"; do
	read -r m p x <<<"$(stats "$tmp/$pol.high")"
	read -r lm _ _ <<<"$(stats "$tmp/$pol.low")"
	printf '%-9s %-28s %s\n' "$pol" "$m / $p / $x" "$lm"
	mean[$pol]=$m lowmean[$pol]=$lm
done
awk -v a="${mean[$a]}" -v b="${mean[$b]}" -v c="${lowmean[$a]}" -v d="${lowmean[$b]}" -v A="$a" -v B="$b" \
	'BEGIN { printf "high TTFT %s/%s: %.1fx; flood E2E %s/%s: %.2fx\n", A, B, a / b, B, A, d / c }'
for pol in "${sides[@]}"; do
	printf '%s: %s requests served, preemptions %s\n' "$pol" \
		"$(($(wc -l <"$tmp/$pol.low") + $(wc -l <"$tmp/$pol.high")))" \
		"$(curl -s --max-time 5 "http://127.0.0.1:${port[$pol]}/metrics" | awk '/^vllm:num_preemptions_total\{/ { print $2; exit }')"
done
