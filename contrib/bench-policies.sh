#!/usr/bin/env bash
# Routing policies compared live: HAProxy round robin, HAProxy leastconn,
# dbucket plain and dbucket dynamic, each in front of four vLLM stubs
# replaying THE SAME slice of a public trace with build/dbucket-bench.
# Prints one table per trace (throughput, goodput, TTFT p50/p99 for short
# and long prompts, TPOT p50/p99, E2E p99, failures, and ratios to
# leastconn), draws PNG plots with gnuplot (TTFT CDF per policy and length
# class, output throughput over time) and writes a markdown summary with
# the exact commands. About 13 minutes; --quick about 3.
#
#   contrib/bench-policies.sh [--quick] [--profile equal|demo|mixed]
#        [--traces mooncake,azure,code] [--policies rr,lc,plain,dynamic,ttft,p2,chash]
#        [--repeats N] [--out DIR] [--no-plots] [--untie MS | --spread-ticks]
#        [--rate-factor F] [--time-scale S] [--start S] [--duration D]
#        [--calibrate] [--max-num-batched-tokens N]
#
#   --traces        mooncake and azure (the recorded traces in
#                   contrib/traces), code: the short-prompt code-assistant
#                   trace contrib/traces/synth/code.py writes with seed 97
#                   (needs python3), at rate factor 21 (75% of
#                   leastconn's SLO capacity on seconds 0-1200 in
#                   dbucket-sim) and time scale 0.25: its four H100s serve
#                   ~160 requests a model second, more than this machine
#                   streams any faster than a quarter of real time
#   --quick         shorter slices
#   --policies      rr, lc, plain, dynamic (default), ttft (dbucket-spoa
#                   --policy ttft, scraping the stubs every 100 ms of model
#                   time), and the peers HAProxy
#                   expresses natively: p2 = `balance random(2)` (power of
#                   two choices on HAProxy's own connection counts), chash =
#                   `balance hdr(X-Session-Id)` + `hash-type consistent`
#                   (the vLLM Router's consistent_hash on the session key;
#                   a request without the header falls back to round
#                   robin). cache_aware and llm-d need a router that reads
#                   the prompt or /metrics: not expressible in haproxy.cfg
#   --profile P     equal: four identical instances (default: the
#                   engine's defaults, 131072 context, 430000 KV tokens);
#                   demo: `make demo`'s, the short group (vllm0, vllm1)
#                   with a 32768 context and 120000 KV tokens; mixed:
#                   as equal, but vllm1 and vllm3 on the A100 profile
#                   (dbucket-sim --gpu h100,a100), a fleet of mixed GPUs
#   --repeats N     run every policy N times, the order rotated each
#                   time; the table shows medians
#   --rate-factor, --time-scale, --start, --duration
#                   override the per-trace defaults (for every trace
#                   selected: use with --traces)
#   --untie MS      Mooncake's timestamps come in 3 s ticks of ~10
#                   requests; the k-th request of a tick is replayed k*MS
#                   ms (trace time) later, so that a burst reaches the
#                   servers in trace order, as dbucket-sim orders it
#                   (default 2; 0 replays the ties as recorded, in
#                   whatever order the network delivers them)
#   --spread-ticks  instead, each tick's requests at uniform random times
#                   before the next tick (dbucket-bench --spread-ticks,
#                   the simulator's seed): arrivals as clients make them
#   --max-num-batched-tokens N
#                   the stubs' step budget (vllm serve's option; default
#                   their GPU's: 8192 H100, 2048 A100), told to ttft and
#                   to dbucket-sim alike
#   --calibrate     no live run: sweep dbucket-sim's leastconn over rate
#                   factors on each slice and print the one that offers
#                   75% of its saturation throughput
#   --out DIR       results (default build/bench)
#
# Each run starts everything afresh: four stubs (--time-scale S), HAProxy
# (and for plain/dynamic dbucket-spoa, reading the servers from HAProxy's
# runtime API); 20 idle probe requests measure the path's own latency,
# then dbucket-bench replays the slice; all is stopped by pid when the run
# ends and on exit. rr and lc run haproxy/haproxy.cfg without the SPOE
# filter, its send-spoe-group rules and the completion ring, with
# `balance roundrobin` / `balance leastconn`; plain and dynamic run it as
# is. The sample's `option http-no-delay` matters here: without it HAProxy
# 2.6 sends a streamed response with MSG_MORE and the kernel holds the SSE
# events back up to 200 ms (real time, x the time scale in model time).
# Everything listens on 127.0.0.1. KEEP_TMP=1 keeps logs and configs.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"
BUILD=${DBK_BUILD:-$REPO/build}
TRACE_DIR=${DBK_TRACES:-$REPO/contrib/traces}
TRACE_DIR=$(cd "$TRACE_DIR" && pwd)

