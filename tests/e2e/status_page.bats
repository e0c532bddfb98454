#!/usr/bin/env bats
# The status page (GET / on the admin endpoint) in a real browser:
# headless Chromium (Debian's chromium) loads it from a live agent that
# routes through HAProxy to four stubs, and the numbers it shows are
# checked against /state, /metrics and /config. Screenshots are kept as
# artefacts: build/artefacts/status-page.png and status-page-phone.png.
# No chromium is a failure, not a skip: contrib/install-deps.sh installs it.

load stubs

ARTEFACTS=${DBK_ARTEFACTS:-$REPO/build/artefacts}

setup() { stubs_setup; }
teardown() { stubs_teardown; }

# browser ARGS... URL: one bounded headless Chromium run with its own
# profile; stdout is what it prints (the DOM for --dump-dom).
browser() {
	command -v chromium >/dev/null ||
		fail "no chromium: run contrib/install-deps.sh (Debian's chromium package)"
	timeout -k 5 90 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars \
		--user-data-dir="$BATS_TEST_TMPDIR/chromium" "$@" 2>>"$BATS_TEST_TMPDIR/chromium.log"
}

# dom_value FILE [SERVER] KEY: the text of the element with data-k=KEY,
# in the row of SERVER when given (tags inside it stripped).
dom_value() {
	local file=$1 row key
	if [ $# -eq 3 ]; then row=$2 key=$3; else row="" key=$2; fi
	sed 's|</tr>|&\n|g' "$file" | { if [ -n "$row" ]; then grep "data-server=\"$row\""; else cat; fi; } |
		grep -o "data-k=\"$key\"[^>]*>\(<span[^>]*>\)\?[^<]*" | head -n 1 | sed 's/.*>//; s/,//g'
}

# A number as the page shows it (no digits after the point).
rounded() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }

@test "GET / is one self-contained HTML page; other methods and paths are refused" {
	start_agent
	run curl -s -D "$BATS_TEST_TMPDIR/h" --max-time 5 "http://127.0.0.1:$ADMIN_PORT/"
	assert_success
	grep -qi '^content-type: text/html; charset=utf-8' "$BATS_TEST_TMPDIR/h"
	assert_output --partial '<title>dbucket</title>'
	assert_output --partial '</html>'
	# Nothing is loaded from elsewhere: no src= or href=, no URL.
	refute_output --regexp '(src|href)=|https?://'
	# The query string (the page's ?refresh=N) is the page's business.
	run curl -s --max-time 5 "http://127.0.0.1:$ADMIN_PORT/?refresh=5"
	assert_output --partial '<title>dbucket</title>'
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST "http://127.0.0.1:$ADMIN_PORT/"
	assert_output 405
	run curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$ADMIN_PORT/nothing"
	assert_output 404
}

