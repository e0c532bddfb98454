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
for t in "$dir"/tests/*.yml; do
	check "promtool test rules tests/$(basename "$t")" promtool test rules "$t"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