quick=0 profile=equal traces=mooncake,azure policies=rr,lc,plain,dynamic
repeats=1 out=$REPO/build/bench plots=1 untie=2 calibrate=0 spread=0
o_rf="" o_scale="" o_start="" o_dur="" batched=""
tag="" # internal: --tag NAME prefixes every result file (bench-agreement.sh)
dbk_options "--quick quick=1
--profile profile
--traces traces
--policies policies
--repeats repeats
--out out
--no-plots plots=0
--untie untie
--spread-ticks spread=1
--rate-factor o_rf
--time-scale o_scale
--start o_start
--duration o_dur
--calibrate calibrate=1
--max-num-batched-tokens batched
--tag tag" "$@"
[ -z "$tag" ] || tag=$tag-
case $profile in equal|demo|mixed) ;; *) echo "bench-policies: --profile equal, demo or mixed" >&2; exit 2 ;; esac
case $repeats in ''|*[!0-9]*|0) echo "bench-policies: --repeats wants a count >= 1" >&2; exit 2 ;; esac
case $untie in ''|*[!0-9.]*) echo "bench-policies: --untie wants milliseconds" >&2; exit 2 ;; esac
case $batched in '') ;; *[!0-9]*|0*) echo "bench-policies: --max-num-batched-tokens wants a token count >= 1" >&2; exit 2 ;; esac
budget_flag=()
[ -z "$batched" ] || budget_flag=(--max-num-batched-tokens "$batched")
# Spread ticks have no ties left to break.
spread_flag=()
[ "$spread" = 1 ] && untie=0 spread_flag=(--spread-ticks)
for p in ${policies//,/ }; do
	case $p in rr|lc|plain|dynamic|ttft|p2|chash) ;; *) echo "bench-policies: unknown policy $p" >&2; exit 2 ;; esac
done
for t in ${traces//,/ }; do
	case $t in mooncake|azure|code) ;; *) echo "bench-policies: unknown trace $t" >&2; exit 2 ;; esac
done

# Per-trace defaults: file start_s duration_s rate_factor time_scale.
# The rate factor offers 75% of what leastconn saturates at on four
# instances (--calibrate shows the sweep); the time scale is the fastest
# at which the live TTFT still agrees with dbucket-sim's on this 2-core
# machine (contrib/bench-agreement.sh): Azure streams ~20x more tokens
# per second of model time than Mooncake at these loads.
trace_defaults() {
	local q=$quick
	case $1 in
	mooncake) echo "mooncake_conversation_trace.jsonl 0 $([ "$q" = 1 ] && echo 150 || echo 900) 0.75 10" ;;
	azure) echo "AzureLLMInferenceTrace_conv.csv 0 $([ "$q" = 1 ] && echo 240 || echo 1200) 11 2" ;;
	code) echo "code97.jsonl 0 $([ "$q" = 1 ] && echo 300 || echo 1200) 21 0.25" ;;
	esac
}
# Goodput's objectives (model time), dbucket-sim's defaults.
SLO_TTFT=2000 SLO_TPOT=100
# A request running longer than this (model seconds) counts as failed:
# bounds a run under a hopeless policy.
REQ_TIMEOUT=600
MAX_MODEL_LEN=131072
fleet_sim_flags() {
	case $profile in
	demo) echo --demo-profile ;;
	mixed) echo --gpu h100,a100 ;;
	esac
	[ -z "$batched" ] || echo --max-num-batched-tokens "$batched"
}

dbk_need_bins vllm-stub dbucket-spoa dbucket-bench dbucket-sim
dbk_need_cmds haproxy socat jq awk curl
case ",$traces," in *,code,*) dbk_need_cmds python3 ;; esac
if [ "$plots" = 1 ] && [ "$calibrate" = 0 ] && ! command -v gnuplot >/dev/null; then
	echo "bench-policies: installing gnuplot-nox for the plots" >&2
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends gnuplot-nox >&2 ||
		echo "bench-policies: no gnuplot: plots skipped" >&2
	command -v gnuplot >/dev/null || plots=0
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
dbk_tmp_dir
# run_bg CMD...: runs CMD in the background and waits for it, so that a
# signal to this script is handled at once (bash runs traps only between
# foreground commands) and CMD is stopped with the rest; CMD's status.
run_bg() {
	local p rc=0
	"$@" &
	p=$!
	pids+=("$p")
	wait "$p" || rc=$?
	dbk_forget "$p"
	return "$rc"
}

