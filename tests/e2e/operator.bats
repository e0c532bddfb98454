#!/usr/bin/env bats
# The operator's files (contrib/grafana, contrib/prometheus) read the
# metrics that a live agent and HAProxy export: a renamed or dropped
# metric fails here, not on an operator's empty panel or silent alert.

load stubs

setup() { stubs_setup; }
teardown() { stubs_teardown; }

# Metric names the files read: dbucket_* and haproxy_* words, but not
# the dashboard's variables ($haproxy_job); a histogram's _bucket is its
# family's name.
names_read() {
	grep -hoE '(^|[^$A-Za-z0-9_])(dbucket|haproxy)_[a-z0-9_]+' "$@" | sed -E 's/^[^a-z]//; s/_bucket$//' |
		grep -vxF -f <(jq -r '.templating.list[].name' "$REPO/contrib/grafana/dbucket.json") | sort -u
}

@test "the Grafana dashboard and the alert rules read only metrics the agent (either policy) and HAProxy export" {
	start_stubs
	local scrape=() i
	for i in 0 1 2 3; do scrape+=(--scrape "vllm$i=http://127.0.0.1:${STUB_PORT[i]}"); done
	start_agent --enable-dynamic-bucket --haproxy-socket "unix:$DBK_STATS_SOCKET" --poll-interval 100 \
		"${scrape[@]}"
	start_haproxy_stubs
	wait_state runtime_api_up true
	# Every scraped series is there once each stub was scraped.
	local k
	for ((k = 0; k < 250; k++)); do
		[ "$(agent_get /metrics | grep -c '^dbucket_vllm_kv_cache_usage_ratio{')" = 4 ] && break
		sleep 0.02
	done
	{
		agent_get /metrics
		curl -s --max-time 5 "http://$DBK_STATS_BIND/metrics"
	} | awk '$1 == "#" && $2 == "TYPE" { print $3 }' >"$BATS_TEST_TMPDIR/exported.all"
	# Then the same agent under --policy ttft, for the panels of its
	# series.
	stop_agent
	start_agent --policy ttft --haproxy-socket "unix:$DBK_STATS_SOCKET" "${scrape[@]}"
	agent_get /metrics | awk '$1 == "#" && $2 == "TYPE" { print $3 }' >>"$BATS_TEST_TMPDIR/exported.all"
	sort -u "$BATS_TEST_TMPDIR/exported.all" >"$BATS_TEST_TMPDIR/exported"
	grep -q '^dbucket_vllm_kv_cache_usage_ratio$' "$BATS_TEST_TMPDIR/exported"
	grep -q '^dbucket_ttft_slowness$' "$BATS_TEST_TMPDIR/exported"
	grep -q '^haproxy_backend_active_servers$' "$BATS_TEST_TMPDIR/exported"

	names_read "$REPO/contrib/grafana/dbucket.json" "$REPO/contrib/prometheus/dbucket.rules.yml" \
		>"$BATS_TEST_TMPDIR/read"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/read")" -gt 20 ] || fail "only $(wc -l <"$BATS_TEST_TMPDIR/read") names read"
	run comm -23 "$BATS_TEST_TMPDIR/read" "$BATS_TEST_TMPDIR/exported"
	assert_output ''
}

@test "the dashboard is valid JSON: unique panel ids, every query on the chosen datasource" {
	local d=$REPO/contrib/grafana/dbucket.json
	run jq -r '[.panels[].id] | (length == (unique | length))' "$d"
	assert_output true
	run jq -r '[.panels[] | select(.type != "row") | .targets[] | .datasource.uid] | unique | join(" ")' "$d"
	assert_output '${datasource}'
	# Each panel's expressions name the agent's or HAProxy's job variable.
	run jq -r '.panels[] | select(.type != "row") | .targets[] | .expr | select(test("\\$(job|haproxy_job)") | not)' "$d"
	assert_output ''
}
