#!/usr/bin/env bats
# Two HAProxy nodes in front of the same four vLLM stubs, each with its
# own agent, sharing the agents' books through a stick table HAProxy's
# peers replicate (--share-books, agent/books_share.h). What is checked:
# long prompts sent alternately to the two nodes land on four servers,
# as one balancer would send them, where without sharing the second node
# doubles the first one's choices up; an agent killed, its rows expire
# and the other stops counting its requests; no lease is left after; a
# table without the KV (bytes_in_cnt, an older haproxy.cfg) shares the
# rest; a conversation's second turn sent through the other node goes
# where its first went because of the session table (DBK_SESSION_TABLE,
# agent/session_hint.h), and elsewhere without it.

load stubs

setup() {
	stubs_setup
	local base
	base=$(dbk_ports 12)
	export DBK_PEER1=$base DBK_PEER2=$((base + 1))
	N_BIND=("" "127.0.0.1:$((base + 2))" "127.0.0.1:$DBK_PORT")
	N_AGENT=("" "127.0.0.1:$((base + 3))" "$DBK_AGENT")
	N_COMPL=("" "127.0.0.1:$((base + 4))" "$DBK_COMPLETIONS")
	N_ADMIN=("" "$((base + 5))" "$ADMIN_PORT")
	N_STATS=("" "127.0.0.1:$((base + 6))" "$DBK_STATS_BIND")
	N_SOCK=("" "$BATS_TEST_TMPDIR/n1.sock" "$BATS_TEST_TMPDIR/n2.sock")
	N_HAPROXY=()
	N_AGENT_PID=()
}

teardown() {
	local i
	for i in 1 2; do
		[ -z "${N_AGENT_PID[i]:-}" ] || { kill "${N_AGENT_PID[i]}" 2>/dev/null; wait "${N_AGENT_PID[i]}" 2>/dev/null; }
		[ -z "${N_HAPROXY[i]:-}" ] || { kill "${N_HAPROXY[i]}" 2>/dev/null; wait "${N_HAPROXY[i]}" 2>/dev/null; }
	done
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		for i in 1 2; do
			echo "--- agent$i.log" >&3
			tail -n 20 "$BATS_TEST_TMPDIR/agent$i.log" >&3 2>/dev/null || true
		done
	fi
	stubs_teardown
}

# start_node I [AGENT ARGS...]: HAProxy node nI (the sample plus
# peers.cfg) and its agent (ttft, the stubs scraped, extra ARGS).
start_node() {
	local i=$1 k
	shift
	DBK_BIND=${N_BIND[i]} DBK_AGENT=${N_AGENT[i]} DBK_COMPLETIONS=${N_COMPL[i]} \
		DBK_COMPLETIONS_UDP=${N_COMPL[i]} DBK_STATS_SOCKET=${N_SOCK[i]} \
		DBK_STATS_BIND=${N_STATS[i]} \
		haproxy -L "n$i" -f "$REPO/haproxy/haproxy.cfg" -f "$REPO/tests/e2e/peers.cfg" \
		2>>"$BATS_TEST_TMPDIR/haproxy$i.log" 3>&- &
	N_HAPROXY[i]=$!
	dbk_wait_port "${N_BIND[i]##*:}"
	local -a sa=()
	for k in 0 1 2 3; do sa+=(--scrape "vllm$k=http://127.0.0.1:${STUB_PORT[k]}"); done
	"$BUILD/dbucket-spoa" --listen "${N_AGENT[i]}" --completion-listen "${N_COMPL[i]}" \
		--completion-listen "udp@${N_COMPL[i]}" --admin-listen "127.0.0.1:${N_ADMIN[i]}" \
		--haproxy-socket "${N_SOCK[i]}" --policy ttft "${sa[@]}" "$@" \
		vllm0 vllm1 vllm2 vllm3 2>>"$BATS_TEST_TMPDIR/agent$i.log" 3>&- &
	N_AGENT_PID[i]=$!
	dbk_wait_port "${N_ADMIN[i]}"
}