# The slice file of a trace: Mooncake with its ties broken (--untie).
slice_file() { # slice_file TRACE FILE: prints the path replayed
	local f=$TRACE_DIR/$2 u
	# The short-prompt code trace is not recorded but synthesised, seeded
	# (contrib/traces/synth/code.py: the same file on every machine).
	if [ "$1" = code ]; then
		f=$out/${tag}code97.jsonl
		dbk_synth_trace code97 "$f"
	fi
	if [ "$1" = mooncake ] && [ "$untie" != 0 ]; then
		u=$out/${tag}mooncake-untied.jsonl
		awk -v ms="$untie" '{
				if (!match($0, /"timestamp": *[0-9.]+/)) { print; next }
				t = substr($0, RSTART, RLENGTH); sub(/"timestamp": */, "", t)
				k = (t == last) ? k + 1 : 0; last = t
				printf "{\"timestamp\": %.3f%s\n", t + k * ms, substr($0, RSTART + RLENGTH)
			}' "$f" >"$u"
		f=$u
	fi
	echo "$f"
}

if [ "$calibrate" = 1 ]; then
	# dbucket-sim's leastconn on the slice, rate factors from 1/4 to 4x
	# the default: its saturation throughput is the most it completes per
	# second of model time; 75% of it is the load of the live runs.
	for trace in ${traces//,/ }; do
		read -r file d_start d_dur d_rf _ < <(trace_defaults "$trace")
		start=${o_start:-$d_start} dur=${o_dur:-$d_dur}
		f=$(slice_file "$trace" "$file")
		echo "== $trace, trace seconds $start..$((start + dur)), 4 instances ($profile profile), leastconn in dbucket-sim"
		printf '%8s %9s %9s %10s %10s %7s\n' rf "offered" "done/s" "TTFT p50" "TTFT p99" "busy%"
		best=0 n=0
		for k in $(seq 0 32); do
			rf=$(awk -v b="$d_rf" -v k="$k" 'BEGIN { printf "%.4g", b * 2 ^ ((k - 16) / 8) }')
			# shellcheck disable=SC2046
			"$BUILD/dbucket-sim" --trace "$f" --start-s "$start" --duration-s "$dur" --rate-factor "$rf" \
				--instances 4 $(fleet_sim_flags) ${spread_flag[@]+"${spread_flag[@]}"} \
				--policy lc --json "$tmp/cal.json" >"$tmp/cal.txt"
			read -r n tput p50 p99 busy < <(jq -r '.policies[0] | [.classes.all.requests,
				.classes.all.request_throughput, .classes.all.ttft_ms.p50, .classes.all.ttft_ms.p99,
				100 * .busy_s / .duration_s / 4] | @tsv' "$tmp/cal.json")
			printf '%8s %9.2f %9.2f %10.0f %10.0f %7.1f\n' "$rf" "$(awk -v n="$n" -v d="$dur" -v r="$rf" 'BEGIN { print n / d * r }')" \
				"$tput" "$p50" "$p99" "$busy"
			best=$(awk -v a="$best" -v b="$tput" 'BEGIN { print (b > a ? b : a) }')
		done
		awk -v s="$best" -v n="$n" -v d="$dur" -v r="$d_rf" 'BEGIN {
			printf "saturation: %.2f req/s; 75%% of it is offered at rate factor %.3g (default %s: %.0f%%)\n\n",
				s, 0.75 * s / (n / d), r, 100 * r * n / d / s }'
	done
	exit 0
fi

hap_cmd() { echo "$1" | socat -t 2 - "UNIX-CONNECT:$tmp/haproxy.sock" 2>/dev/null; }
servers_up() { # servers_up BACKEND N: N servers of BACKEND are UP
	hap_cmd "show servers state $1" | awk -v n="$2" '$6 == 2 { up++ } END { exit !(up >= n) }'
}
wait_up() { # wait_up BACKEND N: until N servers of BACKEND are UP (bounded, 10 s)
	dbk_wait_until 10 servers_up "$1" "$2" && return 0
	echo "bench-policies: backend $1 has fewer than $2 servers UP (logs in $tmp)" >&2
	return 1
}

ring_up() { # ring_up ADMIN: HAProxy's completion ring reaches the agent
	curl -s --max-time 1 "http://$1/metrics" 2>/dev/null |
		awk '$1 == "dbucket_completion_links" && $2 >= 1 { ok = 1 } END { exit !ok }'
}
wait_link() { # wait_link ADMIN: until ring_up (bounded, 10 s)
	dbk_wait_until 10 ring_up "$1" && return 0
	echo "bench-policies: the completion ring did not connect to the agent (logs in $tmp)" >&2
	return 1
}

# HAProxy configurations, logging to stderr at level err only (the ring
# keeps its info-level completion lines), as contrib/bench-overhead.sh.
dbk_quiet_cfg "$tmp/dbucket.cfg"
grep -q '^ *option http-no-delay' "$tmp/dbucket.cfg" ||
	{ echo "bench-policies: haproxy/haproxy.cfg lacks option http-no-delay: streamed tokens would be held back" >&2; exit 1; }
