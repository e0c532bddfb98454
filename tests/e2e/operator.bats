#!/usr/bin/env bats
# The operator's files (contrib/grafana, contrib/prometheus) read the
# metrics that a live agent, HAProxy and the vLLM servers (the stub, which
# serves vLLM's names) export: a renamed or dropped metric fails here, not
# on an operator's empty panel or silent alert.

load stubs

setup() { stubs_setup; }
teardown() { stubs_teardown; }

# Metric names the files read: dbucket_* and haproxy_* words and vLLM's
# vllm:* names, but not the dashboard's variables ($haproxy_job); a
# histogram's _bucket is its family's name.
names_read() {
	grep -hoE '(^|[^$A-Za-z0-9_])((dbucket|haproxy)_[a-z0-9_]+|vllm:[a-z0-9_:]+)' "$@" |
		sed -E 's/^[^a-z]//; s/:+$//; s/_bucket$//' |
		grep -vxF -f <(jq -r '.templating.list[].name' "$REPO/contrib/grafana/dbucket.json") | sort -u
}

@test "the Grafana dashboard and the alert rules read only metrics the agent (either policy), HAProxy and vLLM export" {
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
	# Some traffic first, so that HAProxy's per-server series and the
	# stubs' histograms have samples.
	local r
	for r in 1 2 3 4; do
		curl -s -o /dev/null --max-time 10 -H 'Content-Type: application/json' \
			-d '{"model":"stub-model","prompt":"Hello","max_tokens":2}' \
			"http://$DBK_BIND/v1/completions"
	done
	{
		agent_get /metrics
		curl -s --max-time 5 "http://$DBK_STATS_BIND/metrics"
		curl -s --max-time 5 "http://127.0.0.1:${STUB_PORT[0]}/metrics"
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
	grep -q '^haproxy_server_http_responses_total$' "$BATS_TEST_TMPDIR/exported"
	grep -q '^vllm:time_to_first_token_seconds$' "$BATS_TEST_TMPDIR/exported"

	names_read "$REPO/contrib/grafana/dbucket.json" "$REPO/contrib/prometheus/dbucket.rules.yml" \
		>"$BATS_TEST_TMPDIR/read"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/read")" -gt 20 ] || fail "only $(wc -l <"$BATS_TEST_TMPDIR/read") names read"
	# The outcome panels' names are among those checked.
	grep -qx 'vllm:prefix_cache_hits_total' "$BATS_TEST_TMPDIR/read"
	grep -qx 'haproxy_server_total_time_average_seconds' "$BATS_TEST_TMPDIR/read"
	grep -qx 'vllm:inter_token_latency_seconds' "$BATS_TEST_TMPDIR/read"
	grep -qx 'vllm:e2e_request_latency_seconds' "$BATS_TEST_TMPDIR/read"
	run comm -23 "$BATS_TEST_TMPDIR/read" "$BATS_TEST_TMPDIR/exported"
	assert_output ''
}

@test "the dashboard is valid JSON: unique panel ids, every query on the chosen datasource" {
	local d=$REPO/contrib/grafana/dbucket.json
	run jq -r '[.panels[].id] | (length == (unique | length))' "$d"
	assert_output true
	run jq -r '[.panels[] | select(.type != "row") | .targets[] | .datasource.uid] | unique | join(" ")' "$d"
	assert_output '${datasource}'
	# Each panel's expressions name the agent's, HAProxy's or vLLM's job
	# variable.
	run jq -r '.panels[] | select(.type != "row") | .targets[] | .expr | select(test("\\$(job|haproxy_job|vllm_job)") | not)' "$d"
	assert_output ''
}

@test "the dashboard shows outcomes: every panel described, model and server variables, vLLM's dashboards linked" {
	local d=$REPO/contrib/grafana/dbucket.json
	run jq -r '.panels[] | select(.type != "row") | select((.description // "") == "") | .title' "$d"
	assert_output ''
	run jq -r '[.templating.list[].name] | map(select(. == "model" or . == "vllm_instance" or . == "vllm_job")) | sort | join(" ")' "$d"
	assert_output 'model vllm_instance vllm_job'
	# vLLM's series are filtered by both.
	run jq -r '.panels[] | select(.type != "row") | .targets[] | .expr | select(test("vllm:")) | select(test("model_name=~\"\\$model\"") and test("instance=~\"\\$vllm_instance\"") | not)' "$d"
	assert_output ''
	# Time to first token, time per output token and end-to-end
	# percentiles, tokens/s, 5xx ratio, prefix hits.
	local want
	for want in 'histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket' \
		'histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket' \
		'rate(vllm:time_per_output_token_seconds_bucket' \
		'histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket' \
		'rate(vllm:generation_tokens_total' 'code="5xx"' 'rate(vllm:prefix_cache_hits_total'; do
		jq -r '.panels[].targets[]?.expr' "$d" | grep -qF -- "$want" || fail "no panel reads $want"
	done
	run jq -r '.links[].url' "$d"
	assert_line 'https://github.com/vllm-project/vllm/tree/main/examples/observability/dashboards/grafana'
	# The sample Prometheus configuration scrapes every job the panels read.
	local job
	for job in dbucket haproxy vllm; do
		grep -q "job_name: $job\$" "$REPO/contrib/prometheus/prometheus.yml" || fail "no job $job"
	done
}

@test "admission: the dashboard's row and the shedding alert read the agent's per-class series, exported with a class label" {
	local d=$REPO/contrib/grafana/dbucket.json r=$REPO/contrib/prometheus/dbucket.rules.yml
	run jq -r '.panels[] | select(.type == "row") | .title' "$d"
	assert_line --partial 'Admission'
	names_read "$d" "$r" | grep '^dbucket_admission_\|^dbucket_fleet_' >"$BATS_TEST_TMPDIR/read"
	grep -qx dbucket_admission_shed_total "$BATS_TEST_TMPDIR/read"
	grep -q 'alert: DbucketSheddingSustained' "$r"
	start_agent --policy ttft --admission
	agent_get /metrics >"$BATS_TEST_TMPDIR/metrics"
	local n
	while read -r n; do
		grep -q "^# TYPE $n " "$BATS_TEST_TMPDIR/metrics" || fail "$n is not exported"
	done <"$BATS_TEST_TMPDIR/read"
	grep -q '^dbucket_admission_shed_total{class="sheddable",reason="predicted_late"} 0$' \
		"$BATS_TEST_TMPDIR/metrics"
	grep -q '^dbucket_admission_admitted_total{class="critical"} 0$' "$BATS_TEST_TMPDIR/metrics"
	grep -q '^dbucket_admission_enabled 1$' "$BATS_TEST_TMPDIR/metrics"
}
