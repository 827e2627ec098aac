#!/bin/sh
# The whole suite once more, built with AddressSanitizer, UndefinedBehavior-
# Sanitizer and LeakSanitizer: `make SANITIZE=1 test` (into build-san/),
# every unit and integration test against the sanitized program, the BPF
# program loaded (the Makefile leaves out what cannot run sanitized).
# One PASS/FAIL line per test program. A program fails when the suite's
# runner (tests/run.sh) says it failed, or when a sanitizer reported
# anything while it ran: in its own process or in any process it started
# (the agent, record, a command whose output a test only captures). The
# runtimes write their reports to files (log_path below), so no report
# hides in output a test swallows; a report is charged to the program that
# was running when its file was written (programs run one at a time).
# Nothing run, a program missing, or the suite not finishing fails too.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/testlib.sh
BUILD_SAN=build-san
log="$BUILD_SAN/sanitized-suite.log"
dir=$(mktemp -d /tmp/ebprof-test-sanitized-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$BUILD_SAN" "$dir/reports"
# Every sanitizer report to a file of its own (PROCESS.PID), whatever
# process it comes from; a UBSan error aborts (-fno-sanitize-recover).
rep="$dir/reports/report"
ASAN_OPTIONS="log_path=$rep:log_exe_name=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="log_path=$rep:log_exe_name=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
LSAN_OPTIONS="log_path=$rep:log_exe_name=1${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
start=$(date +%s)
# The parent make's variables stay out of the child's (SANITIZE picks its
# own BUILD). Each "=== PROGRAM" line of tests/run.sh is noted with the
# time it began, to charge reports to programs.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD make --no-print-directory SANITIZE=1 test 2>&1 |
	while IFS= read -r l || [ -n "$l" ]; do
		case "$l" in
		"=== "*) echo "$(date +%s.%N) ${l#=== }" >>"$dir/started" ;;
		esac
		printf '%s\n' "$l"
	done >"$log"
minutes=$((($(date +%s) - start + 30) / 60))
touch "$dir/started"
cp "$dir/started" "$BUILD_SAN/sanitized-suite.times" # when each program began
summary=$(grep -a '^[0-9]* passed, [0-9]* failed$' "$log" | tail -1)
if [ ! -s "$dir/started" ]; then
	fail "sanitized suite" "nothing ran: $(tail -5 "$log" | tr '\n' ' ')"
	exit 1
fi

# Report files, each with the program that was running when it was written.
find "$dir/reports" -type f -printf '%T@ %p\n' | sort -n >"$dir/reports.list"
awk 'FNR == NR { t[++n] = $1; name[n] = $2; next }
	{ who = "(before the first program)"
	  for (i = 1; i <= n && t[i] <= $1; i++) who = name[i]
	  print who, $2 }' "$dir/started" "$dir/reports.list" >"$dir/charged"

# The output of one program (its "=== PROGRAM" line to the next).
section() {
	awk -v p="$1" '/^=== / { on = $2 == p; next } on' "$log"
}

failing=$(sed -n 's/^failing test programs://p' "$log" | tail -1 | tr ' ' '\n' |
	sed 's/(.*//' | grep -v '^$')
while read -r _ prog; do
	reports=$(awk -v p="$prog" '$1 == p { print $2 }' "$dir/charged")
	why=""
	if echo "$failing" | grep -qxF "$prog"; then
		why="failed in the suite"
		what=$(section "$prog" | awk '/^\[FAIL\] / { sub(/: \(.*/, ""); print $2; next }
			/^FAIL: / { sub(/^FAIL: /, ""); sub(/: .*/, ""); print; next }
			/^(COUNT|SKIP): / { print }' | sort -u | tr '\n' ' ' | sed 's/ $//')
		why="$why${what:+ ($what)}"
	fi
	# (a report that reached the output all the same)
	if section "$prog" | grep -aq 'ERROR: \(Address\|Leak\)Sanitizer\|runtime error:'; then
		why="${why:+$why, }a sanitizer report in its output"
	fi
	if [ -n "$reports" ]; then
		why="${why:+$why, }a sanitizer report from $(echo "$reports" | sed 's|.*/report\.||' |
			tr '\n' ' ' | sed 's/ $//')"
	fi
	if [ -z "$why" ]; then
		pass "sanitized $prog"
	else
		fail "sanitized $prog" "$why"
	fi
done <"$dir/started"

# Every unit and integration test program ran.
for src in tests/unit/test_*.c tests/integration/test_*.c; do
	prog="$BUILD_SAN/${src%.c}"
	awk -v p="$prog" '$2 == p { found = 1 } END { exit !found }' "$dir/started" ||
		fail "sanitized $prog" "did not run"
done
if [ -z "$summary" ]; then
	fail "sanitized suite" "did not finish: $(tail -5 "$log" | tr '\n' ' ')"
fi
orphans=$(awk '$1 == "(before the first program)" { print $2 }' "$dir/charged")
[ -n "$orphans" ] && fail "sanitized suite" "a sanitizer report before the tests: $orphans"

# What failed, to read without the whole log (kept in $log).
if [ "$failed" != 0 ]; then
	grep -a -B2 -A6 '^\[----\].*Assertion Failed\|^COUNT: \|^SKIP: ' "$log" | head -150
	for r in $(cut -d' ' -f2 "$dir/charged"); do
		echo "--- sanitizer report $r"
		head -60 "$r"
	done
fi
echo "(under the sanitizers: ${summary:-no summary} in $minutes min; the whole log in $log)"
exit $failed