grep -v -e 'filter spoe' -e 'send-spoe-group' -e 'log ring@' "$tmp/dbucket.cfg" >"$tmp/lc.cfg"
sed 's/^    balance leastconn$/    balance roundrobin/' "$tmp/lc.cfg" >"$tmp/rr.cfg"
grep -q '^    balance roundrobin$' "$tmp/rr.cfg" ||
	{ echo "bench-policies: cannot derive the roundrobin configuration" >&2; exit 1; }
sed 's/^    balance leastconn$/    balance random(2)/' "$tmp/lc.cfg" >"$tmp/p2.cfg"
sed 's/^    balance leastconn$/    balance hdr(X-Session-Id)\n    hash-type consistent/' "$tmp/lc.cfg" >"$tmp/chash.cfg"
export DBK_SPOE_CONF=$REPO/haproxy/dbucket.spoe.conf
export DBK_STATS_SOCKET=$tmp/haproxy.sock

# The probe: 20 tiny requests (64 prompt tokens, 2 output tokens) 0.25 s
# of model time apart, on idle servers: their TTFT is the engine's
# (about 8 ms, what dbucket-sim gives) plus what the live path adds.
for i in $(seq 0 19); do
	echo "{\"timestamp\": $((i * 1000)), \"input_length\": 64, \"output_length\": 2, \"hash_ids\": []}"
done >"$tmp/probe.jsonl"
cp "$tmp/probe.jsonl" "$out/${tag}probe.jsonl"
PROBE_RF=4

