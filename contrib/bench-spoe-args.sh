#!/usr/bin/env bash
# What HAProxy pays for what it sends the agent: its CPU time per request
# for five versions of the dbucket-route message, each in a front HAProxy
# of its own (haproxy/haproxy.cfg, answered by build/dbucket-null-agent,
# which reads nothing, so only HAProxy's side is measured):
#   none           no SPOE filter at all
#   no body        id, blen, details, session: the message without the
#                  body sample
#   sample         the shipped message: the body's first 15,000 bytes
#   sample+hashes  the same and BLOCKS hashes of the body's 1 KB blocks
#                  (req.body,bytes(1024*i,1024),xxh3), what a router that
#                  keys prefixes on raw bytes would ask HAProxy for
#   hashes         those hashes and only the first 1 KB of the body (for
#                  max_tokens and the like)
# Throughput on this shared machine moves with whatever else runs; CPU
# time per request much less, so that is what is compared: HAProxy's
# utime+stime over wrk's requests, per run, and each version's ratio to
# "sample" paired within a round (median and range over rounds). About
# 2.5 minutes with the defaults.
#
#   contrib/bench-spoe-args.sh [--rounds N] [--seconds S] [--connections C]
#                              [--bodies "6000 15000"] [--blocks K]
#
# Everything listens on 127.0.0.1 and is stopped by pid on exit (KEEP_TMP=1
# keeps the logs and generated configurations).
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

rounds=5 seconds=3 conns=32 bodies="6000 15000" blocks=14
dbk_wrk_options "--blocks blocks" "$@"
dbk_need_cmds wrk haproxy
dbk_need_bins dbucket-null-agent
case $blocks in '' | *[!0-9]*) dbk_bad_option "--blocks $blocks" ;; esac

dbk_tmp_dir
dbk_start_fast_backends "$(dbk_ports 4)"
SPOP=$(dbk_port) RING=$(dbk_port)
"$BUILD/dbucket-null-agent" --listen "127.0.0.1:$SPOP" --completion-listen "127.0.0.1:$RING" \
	--server vllm0 2>"$tmp/null-agent.log" &
pids+=($!)
dbk_wait_port "$SPOP"

# The SPOE configurations: the shipped one with its route message's
# arguments replaced.
shipped=$(grep -E '^ +args id=unique-id blen=' haproxy/dbucket.spoe.conf)
[ "$(wc -l <<<"$shipped")" -eq 1 ] || { echo "$DBK_WHO: no single route message in haproxy/dbucket.spoe.conf" >&2; exit 1; }
hashes=""
for ((i = 0; i < blocks; i++)); do hashes="$hashes k$i=req.body,bytes($((i * 1024)),1024),xxh3"; done
spoe() { # spoe NAME ARGS: haproxy/dbucket.spoe.conf with the route message's ARGS
	awk -v old="$shipped" -v new="    args $2" '$0 == old { print new; next } { print }' \
		haproxy/dbucket.spoe.conf >"$tmp/$1.spoe.conf"
}
spoe nobody "id=unique-id blen=req.body_size details=env(DBK_DEBUG_HEADERS) session=req.hdr(x-session-id)"
spoe sample "${shipped#*args }"
spoe samplehash "${shipped#*args }$hashes"
spoe hash "id=unique-id blen=req.body_size body=req.body,bytes(0,1024) details=env(DBK_DEBUG_HEADERS) session=req.hdr(x-session-id)$hashes"

dbk_quiet_cfg "$tmp/spoe.cfg"
grep -v -e 'filter spoe' -e 'send-spoe-group' "$tmp/spoe.cfg" >"$tmp/plain.cfg"
declare -A PORT HPID
front() { # front NAME CFG [SPOE-CONF]
	PORT[$1]=$(dbk_port)
	dbk_front "$1" "${PORT[$1]}" "$2" "127.0.0.1:$SPOP" "127.0.0.1:$RING" "${3:-/dev/null}"
	HPID[$1]=$DBK_FRONT_PID
}
versions="none nobody sample samplehash hash"
front none "$tmp/plain.cfg"
for v in nobody sample samplehash hash; do front "$v" "$tmp/spoe.cfg" "$tmp/$v.spoe.conf"; done
for v in $versions; do dbk_wait_port "${PORT[$v]}"; done
for body in $bodies; do dbk_wrk_post_lua "$body" >"$tmp/post-$body.lua"; done

