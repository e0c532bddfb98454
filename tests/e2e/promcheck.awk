# A small checker for the Prometheus text exposition format (0.0.4), as
# much of it as dbucket-spoa emits: HELP and TYPE lines before a family's
# samples, names and labels of the allowed shapes, numeric values,
# counters named *_total, histogram buckets cumulative and ending in
# +Inf == _count. Prints one line per violation and exits 1 if any.
function bad(msg) { printf "line %d: %s: %s\n", NR, msg, $0; errors++ }
function family(name) {
	if (name in type) return name
	sub(/_(bucket|sum|count)$/, "", name)
	return name
}
BEGIN { errors = 0 }
/^# HELP / {
	if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) bad("bad metric name in HELP")
	help[$3] = 1
	next
}
/^# TYPE / {
	if ($4 !~ /^(counter|gauge|histogram|summary|untyped)$/) bad("unknown type")
	if ($3 in type) bad("family typed twice")
	type[$3] = $4
	if ($4 == "counter" && $3 !~ /_total$/) bad("counter not named *_total")
	next
}
/^#/ { next }
/^$/ { bad("empty line"); next }
{
	if (!match($0, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? /)) {
		bad("malformed sample")
		next
	}
	name = $0; sub(/[{ ].*/, "", name)
	value = substr($0, RLENGTH + 1)
	if (value !~ /^[-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+|Inf|NaN)$/) bad("bad value")
	f = family(name)
	if (!(f in type)) bad("sample before its TYPE")
	if (!(f in help)) bad("sample without HELP")
	if (type[f] == "histogram" && name ~ /_bucket$/) {
		le = $0; sub(/.*le="/, "", le); sub(/".*/, "", le)
		key = $0; sub(/le="[^"]*",?/, "", key); sub(/ .*/, "", key)
		if (key in last && value + 0 < last[key]) bad("histogram bucket not cumulative")
		last[key] = value + 0
		if (le == "+Inf") inf[f] = value + 0
	}
	if (type[f] == "histogram" && name ~ /_count$/ && (f in inf) && inf[f] != value + 0)
		bad("+Inf bucket differs from _count")
	samples++
}
END {
	if (samples == 0) { print "no samples"; errors++ }
	exit errors ? 1 : 0
}
