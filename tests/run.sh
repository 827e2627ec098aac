#!/bin/sh
# Runs Criterion test binaries one after another and prints one closing
# line with the totals. Exit status: 0 only when every binary passed.
set -u
passed=0 failed=0 bins_failed=""
for bin in "$@"; do
	echo "=== $bin"
	out=$(mktemp)
	# One test at a time: integration tests measure CPU and share the
	# machine's BPF and perf resources; Criterion would run one per CPU.
	"$bin" --jobs=1 2>&1 | tee "$out"
	rc=$?
	# Criterion: "[====] Synthesis: Tested: 5 | Passing: 5 | Failing: 0 | Crashing: 0"
	line=$(grep -a 'Synthesis:' "$out" | tail -1)
	rm -f "$out"
	p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
	c=$(echo "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0} + ${c:-0}))
	if [ -z "$line" ]; then
		failed=$((failed + 1)); bins_failed="$bins_failed $bin(no-synthesis)"
	elif [ "${f:-0}" != 0 ] || [ "${c:-0}" != 0 ]; then
		bins_failed="$bins_failed $bin"
	fi
done
[ -n "$bins_failed" ] && echo "failing test binaries:$bins_failed"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
