#!/bin/sh
# `make deb`: the Debian package, built by dpkg-buildpackage from a copy
# of the tree in a temporary directory, so that nothing is written into
# the tree itself (dpkg-buildpackage writes its results into the parent
# directory, and debian/rules' clean step empties build/). Not under
# build/: the Makefile includes every *.d it finds there, and the copy has
# directories named so (haproxy.service.d). Leaves in OUT:
#   dbucket_VERSION_ARCH.deb (and -dbgsym), the .changes and .buildinfo,
#   build.log and lintian.txt (lintian's report on the .changes).
# Fails when the build fails or lintian reports an error or a warning;
# the tags left are explained in debian/dbucket.lintian-overrides.
#   contrib/build-deb.sh [OUT]      OUT defaults to build/deb
set -eu
cd "$(dirname "$0")/.."
out=${1:-build/deb}
case $out in /*) ;; *) out=$PWD/$out ;; esac

rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The tree as it is (uncommitted edits included), without what builds or
# installs leave in it.
mkdir "$tmp/dbucket"
tar -cf - --exclude=./build --exclude=./.git --exclude=./tests/e2e/node/node_modules . |
	tar -C "$tmp/dbucket" -xf -

echo "make deb: dpkg-buildpackage in a copy of the tree (log: $out/build.log)"
if ! (cd "$tmp/dbucket" && nice dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "make deb: dpkg-buildpackage failed" >&2
	exit 1
fi
mv "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/
ls "$out"/*.deb

changes=$(ls "$out"/dbucket_*.changes)
rc=0
lintian --display-info --pedantic --show-overrides --fail-on error,warning "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
echo "lintian ($out/lintian.txt):"
if [ -s "$out/lintian.txt" ]; then sed 's/^/  /' "$out/lintian.txt"; else echo "  (no tags)"; fi
[ "$rc" -eq 0 ] || { echo "make deb: lintian reports errors or warnings" >&2; exit 1; }