# restart_plain: both nodes stopped and started again, their agents
# sharing nothing; returns once both are ready.
restart_plain() {
	local i
	kill "${N_AGENT_PID[1]}" "${N_AGENT_PID[2]}"
	wait "${N_AGENT_PID[1]}" "${N_AGENT_PID[2]}" || true
	N_AGENT_PID=()
	for i in 1 2; do
		kill "${N_HAPROXY[i]}"
		wait "${N_HAPROXY[i]}" 2>/dev/null || true
		N_HAPROXY[i]=
		start_node "$i" --scrape-interval 30s
	done
	wait_until 10 ready 1 || fail "node 1 not ready"
	wait_until 10 ready 2 || fail "node 2 not ready"
}

# node_state I: agent I's /state.
node_state() {
	curl -s --max-time 5 "http://127.0.0.1:${N_ADMIN[$1]}/state"
}

# books I: the requests in flight agent I's policy books hold, all
# servers (its own and, shared, the other node's).
books() {
	node_state "$1" | jq '[.. | objects | select(has("inflight") and has("queue_s")) | .inflight] | add // 0'
}
books_is() { [ "$(books "$1")" = "$2" ]; }
leases_is() { [ "$(node_state "$1" | jq .leases)" = "$2" ]; }

# ready I: agent I reads every stub's /v1/models and HAProxy has marked
# its agent UP (a request before that is balanced by HAProxy alone).
ready() {
	[ "$(curl -s --max-time 5 "http://127.0.0.1:${N_ADMIN[$1]}/metrics" |
		grep -c '^dbucket_vllm_max_model_len{')" -ge 4 ] &&
		echo "show servers state dbucket-agents" |
		socat -t 5 - "UNIX-CONNECT:${N_SOCK[$1]}" | awk '$4 == "agent1" && $6 == 2 { ok = 1 } END { exit !ok }'
}

# send_to I BASE BODY: a request to node I in the background.
send_to() {
	send_bg "$2" /v1/completions "$3" "${N_BIND[$1]##*:}"
}

# distinct_body SEED BYTES MAX_TOKENS: a completion whose prompt is BYTES
# of words that differ by SEED.
distinct_body() {
	printf '{"model":"stub-model","max_tokens":%d,"ignore_eos":true,"prompt":"' "$3"
	awk -v s="$1" -v n="$2" 'BEGIN { srand(s); o = "";
		while (length(o) < n) o = o sprintf("w%d ", int(rand() * 1000000));
		printf "%s", substr(o, 1, n) }'
	printf '"}'
}

# four_long SHARE: four long prompts sent alternately to node 1 and node
# 2, each sent once the previous one is in both agents' books when SHARE
# is 1, or in its own agent's only when 0; prints the servers that took
# them.
four_long() {
	local d=$BATS_TEST_TMPDIR i n
	for i in 1 2 3 4; do
		n=$((2 - i % 2))
		# 12k tokens, 2,000 out, each its own text (no prefix to share):
		# a second of prefill, seconds of decode.
		distinct_body "$i$1" 48000 2000 >"$d/r$i.json"
		send_to "$n" "$d/r$i" "$d/r$i.json"
		if [ "$1" = 1 ]; then
			wait_until 10 books_is "$n" "$i" || fail "r$i is not in node $n's books"
			wait_until 10 books_is $((3 - n)) "$i" || fail "r$i is not in the other's books"
		else
			wait_until 10 books_is "$n" "$(((i + 1) / 2))" || fail "r$i is not in node $n's books"
		fi
	done
	wait_clients
	for i in 1 2 3 4; do header "$d/r$i" X-Served-By; done
}

@test "books shared: long prompts alternately to two nodes take four servers, as one balancer's would; without sharing they double up" {
	start_stubs
	# Scrapes far apart: the books are the only news of the other node.
	start_node 1 --share-books dbk_books --node n1 --scrape-interval 30s
	start_node 2 --share-books dbk_books --node n2 --scrape-interval 30s
	wait_until 10 ready 1 || fail "node 1 not ready"
	wait_until 10 ready 2 || fail "node 2 not ready"
	run four_long 1
	assert_success
	assert_equal "$(sort -u <<<"$output" | grep -c .)" 4
	wait_until 10 books_is 1 0 || fail "node 1's books never emptied"
	wait_until 10 books_is 2 0 || fail "node 2's books never emptied"
	assert_equal "$(node_state 1 | jq .leases) $(node_state 2 | jq .leases)" "0 0"
	grep -q 'share-books-nodes.*others=1' "$BATS_TEST_TMPDIR/agent1.log"
	# The rows carry the KV net of the prefix (bytes_in_cnt), written
	# without complaint.
	echo "show table dbk_books" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[2]}" | grep -q 'key=n1/vllm.*bytes_in_cnt='
	! grep -q 'share-books-no-kv\|share-books-failing' "$BATS_TEST_TMPDIR/agent1.log"

	# The same without sharing: each node knows only its own two, and
	# (with these prompts, fixed by their seeds) sends one where the other
	# node already had one.
	restart_plain
	run four_long 0
	assert_success
	local distinct
	distinct=$(sort -u <<<"$output" | grep -c .)
	[ "$distinct" -lt 4 ] || fail "without sharing, four servers too: $output"
}

