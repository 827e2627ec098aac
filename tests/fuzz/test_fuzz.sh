#!/bin/sh
# The fuzz targets of fuzz/fuzz.mk in make test: each replays its committed
# seeds and every regression input (fuzz/regressions/NAME: inputs that
# crashed once, kept fixed) under AddressSanitizer and UBSan, then fuzzes
# for a short bounded time (FUZZ_CI_SECONDS, default 15) from a scratch
# copy of its seeds. Long runs: make fuzz FUZZ_SECONDS=3600 (results in
# bench/results/). Prints PASS:/FAIL: lines for tests/run.sh.
set -u
BUILD=${BUILD:-build}
SECS=${FUZZ_CI_SECONDS:-15}
cd "$(dirname "$0")/../.."
. tests/lib/testlib.sh

names=$(ls fuzz/fuzz_*.c | sed 's|fuzz/fuzz_\(.*\)\.c|\1|')
plan $(($(echo "$names" | wc -w) * 2))
tmp=$(mktemp -d /tmp/ebprof-fuzz-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

for name in $names; do
	bin=$BUILD/fuzz/fuzz_$name
	if [ ! -x "$bin" ]; then
		fail "fuzz_${name}_replay" "$bin missing (make BUILD=$BUILD $bin)"
		fail "fuzz_${name}_short_run" "$bin missing"
		continue
	fi
	inputs=$(find "fuzz/corpus/$name" "fuzz/regressions/$name" -type f 2>/dev/null)
	n=$(echo "$inputs" | grep -c .)
	if [ "$n" -eq 0 ]; then
		fail "fuzz_${name}_replay" "no seeds in fuzz/corpus/$name"
	elif "$bin" -timeout=10 -rss_limit_mb=1024 $inputs >"$tmp/$name.replay" 2>&1; then
		pass "fuzz_${name}_replay ($n inputs)"
	else
		fail "fuzz_${name}_replay" "$(grep -a -E 'ERROR|SUMMARY|Running' "$tmp/$name.replay" | tail -3 | tr '\n' ' ')"
	fi
	mkdir -p "$tmp/$name"
	cp fuzz/corpus/$name/* "$tmp/$name/" 2>/dev/null
	if "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$tmp/$name-" "$tmp/$name" >"$tmp/$name.log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$name.log" | tail -1)
		pass "fuzz_${name}_short_run ($SECS s, ${execs:-?} executions)"
	else
		mkdir -p "$BUILD/fuzz/crashes"
		cp "$tmp/$name"-* "$BUILD/fuzz/crashes/" 2>/dev/null
		fail "fuzz_${name}_short_run" "$(grep -a -E 'ERROR|SUMMARY' "$tmp/$name.log" | head -2 | tr '\n' ' ') (input kept in $BUILD/fuzz/crashes/)"
	fi
done
exit $failed
