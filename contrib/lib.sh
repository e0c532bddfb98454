# shellcheck shell=bash
# Sourced by the contrib/*.sh scripts, after they cd to the repository:
# loopback ports and the processes they start. Messages start with the
# name of the script that sourced this file (contrib/soak.sh: "soak").

DBK_WHO=${0##*/}
DBK_WHO=${DBK_WHO%.sh}

# HAPROXY=/path/to/haproxy runs that HAProxy instead of the one in PATH:
# it comes first in PATH as "haproxy" (a link in build/), so that the
# scripts' own "haproxy" and every program they start find it.
if [ -n "${HAPROXY:-}" ] && [ "$HAPROXY" != haproxy ]; then
	mkdir -p build/haproxy-bin &&
		ln -sfn "$(readlink -f "$HAPROXY")" build/haproxy-bin/haproxy &&
		PATH=$PWD/build/haproxy-bin:$PATH
fi

# Ports come from below the ephemeral range: a port in it may be taken
# at any time as the source port of some outgoing connection.
DBK_EPHEMERAL_LOW=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)

dbk_in_use() { # dbk_in_use PORT: something accepts on 127.0.0.1:PORT
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

dbk_ports() { # dbk_ports N: the first of N free consecutive loopback ports
	local n=$1 b i k
	for ((i = 0; i < 200; i++)); do
		b=$((10000 + (RANDOM * 32768 + RANDOM) % (DBK_EPHEMERAL_LOW - 10000 - n)))
		for ((k = 0; k < n; k++)); do
			dbk_in_use $((b + k)) && break
		done
		[ "$k" -eq "$n" ] && { echo "$b"; return 0; }
	done
	return 1
}

dbk_port() { # a free loopback port
	dbk_ports 1
}

dbk_wait_port() { # dbk_wait_port PORT: until something accepts on it (at most ~5 s)
	local i
	for ((i = 0; i < 250; i++)); do
		dbk_in_use "$1" && return 0
		sleep 0.02
	done
	echo "$DBK_WHO: nothing listens on port $1" >&2
	return 1
}

# shellcheck disable=SC2154 # pids is the caller's
dbk_stop_pids() { # TERM to every process in the caller's array pids, then reaps them
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}

# shellcheck disable=SC2154 # tmp is the caller's
dbk_cleanup() { # an EXIT trap: dbk_stop_pids, then $tmp goes unless KEEP_TMP is set
	dbk_stop_pids
	if [ -n "${KEEP_TMP:-}" ]; then echo "logs and configs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}

# Prints the configuration of fast backends: HAProxy answering from memory
# as vllm0..3 on ports BASE..BASE+3, the DBK_VLLMi that haproxy.cfg reads
# exported.
dbk_fast_backends() { # dbk_fast_backends BASE
	local i
	echo "global"
	echo "  log stderr format raw local0 err"
	echo "defaults"
	echo "  mode http"
	echo "  timeout client 30s"
	echo "  timeout server 30s"
	echo "  timeout connect 5s"
	for i in 0 1 2 3; do
		export "DBK_VLLM$i=127.0.0.1:$(($1 + i))"
		echo "frontend b$i"
		echo "  bind 127.0.0.1:$(($1 + i))"
		echo "  http-request return status 200 content-type application/json string '{\"ok\":true}' hdr X-Served-By vllm$i"
	done
}