run_pids=()
start_cluster() { # start_cluster POLICY SCALE: stubs, HAProxy, agent; sets DBK_BIND
	local policy=$1 scale=$2 i p v extra cfg admin mode
	run_pids=()
	for i in 0 1 2 3; do
		if [ "$profile" = demo ] && [ "$i" -lt 2 ]; then
			extra=(--max-model-len 32768 --kv-capacity-tokens 120000)
		else
			extra=(--max-model-len 131072 --kv-capacity-tokens 430000)
		fi
		[ "$profile" = mixed ] && [ $((i % 2)) = 1 ] && extra+=(--gpu a100)
		p=$(dbk_port)
		export "DBK_VLLM$i=127.0.0.1:$p"
		"$BUILD/vllm-stub" --port "$p" --name "vllm$i" --time-scale "$scale" \
			"${extra[@]}" ${budget_flag[@]+"${budget_flag[@]}"} >"$tmp/stub$i.out" 2>"$tmp/stub$i.log" &
		run_pids+=($!)
		pids+=($!)
	done
	for i in 0 1 2 3; do
		v="DBK_VLLM$i"
		dbk_wait_port "${!v##*:}"
	done
	p=$(dbk_port)
	DBK_BIND=127.0.0.1:$p
	DBK_STATS_BIND=127.0.0.1:$(dbk_port)
	DBK_AGENT=127.0.0.1:$(dbk_port)
	DBK_COMPLETIONS=127.0.0.1:$(dbk_port)
	DBK_COMPLETIONS_UDP=$DBK_COMPLETIONS
	export DBK_BIND DBK_STATS_BIND DBK_AGENT DBK_COMPLETIONS DBK_COMPLETIONS_UDP
	ADMIN=127.0.0.1:$(dbk_port)
	admin=$ADMIN
	case $policy in
	rr|lc|p2|chash) cfg=$tmp/$policy.cfg ;;
	*) cfg=$tmp/dbucket.cfg ;;
	esac
	rm -f "$tmp/haproxy.sock"
	haproxy -f "$cfg" 2>"$tmp/haproxy.log" &
	run_pids+=($!)
	pids+=($!)
	dbk_wait_port "$p"
	case $policy in
	plain|dynamic|ttft)
		mode=()
		[ "$policy" = dynamic ] && mode=(--enable-dynamic-bucket)
		# The stubs are scraped where HAProxy reaches them, every 100 ms
		# of model time, as dbucket-sim's ttft reads its snapshots.
		# --engine-speed: the stubs' clock runs S times real time.
		[ "$policy" = ttft ] && mode=(--policy ttft --engine-speed "$scale" --scrape-interval
			"$(awk -v s="$scale" 'BEGIN { v = int(100 / s); print v < 10 ? 10 : v }')"
			${budget_flag[@]+"${budget_flag[@]}"})
		"$BUILD/dbucket-spoa" ${mode[@]+"${mode[@]}"} --listen "$DBK_AGENT" \
			--completion-listen "$DBK_COMPLETIONS" --completion-listen "udp@$DBK_COMPLETIONS" \
			--admin-listen "$admin" \
			--haproxy-socket "$tmp/haproxy.sock" --log-level warn 2>"$tmp/agent.log" &
		run_pids+=($!)
		pids+=($!)
		dbk_wait_port "${admin##*:}"
		wait_up dbucket-agents 1
		wait_link "$admin"
		;;
	esac
	wait_up vllm 4
}
stop_cluster() {
	if [ ${#run_pids[@]} -gt 0 ]; then
		dbk_stop 5 "${run_pids[@]}"
		dbk_forget "${run_pids[@]}"
	fi
	run_pids=()
}

# One row per run: trace policy rep req/s tok/s good/s TTFTs50 TTFTs99
# TTFTl50 TTFTl99 TPOT50 TPOT99 E2E99 failed completed probe_ttft_ms load
# hit% (the stubs' prefix-cache hit rate: vllm:prefix_cache_hits_total
# over vllm:prefix_cache_queries_total, summed over the four)
row() { # row JSON TRACE POLICY REP PROBE LOAD HIT
	jq -r --arg t "$2" --arg p "$3" --arg rep "$4" --arg probe "$5" --arg load "$6" --arg hit "$7" '
		def v(x): if x == null then "-" else x end;
		.results as $x |
		[$t, $p, $rep,
		 v($x.total.request_throughput), v($x.total.output_throughput), v($x.total.goodput),
		 v($x.short.ttft_ms.median), v($x.short.ttft_ms.p99),
		 v($x.long.ttft_ms.median), v($x.long.ttft_ms.p99),
		 v($x.total.tpot_ms.median), v($x.total.tpot_ms.p99), v($x.total.e2e_ms.p99),
		 v($x.total.failed), v($x.total.completed), $probe, $load, $hit] | @tsv' "$1"
}
stub_hit_rate() { # the four stubs' prefix-cache hit rate in %, from /metrics
	local i v
	for i in 0 1 2 3; do
		v="DBK_VLLM$i"
		curl -s --max-time 2 "http://${!v}/metrics" 2>/dev/null || true
	done | awk '/^vllm:prefix_cache_hits_total[{ ]/ { h += $NF }
		/^vllm:prefix_cache_queries_total[{ ]/ { q += $NF }
		END { if (q > 0) printf "%.1f", 100 * h / q; else print "-" }'
}

results=$out/${tag}runs.tsv
: >"$results"
commands=$out/${tag}commands.txt
: >"$commands"
start_time=$(date +%s)
echo "bench-policies: profile $profile, traces $traces, policies $policies, repeats $repeats$([ "$quick" = 1 ] && echo ", quick")" >&2
echo "bench-policies: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out" >&2

for trace in ${traces//,/ }; do
	read -r file d_start d_dur d_rf d_scale < <(trace_defaults "$trace")
	start=${o_start:-$d_start} dur=${o_dur:-$d_dur} rf=${o_rf:-$d_rf} scale=${o_scale:-$d_scale}
	tfile=$(slice_file "$trace" "$file")
	echo "$trace start=$start duration=$dur rate_factor=$rf time_scale=$scale untie_ms=$([ "$trace" = mooncake ] && echo "$untie" || echo 0) spread_ticks=$spread profile=$profile batched=${batched:-0} file=$tfile" \
		>"$out/${tag}$trace-setup.txt"
	order=${policies//,/ }
	for ((rep = 1; rep <= repeats; rep++)); do
		for policy in $order; do
			base=$out/${tag}$trace-$policy
			[ "$repeats" -gt 1 ] && base=$base-r$rep
			printf 'bench-policies: %s, %s, run %d/%d ... ' "$trace" "$(dbk_policy_label "$policy")" "$rep" "$repeats" >&2
			t0=$(date +%s)
			load=$(cut -d' ' -f1 /proc/loadavg)
			start_cluster "$policy" "$scale"
			rc=0
			run_bg "$BUILD/dbucket-bench" "$tmp/probe.jsonl" --url "http://$DBK_BIND" --time-scale "$scale" \
				--rate-factor "$PROBE_RF" --json "$base.probe.json" >/dev/null 2>"$tmp/bench.err" || rc=$?
			probe=-
			[ "$rc" -eq 0 ] && probe=$(jq -r '.results.total.ttft_ms.median // "-"' "$base.probe.json")
			cmd=("$BUILD/dbucket-bench" "$tfile" --url "http://$DBK_BIND"
				--time-scale "$scale" --rate-factor "$rf" --start-offset "$start" --duration "$dur"
				--max-model-len "$MAX_MODEL_LEN" --timeout "$REQ_TIMEOUT" ${spread_flag[@]+"${spread_flag[@]}"}
				--slo-ttft-ms "$SLO_TTFT" --slo-tpot-ms "$SLO_TPOT"
				--json "$base.json" --csv "$base.csv")
			echo "${cmd[*]}" | sed "s|$REPO/||g; s|http://127.0.0.1:[0-9]*|http://127.0.0.1:PORT|" >>"$commands"
			[ "$rc" -eq 0 ] && { run_bg "${cmd[@]}" >"$base.txt" 2>"$tmp/bench.err" || rc=$?; }
			# The agent's own account (decisions, redirects, leases left).
			case $policy in
			plain|dynamic|ttft) curl -s --max-time 2 "http://$ADMIN/metrics" >"$base.agent-metrics" 2>/dev/null || true ;;
			esac
			hit=$(stub_hit_rate)
			stop_cluster
			# The stubs' own account, late steps (timer lag) included.
			grep -h 'served' "$tmp"/stub*.log 2>/dev/null | sed "s/^/[$policy] /" >"$base.stubs" || true
			if [ "$rc" -ne 0 ]; then
				echo "failed (exit $rc)" >&2
				sed 's/^/  /' "$tmp/bench.err" >&2
				exit 1
			fi
			row "$base.json" "$trace" "$policy" "$rep" "$probe" "$load" "$hit" >>"$results"
			tail -n 1 "$results" | awk -F'\t' -v s="$(($(date +%s) - t0))" \
				'{ printf "%d s: %.2f req/s, TTFT short p50 %.0f ms, failed %s, idle probe TTFT %.1f ms\n", s, $4, $7, $14, $16 }' >&2
		done
		# Rotate the order, so that no policy always runs first.
		order="${order#* } ${order%% *}"
	done
done
elapsed=$(($(date +%s) - start_time))

# The tables: medians over repeats, then ratios to leastconn.
table() { # table TRACE [md]
	awk -F'\t' -v labels="$(dbk_policy_labels)" -v tr="$1" -v md="${2:-}" -v pols="${policies//,/ }" '
		function med(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function name(p,   n, kv, i, e) { # labels: dbk_policy_labels
			if (!nl) { n = split(labels, kv, ";"); for (i = 1; i < n; i++) { e = index(kv[i], "="); L[substr(kv[i], 1, e - 1)] = substr(kv[i], e + 1) }; nl = 1 }
			return p in L ? L[p] : p
		}
		$1 == tr {
			p = $2; runs[p]++
			for (k = 4; k <= 18; k++) if ($k != "-" && $k != "") { cnt[p, k]++; vals[p, k, cnt[p, k]] = $k + 0 }
		}
		END {
			nc = split("4 5 6 7 8 9 10 11 12 13 14 18", C, " ")
			np = split(pols, P, " ")
			for (i = 1; i <= np; i++) for (k = 4; k <= 18; k++) {
				n = cnt[P[i], k]
				if (n == 0) { M[P[i], k] = "-"; continue }
				delete a
				for (j = 1; j <= n; j++) a[j] = vals[P[i], k, j]
				M[P[i], k] = med(a, n)
			}
			split("req/s tok/s good/s TTFTs50 TTFTs99 TTFTl50 TTFTl99 TPOT50 TPOT99 E2E99 fail hit%", H, " ")
			fmt[4] = "%.2f"; fmt[5] = "%.0f"; fmt[6] = "%.2f"
			for (k = 7; k <= 13; k++) fmt[k] = "%.0f"
			fmt[11] = "%.1f"; fmt[12] = "%.1f"; fmt[14] = "%d"; fmt[18] = "%.1f"
			if (md) {
				printf "| policy |"; for (c = 1; c <= nc; c++) printf " %s |", H[c]; printf "\n"
				printf "|---|"; for (c = 1; c <= nc; c++) printf "---:|"; printf "\n"
			} else {
				printf "%-28s", "policy"; for (c = 1; c <= nc; c++) printf " %8s", H[c]; printf "\n"
			}
			for (i = 1; i <= np; i++) {
				p = P[i]
				if (!(p in runs)) continue
				if (md) printf "| %s |", name(p); else printf "%-28s", name(p)
				for (c = 1; c <= nc; c++) {
					k = C[c]
					v = M[p, k] == "-" ? "-" : sprintf(fmt[k], M[p, k])
					if (md) printf " %s |", v; else printf " %8s", v
				}
				printf "\n"
			}
			if (!("lc" in runs)) exit
			if (md) { printf "| *ratio to leastconn* |"; for (c = 1; c <= nc; c++) printf " |"; printf "\n" }
			else printf "ratio to leastconn (throughput, goodput: higher is better; latencies, failures: lower is better)\n"
			for (i = 1; i <= np; i++) {
				p = P[i]
				if (!(p in runs) || p == "lc") continue
				if (md) printf "| %s / lc |", name(p); else printf "%-28s", name(p) " / lc"
				for (c = 1; c <= nc; c++) {
					k = C[c]
					if (M[p, k] == "-" || M["lc", k] == "-") v = "-"
					else if (M["lc", k] == 0) v = (M[p, k] == 0 ? "=" : "+" M[p, k])
					else v = sprintf("%.2f", M[p, k] / M["lc", k])
					if (md) printf " %s |", v; else printf " %8s", v
				}
				printf "\n"
			}
		}' "$results"
}
probes() { # probes TRACE: idle probe TTFT per policy (median over repeats)
	local p
	for p in ${policies//,/ }; do
		awk -F'\t' -v tr="$1" -v p="$p" '$1 == tr && $2 == p && $16 != "-" { print $16 }' "$results" | sort -g |
			awk -v p="$p" '{ v[NR] = $1 } END { if (NR) printf "%s %.1f ms; ", p, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
	done | sed 's/; $//'
}

# Plots: TTFT CDF per policy and length class; output tokens/s over time.
# plot_policies NAME: gnuplot's plot of $tmp/NAME.dat (%p in NAME: the
# policy) for every policy that has such data; fails, printing nothing,
# when none has.
plot_policies() {
	local p f gp=""
	for p in ${policies//,/ }; do
		f=$tmp/${1//%p/$p}.dat
		[ -s "$f" ] || continue
		gp="$gp '$f' using 1:2 with lines lw 2 title '$(dbk_policy_label "$p")',"
	done
	[ -n "$gp" ] || return 1
	echo "plot${gp%,}"
}

plot() { # plot TRACE
	local trace=$1 p cls f
	for p in ${policies//,/ }; do
		f=$out/${tag}$trace-$p.csv
		[ "$repeats" -gt 1 ] && f=$out/${tag}$trace-$p-r1.csv
		[ -f "$f" ] || continue
		for cls in short long; do
			awk -F, -v c="$cls" 'NR > 1 && $4 == c && $12 == 1 { print $8 / 1000 }' "$f" | sort -g |
				awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) print v[i], i / NR }' >"$tmp/cdf-$p-$cls.dat"
		done
		# Output tokens spread evenly between first and last token, 60 bins.
		awk -F, 'NR > 1 && $12 == 1 && $7 > 0 {
				n++; s[n] = $3 + $8 / 1000; e[n] = $3 + $10 / 1000; k[n] = $7
				if (e[n] > end) end = e[n]
			}
			END {
				if (n == 0) exit
				w = end / 60; if (w <= 0) w = 1
				for (i = 1; i <= n; i++) {
					d = e[i] - s[i]
					if (d <= 0) { b[int(e[i] / w)] += k[i]; continue }
					for (j = int(s[i] / w); j <= int(e[i] / w); j++) {
						lo = j * w; hi = lo + w
						if (lo < s[i]) lo = s[i]
						if (hi > e[i]) hi = e[i]
						if (hi > lo) b[j] += k[i] * (hi - lo) / d
					}
				}
				for (j = 0; j * w <= end; j++) printf "%.2f %.2f\n", (j + 0.5) * w, b[j] / w
			}' "$f" >"$tmp/tput-$p.dat"
	done
	# One panel per length class that has requests (Azure has no long one).
	local classes=""
	for cls in short long; do
		for p in ${policies//,/ }; do
			if [ -s "$tmp/cdf-$p-$cls.dat" ]; then classes="$classes $cls"; break; fi
		done
	done
	[ -n "$classes" ] || classes=short
	set -- $classes
	{
		echo "set terminal pngcairo size $(($# * 600)),500 noenhanced font ',10'"
		echo "set output '$out/${tag}$trace-ttft-cdf.png'"
		echo "set multiplot layout 1,$# title 'TTFT CDF, $trace trace, 4 stubs ($profile profile), model time'"
		for cls in $classes; do
			echo "set title '$([ $cls = short ] && echo 'short prompts (< 32768 tokens)' || echo 'long prompts (>= 32768 tokens)')'"
			echo "set logscale x; set xlabel 'TTFT (s)'; set ylabel 'fraction of requests'; set key bottom right; set grid"
			plot_policies "cdf-%p-$cls" ||
				echo "unset logscale x; set label 1 'no request in this class' at graph 0.35,0.5; plot [0:1][0:1] NaN notitle; unset label 1"
		done
		echo "unset multiplot"
		echo "set output '$out/${tag}$trace-throughput.png'"
		echo "unset logscale x; set title 'output throughput over time, $trace trace, 4 stubs ($profile profile)'"
		echo "set xlabel 'time since the first arrival (s, model time)'; set ylabel 'output tokens/s'; set key top right; set grid"
		plot_policies tput-%p || true
	} >"$tmp/$trace.gp"
	gnuplot "$tmp/$trace.gp" 2>"$tmp/gnuplot.err" || { echo "bench-policies: gnuplot failed:" >&2; cat "$tmp/gnuplot.err" >&2; }
}

setup_of() { # setup_of TRACE KEY
	tr ' ' '\n' <"$out/${tag}$1-setup.txt" | sed -n "s/^$2=//p"
}

summary=$out/${tag}summary.md
{
	echo "# dbucket routing policies, live ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	if [ "$profile" = demo ]; then
		echo "4 vllm-stub instances, demo profile: vllm0-1 32768 context / 120000 KV tokens, vllm2-3 131072 / 430000 (H100 model)."
	elif [ "$profile" = mixed ]; then
		echo "4 vllm-stub instances, mixed profile: each 131072 context / 430000 KV tokens, vllm0 and vllm2 the H100 model, vllm1 and vllm3 the A100 model."
	else
		echo "4 vllm-stub instances, equal profile: each 131072 context / 430000 KV tokens (H100 model)."
	fi
	echo "HAProxy $(haproxy -v | awk 'NR == 1 { print $3 }') (haproxy/haproxy.cfg, option http-no-delay included); $(nproc) cores; repeats $repeats (medians); wall time ${elapsed} s."
	echo "Latencies in ms of model time; s = short (< 32768 prompt tokens), l = long; TPOT and E2E over all requests;"
	echo "good/s: requests with TTFT <= ${SLO_TTFT} ms and TPOT <= ${SLO_TPOT} ms per second; a request over ${REQ_TIMEOUT} s (model) fails."
	echo
	for trace in ${traces//,/ }; do
		start=$(setup_of "$trace" start) dur=$(setup_of "$trace" duration)
		echo "## $trace: trace seconds $start..$((start + dur)), rate factor $(setup_of "$trace" rate_factor), time scale $(setup_of "$trace" time_scale)$([ "$trace" = mooncake ] && [ "$untie" != 0 ] && echo ", ties ${untie} ms apart")$([ "$spread" = 1 ] && echo ", ticks spread")"
		echo
		table "$trace" md
		echo
		echo "Idle probe TTFT (engine ~8 ms + the path): $(probes "$trace")."
		echo
		if [ "$plots" = 1 ]; then
			echo "![TTFT CDF](${tag}$trace-ttft-cdf.png)"
			echo "![throughput](${tag}$trace-throughput.png)"
			echo
		fi
	done
	echo "## Commands"
	echo
	echo '```'
	echo "contrib/bench-policies.sh $([ "$quick" = 1 ] && echo '--quick ')$([ -n "$batched" ] && echo "--max-num-batched-tokens $batched ")--profile $profile --traces $traces --policies $policies --repeats $repeats $([ "$spread" = 1 ] && echo --spread-ticks || echo "--untie $untie")"
	echo "# each run: four stubs (vllm0..3; demo profile: vllm0-1 with --max-model-len 32768 --kv-capacity-tokens 120000; mixed: vllm1 and vllm3 with --gpu a100)"
	echo "build/vllm-stub --port P --name vllmI --time-scale S --max-model-len 131072 --kv-capacity-tokens 430000"
	echo "# HAProxy: haproxy/haproxy.cfg; rr/lc without the SPOE filter,"
	echo "# its send-spoe-group rules and the ring log line, balance roundrobin/leastconn/random(2)"
	echo "# or hdr(X-Session-Id) with hash-type consistent; DBK_* set to the ports"
	echo "haproxy -f CFG"
	echo "# plain/dynamic/ttft: the agent, servers read from HAProxy's runtime API (ttft: --policy ttft --scrape-interval 100/S ms)"
	echo "build/dbucket-spoa [--enable-dynamic-bucket] --listen A --completion-listen C --admin-listen M --haproxy-socket SOCK"
	echo "# 20 idle probe requests (${tag}probe.jsonl), then the replay (PORT: HAProxy's frontend):"
	echo "build/dbucket-bench ${tag}probe.jsonl --url http://127.0.0.1:PORT --time-scale S --rate-factor $PROBE_RF"
	sed -E "s|$out/||g; s/-(rr|lc|plain|dynamic|ttft|p2|chash)(-r[0-9]+)?\./-POLICY./g" "$commands" | sort -u
	echo '```'
	echo
	echo "Traces: Mooncake conversation trace (kvcache-ai/Mooncake, FAST'25, Apache-2.0);"
	echo "Azure LLM inference trace 2023, conversation (Azure/AzurePublicDataset, Splitwise ISCA'24, CC-BY-4.0)."
} >"$summary"

for trace in ${traces//,/ }; do
	echo
	echo "== $trace: $(cut -d' ' -f2-9 "$out/${tag}$trace-setup.txt")"
	echo "   4 stubs; latencies in ms of model time; s/l = short/long prompts; TPOT, E2E over all"
	table "$trace"
	echo "   idle probe TTFT: $(probes "$trace")"
	if [ "$plots" = 1 ]; then plot "$trace"; fi
done
echo
echo "wall time ${elapsed} s; summary: $summary"
if [ "$plots" = 1 ]; then echo "plots: $(cd "$out" && ls ${tag}*.png 2>/dev/null | tr '\n' ' ')"; fi
exit 0
