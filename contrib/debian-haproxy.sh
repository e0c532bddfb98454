#!/usr/bin/env bash
# Debian's HAProxy of another release, runnable on this machine without
# installing it: a minimal chroot of that release made by mmdebstrap from
# Debian's archive, and DIR/haproxy, a wrapper that runs the chroot's
# binary through the chroot's own loader and libraries (no chroot(2), so
# it reads the host's files and binds the host's loopback like any
# HAProxy). For the tests on a 3.x that Debian ships:
#   contrib/debian-haproxy.sh DIR [SUITE]     (SUITE: trixie, i.e. 3.0)
#   HAPROXY=DIR/haproxy make test
# Needs root (mmdebstrap's default mode) and about 110 MB in DIR.
set -eu

dir=${1:?usage: contrib/debian-haproxy.sh DIR [SUITE]}
suite=${2:-trixie}
mirror=${DBK_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if ! command -v mmdebstrap >/dev/null; then
	for try in 1 2 3; do
		apt-get install -y -q mmdebstrap >/dev/null && break
		[ "$try" -eq 3 ] && { echo "debian-haproxy: cannot install mmdebstrap" >&2; exit 1; }
		sleep $((try * 10))
	done
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$dir/$suite
if [ ! -x "$root/usr/sbin/haproxy" ]; then
	# Bounded retries: the archive is a network service.
	for try in 1 2 3; do
		rm -rf "$root"
		mmdebstrap --variant=essential --include=haproxy \
			--dpkgopt='path-exclude=/usr/share/doc/*' \
			--dpkgopt='path-exclude=/usr/share/man/*' \
			"$suite" "$root" "$mirror" >"$dir/mmdebstrap.log" 2>&1 && break
		if [ "$try" -eq 3 ]; then
			tail -n 20 "$dir/mmdebstrap.log" >&2
			echo "debian-haproxy: mmdebstrap $suite failed 3 times" >&2
			exit 1
		fi
		sleep $((try * 10))
	done
fi

cat >"$dir/haproxy" <<EOF
#!/bin/sh
# HAProxy of Debian $suite, through its own loader and libraries.
exec "$root/lib64/ld-linux-x86-64.so.2" \\
	--library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \\
	"$root/usr/sbin/haproxy" "\$@"
EOF
chmod +x "$dir/haproxy"
"$dir/haproxy" -v | head -n 1
