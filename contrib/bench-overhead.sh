#!/usr/bin/env bash
# The overhead benchmark: what the agent costs a request, end to end.
# wrk posts small and larger JSON bodies to a fast backend (HAProxy
# answering from memory, `http-request return`) through five
# configurations:
#   direct         wrk straight to the backend (no front HAProxy)
#   haproxy        the front HAProxy alone (haproxy/haproxy.cfg without the
#                  SPOE filter and its send-spoe-group rules)
#   +null-agent    the same HAProxy with the filter, answered by
#                  build/dbucket-null-agent (sets txn.dbucket.server only,
#                  always vllm0, and reads and drops the completion lines):
#                  the ceiling for any agent
#   +null-agent/4  the same, naming vllm0..vllm3 in turn: the ceiling for
#                  an agent that spreads requests as dbucket-spoa does
#   +dbucket-spoa  the same with the real agent (dynamic buckets, leases
#                  released by the completion lines, which come twice: by
#                  the ring and as datagrams, as in the sample)
#   +dbucket-spoa, ring only
#                  the same without the datagram log line: what the
#                  second copy of each completion line costs HAProxy
# Requests/s and latency p50/p99 (wrk --latency), each as a ratio to
# "haproxy", medians over rounds that alternate the configurations in one
# run; then dbucket-spoa's req/s over each null agent's and over its own
# ring-only run, paired within a round (median and range over rounds).
# Prints a table and a markdown table for BENCHMARKS.md. About 4 minutes
# with the defaults.
#
#   contrib/bench-overhead.sh [--rounds N] [--seconds S] [--connections C]
#                                  [--bodies "100 6000"] [--threads T]
#
# SPOA_ARGS replaces dbucket-spoa's balancing flags (default
# --enable-dynamic-bucket; e.g. "--policy ttft"), DBK_SPOE_CONF the SPOE
# configuration (default haproxy/dbucket.spoe.conf).
#
# Every front HAProxy runs the same configuration derived from
# haproxy/haproxy.cfg (same log-format, unique-id, completion ring and
# datagrams); only where they and the SPOE agent point differs, and the
# ring-only run drops the datagram log line. Everything listens on
# 127.0.0.1 and is stopped by pid on exit (KEEP_TMP=1 keeps the logs and
# generated configurations).
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}

rounds=3 seconds=3 conns=32 bodies="100 6000" threads=1
dbk_wrk_options "--threads threads" "$@"
dbk_need_cmds wrk haproxy curl jq
dbk_need_bins dbucket-spoa dbucket-null-agent