@test "books shared: an agent killed, its rows expire and the other stops counting them; no lease left" {
	export DBK_BOOKS_EXPIRE=2s
	# A table of an older haproxy.cfg, without the KV: shared all the same.
	export DBK_BOOKS_STORE=gpt0,gpc0,gpc1,http_req_cnt
	start_stubs
	start_node 1 --share-books dbk_books --node n1 --scrape-interval 30s
	start_node 2 --share-books dbk_books --node n2 --scrape-interval 30s
	wait_until 10 ready 1 || fail "node 1 not ready"
	wait_until 10 ready 2 || fail "node 2 not ready"
	local d=$BATS_TEST_TMPDIR
	# 20,000 tokens out: it runs past the test.
	completion_body 20000 false 4000 >"$d/slow.json"
	send_to 1 "$d/a" "$d/slow.json"
	wait_until 10 books_is 2 1 || fail "node 2 never saw node 1's request"
	grep -q 'share-books-no-kv' "$d/agent1.log"
	kill -KILL "${N_AGENT_PID[1]}"
	wait "${N_AGENT_PID[1]}" 2>/dev/null || true
	N_AGENT_PID[1]=
	# Its row stays while node 1's HAProxy keeps it (expire 2 s), then
	# goes, and node 2 lets the request go.
	wait_until 10 books_is 2 0 || fail "node 2 still counts the dead agent's request"
	wait_until 10 grep -q 'share-books-nodes.*others=0' "$d/agent2.log"
	assert_equal "$(node_state 2 | jq .leases)" 0
}

# session_known I KEY: node I's session table holds where KEY last went
# (written by either node: the peers replicate it), server and tokens
# both. HAProxy sets gpt0 and gpt1 by two actions, and its peers may push
# the row between them: a row with the server but 0 tokens is no hint to
# the agent (session_hint.h), and a turn sent on it goes elsewhere.
session_known() {
	echo "show table dbk_sessions key $2" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[$1]}" |
		session_row_whole "$2"
}
session_row_whole() { # session_row_whole KEY: stdin has KEY's row, gpt0 and gpt1 set
	grep -q "key=$1 .*gpt0=[1-9][0-9]* gpt1=[1-9]"
}

@test "session table: a row counts as learnt once it has the server and the tokens, not the server alone" {
	# The row a peer may push between HAProxy's two sc-set-gpt actions.
	! session_row_whole conv-31 <<<"0x55d0: key=conv-31 use=0 exp=59979 gpt0=4010732657 gpt1=0"
	! session_row_whole conv-31 <<<"0x55d0: key=conv-31 use=0 exp=59979 gpt0=0 gpt1=3000"
	session_row_whole conv-31 <<<"0x55d0: key=conv-31 use=0 exp=59979 gpt0=4010732657 gpt1=3000"
}

# only_vllm3_usable I: node I's agent counts vllm3 alone usable.
only_vllm3_usable() {
	curl -s --max-time 5 "http://127.0.0.1:${N_ADMIN[$1]}/metrics" |
		awk '/^dbucket_server_usable\{/ { n++; if ($2 + 0 == 1) { up++; if ($1 !~ /"vllm3"/) other++ } }
			END { exit !(n >= 4 && up == 1 && !other) }'
}

# peers_up I: node I's peer session with the other node is established.
peers_up() {
	echo "show peers" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[$1]}" |
		grep -q "id=n$((3 - $1))(remote.*last_status=ESTA"
}

