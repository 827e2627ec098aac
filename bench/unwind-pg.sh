#!/bin/bash
# True callers in PostgreSQL: under `pgbench -S`, ebprof and `perf record
# --call-graph dwarf` sample the same backends at the same time; of our
# samples with a named (leaf, caller) pair, the share whose pair perf never
# produced (bench/leafpairs.py says how). Rounds alternate the unwinders
# (fp, dwarf) on the same cluster; medians per unwinder.
#
#   bench/unwind-pg.sh [ROUNDS] [SECONDS]        (default 3 rounds of 10 s)
#   UNWIND_MODES="dwarf" bench/unwind-pg.sh 1 5  (tests/integration/test_unwind_pg.sh)
#
# Prints one line per round and a summary; with BENCH_OUT=FILE also writes
# the markdown there. Needs root, perf (linux-perf), go.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh

ROUNDS=${1:-3}
SECS=${2:-10}
MODES=${UNWIND_MODES:-"fp dwarf"}
BUILD=${BUILD:-build}
EBPROF=$BUILD/ebprof
PPROFUTIL=$BUILD/bench/pprofutil

bench_cluster unwindpg 10
out="$work/out"
mkdir -p "$out"
declare -A results raw

for round in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		su postgres -c "pgbench -h $pgdir -p $port -S -c 4 -j 2 -T $((SECS + 6)) postgres" \
			>"$out/pgbench.log" 2>&1 &
		bench=$!
		sleep 2
		pids=$(pgrep -d, -f "postgres: .*postgres" || true)
		perf record -q --call-graph dwarf,16384 -F 499 -p "$pids" -o "$out/perf.data" \
			-- sleep "$SECS" >/dev/null 2>&1 &
		perf_pid=$!
		"$EBPROF" record --unwind "$mode" -d "$SECS" -o "$out/$mode.pb.gz" 2>"$out/record.log"
		wait "$perf_pid" || true
		wait "$bench" || true
		perf script -i "$out/perf.data" -F comm,pid,tid,ip,sym,dso 2>/dev/null >"$out/perf.txt"
		"$PPROFUTIL" ustacks "$out/$mode.pb.gz" >"$out/$mode.ustacks"
		line=$(python3 bench/leafpairs.py "$out/$mode.ustacks" "$out/perf.txt" | head -1)
		echo "round $round $mode: $line"
		python3 bench/leafpairs.py "$out/$mode.ustacks" "$out/perf.txt" | tail -n +2 |
			head -5 | sed 's/^/    /'
		results[$mode]="${results[$mode]:-} $(echo "$line" | sed -n 's/.* wrong_pct=\([0-9.]*\).*/\1/p')"
		raw[$mode]="${raw[$mode]:-} $(echo "$line" | sed -n 's/.*all_wrong_pct=\([0-9.]*\).*/\1/p')"
	done
done

words_median() { tr ' ' '\n' | grep . | median; }

summary() {
	echo "| unwinder | rounds | wrong caller, leaves perf knows (median) | runs | every named pair (median) |"
	echo "| --- | --- | --- | --- | --- |"
	for mode in $MODES; do
		echo "| $mode | $ROUNDS | $(echo "${results[$mode]}" | words_median)% |${results[$mode]} |" \
			"$(echo "${raw[$mode]}" | words_median)% |"
	done
}
summary
[ -n "${BENCH_OUT:-}" ] && summary >"$BENCH_OUT"
exit 0