dbk_tmp_dir
dbk_start_fast_backends "$(dbk_ports 4)"
DIRECT_PORT=${DBK_VLLM0##*:}

# The agents. The null agents also swallow the completion lines (ring and
# datagrams) of the HAProxy instances not in front of dbucket-spoa, so
# that every instance does the same logging work: a datagram to a port
# nobody reads is dropped by the kernel at once, one that is read is
# queued and wakes its reader, on the cores HAProxy runs on.
NULL_SPOP=$(dbk_port) NULL_RING=$(dbk_port)
"$BUILD/dbucket-null-agent" --listen "127.0.0.1:$NULL_SPOP" --completion-listen "127.0.0.1:$NULL_RING" \
	--completion-listen "udp@127.0.0.1:$NULL_RING" --server vllm0 2>"$tmp/null-agent.log" &
NULL_PID=$!
pids+=("$NULL_PID")
NULL4_SPOP=$(dbk_port) NULL4_RING=$(dbk_port)
"$BUILD/dbucket-null-agent" --listen "127.0.0.1:$NULL4_SPOP" --completion-listen "127.0.0.1:$NULL4_RING" \
	--completion-listen "udp@127.0.0.1:$NULL4_RING" --server vllm0 --server vllm1 --server vllm2 --server vllm3 2>"$tmp/null4-agent.log" &
NULL4_PID=$!
pids+=("$NULL4_PID")
SPOA_SPOP=$(dbk_port) SPOA_RING=$(dbk_port) SPOA_ADMIN=$(dbk_port)
"$BUILD/dbucket-spoa" --listen "127.0.0.1:$SPOA_SPOP" --completion-listen "127.0.0.1:$SPOA_RING" \
	--completion-listen "udp@127.0.0.1:$SPOA_RING" \
	--admin-listen "127.0.0.1:$SPOA_ADMIN" ${SPOA_ARGS:---enable-dynamic-bucket} --log-level warn \
	vllm0 vllm1 vllm2 vllm3 2>"$tmp/spoa-agent.log" &
pids+=($!)
dbk_wait_port "$NULL_SPOP"
dbk_wait_port "$NULL4_SPOP"
dbk_wait_port "$SPOA_SPOP"

# One configuration for all: the sample's, logging only errors to stderr
# (the completion ring keeps its info-level lines). "haproxy" drops the
# filter and the rules that use it, nothing else.
dbk_quiet_cfg "$tmp/spoe.cfg"
grep -v -e 'filter spoe' -e 'send-spoe-group' "$tmp/spoe.cfg" >"$tmp/plain.cfg"
grep -v '^    log "${DBK_COMPLETIONS_UDP' "$tmp/spoe.cfg" >"$tmp/ring.cfg"
export DBK_SPOE_CONF=${DBK_SPOE_CONF:-$REPO/haproxy/dbucket.spoe.conf}
PLAIN_PORT=$(dbk_port) NULLH_PORT=$(dbk_port) NULL4H_PORT=$(dbk_port) SPOAH_PORT=$(dbk_port)
RINGH_PORT=$(dbk_port)
dbk_front plain "$PLAIN_PORT" "$tmp/plain.cfg" "127.0.0.1:$NULL_SPOP" "127.0.0.1:$NULL_RING"
dbk_front null "$NULLH_PORT" "$tmp/spoe.cfg" "127.0.0.1:$NULL_SPOP" "127.0.0.1:$NULL_RING"
dbk_front null4 "$NULL4H_PORT" "$tmp/spoe.cfg" "127.0.0.1:$NULL4_SPOP" "127.0.0.1:$NULL4_RING"
dbk_front spoa "$SPOAH_PORT" "$tmp/spoe.cfg" "127.0.0.1:$SPOA_SPOP" "127.0.0.1:$SPOA_RING"
dbk_front ring "$RINGH_PORT" "$tmp/ring.cfg" "127.0.0.1:$SPOA_SPOP" "127.0.0.1:$SPOA_RING"
for p in "$PLAIN_PORT" "$NULLH_PORT" "$NULL4H_PORT" "$SPOAH_PORT" "$RINGH_PORT" "$DIRECT_PORT"; do
	dbk_wait_port "$p"
done

# run CFG BODY [SECONDS [FILE]]: one wrk run; appends
# "cfg body rps p50_us p99_us requests non2xx errors round" to FILE (results)
ROUND=0
run() {
	local cfg=$1 body=$2 secs=${3:-$seconds} file=${4:-$tmp/results} port out
	case $cfg in
	direct) port=$DIRECT_PORT ;;
	haproxy) port=$PLAIN_PORT ;;
	null) port=$NULLH_PORT ;;
	null4) port=$NULL4H_PORT ;;
	spoa) port=$SPOAH_PORT ;;
	ring) port=$RINGH_PORT ;;
	esac
	out=$(wrk -t "$threads" -c "$conns" -d "${secs}s" --latency -s "$tmp/post-$body.lua" \
		"http://127.0.0.1:$port/v1/completions")
	echo "$out" | awk -v c="$cfg" -v b="$body" -v r="$ROUND" '
		function us(v) {
			if (v ~ /us$/) return v + 0
			if (v ~ /ms$/) return (v + 0) * 1000
			if (v ~ /s$/) return (v + 0) * 1e6
			return v + 0
		}
		/^Requests\/sec/ { rps = $2 }
		/^ +50%/ { p50 = us($2) }
		/^ +99%/ { p99 = us($2) }
		/requests in/ { n = $1 }
		/Non-2xx/ { bad = $NF }
		/Socket errors/ { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
		END { printf "%s %s %s %.1f %.1f %d %d %d %d\n", c, b, rps, p50, p99, n, bad, err, r }' >>"$file"
	tail -n 1 "$file" | awk '{ printf "  %-8s body=%sB %10s req/s p50=%sus p99=%sus non2xx=%s errors=%s\n", $1, $2, $3, $4, $5, $7, $8 }' >&2
}