# two_turns TABLE: a conversation's first turn through node 1, with every
# server but vllm3 in maintenance there (so that it goes where node 2
# would not send it on its own), its second, the first's prompt and more,
# through node 2; prints the servers that took them. TABLE 1: once node
# 2's session table knows the first turn.
two_turns() {
	local d=$BATS_TEST_TMPDIR s i
	for s in vllm0 vllm1 vllm2; do
		echo "set server vllm/$s state maint" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[1]}" >/dev/null
	done
	# Node 1's agent reads the maintenance from HAProxy at its own pace: a
	# choice of a server in maintenance would be HAProxy's to redo.
	wait_until 10 only_vllm3_usable 1 || fail "node 1's agent never saw vllm0-2 in maintenance"
	# 12k tokens, then 13k: the same words (one seed), the second longer.
	distinct_body 31 48000 16 >"$d/t1.json"
	distinct_body 31 52000 16 >"$d/t2.json"
	send "$d/t1" /v1/completions "$d/t1.json" "${N_BIND[1]##*:}" -H "X-Session-Id: conv-31" ||
		fail "turn 1 failed"
	if [ "$1" = 1 ]; then
		wait_until 10 session_known 2 conv-31 || fail "node 2's table never learnt turn 1"
	fi
	send "$d/t2" /v1/completions "$d/t2.json" "${N_BIND[2]##*:}" -H "X-Session-Id: conv-31" ||
		fail "turn 2 failed"
	for i in 1 2; do header "$d/t$i" X-Served-By; done
}

@test "session table: a conversation's second turn through the other node goes where its first went; without the table it does not" {
	start_stubs
	# Scrapes far apart and no books shared: the table is node 2's only
	# news of where turn 1 went.
	export DBK_SESSION_TABLE=dbk_sessions
	start_node 1 --scrape-interval 30s
	start_node 2 --scrape-interval 30s
	wait_until 10 ready 1 || fail "node 1 not ready"
	wait_until 10 ready 2 || fail "node 2 not ready"
	wait_until 10 peers_up 1 || fail "node 1's peer session never came up"
	wait_until 10 peers_up 2 || fail "node 2's peer session never came up"
	run two_turns 1
	assert_success
	assert_equal "${lines[0]}" "${lines[1]}"

	unset DBK_SESSION_TABLE
	restart_plain
	run two_turns 0
	assert_success
	[ "${lines[0]}" != "${lines[1]}" ] || fail "without the table, turn 2 still followed turn 1: $output"
}

@test "session table: a request HAProxy sends elsewhere than the agent chose is recorded where it ran" {
	start_stubs
	export DBK_SESSION_TABLE=dbk_sessions DBK_DEBUG_HEADERS=1
	# Polls a minute apart: the agent keeps choosing servers that are now
	# in maintenance, and HAProxy's leastconn takes the request instead.
	start_node 1 --scrape-interval 30s --poll-interval 60s
	wait_until 10 ready 1 || fail "node 1 not ready"
	local d=$BATS_TEST_TMPDIR s i chose=
	for s in vllm0 vllm1 vllm2; do
		echo "set server vllm/$s state maint" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[1]}" >/dev/null
	done
	# Distinct prompts until the agent names a server in maintenance (its
	# ties go by the prompt's hash: the first almost always does).
	for i in 1 2 3 4 5 6 7 8; do
		distinct_body "4$i" 4000 4 >"$d/r$i.json"
		send "$d/r$i" /v1/completions "$d/r$i.json" "${N_BIND[1]##*:}" -H "X-Session-Id: moved-$i" ||
			fail "request $i failed"
		assert_equal "$(header "$d/r$i" X-Served-By)" vllm3
		chose=$(header "$d/r$i" X-Dbucket-Server)
		[ "$chose" = vllm3 ] || break
	done
	[ "$chose" != vllm3 ] || fail "the agent chose vllm3 eight times: nothing was sent elsewhere"
	# HAProxy's crc32 of "vllm3", where it ran, not the agent's choice.
	echo "show table dbk_sessions key moved-$i" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[1]}" |
		grep -q "key=moved-$i .*gpt0=4010732657 " || fail "entry: $(echo "show table dbk_sessions key moved-$i" | socat -t 5 - "UNIX-CONNECT:${N_SOCK[1]}")"
}
