#!/bin/sh
# Installs the Debian packages dbucket needs, only those that are missing.
# Used by .ci/run, `make test` and `make demo`, so a fresh Debian machine
# needs nothing by hand.
set -eu

PKGS="make gcc clang clang-format libclang-rt-14-dev pkg-config libev-dev libcjson-dev zlib1g-dev
libcurl4-openssl-dev openssl
haproxy bats bats-assert bats-support curl wrk socat procps man-db groff-base
gnuplot-nox valgrind jq prometheus dnsmasq-base
chromium debhelper lintian dpkg-dev python3"
# zlib1g-dev: the session hint's CRC-32 (agent/session_hint.c).
# prometheus: promtool checks /metrics' format (e2e) and the alert rules
# (contrib/prometheus). libcurl4-openssl-dev: https scrapes
# (agent/lib/curl_ev.c); openssl makes tests/e2e/https-scrape.bats'
# certificates. dnsmasq-base: the DNS server on loopback whose
# records change under tests/e2e/fleet.bats' server-template (the binary
# alone; the dnsmasq package would start a system service). The operator's side (contrib/package.mk): chromium
# for the status page's test (tests/e2e/status_page.bats); debhelper,
# lintian and dpkg-dev for `make deb`. python3: the synthesised traces
# (contrib/traces/synth; bench-policies.sh --traces code).

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done
# -- The OpenAI SDK of tests/e2e/openai-client.bats: Debian's nodejs and
# npm when no node is here, then the locked package from npm's registry
# (npm ci), once.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
	missing="$missing nodejs npm"
node_client() {
	d=$(dirname "$0")/../tests/e2e/node
	[ -d "$d/node_modules/openai" ] ||
		(cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
}
[ -z "$missing" ] && { node_client; exit 0; }
# --

echo "install-deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
node_client