for body in $bodies; do dbk_wrk_post_lua "$body" >"$tmp/post-$body.lua"; done
echo "== overhead: wrk -t $threads -c $conns, ${seconds}s per run, $rounds rounds, bodies: $bodies" >&2
# A short warm-up opens the SPOP connections and fills the caches.
: >"$tmp/results"
: >"$tmp/warmup"
echo "warm-up" >&2
for cfg in haproxy null null4 spoa ring; do run "$cfg" "${bodies%% *}" 1 "$tmp/warmup"; done
dbk_rounds "direct haproxy null null4 spoa ring" run

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sel() { awk -v c="$1" -v b="$2" -v k="$3" '$1 == c && $2 == b { print $k }' "$tmp/results" | median; }
label() {
	case $1 in
	direct) echo "direct to backend" ;;
	haproxy) echo "HAProxy alone" ;;
	null) echo "HAProxy + null agent" ;;
	null4) echo "HAProxy + null agent/4" ;;
	spoa) echo "HAProxy + dbucket-spoa" ;;
	ring) echo "HAProxy + dbucket-spoa, ring only" ;;
	esac
}
printf '\n%-6s %-24s %10s %7s %9s %7s %9s %7s %7s\n' body configuration "req/s" ratio "p50 us" ratio "p99 us" ratio errors
md="| body | configuration | req/s | vs HAProxy | p50 | vs HAProxy | p99 | vs HAProxy |
|---|---|---:|---:|---:|---:|---:|---:|"
for body in $bodies; do
	base_rps=$(sel haproxy "$body" 3) base_p50=$(sel haproxy "$body" 4) base_p99=$(sel haproxy "$body" 5)
	for cfg in direct haproxy null null4 spoa ring; do
		rps=$(sel "$cfg" "$body" 3) p50=$(sel "$cfg" "$body" 4) p99=$(sel "$cfg" "$body" 5)
		errs=$(awk -v c="$cfg" -v b="$body" '$1 == c && $2 == b { s += $7 + $8 } END { print s + 0 }' "$tmp/results")
		read -r r1 r2 r3 < <(awk -v a="$rps" -v b="$base_rps" -v c="$p50" -v d="$base_p50" -v e="$p99" -v f="$base_p99" \
			'BEGIN { printf "%.3f %.2f %.2f\n", (b > 0 ? a / b : 0), (d > 0 ? c / d : 0), (f > 0 ? e / f : 0) }')
		printf '%-6s %-24s %10.0f %7s %9.1f %7s %9.1f %7s %7s\n' "${body}B" "$(label "$cfg")" "$rps" "$r1" "$p50" "$r2" "$p99" "$r3" "$errs"
		md="$md
| ${body} B | $(label "$cfg") | $(printf '%.0f' "$rps") | $r1 | $(printf '%.0f' "$p50") µs | $r2 | $(printf '%.0f' "$p99") µs | $r3 |"
	done
done

# The target is a ratio of two neighbours, so pair them: within each
# round, dbucket-spoa's req/s over the null agent's, both run minutes
# apart at most under the same background load.
echo
for body in $bodies; do
	for ceil in null null4 ring; do
		awk -v b="$body" -v c="$ceil" '$2 == b && $1 == c { n[$9] = $3 } $2 == b && $1 == "spoa" { s[$9] = $3 }
			END { for (r in s) if (n[r] > 0) print s[r] / n[r] }' "$tmp/results" | sort -g |
			awk -v b="$body" -v c="$(label "$ceil")" '{ v[NR] = $1 } END {
				m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "paired %sB: dbucket-spoa / %s req/s, per round: median %.3f, range %.3f-%.3f over %d rounds\n", b, substr(c, 11), m, v[1], v[NR], NR }'
	done
done

# Did the agents decide? Every POST through a filtered HAProxy is one
# NOTIFY; dbucket-spoa's leases should all be released by the ring.
reqs() { awk -v c="$1" '$1 == c { s += $6 } END { print s + 0 }' "$tmp/results" "$tmp/warmup"; }
state=$(curl -s --max-time 2 "http://127.0.0.1:$SPOA_ADMIN/state" || true)
jget() { dbk_json_field "$1" <<<"$state"; }
kill "$NULL_PID" "$NULL4_PID" 2>/dev/null || true
wait "$NULL_PID" "$NULL4_PID" 2>/dev/null || true
echo
# wrk counts only the requests answered within its run, so the agents may
# see a few more (one per connection at most).
echo "check: dbucket-spoa: requests sent through it $(($(reqs spoa) + $(reqs ring))), decisions=$(jget decisions)" \
	"leases left=$(jget leases) refused=$(jget refused) completions=$(jget completions)" \
	"duplicates=$(jget completion_duplicates) unknown=$(jget unknown_releases)"
# The null agent's counters: its NOTIFYs, and the completion datagrams
# it read (every HAProxy here sends one a request).
null_counters() { sed -n 's/^dbucket-null-agent: //p' "$1" | tr ' ' '\n' | grep -E '^(accepted|hellos|healthchecks|notifies|acks|completion_datagrams)=' | tr '\n' ' '; }
echo "check: null agent: requests sent through it $(reqs null)," \
	"$(null_counters "$tmp/null-agent.log")"
echo "check: null agent/4: requests sent through it $(reqs null4)," \
	"$(null_counters "$tmp/null4-agent.log")"
echo
echo "Markdown:"
echo
echo "$md"
echo
echo "(wrk -t $threads -c $conns --latency, ${seconds}s x $rounds rounds, medians; fast backend: HAProxy http-request return; $(nproc) cores, nothing pinned)"
for name in plain null null4 spoa ring; do
	grep -iE 'alert|error' "$tmp/$name.log" | head -3 || true
done