@test "in headless Chromium the page shows the numbers of /state, /metrics and /config" {
	start_stubs
	local scrape=() i
	for i in 0 1 2 3; do scrape+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}"); done
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" \
		--poll-interval 100 --scrape-interval 100 "${scrape[@]}"
	start_haproxy_stubs
	wait_state runtime_api_up true
	wait_state_ge completion_links 1
	# One server drained by the operator: the page must say DRAIN.
	haproxy_cmd "set server vllm/vllm1 state drain" >/dev/null
	wait_server vllm1 haproxy_state drain

	# Three finished requests, then two streams held in flight (8000
	# tokens: about a minute, longer than the checks and the screenshots
	# on a loaded machine), one per group.
	completion_body 4 false >"$BATS_TEST_TMPDIR/short.json"
	for i in 1 2 3; do send "$BATS_TEST_TMPDIR/s$i" /v1/completions "$BATS_TEST_TMPDIR/short.json"; done
	completion_body 8000 true >"$BATS_TEST_TMPDIR/stream-short.json"
	completion_body 8000 true 150000 >"$BATS_TEST_TMPDIR/stream-long.json"
	curl_bg "$BATS_TEST_TMPDIR/r0" /v1/completions "$BATS_TEST_TMPDIR/stream-short.json" --max-time 120
	curl_bg "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/stream-long.json" --max-time 120
	wait_events "$BATS_TEST_TMPDIR/r0" 1
	wait_events "$BATS_TEST_TMPDIR/r1" 1
	wait_state leases 2
	wait_state_ge completions 3
	# The scraped batches hold both streams (bounded, ~10 s).
	local k running=""
	for ((k = 0; k < 500; k++)); do
		running=$(agent_get /state | jq '[.scrape.servers[].running] | add')
		[ "$running" = 2 ] && break
		sleep 0.02
	done
	assert_equal "scraped running: $running" "scraped running: 2"

	agent_get /state >"$BATS_TEST_TMPDIR/before.json"
	# 2.5 s of the page's virtual time: two samples, 2 s apart. The
	# screenshot is of the page the checks below read.
	mkdir -p "$ARTEFACTS"
	rm -f "$ARTEFACTS/status-page.png" "$ARTEFACTS/status-page-phone.png"
	browser --window-size=1280,720 --virtual-time-budget=2500 --dump-dom \
		--screenshot="$ARTEFACTS/status-page.png" "http://127.0.0.1:$ADMIN_PORT/" >"$BATS_TEST_TMPDIR/page.html"
	agent_get /state >"$BATS_TEST_TMPDIR/after.json"
	agent_get /metrics >"$BATS_TEST_TMPDIR/metrics.txt"
	agent_get /config >"$BATS_TEST_TMPDIR/config.txt"
	local page=$BATS_TEST_TMPDIR/page.html before=$BATS_TEST_TMPDIR/before.json
	local after=$BATS_TEST_TMPDIR/after.json

	# The world held still while the browser looked (no request came or
	# went), so the page's numbers can be compared with /state's.
	local q='[.leases, .decisions, .redirects, .completions, (.servers[] | [.inflight, .load, .haproxy_state])]'
	assert_equal "$(jq -c "$q" "$after")" "$(jq -c "$q" "$before")"

	run dom_value "$page" samples
	[ "$output" -ge 2 ] || fail "the page took $output samples of /state, wanted 2"
	# The reference algorithm's own columns and knobs, not ttft's.
	grep -q '<html lang="en" class="pol-ref">' "$page" || fail "not shown as the reference policy"
	grep -q 'data-k="cfg-sensitivity"' "$page" || fail "no reference settings"
	run grep -c 'data-k="cfg-engine-speed"\|data-k="cfg-lora-load"' "$page"
	assert_output 0
	grep -q 'id="banner" style="display: none;"' "$page" || fail "the error banner shows"
	assert_equal "$(dom_value "$page" mode)" "$(jq -r '.mode + " policy " + .policy' "$after")"
	assert_equal "$(dom_value "$page" leases)" 2
	assert_equal "$(dom_value "$page" decisions)" "$(jq .decisions "$after")"
	assert_equal "$(dom_value "$page" redirects)" "$(jq .redirects "$after")"
	assert_equal "$(dom_value "$page" completions)" "$(jq .completions "$after")"
	assert_equal "$(dom_value "$page" completion_links)" "$(jq .completion_links "$after")"
	# No decision between the two samples: 0 per second, not "–".
	assert_equal "$(dom_value "$page" rate)" 0

	local s state want
	for s in vllm0 vllm1 vllm2 vllm3; do
		local srv=".servers[] | select(.name == \"$s\")"
		local scr=".scrape.servers[] | select(.name == \"$s\")"
		assert_equal "$s group $(dom_value "$page" "$s" group)" "$s group $(jq "$srv.group" "$after")"
		state=$(jq -r "$srv.haproxy_state" "$after")
		want=UP
		[ "$state" = ready ] || want=${state^^}
		assert_equal "$s state $(dom_value "$page" "$s" state)" "$s state $want"
		assert_equal "$s scraped $(dom_value "$page" "$s" scraped)" "$s scraped yes"
		assert_equal "$s inflight $(dom_value "$page" "$s" inflight)" "$s inflight $(jq "$srv.inflight" "$after")"
		assert_equal "$s load $(dom_value "$page" "$s" load)" \
			"$s load $(rounded "$(jq "$srv.load" "$after")")"
		assert_equal "$s running $(dom_value "$page" "$s" running)" "$s running $(jq "$scr.running" "$after")"
		assert_equal "$s queue $(dom_value "$page" "$s" waiting)" "$s queue $(jq "$scr.waiting" "$after")"
		# KV use grows with each token streamed: the page's (one decimal)
		# lies between /state's before and after it.
		local kv_page kv_lo kv_hi
		kv_page=$(dom_value "$page" "$s" kv | tr -d ' %')
		kv_lo=$(jq "$scr.kv_usage * 100" "$before")
		kv_hi=$(jq "$scr.kv_usage * 100" "$after")
		awk -v a="$kv_page" -v lo="$kv_lo" -v hi="$kv_hi" \
			'BEGIN { exit !(a != "" && a + 0.05 >= lo && a - 0.05 <= hi) }' ||
			fail "$s KV use: page $kv_page %, /state $kv_lo % before and $kv_hi % after"
		assert_equal "$s decisions $(dom_value "$page" "$s" decisions)" \
			"$s decisions $(awk -v m="dbucket_server_decisions_total{server=\"$s\"}" '$1 == m { print $2 }' \
				"$BATS_TEST_TMPDIR/metrics.txt")"
		assert_equal "$s rate $(dom_value "$page" "$s" rate)" "$s rate 0"
	done
	# The two streams are in flight on two servers, one per group.
	assert_equal "$(jq '[.servers[] | select(.inflight > 0) | .group] | sort | join(",")' -r "$after")" "0,1"

	local key value
	while IFS=' =' read -r key value; do
		[ -n "$key" ] || continue
		value=${value//,/}
		run dom_value "$page" "cfg-$key"
		awk -v a="$output" -v b="$value" 'BEGIN { exit !(a == b || (a + 0 == b + 0 && a ~ /^[0-9.e+-]+$/)) }' ||
			fail "setting $key: page '$output', /config '$value'"
	done <"$BATS_TEST_TMPDIR/config.txt"

	[ "$(head -c 8 "$ARTEFACTS/status-page.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		fail "no PNG at $ARTEFACTS/status-page.png"
	echo "# screenshot: $ARTEFACTS/status-page.png" >&3

	# A phone's width: every server a card, nothing wider than the screen.
	browser --window-size=390,844 --virtual-time-budget=500 --dump-dom \
		--screenshot="$ARTEFACTS/status-page-phone.png" "http://127.0.0.1:$ADMIN_PORT/" \
		>"$BATS_TEST_TMPDIR/phone.html"
	grep -q '<body data-fits="true"' "$BATS_TEST_TMPDIR/phone.html" ||
		fail "the page is wider than a phone: $(grep -o '<body[^>]*>' "$BATS_TEST_TMPDIR/phone.html")"
	[ -s "$ARTEFACTS/status-page-phone.png" ] || fail "no phone screenshot"
}

# data-n of the sparkline KEY: how many points of history it draws.
spark_n() { grep -o "data-spark=\"$2\" data-n=\"[0-9]*\"" "$1" | head -n 1 | grep -o '[0-9]*"$' | tr -d '"'; }

@test "under ttft the page shows ttft's own columns and settings, and keeps a history with sparklines" {
	start_stubs
	local scrape=() i
	for i in 0 1 2 3; do scrape+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}"); done
	start_agent --policy ttft --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 \
		--scrape-interval 100 --lora-load 250ms "${scrape[@]}"
	start_haproxy_stubs
	wait_state runtime_api_up true
	wait_state_ge completion_links 1
	# Requests finished and two streams in flight, so that the lines move.
	completion_body 4 false >"$BATS_TEST_TMPDIR/short.json"
	for i in 1 2 3 4 5 6; do send "$BATS_TEST_TMPDIR/s$i" /v1/completions "$BATS_TEST_TMPDIR/short.json"; done
	completion_body 8000 true >"$BATS_TEST_TMPDIR/stream.json"
	curl_bg "$BATS_TEST_TMPDIR/r0" /v1/completions "$BATS_TEST_TMPDIR/stream.json" --max-time 120
	curl_bg "$BATS_TEST_TMPDIR/r1" /v1/completions "$BATS_TEST_TMPDIR/stream.json" --max-time 120
	wait_events "$BATS_TEST_TMPDIR/r0" 1
	wait_events "$BATS_TEST_TMPDIR/r1" 1
	wait_state leases 2

	# 4 s of the page's virtual time at a 0.5 s refresh: 8 samples.
	mkdir -p "$ARTEFACTS"
	rm -f "$ARTEFACTS/status-page-ttft.png"
	browser --window-size=1280,560 --virtual-time-budget=4000 --dump-dom \
		--screenshot="$ARTEFACTS/status-page-ttft.png" "http://127.0.0.1:$ADMIN_PORT/?refresh=0.5" \
		>"$BATS_TEST_TMPDIR/page.html"
	agent_get /state >"$BATS_TEST_TMPDIR/state.json"
	local page=$BATS_TEST_TMPDIR/page.html st=$BATS_TEST_TMPDIR/state.json
	grep -q 'id="banner" style="display: none;"' "$page" || fail "the error banner shows"
	grep -q '<html lang="en" class="pol-ttft">' "$page" || fail "not shown as a ttft policy"

	# The history: every sample kept, each line drawn through all of them
	# (a rate through all but the first).
	local n
	n=$(dom_value "$page" history)
	[ "$n" -ge 4 ] || fail "$n samples kept, wanted 4 or more"
	assert_equal "samples $(dom_value "$page" samples)" "samples $n"
	assert_equal "leases line $(spark_n "$page" t-leases)" "leases line $n"
	assert_equal "rate line $(spark_n "$page" t-rate)" "rate line $((n - 1))"
	local s
	for s in vllm0 vllm1 vllm2 vllm3; do
		assert_equal "$s in flight line $(spark_n "$page" "$s-inflight")" "$s in flight line $n"
		assert_equal "$s KV line $(spark_n "$page" "$s-kv")" "$s KV line $n"
	done

	# ttft's own numbers per server, as /state has them.
	local srv age
	for s in vllm0 vllm1 vllm2 vllm3; do
		srv=".ttft[] | select(.name == \"$s\")"
		assert_equal "$s max_model_len $(dom_value "$page" "$s" max_model_len)" \
			"$s max_model_len $(jq "$srv.max_model_len" "$st")"
		assert_equal "$s slowness $(dom_value "$page" "$s" slowness)" \
			"$s slowness $(jq "$srv.slowness * 100 | round / 100" "$st")"
		[ -n "$(dom_value "$page" "$s" queue_s)" ] || fail "$s: no predicted first token"
		# Scraped every 100 ms: the page read an age well under a second.
		age=$(dom_value "$page" "$s" scrape_age)
		[[ "$age" =~ ^[0-9]+$ ]] && [ "$age" -lt 1000 ] || fail "$s scrape age '$age'"
	done
	# The stubs' context lengths differ by group: the page shows each.
	assert_equal "$(dom_value "$page" vllm0 max_model_len)" "$(jq '.ttft[0].max_model_len' "$st")"

	# ttft's settings; none of the reference algorithm's knobs.
	assert_equal "$(dom_value "$page" cfg-engine-speed)" 1
	# --lora-load, as /state's lora_load_s has it (seconds there).
	assert_equal "lora_load_s $(jq .lora_load_s "$st")" "lora_load_s 0.25"
	assert_equal "$(dom_value "$page" cfg-lora-load)" 250ms
	assert_equal "$(dom_value "$page" cfg-scrape-interval)" 100ms
	assert_equal "$(dom_value "$page" cfg-outlier)" on
	assert_equal "$(dom_value "$page" cfg-max-leases)" "$(sed -n 's/^max-leases = //p' <(agent_get /config))"
	local knob
	for knob in server-group-threshold max-request-tokens sensitivity affinity-strength \
		redirect-threshold group-sizes; do
		run grep -c "data-k=\"cfg-$knob\"" "$page"
		assert_output 0
	done
	[ -s "$ARTEFACTS/status-page-ttft.png" ] || fail "no screenshot"
	echo "# screenshot: $ARTEFACTS/status-page-ttft.png" >&3
}
