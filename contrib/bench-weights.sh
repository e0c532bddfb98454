#!/usr/bin/env bash
# HAProxy's weights and slow start through the agent: two vLLM stubs
# behind HAProxy (haproxy/haproxy.cfg, its servers replaced by vllm0
# "weight 10 slowstart 10s" and vllm1 "weight 3"), the agent reading them
# from the runtime API, C clients streaming one completion after another.
# After WARM seconds vllm0 is put in maintenance for 2 s and brought back:
# HAProxy ramps its effective weight over the slowstart, and the agent's
# share of requests to it should follow. Prints, per second since vllm0
# came back, the requests the agent routed, vllm0's share and HAProxy's
# effective weight of vllm0 then.
#
#   contrib/bench-weights.sh [--policy NAME] [--clients C] [--warm S]
#                            [--seconds S]
#
# Everything listens on loopback and is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

policy=reference clients=13 warm=4 seconds=14
dbk_options "--policy policy
--clients clients
--warm warm
--seconds seconds" "$@"
dbk_need_bins dbucket-spoa vllm-stub
dbk_need_cmds haproxy socat curl
dbk_tmp_dir

base=$(dbk_ports 8)
front=$base agent=$((base + 1)) ring=$((base + 2)) admin=$((base + 3))
for i in 0 1; do
	"$BUILD/vllm-stub" --host 127.0.0.1 --port $((base + 4 + i)) --name "vllm$i" \
		>/dev/null 2>"$tmp/stub$i.log" &
	pids+=($!)
	dbk_wait_port $((base + 4 + i))
done
SERVERS="    server vllm0 127.0.0.1:$((base + 4)) weight 10 slowstart 10s
    server vllm1 127.0.0.1:$((base + 5)) weight 3" awk '
	/^    server vllm[0-9] / { if (!done) print ENVIRON["SERVERS"]; done = 1; next }
	{ print }' haproxy/haproxy.cfg >"$tmp/h.cfg"
sed -i 's/^    log stderr format raw local0 info$/    log stderr format raw local0 err/' "$tmp/h.cfg"
DBK_DEBUG_HEADERS=1 dbk_front front "$front" "$tmp/h.cfg" "127.0.0.1:$agent" "127.0.0.1:$ring" \
	"$REPO/haproxy/dbucket.spoe.conf"
sock=$tmp/front.sock
dbk_wait_port "$front"
"$BUILD/dbucket-spoa" --listen "127.0.0.1:$agent" --completion-listen "127.0.0.1:$ring" \
	--completion-listen "udp@127.0.0.1:$ring" --admin-listen "127.0.0.1:$admin" \
	--haproxy-socket "unix:$sock" --poll-interval 100 --policy "$policy" --log-level warn \
	2>"$tmp/agent.log" &
pids+=($!)
dbk_wait_port "$admin"

body=$tmp/body.json
printf '{"model":"stub-model","max_tokens":24,"ignore_eos":true,"stream":true,"prompt":"%s"}' \
	"$(head -c 400 /dev/zero | tr '\0' a)" >"$body"
# client I: one request after another until $tmp/stop; "start_us server".
client() {
	local n=0 t0 s
	while [ ! -e "$tmp/stop" ] && [ $n -lt 100000 ]; do
		t0=${EPOCHREALTIME/[.,]/}
		s=$(curl -s -N --max-time 30 -o /dev/null -D - -H 'Content-Type: application/json' \
			--data-binary "@$body" "http://127.0.0.1:$front/v1/completions" |
			tr -d '\r' | awk 'tolower($1) == "x-dbucket-server:" { print $2 }')
		echo "$t0 ${s:--}" >>"$tmp/req.$1"
		n=$((n + 1))
	done
}
cpids=()
for ((i = 0; i < clients; i++)); do
	client "$i" </dev/null >/dev/null 2>&1 &
	cpids+=($!)
	pids+=($!)
done
weight() { echo "show stat vllm 4 -1" | socat -t 2 - "UNIX-CONNECT:$sock" | awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "weight") w = i }
	$2 == "vllm0" { print $w }'; }
sleep "$warm"
echo "disable server vllm/vllm0" | socat - "UNIX-CONNECT:$sock" >/dev/null
sleep 2
echo "enable server vllm/vllm0" | socat - "UNIX-CONNECT:$sock" >/dev/null
t_on=${EPOCHREALTIME/[.,]/}
end=$((t_on + seconds * 1000000))
while ((${EPOCHREALTIME/[.,]/} < end)); do
	echo "${EPOCHREALTIME/[.,]/} $(weight)" >>"$tmp/weights"
	sleep 0.25
done
touch "$tmp/stop"
# Each client ends after its request in flight (curl --max-time 30).
wait "${cpids[@]}" 2>/dev/null || true
dbk_forget "${cpids[@]}"
cat "$tmp"/req.* >"$tmp/req"
echo "policy=$policy clients=$clients: vllm0 weight 10 slowstart 10s, vllm1 weight 3; vllm0 back at t=0"
awk -v t0="$t_on" -v secs="$seconds" -v warm="$warm" '
	FNR == NR { s = int(($1 - t0) / 1e6); if ($1 >= t0) w[s] = $2; next }
	{
		if ($1 < t0 - (warm + 2) * 1e6) next
		s = $1 < t0 - 2e6 ? -1 : $1 < t0 ? -2 : int(($1 - t0) / 1e6)
		if (s >= secs) next
		n[s]++; if ($2 == "vllm0") k[s]++
	}
	END {
		printf "%-10s %9s %12s %14s\n", "second", "requests", "vllm0 share", "vllm0 weight"
		printf "%-10s %9d %11.0f%% %14s\n", "before", n[-1], 100 * k[-1] / (n[-1] ? n[-1] : 1), "10"
		printf "%-10s %9d %11.0f%% %14s\n", "maint", n[-2], 100 * k[-2] / (n[-2] ? n[-2] : 1), "-"
		for (s = 0; s < secs; s++)
			printf "%-10s %9d %11.0f%% %14s\n", s "-" s + 1, n[s], 100 * k[s] / (n[s] ? n[s] : 1), (s in w) ? w[s] : "?"
	}' "$tmp/weights" "$tmp/req"
