#!/bin/bash
# What keeping a thread's off-CPU start costs per switch, by kind of
# storage (bench/switch-maps.bpf.c: the clock read alone, an LRU hash by
# tid, a tagged array slot, task-local storage), under pgbench -S with
# CLIENTS clients (default 8), measured with bpf_stats. Each round gives
# every kind PHASE seconds of its own, attached after the empty program at
# the same hook (so each is the first to do work there, and pays the same
# cold caches), and reports its ns per run above the empty one's in that
# same phase; then the medians over ROUNDS rounds.
#   bench/switch-maps.sh [ROUNDS [PHASE]]     (default 5 rounds of 8 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-5}
PHASE=${2:-8}
CLIENTS=${CLIENTS:-8}
kinds="clock lru array task"

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
make -s BUILD="$BUILD" "$BUILD/bench/switch-floor" "$BUILD/bench/switch-maps.bpf.o"
. bench/lib.sh
bench_cluster switch-maps 10
loader_pid=""
trap '[ -n "$loader_pid" ] && kill "$loader_pid" 2>/dev/null; bpf_stats_restore; bench_cleanup' EXIT
bpf_stats_on

# "NS CNT NS CNT" of maps_empty and maps_$1.
stats() {
	bpf_progs | awk -v k="maps_$1" '
		$3 == "maps_empty" { e = $4; ec = $5 } $3 == k { v = $4; vc = $5 }
		END { printf "%.0f %.0f %.0f %.0f\n", e, ec, v, vc }'
}

# One phase of kind $1: "TPS SWITCHES_PER_S EMPTY_NS ADDED_NS".
phase() {
	loader_start "$work/loader.out" "$BUILD/bench/switch-maps.bpf.o" maps_empty "maps_$1"
	read -r -a a < <(stats "$1")
	t1=$(date +%s.%N)
	tps=$(run_pgbench_tps -S -c "$CLIENTS" -j 2 -T "$PHASE")
	t2=$(date +%s.%N)
	read -r -a b < <(stats "$1")
	kill "$loader_pid"
	wait "$loader_pid" || true
	loader_pid=""
	awk -v tps="$tps" -v t1="$t1" -v t2="$t2" -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		e = (y[2] - x[2]) ? (y[1] - x[1]) / (y[2] - x[2]) : 0
		v = (y[4] - x[4]) ? (y[3] - x[3]) / (y[4] - x[4]) : 0
		printf "%.0f %.0f %.0f %.0f\n", tps, (y[2] - x[2]) / (t2 - t1), e, v - e }'
}

echo "| round | kind | TPS | switches/s | empty program, ns/run | **added**, ns/run |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	for k in $kinds; do
		row=$(phase "$k")
		echo "$k $row" >>"$work/rows"
		set -- $row
		echo "| $r | $k | $1 | $2 | $3 | **$4** |"
	done
done
echo
echo "| kind | added ns per run, median of $ROUNDS | empty program's |"
echo "|---|---|---|"
for k in $kinds; do
	echo "| $k | $(awk -v k="$k" '$1 == k { print $5 }' "$work/rows" | median) |" \
		"$(awk -v k="$k" '$1 == k { print $4 }' "$work/rows" | median) |"
done
