#!/usr/bin/env bash
# Overload, live (issue 28): four vLLM stubs behind HAProxy 2.6 and
# dbucket-spoa --policy ttft, offered a synthetic load past their
# capacity with a class on every request (X-Request-Class, from
# dbucket-bench --priority-mix), once without and once with --admission,
# side by side in one run. Prints dbucket-bench's line per class for
# each (requests, served, 429s, within the SLOs, TTFT p50/p99) and the
# agent's shed counters and dbucket_ttft_model_slowness (the pace its
# first tokens were priced at); keeps every output in --out.
#
#   contrib/bench/overload-live.sh [--rate R] [--requests N]
#        [--time-scale S] [--mix MIX] [--priority-mix MIX] [--out DIR]
#        [--admit-args ARGS] [--also-args ARGS] [--maxconn N]
#
#   --rate R          Poisson arrivals, requests per second of model time
#                     (default 12)
#   --requests N      requests per run (default 600)
#   --time-scale S    the stubs' model clock runs S times real time; every
#                     latency is reported in model time (default 1: at 5,
#                     each real millisecond HAProxy, the agent or the client
#                     loses on a shared machine counts five, and the runs
#                     measure the machine; BENCHMARKS.md "Overload, live")
#   --mix MIX         dbucket-bench --synthetic (default
#                     short=0.8:300-2000:100-300,long=0.2:8000-16000:100-300)
#   --priority-mix M  dbucket-bench --priority-mix (default
#                     critical=0.3,standard=0.5,sheddable=0.2)
#   --admit-args ARGS the admission run's agent flags (default
#                     --admission; e.g. "--admission
#                     --admit-headroom-standard 0.5")
#   --also-args ARGS  a third run, "also", with these agent flags, side by
#                     side with the other two (e.g. main's shares:
#                     "--admission --admit-headroom-standard 1
#                     --admit-headroom-sheddable 0.9")
#   --maxconn N       every run: servers take N requests at once, the rest
#                     wait in HAProxy's queue by class (DBK_SERVER_MAXCONN;
#                     default 0, no limit)
#   --out DIR         results (default build/overload)
#
# The objective is the issue's: TTFT 2 s and TPOT 100 ms of model time;
# the agent's --admit-ttft is the same 2 s, in real time (2000/S ms).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=contrib/lib.sh
. contrib/lib.sh

rate=12 requests=600 scale=1 out=build/overload
mix=short=0.8:300-2000:100-300,long=0.2:8000-16000:100-300
pmix=critical=0.3,standard=0.5,sheddable=0.2
admit_args=--admission also_args='' maxconn=0
dbk_options "--admit-args admit_args
--also-args also_args
--maxconn maxconn
--rate rate
--requests requests
--time-scale scale
--mix mix
--priority-mix pmix
--out out" "$@"
BUILD=${BUILD:-build}
dbk_need_bins vllm-stub dbucket-spoa dbucket-bench
dbk_need_cmds haproxy curl jq
mkdir -p "$out"
dbk_tmp_dir

# run LABEL AGENT-ARGS...: one whole run, everything started afresh.
run() {
	local label=$1 i base
	shift
	base=$(dbk_ports 9)
	dbk_live_env "$base" "$tmp/haproxy-$label.sock" "$PWD/haproxy/dbucket.spoe.conf"
	export DBK_SERVER_MAXCONN=$maxconn
	# The bench is the operator's own client: its X-Request-Class may
	# raise a class (to critical), which haproxy.cfg allows only from
	# the clients DBK_TRUSTED_CLASS_SRC lists.
	echo 127.0.0.1 >"$tmp/trusted.lst"
	export DBK_TRUSTED_CLASS_SRC=$tmp/trusted.lst
	local admin=127.0.0.1:$((base + 3)) scrape=()
	for i in 0 1 2 3; do
		export "DBK_VLLM$i=127.0.0.1:$((base + 4 + i))"
		"$BUILD/vllm-stub" --port $((base + 4 + i)) --name "vllm$i" --time-scale "$scale" \
			>"$tmp/stub$i-$label.out" 2>&1 &
		pids+=($!)
		scrape+=(--scrape "vllm$i=http://127.0.0.1:$((base + 4 + i))")
	done
	for i in 0 1 2 3; do dbk_wait_port $((base + 4 + i)); done
	"$BUILD/dbucket-spoa" --listen "$DBK_AGENT" --completion-listen "$DBK_COMPLETIONS" \
		--completion-listen "udp@$DBK_COMPLETIONS_UDP" --admin-listen "$admin" \
		--policy ttft --engine-speed "$scale" \
		--scrape-interval "$(awk -v s="$scale" 'BEGIN { printf "%d", 100 / s < 10 ? 10 : 100 / s }')" \
		--admit-ttft "$(awk -v s="$scale" 'BEGIN { printf "%d", 2000 / s }')" \
		"$@" "${scrape[@]}" vllm0 vllm1 vllm2 vllm3 2>"$tmp/agent-$label.log" &
	local agent=$!
	pids+=("$agent")
	dbk_wait_port "${admin##*:}"
	haproxy -f haproxy/haproxy.cfg 2>"$tmp/haproxy-$label.log" &
	local hap=$!
	pids+=("$hap")
	dbk_wait_port "$base"
	"$BUILD/dbucket-bench" --synthetic "$mix" --rate "$rate" --max-requests "$requests" \
		--priority-mix "$pmix" --url "http://$DBK_BIND" --time-scale "$scale" \
		--slo-ttft-ms 2000 --slo-tpot-ms 100 --timeout 600 --json "$out/$label.json" \
		>"$out/$label.txt"
	# With the pace admission priced first tokens at, server by server.
	curl -s "http://$admin/metrics" | grep '^dbucket_admission_\|^dbucket_ttft_model_slowness' \
		>"$out/$label.metrics"
	# Completions without a decision (shed ones, and any HAProxy
	# balanced alone): "undecided".
	curl -s "http://$admin/state" | jq -c '{undecided, completions, leases}' >>"$out/$label.metrics"
	dbk_stop 5 "$hap" "$agent" "${pids[@]}"
	pids=()
}

run off
# shellcheck disable=SC2086 # words on purpose
run admission $admit_args
labels=(off admission)
if [ -n "$also_args" ]; then
	# shellcheck disable=SC2086 # words on purpose
	run also $also_args
	labels+=(also)
fi
for label in "${labels[@]}"; do
	echo "== $label"
	awk '/^class /, 0' "$out/$label.txt"
	grep 'shed_total\|undecided\|model_slowness' "$out/$label.metrics" | grep -v ' 0$' || true
done
