#!/usr/bin/env bash
# Soak: at least a million short requests through HAProxy + dbucket-spoa
# (dynamic mode, completion events on) to fast backends, in chunks of wrk
# load; the agent's RSS at start, after every chunk and at the end; then
# every lease must be back (leases 0) and decisions must equal releases.
# A benchmark, not a CI test: it takes a few minutes.
#
#   contrib/soak.sh [--requests N] [--chunk-seconds S] [--max-chunks K]
#                   [--connections C]
#
# Loopback only; every process is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

want=1000000 chunk=20 max_chunks=40 conns=64
dbk_options "--requests want
--chunk-seconds chunk
--max-chunks max_chunks
--connections conns" "$@"
dbk_need_cmds jq

dbk_tmp_dir

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$AGENT_PID/status"; }
field() { dbk_state_field "127.0.0.1:$ADMIN" "$1"; }
no_lease() { [ "$(field leases)" = 0 ]; }

base=$(dbk_ports 10)
export DBK_BIND=127.0.0.1:$base DBK_AGENT=127.0.0.1:$((base + 1))
export DBK_COMPLETIONS=127.0.0.1:$((base + 2)) DBK_STATS_BIND=127.0.0.1:$((base + 3))
export DBK_COMPLETIONS_UDP=$DBK_COMPLETIONS
export DBK_STATS_SOCKET=$tmp/haproxy.sock DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
ADMIN=$((base + 4))
dbk_start_fast_backends $((base + 5))

"$BUILD/dbucket-spoa" --enable-dynamic-bucket --listen "$DBK_AGENT" \
	--completion-listen "$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS_UDP" \
	--admin-listen "127.0.0.1:$ADMIN" \
	--log-level warn vllm0 vllm1 vllm2 vllm3 2>"$tmp/agent.log" &
AGENT_PID=$!
pids+=("$AGENT_PID")
dbk_wait_port "$ADMIN"
# Human logs off: a million lines to stderr would measure the terminal.
dbk_quiet_cfg "$tmp/haproxy.cfg"
haproxy -f "$tmp/haproxy.cfg" 2>"$tmp/haproxy.log" &
pids+=($!)
dbk_wait_port "$base"

cat >"$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"m","max_tokens":16,"prompt":"The quick brown fox jumps over the lazy dog."}'
LUA

printf '%-8s %12s %12s %10s %10s\n' chunk requests decisions leases "RSS kB"
printf '%-8s %12s %12s %10s %10s\n' start 0 0 0 "$(rss_kb)"
total=0 errors=0 t0=$(date +%s)
for ((c = 1; c <= max_chunks && total < want; c++)); do
	out=$(wrk -t 2 -c "$conns" -d "${chunk}s" -s "$tmp/post.lua" "http://$DBK_BIND/v1/completions")
	n=$(awk '/requests in/ { print $1 }' <<<"$out")
	e=$(awk '/Non-2xx/ { print $NF } /Socket errors/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' <<<"$out" |
		awk '{ s += $1 } END { print s + 0 }')
	total=$((total + n))
	errors=$((errors + e))
	printf '%-8s %12s %12s %10s %10s\n' "$c" "$total" "$(field decisions)" "$(field leases)" "$(rss_kb)"
done
elapsed=$(($(date +%s) - t0))

# Completion lines trail the last responses by milliseconds.
dbk_wait_until 10 no_lease || true
decisions=$(field decisions) released=$(field released) leases=$(field leases)
expired=$(field expired) unknown=$(field unknown_releases)
printf '%-8s %12s %12s %10s %10s\n' end "$total" "$decisions" "$leases" "$(rss_kb)"
echo
echo "requests=$total in ${elapsed}s ($((total / (elapsed > 0 ? elapsed : 1))) req/s), client errors=$errors"
echo "decisions=$decisions released=$released expired=$expired unknown_releases=$unknown leases=$leases"
ok=1
[ "$total" -ge "$want" ] || { echo "FAIL: fewer than $want requests within $max_chunks chunks"; ok=0; }
[ "$leases" = 0 ] || { echo "FAIL: $leases leases left"; ok=0; }
[ "$decisions" = "$released" ] || { echo "FAIL: decisions != releases"; ok=0; }
[ "$errors" = 0 ] || { echo "FAIL: $errors client errors"; ok=0; }
[ $ok = 1 ] && echo "soak: OK"
[ $ok = 1 ]
