#!/usr/bin/env bash
# What scraping costs the agent: two dbucket-spoa side by side, naming the
# same N servers, one scraping each server's /metrics every interval (and
# /v1/models every 10 s), the other idle; their CPU time from
# /proc/PID/stat over the same window, as a share of one core. The
# servers are one HAProxy answering a fixed /metrics body on N loopback
# ports (the stub's fixture, vLLM's shape, by default), so no engine runs.
#
#   contrib/bench-scrape.sh [--servers N] [--seconds S] [--interval MS]
#                           [--pad KB | --filtered] [--tls] [--pools P]
#
# --pools P: both agents run P pools (--pool p0 ... ) of N servers each,
# P x N ports in all.
#
# --pad KB appends families the policy does not read (histograms) until
# the body is about KB kilobytes: a real vLLM's /metrics is tens of KB.
# --filtered serves only the families the agent asks for (its name[]
# query, which prometheus_client honours): what a server that filters
# costs the agent.
# --tls serves https (HAProxy terminates TLS with a self-signed certificate
# made here) and the agent scrapes https:// through libcurl, its CA given
# with --scrape-ca: what an https scrape costs beside a plain one.
# CPU time is counted in clock ticks (getconf CLK_TCK, 100 on Linux): over
# S seconds one tick is 1/S % of a core (0.03 % at 30 s), small beside the
# 1 % the scraper is allowed.
# Everything listens on 127.0.0.1 and is stopped by pid on exit.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

servers=64 seconds=60 interval=100 pad=0 filtered=0 tls=0 pools=1
dbk_options "--pools pools
--servers servers
--seconds seconds
--interval interval
--pad pad
--filtered filtered=1
--tls tls=1" "$@"

dbk_tmp_dir

body=$tmp/metrics.prom
cp contrib/stub/fixtures/vllm-metrics.prom "$body"
# The families agent/vllm_metrics.c reads, as its name[] query names them.
[ "$filtered" = 1 ] && grep -E '^(# (HELP|TYPE) )?vllm:(num_requests_running|num_requests_waiting|kv_cache_usage_perc|prefix_cache_queries|prefix_cache_hits|num_preemptions|cache_config_info)[_a-z]*[ {]|^vllm:time_to_first_token_seconds_(sum|count)[ {]' \
	contrib/stub/fixtures/vllm-metrics.prom | grep -v '_created' >"$body"
k=0
while [ "$(stat -c %s "$body")" -lt $((pad * 1024)) ] && [ $k -lt 10000 ]; do
	sed -n "s/vllm:time_to_first_token_seconds/vllm:pad${k}_seconds/p" \
		contrib/stub/fixtures/vllm-metrics.prom >>"$body"
	k=$((k + 1))
done

per_pool=$servers
servers=$((servers * pools))
base=$(dbk_ports $((servers + 4)))
last=$((base + servers - 1))
scheme=http bind_tls="" ca=()
if [ "$tls" = 1 ]; then
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
		-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
	cat "$tmp/cert.pem" "$tmp/key.pem" >"$tmp/crt.pem"
	scheme=https bind_tls="ssl crt $tmp/crt.pem" ca=(--scrape-ca "$tmp/cert.pem")
fi
cat >"$tmp/servers.cfg" <<EOF
global
  log stderr format raw local0 err
  # http-request return serves a file from one buffer.
  tune.bufsize 262144
defaults
  mode http
  timeout client 30s
  timeout server 30s
  timeout connect 5s
frontend metrics
  bind 127.0.0.1:$base-$last $bind_tls
  http-request return status 200 content-type application/json string '{"object":"list","data":[{"id":"stub-model","max_model_len":32768}]}' if { path /v1/models }
  http-request return status 200 content-type "text/plain; version=0.0.4" file $body
EOF
haproxy -f "$tmp/servers.cfg" 2>"$tmp/haproxy.log" &
pids+=($!)
dbk_wait_port "$last"

