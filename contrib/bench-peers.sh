#!/usr/bin/env bash
# How late and how dear HAProxy's own peers make a shared table of books
# (issue 31: several balancers sharing their books through stick tables,
# no protocol of ours). NODES HAProxy processes on 127.0.0.1, 127.0.0.2,
# ... share one table through a `peers` section, each with its own
# runtime socket, nothing else configured:
#
#   - the delay: a probe writes `set table dbk_books key probe data.gpt0
#     SEQ` on node 1 and polls `show table dbk_books key probe` on node 2
#     until it reads SEQ, UPDATES times; the distribution of the time from
#     the write's answer to the first read that shows it (the poll itself
#     takes a fraction of a millisecond: that is the resolution);
#   - under load: the same while each node is written WRITES commands a
#     second (K agents x decisions a second: one `set table` per decision
#     on a random row of NODES x SERVERS, written in batches every 10 ms
#     as an agent's event-loop turn would, ';'-separated) and read with
#     `show table dbk_books` every READ_MS ms, as each agent would;
#   - the cost: the HAProxy processes' CPU time (from /proc/PID/stat) over
#     the loaded window, as a share of one core, and the reader's;
#   - with --agent, dbucket-spoa on node 1 sharing the books
#     (--share-books, its --share-interval READ_MS) among the python
#     readers and writers: its CPU over the same window, reading the
#     whole table and charging the other nodes' rows to ttft's books as
#     they change (node 1's HAProxy gets a backend of SERVERS servers
#     named as the rows are, never checked, never scraped).
#
#   contrib/bench-peers.sh [--nodes N] [--servers S] [--updates U]
#                          [--writes W] [--read-ms MS] [--seconds S] [--agent]
#
# The table stores gpt0, gpc0, gpc1 and http_req_cnt, which HAProxy 2.6's
# `set table` can write one by one (`data.gpt[i]`, an array element, is
# 3.2's: commit e8b7337d8 "support optional index for array types in
# {set, clear, show} table commands"). The probe is python3 (Debian's),
# a reader at least as dear as the agent's C one. Loopback only; every
# process is stopped by its pid.
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
. "$REPO/contrib/lib.sh"

nodes=2 servers=64 updates=500 writes=400 read_ms=10 seconds=20 agent=0
dbk_options "--nodes nodes
--servers servers
--updates updates
--writes writes
--read-ms read_ms
--seconds seconds
--agent agent=1" "$@"
dbk_need_cmds haproxy python3
[ "$nodes" -ge 2 ] && [ "$nodes" -le 8 ] || { echo "$DBK_WHO: --nodes 2 to 8" >&2; exit 2; }

dbk_tmp_dir
port=$(dbk_port)

peers_section() {
	local i
	echo "peers dbk"
	for ((i = 1; i <= nodes; i++)); do echo "    peer n$i 127.0.0.$i:$port"; done
}
for ((i = 1; i <= nodes; i++)); do
	cat >"$tmp/n$i.cfg" <<EOF
global
    stats socket $tmp/n$i.sock level admin
    log stderr local0 err
$(peers_section)
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
backend dbk_books
    stick-table type string len 64 size 4k expire 60s peers dbk store gpt0,gpc0,gpc1,http_req_cnt
EOF
	if [ "$agent" = 1 ] && [ "$i" = 1 ]; then
		echo "backend vllm" >>"$tmp/n1.cfg"
		for ((j = 0; j < servers; j++)); do echo "    server s$j 127.0.0.1:9" >>"$tmp/n1.cfg"; done
	fi
	haproxy -L "n$i" -f "$tmp/n$i.cfg" -db >"$tmp/n$i.log" 2>&1 &
	pids+=($!)
done
hpids="${pids[*]}"

# Connected when every node's `show peers` says ESTA for every other.
peers_up() {
	local i
	for ((i = 1; i <= nodes; i++)); do
		[ -S "$tmp/n$i.sock" ] || return 1
		[ "$(python3 - "$tmp/n$i.sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"show peers\n")
out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
print(out.decode().count("last_status=ESTA"))
EOF
)" -ge $((nodes - 1)) ] || return 1
	done
}
dbk_wait_until 10 peers_up || { echo "$DBK_WHO: the peers did not connect" >&2; exit 1; }

apid=0
if [ "$agent" = 1 ]; then
	BUILD=${DBK_BUILD:-$REPO/build}
	aport=$(dbk_ports 3)
	"$BUILD/dbucket-spoa" --policy ttft --haproxy-socket "$tmp/n1.sock" --share-books dbk_books \
		--node n1 --share-interval "$read_ms" --scrape-interval 3600s --listen "127.0.0.1:$aport" \
		--completion-listen "127.0.0.1:$((aport + 1))" --admin-listen "127.0.0.1:$((aport + 2))" \
		--max-servers "$servers" 2>"$tmp/agent.log" &
	apid=$!
	pids+=("$apid")
	dbk_wait_port $((aport + 2))
fi

python3 - "$tmp" "$nodes" "$servers" "$updates" "$writes" "$read_ms" "$seconds" "$hpids" "$apid" <<'EOF'
import os, random, socket, statistics, sys, threading, time

tmp, nodes, servers, updates, writes, read_ms, seconds = sys.argv[1], *map(int, sys.argv[2:8])
hpids = [int(p) for p in sys.argv[8].split()]
apid = int(sys.argv[9])
sock = lambda i: f"{tmp}/n{i}.sock"
tck = os.sysconf("SC_CLK_TCK")

def cmd(path, line):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
    s.sendall(line.encode() + b"\n")
    out = []
    while True:
        b = s.recv(65536)
        if not b:
            break
        out.append(b)
    s.close()
    return b"".join(out)

