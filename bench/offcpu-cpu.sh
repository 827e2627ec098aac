#!/bin/bash
# What off-CPU profiling costs the machine, in CPU: pgbench -S held at RATE
# transactions a second (default 4000) with CLIENTS clients (default 8), so
# the machine is not saturated and every cost shows as busy time rather
# than lost throughput; phases of PHASE seconds alternating without and
# with `ebprof record --type offcpu $OFFCPU_OPTS` on the postgres
# processes, measured from WARM seconds (default 8) after the recorder
# starts. bpf_stats stays off (its clock reads cost ~1 us a program run on
# this kind of VM). Per "on" phase: context switches a second, the
# machine's busy CPU (all CPUs, /proc/stat) against the mean of the "off"
# phases around it, in % of one core (the recorder and its BPF programs,
# which run in the switching tasks), the recorder's own CPU, and the waits
# it took; then medians.
#   bench/offcpu-cpu.sh [PAIRS [PHASE]]     (default 5 pairs of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PAIRS=${1:-5}
PHASE=${2:-15}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-4000}
OFFCPU_OPTS=${OFFCPU_OPTS:-}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster offcpucpu 10
hz=$(getconf CLK_TCK)

busy() { # "BUSY_TICKS CTXT" of the machine
	awk '$1 == "cpu" {b = $2 + $3 + $4 + $7 + $8 + $9} $1 == "ctxt" {c = $2}
		END {print b, c}' /proc/stat
}
phase() { # -> "TPS BUSY_PCT_OF_A_CORE SWITCHES_PER_S" over PHASE seconds
	local b1 c1 b2 c2 t1 t2 tps
	read -r b1 c1 < <(busy)
	t1=$(date +%s.%N)
	tps=$(run_pgbench_tps -S -c "$CLIENTS" -j 2 -R "$RATE" -T "$PHASE")
	read -r b2 c2 < <(busy)
	t2=$(date +%s.%N)
	awk -v tps="$tps" -v b1="$b1" -v b2="$b2" -v c1="$c1" -v c2="$c2" -v t1="$t1" \
		-v t2="$t2" -v hz="$hz" 'BEGIN {
		w = t2 - t1; printf "%.0f %.2f %.0f\n", tps, 100 * (b2 - b1) / hz / w, (c2 - c1) / w }'
}

echo "| phase | TPS | busy, % of a core | switches/s | added, % of a core | recorder CPU, % of a core | waits taken |"
echo "|---|---|---|---|---|---|---|"
read -r tps prev sw < <(phase)
echo "| off | $tps | $prev | $sw | | | |"
: >"$work/rows"
for i in $(seq 1 "$PAIRS"); do
	offcpu_record_start $((PHASE * 4)) "$work/off$i.pb.gz" "$work/rec$i.log"
	k1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	read -r tps on sw < <(phase)
	k2=$(cpu_ticks "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	read -r tps_off off sw_off < <(phase)
	waits=$(rec_waits "$work/rec$i.log")
	row=$(awk -v on="$on" -v a="$prev" -v b="$off" -v k1="$k1" -v k2="$k2" -v t1="$t1" \
		-v t2="$t2" -v hz="$hz" 'BEGIN {
		printf "%.2f %.2f", on - (a + b) / 2, 100 * (k2 - k1) / hz / (t2 - t1) }')
	echo "$row" >>"$work/rows"
	set -- $row
	echo "| on | $tps | $on | $sw | $1 | $2 | ${waits:-?} |"
	echo "| off | $tps_off | $off | $sw_off | | | |"
	prev=$off
done
echo "| **median** | | | | $(cut -d' ' -f1 "$work/rows" | median) | $(cut -d' ' -f2 "$work/rows" | median) | |"
echo
echo "added: spread $(cut -d' ' -f1 "$work/rows" | sort -g | tr '\n' ' ')"
