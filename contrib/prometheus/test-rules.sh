#!/bin/sh
# promtool on the alert rules: `promtool check rules`, the sample
# configuration (`promtool check config`), then each file of
# unit tests in tests/ (`promtool test rules`), one result each; ends with
# the line "N passed, N failed" that tests/run counts. promtool comes with
# Debian's prometheus package (contrib/install-deps.sh).
set -u
dir=$(cd "$(dirname "$0")" && pwd)

if ! command -v promtool >/dev/null 2>&1; then
	echo "not ok - no promtool: install Debian's prometheus package (contrib/install-deps.sh)"
	echo "0 passed, 1 failed"
	exit 1
fi

passed=0
failed=0
check() { # check NAME CMD...
	name=$1
	shift
	if out=$("$@" 2>&1); then
		passed=$((passed + 1))
		echo "ok - $name"
	else
		failed=$((failed + 1))
		echo "not ok - $name"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
}

check "promtool check rules dbucket.rules.yml" promtool check rules "$dir/dbucket.rules.yml"
check "promtool check config prometheus.yml (the sample, with the rules)" \
	promtool check config "$dir/prometheus.yml"
# Every alert has a runbook_url, README.md#ANCHOR, and README.md has a
# heading with that anchor (GitHub's: lower case, spaces to hyphens,
# punctuation dropped).
runbooks() {
	anchors=$(sed -n 's/^#\{1,6\} //p' "$dir/../../README.md" |
		tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9_\n-')
	awk '/- alert:/ { if (a) print a " -"; a = $3 }
	     a && /runbook_url:/ { gsub(/"/, "", $2); print a " " $2; a = "" }
	     END { if (a) print a " -" }' "$dir/dbucket.rules.yml" | {
		n=0
		while read -r alert url; do
			n=$((n + 1))
			case $url in
			README.md#?*) ;;
			*) echo "$alert: runbook_url '$url' is not README.md#ANCHOR"; exit 1 ;;
			esac
			printf '%s\n' "$anchors" | grep -qx -- "${url#README.md#}" ||
				{ echo "$alert: README.md has no heading #${url#README.md#}"; exit 1; }
		done
		[ "$n" -gt 0 ] || { echo "no alert found"; exit 1; }
	}
}
check "every alert has a runbook_url to a section of README.md" runbooks
for t in "$dir"/tests/*.yml; do
	check "promtool test rules tests/$(basename "$t")" promtool test rules "$t"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