def cpu(pid):  # utime + stime, ticks
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])

def probe(n):
    delays, lost = [], 0
    for seq in range(1, n + 1):
        cmd(sock(1), f"set table dbk_books key probe data.gpt0 {seq}")
        t0 = time.monotonic()
        want = f"gpt0={seq} ".encode()
        for polls in range(1, 100001):
            if want in cmd(sock(2), "show table dbk_books key probe"):
                break
            if time.monotonic() - t0 > 2:
                lost += 1
                break
        else:
            lost += 1
        delays.append((time.monotonic() - t0) * 1e3)
        time.sleep(0.002)
    return delays, lost

def summary(name, r):
    d, lost = sorted(r[0]), r[1]
    late = [(k, round(x)) for k, x in enumerate(r[0]) if x > 50]
    q = lambda p: d[min(len(d) - 1, int(p * len(d)))]
    print(f"{name}: n={len(d)} p50={q(.5):.2f} ms p90={q(.9):.2f} p99={q(.99):.2f} max={d[-1]:.2f} mean={statistics.mean(d):.2f}; {lost} not seen within 2 s"
          + (f"; over 50 ms (update, ms): {late[:8]}" if late else ""))

# The rows every node writes: its own, node/server.
rows = [f"n{i}/s{j}" for i in range(1, nodes + 1) for j in range(servers)]
for i in range(1, nodes + 1):
    for j in range(servers):
        cmd(sock(i), f"set table dbk_books key n{i}/s{j} data.gpt0 0 data.gpc0 0 data.gpc1 0 data.http_req_cnt 0")

# The first seconds after start are not steady: both nodes connect at
# once, one session is dropped (HAProxy's collision rule) and an update
# made meanwhile waits for the next session: shown apart.
summary("delay in the first 200 updates after start", probe(200))
summary("idle delay", probe(updates))

stop = threading.Event()
stats = {"writes": 0, "reads": 0, "read_bytes": 0, "rows_seen": 0, "late_turns": 0}
def writer(i):
    # One batch per 10 ms turn: writes/100 `set table` lines joined by ';'.
    # As an agent's books move: each write is a request sent to a random
    # server (in flight +1, 3,000 prompt tokens, 3,100 context) or, one
    # time in two, one ending where some are in flight.
    per_turn = max(1, writes // 100)
    rnd = random.Random(i)
    inflight, sent = [0] * servers, [0] * servers
    nxt = time.monotonic()
    while not stop.is_set():
        lines = []
        for _ in range(per_turn):
            j = rnd.randrange(servers)
            if rnd.random() < 0.5 or inflight[j] == 0:
                inflight[j] += 1
                sent[j] += 1
            else:
                inflight[j] -= 1
            lines.append(f"set table dbk_books key n{i}/s{j} data.gpt0 {inflight[j]} "
                         f"data.gpc0 {3000 * inflight[j]} data.gpc1 {3100 * inflight[j]} "
                         f"data.http_req_cnt {sent[j]}")
        cmd(sock(i), ";".join(lines))
        stats["writes"] += per_turn
        nxt += 0.010
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        else:
            nxt = time.monotonic()
def reader(i, out):
    nxt = time.monotonic()
    c0 = time.process_time()
    while not stop.is_set():
        b = cmd(sock(i), "show table dbk_books")
        stats["reads"] += 1
        stats["read_bytes"] += len(b)
        stats["rows_seen"] = b.count(b"\n0x")
        nxt += read_ms / 1e3
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        else:
            stats["late_turns"] += 1
            nxt = time.monotonic()
threads = [threading.Thread(target=writer, args=(i,)) for i in range(1, nodes + 1)]
threads += [threading.Thread(target=reader, args=(i, None)) for i in range(1, nodes + 1)]
# The cost over a window without the probe (its tight polling would be
# counted in node 2's CPU), then the probe under the same load.
for t in threads:
    t.start()
time.sleep(0.5)
c0 = [cpu(p) for p in hpids]
a0 = cpu(apid) if apid else 0
me0 = os.times()
t0 = time.monotonic()
w0, r0 = stats["writes"], stats["reads"]
while time.monotonic() - t0 < seconds:
    time.sleep(0.1)
wall = time.monotonic() - t0
c1 = [cpu(p) for p in hpids]
a1 = cpu(apid) if apid else 0
me1 = os.times()
nw, nr = stats["writes"] - w0, stats["reads"] - r0
loaded = probe(updates)
stop.set()
for t in threads:
    t.join()
summary(f"loaded delay ({nodes} nodes x {writes} writes/s, show table every {read_ms} ms)", loaded)
print(f"table: {len(rows)} rows, show table answer {stats['read_bytes'] / max(1, stats['reads']):.0f} bytes, "
      f"{stats['rows_seen']} rows; {nw / wall:.0f} writes/s, {nr / wall:.0f} reads/s in all "
      f"({stats['late_turns']} reads late) over {wall:.1f} s")
for p, a, b in zip(hpids, c0, c1):
    print(f"haproxy pid {p}: {(b - a) / tck / wall * 100:.1f}% of a core")
if apid:
    print(f"dbucket-spoa on node 1 (--share-books, every {read_ms} ms): {(a1 - a0) / tck / wall * 100:.1f}% of a core")
# A peer session that broke and reconnected shows as new_conn above 1.
for i in range(1, nodes + 1):
    sp = cmd(sock(i), "show peers").decode()
    conns = [int(x.split()[0]) for x in sp.split("new_conn=")[1:]]
    print(f"node {i}: peer sessions opened {conns}")
print(f"the python writers and readers together: "
      f"{((me1.user - me0.user) + (me1.system - me0.system)) / wall * 100:.1f}% of a core")
EOF
