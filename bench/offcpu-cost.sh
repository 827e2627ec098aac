#!/bin/bash
# Cost of off-CPU profiling under a context-switch-heavy load: pgbench -S
# with CLIENTS clients on this machine's CPUs (tens of thousands of
# switches a second), phases of PHASE seconds alternating without and with
# `ebprof record --type offcpu` (default targets: the postgres processes)
# and the options given in OFFCPU_OPTS (e.g. "--offcpu-period 0"), measured
# from WARM seconds (default 8) after the recorder starts. Reports
# per "on" phase: TPS against the mean of the "off" phases around it, the
# off-CPU programs' ns (sched_switch's and the stacks' at sched_exit_tp or
# finish_task_switch) per sched_switch run, and those runs per second
# (kernel.bpf_stats_enabled), the recorder's CPU (user + system) in % of
# one core, and the waits it counted; then medians.
#   bench/offcpu-cost.sh [PAIRS [PHASE]]     (default 3 pairs of 20 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PAIRS=${1:-3}
PHASE=${2:-20}
CLIENTS=${CLIENTS:-8}
OFFCPU_OPTS=${OFFCPU_OPTS:-}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster offcpu 10
hz=$(getconf CLK_TCK)
trap 'bpf_stats_restore; bench_cleanup' EXIT
bpf_stats_on

tps_of() { run_pgbench_tps -S -c "$CLIENTS" -j 2 -T "$1"; } # seconds -> TPS of pgbench -S
switch_stats() { # "NS CNT": ns of every off-CPU program, runs of sched_switch's
	bpf_progs | awk '$3 ~ /^(on_switch|offcpu_)/ { ns += $4; if ($3 ~ /^on_switch/) cnt += $5 }
		END { printf "%.0f %.0f\n", ns, cnt }'
}

echo "| phase | TPS | TPS / off around | ns per switch event | events/s | recorder CPU, % of a core | waits counted |"
echo "|---|---|---|---|---|---|---|"
prev_off=$(tps_of "$PHASE")
echo "| off | $prev_off | | | | | |"
: >"$work/rows"
for i in $(seq 1 "$PAIRS"); do
	offcpu_record_start $((PHASE * 3)) "$work/off$i.pb.gz" "$work/rec$i.log"
	read -r ns1 cnt1 < <(switch_stats)
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	on=$(tps_of "$PHASE")
	read -r ns2 cnt2 < <(switch_stats)
	c2=$(cpu_ticks "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	off=$(tps_of "$PHASE")
	waits=$(rec_waits "$work/rec$i.log")
	row=$(awk -v on="$on" -v a="$prev_off" -v b="$off" -v ns1="$ns1" -v ns2="$ns2" \
		-v c1="$cnt1" -v c2="$cnt2" -v k1="$c1" -v k2="$c2" -v t1="$t1" -v t2="$t2" \
		-v hz="$hz" 'BEGIN {
			d = c2 - c1; w = t2 - t1
			printf "%.0f %.3f %.0f %.0f %.2f", on, on / ((a + b) / 2), d ? (ns2 - ns1) / d : 0,
				d / w, 100 * (k2 - k1) / hz / w }')
	echo "$row" >>"$work/rows"
	set -- $row
	echo "| on | $1 | $2 | $3 | $4 | $5 | ${waits:-?} |"
	echo "| off | $off | | | | | |"
	prev_off=$off
done
echo "| **median** | | $(cut -d' ' -f2 "$work/rows" | median) | $(cut -d' ' -f3 "$work/rows" | median) |" \
	"$(cut -d' ' -f4 "$work/rows" | median) | $(cut -d' ' -f5 "$work/rows" | median) | |"
