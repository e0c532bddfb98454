#!/usr/bin/env bats
# /metrics is valid Prometheus text and its counters move as requests flow.

load helpers

setup() {
	dbk_env
}

teardown() {
	dbk_teardown
}

metric() { # metric NAME-WITH-LABELS: its value
	agent_get /metrics | awk -v m="$1" '$1 == m { print $2 }'
}

@test "the format check (promtool) tells clean, linted and broken text apart" {
	local f=$BATS_TEST_TMPDIR/p
	printf '# HELP x_total x\n# TYPE x_total counter\nx_total 1\n' >"$f"
	run prom_lint "$f"
	assert_success
	# Parses, but a counter without _total and no HELP: lint findings.
	printf '# TYPE x counter\nx 1\n' >"$f"
	run prom_lint "$f"
	assert_equal "$status" 3
	assert_output --partial '"_total" suffix'
	prom_parses "$f"
	printf '# HELP y y\n# TYPE y gauge\ny{a="b" 1\n' >"$f"
	run prom_parses "$f"
	assert_failure
}

@test "/metrics parses as Prometheus text and its counters move as requests flow" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	agent_get /metrics >"$BATS_TEST_TMPDIR/m0"
	run prom_lint "$BATS_TEST_TMPDIR/m0"
	assert_success
	assert_equal "$(metric 'dbucket_decisions_total{bucket="0",group="0"}')" 0

	body_of_size 300 >"$BATS_TEST_TMPDIR/s.json"
	body_of_size 140000 >"$BATS_TEST_TMPDIR/l.json"
	local i
	for ((i = 0; i < 3; i++)); do
		post "$BATS_TEST_TMPDIR/s.json" >/dev/null
		post "$BATS_TEST_TMPDIR/l.json" >/dev/null
	done
	wait_state released 6
	agent_get /metrics >"$BATS_TEST_TMPDIR/m1"
	run prom_lint "$BATS_TEST_TMPDIR/m1"
	assert_success
	assert_equal "$(metric 'dbucket_decisions_total{bucket="0",group="0"}')" 3
	assert_equal "$(metric 'dbucket_decisions_total{bucket="1",group="1"}')" 3
	assert_equal "$(metric 'dbucket_server_decisions_total{server="vllm0"}')" 3
	assert_equal "$(metric 'dbucket_releases_total{cause="completion"}')" 6
	assert_equal "$(metric dbucket_spop_notifies_total)" 6
	assert_equal "$(metric dbucket_decision_seconds_count)" 6
	assert_equal "$(metric dbucket_completion_lag_seconds_count)" 6
	# promtool does not check a histogram's arithmetic: its buckets are
	# cumulative and the last (+Inf) is its count.
	local h
	for h in dbucket_decision_seconds dbucket_completion_lag_seconds; do
		run awk -v b="${h}_bucket{" 'index($1, b) == 1 { if ($2 < last) bad = 1; last = $2 }
			END { print bad ? "not cumulative" : last }' "$BATS_TEST_TMPDIR/m1"
		assert_output 6
	done
	assert_equal "$(metric dbucket_inflight_leases)" 0
}

@test "HAProxy's own exporter answers beside the agent's" {
	start_agent --enable-dynamic-bucket
	start_haproxy
	run curl -s "http://$DBK_STATS_BIND/metrics"
	assert_success
	assert_output --partial 'haproxy_backend_active_servers{proxy="vllm"} 4'
}

@test "/state shows --lora-load as given, whatever --engine-speed, or the default it stands for at that speed" {
	start_agent --policy ttft --engine-speed 2 --lora-load 1500
	assert_equal "$(state_field engine_speed)" 2
	assert_equal "$(state_field lora_load_s)" 1.5
	stop_agent
	# The engine model's 50 ms, on servers twice as fast.
	start_agent --policy ttft --engine-speed 2
	assert_equal "$(state_field lora_load_s)" 0.025
}
