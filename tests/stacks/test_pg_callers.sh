#!/bin/sh
# True callers in PostgreSQL: under pgbench -S, each (leaf, caller) pair
# of ebprof's samples checked against what `perf record --call-graph dwarf`
# produced on the same backends at the same time (bench/unwind-pg.sh,
# bench/leafpairs.py). With --unwind dwarf at most 2% of our samples may
# have a caller perf never saw for that leaf; with frame pointers the same
# check must find wrong callers (it can fail).
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
export BUILD
out=$(UNWIND_MODES="fp dwarf" bash bench/unwind-pg.sh 1 6 2>&1)
status=$?
echo "$out" | sed 's/^/  /'
if [ $status -ne 0 ]; then
	echo "FAIL: pg_callers: bench/unwind-pg.sh exited $status"
	exit 1
fi
pct() { echo "$out" | sed -n "s/^round 1 $1: .* wrong_pct=\([0-9.]*\) .*/\1/p"; }
samples() { echo "$out" | sed -n "s/^round 1 $1: samples=\([0-9]*\) .*/\1/p"; }
fail=0
d=$(pct dwarf)
f=$(pct fp)
n=$(samples dwarf)
if [ -z "$d" ] || [ "${n:-0}" -lt 100 ]; then
	echo "FAIL: pg_callers_dwarf: too few samples to compare (${n:-none})"
	fail=1
elif [ "$(echo "$d <= 2.0" | bc)" = 1 ]; then
	echo "PASS: pg_callers_dwarf: $d% of $n samples with a caller perf never saw"
else
	echo "FAIL: pg_callers_dwarf: $d% of $n samples with a caller perf never saw (at most 2%)"
	fail=1
fi
if [ -n "$f" ] && [ "$(echo "$f > 10.0" | bc)" = 1 ]; then
	echo "PASS: pg_callers_fp_detected: frame pointers give $f% wrong callers"
else
	echo "FAIL: pg_callers_fp_detected: frame pointers gave ${f:-no figure}%: the check cannot tell"
	fail=1
fi
exit $fail
