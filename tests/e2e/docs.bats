#!/usr/bin/env bats
# What the documentation, the man pages and the package tell a new user
# to run agrees with itself: the better policy (ttft) by default, and no
# advice that leads to HTTP 400s under the reference algorithm. No
# process is started but the launcher's --print-config.

load helpers

# The documents a user reads before choosing a policy.
docs() {
	local f
	for f in "$REPO/README.md" "$REPO/haproxy/README.md" "$REPO/contrib/launcher/README.md" \
		"$REPO"/contrib/man/* "$REPO"/debian/* "$REPO"/contrib/systemd/* \
		"$REPO"/contrib/systemd/*/*; do
		[ -f "$f" ] && echo "$f"
	done
}

# A document as plain text, one sentence a line: roff's escapes and
# macros, markdown's backticks and line breaks set aside.
sentences() {
	perl -0777 -ne '
		s/\\-/-/g; s/\\e/\\/g; s/\\\(aq/\x27/g; s/\\f[BIRP]//g; s/\\&//g;
		s/^\.(?:B|I|BR|RB|IR|RI|BI|IB|SM)\s+//mg;   # font macros: keep their text
		s/^\.[A-Za-z]+.*$/./mg;                      # other macros end a sentence
		s/^#\s?//mg; s/`//g; s/"//g;
		s/\s+/ /g;
		print "$_\n" for split /(?<=[.!?])\s+(?=[A-Z(`])/;' "$1"
}

@test "no document advises a smaller --max-model-len for the short group without ttft" {
	local f bad=
	while read -r f; do
		# Advice in either order ("give the short group the smaller
		# --max-model-len", "a smaller --max-model-len for the short
		# group"), unless the sentence is about ttft.
		bad+=$(sentences "$f" | grep -iE \
			'short[- ]group[^.]*smaller[^.]*max[-_ ]model[-_ ]len|smaller[^.]*max[-_ ]model[-_ ]len[^.]*short[- ]group' |
			grep -v ttft | sed "s|^|${f#"$REPO"/}: |")
	done < <(docs)
	[ -z "$bad" ] || fail "$bad"
	# The check sees the advice where it is.
	printf '.TP\nGive the short group the instances with the smaller\n.B \\-\\-max\\-model\\-len\nand KV cache.\n' \
		>"$BATS_TEST_TMPDIR/advice.1"
	run grep -ciE 'short[- ]group[^.]*smaller[^.]*max[-_ ]model[-_ ]len' \
		<(sentences "$BATS_TEST_TMPDIR/advice.1")
	assert_output 1
}

@test "what a new install runs is --policy ttft: the package's default file, the unit, --print-config" {
	local f line n=0
	# Every DBUCKET_SPOA_OPTS the package and the unit set.
	while read -r f; do
		while read -r line; do
			n=$((n + 1))
			[[ $line == *"--policy ttft"* ]] || fail "${f#"$REPO"/}: $line"
		done < <(grep -E '^[^#]*DBUCKET_SPOA_OPTS=' "$f" | grep -v '\$DBUCKET_SPOA_OPTS')
	done < <(docs)
	# debian/dbucket-spoa.default and the unit's Environment=.
	[ "$n" -ge 2 ] || fail "only $n DBUCKET_SPOA_OPTS assignments found"
	# The launcher's production options.
	run "$BUILD/dbucket" --print-config "$BATS_TEST_TMPDIR/pc" --server-hosts a b \
		--server-ports 1 2 --enable-dynamic-bucket
	assert_success
	grep -q '^DBUCKET_SPOA_OPTS="--policy ttft ' "$BATS_TEST_TMPDIR/pc/dbucket-spoa.env"
	# And the agent takes them as the unit passes them.
	local opts
	opts=$(sed -n 's/^DBUCKET_SPOA_OPTS="\(.*\)"$/\1/p' "$REPO/debian/dbucket-spoa.default")
	run "$BUILD/dbucket-spoa" $opts --help
	assert_success
}

@test "every example of the agent beside HAProxy (--haproxy-socket) runs --policy ttft" {
	local f bad=
	while read -r f; do
		# Continued lines joined (shell's \ and roff's \e), roff escapes
		# off; then each command line that starts dbucket-spoa.
		bad+=$(perl -0777 -ne 's/\\-/-/g; s/\\e\n/ /g; s/\\\n/ /g; print' "$f" |
			grep -E '(^|[[:space:]`])(build/|/usr/s?bin/)?dbucket-spoa --' |
			grep -E -- '--haproxy-socket' | grep -v -- '--policy ttft' |
			sed "s|^|${f#"$REPO"/}: |")
	done < <(docs)
	[ -z "$bad" ] || fail "$bad"
}

@test "the docs say the agent's own default stays reference, and where ttft is chosen" {
	run grep -c "dbucket-spoa\`'s own default is \`--policy reference\`" "$REPO/README.md"
	assert_output 1
	run "$BUILD/dbucket-spoa" --help
	assert_output --partial "decision for decision (the default)"
	# dbucket(1) says the same.
	run grep -c 'as its own default' "$REPO/contrib/man/dbucket.1"
	assert_output 1
}

@test "no man page prints the configuration straight into /etc/haproxy" {
	local f
	for f in "$REPO"/contrib/man/* "$REPO/README.md"; do
		run grep -nE -- '--print-config /etc/haproxy( |$)' <(perl -pe 's/\\-/-/g' "$f")
		assert_output ''
	done
}
