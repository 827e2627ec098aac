#!/bin/sh
# `make fuzz`: run each named libFuzzer target ($BUILD/fuzz/fuzz_NAME) for
# $FUZZ_SECONDS on its committed seeds (fuzz/corpus/NAME, read only) and
# the corpus it grew before ($BUILD/fuzz/corpus/NAME). Prints one line per
# target: executions, coverage (edges), features, corpus size. A crash,
# sanitizer report, leak or timeout leaves its input under
# $BUILD/fuzz/crashes/ and makes the exit status 1.
set -u
BUILD=${BUILD:-build}
SECS=${FUZZ_SECONDS:-60}
cd "$(dirname "$0")/../.."
status=0
mkdir -p "$BUILD/fuzz/crashes"
for name in "$@"; do
	bin=$BUILD/fuzz/fuzz_$name
	work=$BUILD/fuzz/corpus/$name
	log=$BUILD/fuzz/$name.log
	mkdir -p "$work"
	"$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$BUILD/fuzz/crashes/$name-" "$work" "fuzz/corpus/$name" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	last=$(grep -a -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		echo "fuzz $name: ${SECS} s, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"
	else
		echo "fuzz $name: FAILED (exit $rc) after ${execs:-?} executions; see $log:"
		grep -a -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
		status=1
	fi
done
exit $status