# One pool's names (and, scraping, their --scrape), or with --pools P
# every pool's after its --pool: server s$i of pool k at port base + k*N + i.
names() { # names SCRAPE(0|1)
	local k i
	for ((k = 0; k < pools; k++)); do
		[ "$pools" -gt 1 ] && echo "--pool" && echo "p$k"
		for ((i = 0; i < per_pool; i++)); do
			[ "$1" = 1 ] && echo "--scrape" && echo "s$i=$scheme://127.0.0.1:$((base + k * per_pool + i))"
		done
		for ((i = 0; i < per_pool; i++)); do echo "s$i"; done
	done
}
# agent PORT ADMIN_PORT SCRAPE ARGS...: started in the background, pid appended.
agent() {
	local -a tail
	mapfile -t tail < <(names "$3")
	"$BUILD/dbucket-spoa" --listen "127.0.0.1:$1" --completion-listen none \
		--admin-listen "127.0.0.1:$2" --log-level warn "${@:4}" "${tail[@]}" \
		2>>"$tmp/agent-$1.log" &
	pids+=($!)
}
p=$((last + 1))
agent $p $((p + 1)) 1 --policy ttft --scrape-interval "$interval" "${ca[@]}"
scraper=${pids[-1]}
agent $((p + 2)) $((p + 3)) 0 --policy ttft
idle=${pids[-1]}
dbk_wait_port $((p + 1))
dbk_wait_port $((p + 3))
# Every server scraped once before the window opens (bounded, 10 s).
scraped() { curl -s "http://127.0.0.1:$((p + 1))/metrics" | grep -c '^dbucket_scrape_up{.*} 1$' || true; }
all_scraped() { [ "$(scraped)" -ge "$servers" ]; }
dbk_wait_until 10 all_scraped || { echo "$DBK_WHO: only $(scraped) of $servers servers scraped" >&2; exit 1; }

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
scrapes() {
	curl -s "http://127.0.0.1:$((p + 1))/metrics" |
		awk '/^dbucket_scrapes_total\{/ { s += $2 } /^dbucket_scrape_failures_total\{/ { f += $2 }
		     END { printf "%d %d\n", s, f }'
}
hz=$(getconf CLK_TCK)
# The scraper's time in the kernel (stime), apart: loopback TCP's share.
kticks() { awk '{ print $15 }' "/proc/$1/stat"; }
a0=$(ticks "$scraper") b0=$(ticks "$idle") h0=$(ticks "${pids[0]}") k0=$(kticks "$scraper")
read -r s0 f0 < <(scrapes)
load0=$(cut -d' ' -f1 /proc/loadavg)
sleep "$seconds" # the measurement window, not a synchronisation
a1=$(ticks "$scraper") b1=$(ticks "$idle") h1=$(ticks "${pids[0]}") k1=$(kticks "$scraper")
read -r s1 f1 < <(scrapes)
load1=$(cut -d' ' -f1 /proc/loadavg)

pct() { awk -v t="$1" -v hz="$hz" -v s="$seconds" 'BEGIN { printf "%.3f", 100 * t / hz / s }'; }
echo "scheme=$scheme pools=$pools servers=$servers interval_ms=$interval seconds=$seconds body_bytes=$(stat -c %s "$body") loadavg=$load0..$load1"
echo "scrapes=$((s1 - s0)) ($(awk -v n=$((s1 - s0)) -v s="$seconds" 'BEGIN { printf "%.0f", n / s }')/s) failures=$((f1 - f0))"
echo "scraping agent CPU: $(pct $((a1 - a0)))% of one core ($(pct $((k1 - k0)))% in the kernel)"
echo "idle agent CPU:     $(pct $((b1 - b0)))% of one core"
echo "scraping cost:      $(pct $((a1 - a0 - (b1 - b0))))% of one core (difference)"
echo "per scrape:         $(awk -v t=$((a1 - a0 - (b1 - b0))) -v hz="$hz" -v n=$((s1 - s0)) \
	'BEGIN { printf "%.1f", n ? 1e6 * t / hz / n : 0 }') us of agent CPU"
echo "servers (HAProxy):  $(pct $((h1 - h0)))% of one core"