cpu_ticks() { # cpu_ticks PID: utime + stime, in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}
# run VERSION BODY [SECONDS [FILE]]: appends "version body rps requests
# cpu_us_per_request round" to FILE
TICK_US=$((1000000 / $(getconf CLK_TCK)))
ROUND=0
run() {
	local v=$1 body=$2 secs=${3:-$seconds} file=${4:-$tmp/results} t0 t1 out
	t0=$(cpu_ticks "${HPID[$v]}")
	out=$(wrk -t 1 -c "$conns" -d "${secs}s" -s "$tmp/post-$body.lua" "http://127.0.0.1:${PORT[$v]}/v1/completions")
	t1=$(cpu_ticks "${HPID[$v]}")
	awk -v v="$v" -v b="$body" -v r="$ROUND" -v t=$(((t1 - t0) * TICK_US)) '
		/^Requests\/sec/ { rps = $2 }
		/requests in/ { n = $1 }
		/Non-2xx/ { bad = $NF }
		END {
			if (bad > 0 || n == 0) { printf "%s: %s B: %d non-2xx of %d\n", v, b, bad, n > "/dev/stderr"; exit 1 }
			printf "%s %s %s %d %.2f %d\n", v, b, rps, n, t / n, r
		}' <<<"$out" >>"$file"
	tail -n 1 "$file" | awk '{ printf "  %-10s body=%sB %8.0f req/s %7.2f us of HAProxy CPU a request\n", $1, $2, $3, $5 }' >&2
}

echo "== HAProxy's cost of the route message: wrk -c $conns, ${seconds}s a run, $rounds rounds, bodies: $bodies, $blocks block hashes" >&2
echo "warm-up" >&2
for v in $versions; do run "$v" "${bodies%% *}" 1 "$tmp/warmup"; done
: >"$tmp/results"
dbk_rounds "$versions" run

label() {
	case $1 in
	none) echo "no SPOE filter" ;;
	nobody) echo "message without body" ;;
	sample) echo "15 KB sample (shipped)" ;;
	samplehash) echo "sample + $blocks hashes" ;;
	hash) echo "1 KB sample + $blocks hashes" ;;
	esac
}
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "| body | message | req/s | HAProxy CPU µs a request | over no filter | ratio to the sample, paired (range) |"
echo "|---|---|---:|---:|---:|---:|"
for body in $bodies; do
	base=$(awk -v b="$body" '$1 == "none" && $2 == b { print $5 }' "$tmp/results" | med)
	for v in $versions; do
		rps=$(awk -v v="$v" -v b="$body" '$1 == v && $2 == b { print $3 }' "$tmp/results" | med)
		us=$(awk -v v="$v" -v b="$body" '$1 == v && $2 == b { print $5 }' "$tmp/results" | med)
		ratio=$(awk -v v="$v" -v b="$body" '$2 == b && $1 == v { x[$6] = $5 } $2 == b && $1 == "sample" { s[$6] = $5 }
			END { for (r in x) if (s[r] > 0) print x[r] / s[r] }' "$tmp/results" | sort -g |
			awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }')
		awk -v b="$body" -v l="$(label "$v")" -v r="$rps" -v u="$us" -v z="$base" -v q="$ratio" \
			'BEGIN { printf "| %s B | %s | %.0f | %.1f | %+.1f | %s |\n", b, l, r, u, u - z, q }'
	done
done
echo
echo "(wrk -t 1 -c $conns, ${seconds}s x $rounds rounds, medians; HAProxy $(haproxy -v | awk 'NR == 1 { print $3 }'); fast backend: HAProxy http-request return; the null agent answers vllm0; $(nproc) cores, nothing pinned)"
for v in $versions; do grep -iE 'alert|error' "$tmp/$v.log" | head -3 || true; done
