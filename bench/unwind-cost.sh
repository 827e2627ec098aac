#!/bin/bash
# BPF cost per sample of each unwinder by stack depth: the fixture
# deep_recurse at depth D (10, 30, 100, 1000 frames of recursion, plus
# main and libc's start below) under `ebprof record --unwind MODE`, with
# kernel.bpf_stats_enabled=1: the run time of the sampling programs
# (do_sample*, and unwind_tail for the tail-call way) over their runs, and
# over the samples of the target (the program runs on every CPU at every
# tick; for other tasks it returns at once). Medians of ROUNDS runs.
#
#   bench/unwind-cost.sh [ROUNDS] [SECONDS]   (default 3 rounds of 4 s)
#   UNWIND_MODES="fp dwarf dwarf-tail" DEPTHS="10 30 100 1000"
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${1:-3}
SECS=${2:-4}
MODES=${UNWIND_MODES:-"fp dwarf dwarf-tail"}
DEPTHS=${DEPTHS:-"10 30 100 1000"}
BUILD=${BUILD:-build}
FIX=$BUILD/fixtures/stacks/deep_recurse
trap bpf_stats_restore EXIT
bpf_stats_on
tmp=$(mktemp -d)

# run_time_ns and run_cnt summed over ebprof's perf_event programs (one
# set loaded: this run's), "NS CNT" with CNT the attached program's.
prog_stats() {
	bpf_progs | awk '$2 == "perf_event" && $3 ~ /^(do_sample|unwind_tail)/ {
		ns += $4; if ($3 ~ /^do_sample/ && $5 + 0 > cnt + 0) cnt = $5 }
		END { printf "%.0f %.0f\n", ns, cnt }'
}


echo "| unwinder | depth | ns per run (median) | ns per sample of the target (median) |"
echo "| --- | --- | --- | --- |"
for mode in $MODES; do
	for d in $DEPTHS; do
		: >"$tmp/run" && : >"$tmp/sample"
		for r in $(seq 1 "$ROUNDS"); do
			coproc FX { exec "$FIX" $((SECS + 4)) "$d"; }
			fxpid=$FX_PID
			read -r line <&"${FX[0]}"
			pid=${line#pid=}
			"$BUILD/ebprof" record --unwind "$mode" -p "$pid" -d $((SECS + 2)) \
				-o "$tmp/p.pb.gz" 2>"$tmp/log" &
			rec=$!
			sleep 0.5
			echo go >&"${FX[1]}"
			sleep 1 # past the first samples (tables loading)
			read -r ns1 cnt1 < <(prog_stats)
			t1=$(date +%s.%N)
			sleep "$SECS"
			read -r ns2 cnt2 < <(prog_stats)
			t2=$(date +%s.%N)
			kill "$pid" 2>/dev/null || true
			wait "$rec" 2>/dev/null || true
			wait "$fxpid" 2>/dev/null || true
			# the target keeps one CPU busy: 99 of its samples a second
			echo "$ns1 $cnt1 $ns2 $cnt2" | awk '$4 > $2 {printf "%.0f\n", ($3 - $1) / ($4 - $2)}' >>"$tmp/run"
			echo "$ns1 $ns2 $t1 $t2" | awk '{printf "%.0f\n", ($2 - $1) / (99 * ($4 - $3))}' >>"$tmp/sample"
		done
		echo "| $mode | $d | $(median <"$tmp/run") | $(median <"$tmp/sample") |"
	done
done
rm -rf "$tmp"
