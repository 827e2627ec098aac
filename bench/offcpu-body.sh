#!/bin/bash
# What ebprof's off-CPU programs cost per run, measured with bpf_stats
# against empty programs at the same hooks (bench/switch-floor.bpf.c)
# attached beside them: both pay the hook and bpf_stats' own clock reads
# (about 1 us a run on this kind of VM, which swamps a plain bpf_stats
# reading), so the difference is what the programs do. Under pgbench -S
# with CLIENTS clients (default 8) for ROUNDS rounds of PHASE seconds, each
# with a fresh `ebprof record --type offcpu $OFFCPU_OPTS` on the postgres
# processes, from WARM seconds after it starts. Reports per round and as
# medians: ns per run added at sched_switch and where the switch ends
# (sched_exit_tp: this bench needs a 6.16+ kernel), runs per second, what
# that makes in % of one core, and the recorder's own CPU.
#   bench/offcpu-body.sh [ROUNDS [PHASE]]     (default 5 rounds of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-5}
PHASE=${2:-15}
CLIENTS=${CLIENTS:-8}
OFFCPU_OPTS=${OFFCPU_OPTS:-}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -x "$BUILD/ebprof" ] || make -s BUILD="$BUILD" all # (as built: a variant stays one)
make -s BUILD="$BUILD" "$BUILD/bench/switch-floor" "$BUILD/bench/switch-floor.bpf.o"
. bench/lib.sh
bench_cluster offcpu-body 10
hz=$(getconf CLK_TCK)
loader_pid=""
trap '[ -n "$loader_pid" ] && kill "$loader_pid" 2>/dev/null; bpf_stats_restore; bench_cleanup' EXIT

loader_start "$work/floor.out" "$BUILD/bench/switch-floor.bpf.o"
bpf_stats_on

# "SW_NS SW_CNT EX_NS EX_CNT FSW_NS FSW_CNT FEX_NS FEX_CNT": run time and
# runs of ours at sched_switch and where the switch ends (tail-called
# programs' time is their caller's), then of the empty ones.
stats() {
	bpf_progs | awk '{
		k = ($3 ~ /^on_switch/) ? 1 : ($3 ~ /^offcpu_/) ? 2 : ($3 == "floor_switch") ? 3 : ($3 == "floor_exit") ? 4 : 0 }
		k { ns[k] += $4; if ($5 + 0 > cnt[k] + 0) cnt[k] = $5 }
		END { printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n",
			ns[1], cnt[1], ns[2], cnt[2], ns[3], cnt[3], ns[4], cnt[4] }'
}

echo "| round | TPS | ns/run at sched_switch: ebprof, empty, added | where the switch ends: ebprof, empty, added | runs/s (switch, end) | programs, % of a core | recorder, % of a core | waits taken |"
echo "|---|---|---|---|---|---|---|---|"
: >"$work/rows"
for r in $(seq 1 "$ROUNDS"); do
	offcpu_record_start $((PHASE * 3)) "$work/o$r.pb.gz" "$work/rec$r.log"
	read -r -a a < <(stats)
	k1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	tps=$(run_pgbench_tps -S -c "$CLIENTS" -j 2 -T "$PHASE")
	read -r -a b < <(stats)
	k2=$(cpu_ticks "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	waits=$(rec_waits "$work/rec$r.log")
	row=$(awk -v tps="$tps" -v t1="$t1" -v t2="$t2" -v k1="$k1" -v k2="$k2" -v hz="$hz" \
		-v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
		split(a, x, " "); split(b, y, " "); w = t2 - t1
		for (i = 1; i <= 8; i++) d[i] = y[i] - x[i]
		sw = d[2] ? d[1] / d[2] : 0; ex = d[4] ? d[3] / d[4] : 0
		fsw = d[6] ? d[5] / d[6] : 0; fex = d[8] ? d[7] / d[8] : 0
		asw = sw - fsw; aex = ex - fex
		pct = 100 * (asw * d[2] + aex * d[4]) / 1e9 / w
		printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.2f %.2f",
			tps, sw, fsw, asw, ex, fex, aex, d[2] / w, d[4] / w, pct,
			100 * (k2 - k1) / hz / w }')
	echo "$row" >>"$work/rows"
	set -- $row
	echo "| $r | $1 | $2, $3, **$4** | $5, $6, **$7** | $8, $9 | ${10} | ${11} | ${waits:-?} |"
done
col() { cut -d' ' -f"$1" "$work/rows" | median; }
echo "| **median** | $(col 1) | $(col 2), $(col 3), **$(col 4)** | $(col 5), $(col 6), **$(col 7)** |" \
	"$(col 8), $(col 9) | $(col 10) | $(col 11) | |"
