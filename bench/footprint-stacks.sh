#!/bin/bash
# Stack quality of two builds' `record` on the same postgres backends at
# the same time under pgbench -S (a one-profile session: this branch
# drains its smaller maps every 10 s): ROUNDS rounds of SECS seconds, per
# build bench/stackstats.py's figures and record's truncation summary.
#   A=BUILD_A [B=BUILD_B] bench/footprint-stacks.sh   (B: build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
A=${A:?build directory A}
B=${B:-build}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-30}
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -x build/bench/pprofutil ] || make -s build/bench/pprofutil
bench_cluster fpstacks 10
pgbench -n -S -c 4 -j 2 -T $((ROUNDS * (SECS + 5) + 5)) -h "$pgdir" -p "$port" -U postgres \
	postgres >/dev/null 2>&1 &
sleep 3
for r in $(seq 1 "$ROUNDS"); do
	"$A/ebprof" record --comm postgres -v -d "$SECS" -o "$work/a$r.pb.gz" 2>"$work/a$r.log" &
	pa=$!
	"$B/ebprof" record --comm postgres -v -d "$SECS" -o "$work/b$r.pb.gz" 2>"$work/b$r.log" &
	pb=$!
	wait $pa $pb
	for x in a b; do
		build/bench/pprofutil stacks "$work/$x$r.pb.gz" >"$work/$x$r.stacks"
		echo "round $r $x: $(python3 bench/stackstats.py stats ebprof "$work/$x$r.stacks");" \
			"$(grep -o '[0-9]* of [0-9]* samples truncated[^;]*' "$work/$x$r.log" || echo 'none truncated')"
	done
done
wait
