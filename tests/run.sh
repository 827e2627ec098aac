#!/bin/sh
# Runs test programs one after another and prints one closing line with the
# totals. Exit status: 0 only when every test passed.
#
# Two kinds of test programs:
#   - Criterion binaries: their "Synthesis:" line is counted;
#   - shell tests (*.sh): each check prints "PASS: name" or "FAIL: name: why"
#     on stdout; a script that exits non-zero without any FAIL line counts
#     as one failure, one that prints neither line too.
set -u
passed=0 failed=0 bins_failed=""
for bin in "$@"; do
	echo "=== $bin"
	out=$(mktemp)
	case "$bin" in
	*.sh)
		{ sh "$bin" 2>&1; echo "EXIT: $?"; } | tee "$out"
		;;
	*)
		# One test at a time: integration tests measure CPU and share the
		# machine's BPF and perf resources; Criterion would run one per CPU.
		{ "$bin" --jobs=1 2>&1; echo "EXIT: $?"; } | tee "$out"
		;;
	esac
	# POSIX sh has no PIPESTATUS: the exit status comes from the log.
	rc=$(sed -n 's/^EXIT: //p' "$out" | tail -1)
	case "$bin" in
	*.sh)
		p=$(grep -ac '^PASS: ' "$out")
		f=$(grep -ac '^FAIL: ' "$out")
		c=0
		line="shell"
		if [ "$p" = 0 ] && [ "$f" = 0 ]; then
			line=""
		elif [ "$f" = 0 ] && [ "${rc:-1}" != 0 ]; then
			f=1 # exited non-zero without saying which check failed
		fi
		;;
	*)
		# Criterion: "[====] Synthesis: Tested: 5 | Passing: 5 | Failing: 0 | Crashing: 0"
		# (Failing already counts the crashed tests.)
		line=$(grep -a 'Synthesis:' "$out" | tail -1)
		p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
		f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
		c=0
		if [ -n "$line" ] && [ "${f:-0}" = 0 ] && [ "${rc:-1}" != 0 ]; then
			f=1 # all passed, yet it exited non-zero (a crash after the tests)
		fi
		;;
	esac
	rm -f "$out"
	passed=$((passed + ${p:-0}))
	if [ -z "$line" ]; then
		failed=$((failed + ${f:-0} + ${c:-0} + 1))
		bins_failed="$bins_failed $bin(no-result)"
	else
		failed=$((failed + ${f:-0} + ${c:-0}))
		if [ "${f:-0}" != 0 ] || [ "${c:-0}" != 0 ]; then
			bins_failed="$bins_failed $bin"
		fi
	fi
done
[ -n "$bins_failed" ] && echo "failing test programs:$bins_failed"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
