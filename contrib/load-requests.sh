#!/usr/bin/env bash
# Sends N POSTs of BODYFILE to URL from CONC workers, each one after the
# other, and prints one line a request, as each ends:
#   START_MS END_MS STATUS SERVED_BY CHOSEN
# (wall-clock ms; STATUS 000 when curl got no response; SERVED_BY the
# X-Served-By header, the stub that answered, and CHOSEN the agent's
# X-Dbucket-Server debug header, "-" when absent). Used by
# tests/e2e/outlier.bats and contrib/bench-outlier.sh.
#
#   contrib/load-requests.sh URL BODYFILE N CONC [MAX_TIME_S]
set -u
[ $# -ge 4 ] || { echo "usage: $0 URL BODYFILE N CONC [MAX_TIME_S]" >&2; exit 2; }
url=$1 body=$2 n=$3 conc=$4 max=${5:-30}

worker() { # worker K: requests K, K+CONC, ...
	local k=$1 t0 line
	for ((i = k; i < n; i += conc)); do
		t0=${EPOCHREALTIME/[.,]/}
		line=$(curl -s -o /dev/null --max-time "$max" -X POST -H 'Content-Type: application/json' \
			--data-binary "@$body" -w '%{http_code} %header{x-served-by} %header{x-dbucket-server}' \
			"$url")
		read -r st srv ch <<<"$line"
		echo "$((t0 / 1000)) $((${EPOCHREALTIME/[.,]/} / 1000)) ${st:-000} ${srv:--} ${ch:--}"
	done
}

pids=()
for ((k = 0; k < conc; k++)); do
	worker "$k" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
