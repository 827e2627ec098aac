#!/bin/sh
# Runs test programs one after another and prints one closing line with the
# totals. Exit status: 0 only when every test passed.
#
# Two kinds of test programs:
#   - Criterion binaries: their "Synthesis:" line is counted. Skipped tests
#     (cr_skip_test, .disabled, a --filter or CRITERION_TEST_PATTERN) are
#     read from a TAP report and each counts as a failure: tests need what
#     CI has and fail, never skip, without it. Each binary must run as many
#     tests as its source, tests/DIR/NAME.c for BUILD/tests/DIR/NAME,
#     declares with Test(...): one that ran fewer (a crash of the runner, a
#     filter) or more fails, with a line saying so.
#   - shell tests (*.sh): each check prints "PASS: name" or "FAIL: name: why"
#     on stdout; a script that exits non-zero without any FAIL line counts
#     as one failure, one that prints neither line too. A script may
#     declare how many checks it makes with a line "PLAN: N" (printed
#     before its checks); then printing another number of PASS/FAIL lines
#     is a failure too.
# The last line is always "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0 missing=0 bins_failed=""

# Test( definitions in a Criterion source (at the start of a line, as
# clang-format leaves them).
declared_tests() {
	grep -c '^Test[[:space:]]*(' "$1"
}

for bin in "$@"; do
	echo "=== $bin"
	t0=$(date +%s)
	out=$(mktemp)
	tap=$(mktemp)
	note=""
	case "$bin" in
	*.sh)
		{ sh "$bin" 2>&1; echo "EXIT: $?"; } | tee "$out"
		;;
	*)
		# One test at a time: integration tests measure CPU and share the
		# machine's BPF and perf resources; Criterion would run one per CPU.
		rm -f "$tap"
		{ "$bin" --jobs=1 --tap="$tap" 2>&1; echo "EXIT: $?"; } | tee "$out"
		;;
	esac
	# POSIX sh has no PIPESTATUS: the exit status comes from the log.
	rc=$(sed -n 's/^EXIT: //p' "$out" | tail -1)
	case "$bin" in
	*.sh)
		p=$(grep -ac '^PASS: ' "$out")
		f=$(grep -ac '^FAIL: ' "$out")
		plan=$(sed -n 's/^PLAN: \([0-9][0-9]*\)$/\1/p' "$out" | tail -1)
		line="shell"
		if [ "$p" = 0 ] && [ "$f" = 0 ]; then
			line=""
		elif [ "$f" = 0 ] && [ "${rc:-1}" != 0 ]; then
			f=1 # exited non-zero without saying which check failed
		fi
		if [ -n "$line" ] && [ -n "$plan" ] && [ $((p + f)) != "$plan" ]; then
			echo "COUNT: $bin printed $((p + f)) PASS/FAIL lines, its PLAN says $plan"
			note="$note(printed $((p + f)) of $plan checks)"
			if [ $((p + f)) -lt "$plan" ]; then
				missing=$((missing + plan - p - f))
				f=$((f + plan - p - f))
			else
				f=$((f + 1))
			fi
		fi
		;;
	*)
		# Criterion: "[====] Synthesis: Tested: 5 | Passing: 5 | Failing: 0 | Crashing: 0"
		# (Failing already counts the crashed tests; skipped tests are in
		# none of these numbers.)
		line=$(grep -a 'Synthesis:' "$out" | tail -1)
		p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
		f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
		ran=$(echo "$line" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
		if [ -n "$line" ] && [ "${f:-0}" = 0 ] && [ "${rc:-1}" != 0 ]; then
			f=1 # all passed, yet it exited non-zero (a crash after the tests)
		fi
		# Skipped tests, with the reasons Criterion gives.
		s=0
		if [ -s "$tap" ]; then
			s=$(grep -ac '^ok .*# SKIP' "$tap")
			grep -a '^ok .*# SKIP' "$tap" | sed 's/^ok - \([^ ]*\) *# SKIP \(.*\)$/SKIPPED: \1: \2/'
		fi
		if [ "$s" != 0 ]; then
			echo "SKIP: $bin skipped $s test(s) (or filtered them out); a skip is a failure: tests need what CI has"
			note="$note(skipped $s)"
			skipped=$((skipped + s))
		fi
		# As many tests as the source declares.
		case "$bin" in
		tests/*) rel=${bin#tests/} ;;
		*/tests/*) rel=${bin##*/tests/} ;;
		*) rel="?/$(basename "$bin")" ;; # not under a tests/ directory
		esac
		src="$root/tests/$rel.c"
		if [ -z "$line" ]; then
			want=$(declared_tests "$src" 2>/dev/null)
			echo "COUNT: $bin gave no result (no Synthesis line); tests/$rel.c declares ${want:-?} tests"
			missing=$((missing + ${want:-0}))
			f=$((${want:-1} > 1 ? ${want:-1} - 1 : 0)) # + 1 for no result below
		elif [ ! -f "$src" ]; then
			echo "COUNT: $bin: no source tests/$rel.c to count its tests in"
			note="$note(no source)"
			f=$((f + 1))
		else
			want=$(declared_tests "$src")
			got=$((${ran:-0} + s))
			if [ "$got" != "$want" ]; then
				echo "COUNT: $bin ran $got of the $want tests tests/$rel.c declares"
				note="$note(ran $got of $want)"
				if [ "$got" -lt "$want" ]; then
					missing=$((missing + want - got))
					f=$((f + want - got))
				else
					f=$((f + 1))
				fi
			fi
		fi
		f=$((${f:-0} + s))
		;;
	esac
	rm -f "$out" "$tap"
	echo "--- $bin: $(($(date +%s) - t0)) s"
	passed=$((passed + ${p:-0}))
	if [ -z "$line" ]; then
		failed=$((failed + ${f:-0} + 1))
		bins_failed="$bins_failed $bin(no-result)"
	else
		failed=$((failed + ${f:-0}))
		if [ "${f:-0}" != 0 ]; then
			bins_failed="$bins_failed $bin$note"
		fi
	fi
done
[ -n "$bins_failed" ] && echo "failing test programs:$bins_failed"
if [ "$skipped" != 0 ] || [ "$missing" != 0 ]; then
	echo "$skipped skipped, $missing not run (counted as failed)"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
