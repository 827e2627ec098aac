#!/bin/bash
# The cost of page-fault profiles (--type faults) on a PostgreSQL host.
#
# 1. The hook: what every page fault of the host pays once a page-fault
#    perf event is open, whatever its period. The fault_split fixture
#    (pinned to CPU 0) faults fresh pages for HOOK_SECS; the CPU time it
#    takes per fault (its own clock: on a shared VM the wall-clock rate
#    swings 3x with the neighbours' load) alone and beside `ebprof record
#    --type faults --faults-period 1000000` targeting an idle process (the
#    event open on every CPU, its program all but never run), alternated
#    ROUNDS times; the median of the rounds' differences (a round's two
#    runs are seconds apart: the neighbours' load drifts less within one).
# 2. The load: pgbench -S (long-lived backends, few faults) and pgbench
#    -C -S (a backend per connection, each faulting its pages in), with
#    CLIENTS clients, phases of PHASE seconds alternating without and with
#    `ebprof agent --profile-types faults --faults-period PERIOD
#    --interval 10` (its default targets: the postgres processes), measured
#    from WARM seconds after the agent starts (its start-up and first
#    symbolization out of the window). Per "on" phase: TPS against
#    the mean of the "off" phases around it, the host's page faults a
#    second (/proc/vmstat pgfault), fault samples a second and ns per run
#    of the fault program (kernel.bpf_stats_enabled), the program's CPU,
#    the agent's own CPU (user + system), the hook's (faults/s x its ns),
#    and their sum, in % of one core; then medians.
# 3. The sweep: the same measures for one "on" phase of pgbench -C -S at
#    each period of PERIODS (the choice of the default).
#
#   bench/faults.sh [PAIRS [PHASE]]       (default 3 pairs of 30 s)
# Knobs: CLIENTS (8), PERIOD (the built-in default), PERIODS
# ("100 1000 10000"), ROUNDS (9), HOOK_SECS (3), WARM (25: two of the
# agent's 10 s flushes, its binaries symbolized, before it is measured),
# LOADS ("S C").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PAIRS=${1:-3}
PHASE=${2:-30}
CLIENTS=${CLIENTS:-8}
PERIOD=${PERIOD:-$(sed -n 's/^#define SAMPLER_FAULTS_PERIOD \([0-9]*\).*/\1/p' userspace/sampling/sampler.h)}
PERIODS=${PERIODS-100 1000 10000}
ROUNDS=${ROUNDS:-9}
HOOK_SECS=${HOOK_SECS:-3}
WARM=${WARM:-25}
LOADS=${LOADS-S C}
FIX=$BUILD/fixtures/stacks/fault_split

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -x "$FIX" ] || { echo "bench: $FIX missing: make $FIX" >&2; exit 1; }
. bench/lib.sh
bench_cluster faults 10
hz=$(getconf CLK_TCK)
idle_pid=""
trap 'bpf_stats_restore; [ -z "$idle_pid" ] || kill "$idle_pid" 2>/dev/null; bench_cleanup' EXIT
bpf_stats_on

pgfaults() { awk '$1 == "pgfault" { print $2 }' /proc/vmstat; }
fault_stats() { # "NS CNT" of the fault programs
	bpf_progs | awk '$3 ~ /^(do_fault|fault_unwind)/ { ns += $4; if ($3 ~ /^do_fault/) cnt += $5 }
		END { printf "%.0f %.0f\n", ns, cnt }'
}

# fixture_cost: ns of CPU per fault of fault_split pinned to CPU 0.
fixture_cost() {
	local line
	coproc FX { exec taskset -c 0 "$FIX" "$HOOK_SECS"; }
	sleep 0.5 # the fixture's start-up out of the way
	read -r line <&"${FX[0]}"
	echo go >&"${FX[1]}"
	read -r line <&"${FX[0]}"
	wait "$FX_PID" 2>/dev/null || true
	echo "$line" | awk -F'[= ]' '{ printf "%.1f\n", $8 / ($2 + $4) }'
}

echo "## The hook: ns a page fault pays with a page-fault event open"
echo
echo "| round | CPU ns per fault, off | on | on - off |"
echo "|---|---|---|---|"
sleep 100000 &
idle_pid=$!
: >"$work/hook-off"
: >"$work/hook-on"
: >"$work/hook"
for r in $(seq 1 "$ROUNDS"); do
	off=$(fixture_cost)
	# the recorder on the other CPU, settled (its start-up work done)
	taskset -c 1 "$BUILD/ebprof" record --type faults --faults-period 1000000 -p "$idle_pid" \
		-d 600 -v -o "$work/hook.pb.gz" 2>"$work/hook.log" &
	rec=$!
	for _ in $(seq 100); do grep -q "sampling at" "$work/hook.log" && break; sleep 0.1; done
	sleep 2
	on=$(fixture_cost)
	kill -INT "$rec"
	wait "$rec" || true
	d=$(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.1f", b - a }')
	echo "$off" >>"$work/hook-off"
	echo "$on" >>"$work/hook-on"
	echo "$d" >>"$work/hook"
	echo "| $r | $off | $on | $d |"
done
hook_ns=$(median <"$work/hook")
echo "| **median** | $(median <"$work/hook-off") | $(median <"$work/hook-on") | **$hook_ns** |"
echo

tps_of() { # LOAD SECONDS -> TPS
	if [ "$1" = C ]; then run_pgbench_tps -C -S -c "$CLIENTS" -j 2 -T "$2"
	else run_pgbench_tps -S -c "$CLIENTS" -j 2 -T "$2"; fi
}

agent_start() { # PERIOD
	: >"$work/empty.conf"
	rm -rf "$work/store"
	"$BUILD/ebprof" agent --config "$work/empty.conf" --profile-types faults \
		--faults-period "$1" --interval 10 --output-dir "$work/store" --http-listen "" \
		--log-level warn 2>"$work/agent.log" &
	agent_pid=$!
	sleep "$WARM"
}

agent_stop() {
	kill "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
}

# on_phase LOAD PERIOD: one measured phase with the agent; prints
# "TPS FAULTS/S SAMPLES/S NS/RUN BPF% AGENT% HOOK% TOTAL%".
on_phase() {
	local ns1 cnt1 ns2 cnt2 f1 f2 c1 c2 t1 t2 on
	agent_start "$2"
	read -r ns1 cnt1 < <(fault_stats)
	f1=$(pgfaults)
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	on=$(tps_of "$1" "$PHASE")
	read -r ns2 cnt2 < <(fault_stats)
	f2=$(pgfaults)
	c2=$(cpu_ticks "$agent_pid")
	t2=$(date +%s.%N)
	agent_stop
	awk -v on="$on" -v ns1="$ns1" -v ns2="$ns2" -v n1="$cnt1" -v n2="$cnt2" -v f1="$f1" \
		-v f2="$f2" -v k1="$c1" -v k2="$c2" -v t1="$t1" -v t2="$t2" -v hz="$hz" \
		-v hook="$hook_ns" 'BEGIN {
			w = t2 - t1; n = n2 - n1; fs = (f2 - f1) / w
			bpf = 100 * (ns2 - ns1) / 1e9 / w; ag = 100 * (k2 - k1) / hz / w
			hk = 100 * fs * hook / 1e9
			printf "%.0f %.0f %.1f %.0f %.4f %.4f %.4f %.4f\n", on, fs, n / w,
				n ? (ns2 - ns1) / n : 0, bpf, ag, hk, bpf + ag + hk }'
}

for load in $LOADS; do
	echo "## pgbench -$load$([ "$load" = C ] && echo " -S"), $CLIENTS clients, faults-period $PERIOD"
	echo
	echo "| phase | TPS | TPS / off around | faults/s | samples/s | ns per run | program % | agent % | hook % | **total, % of a core** |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	prev_off=$(tps_of "$load" "$PHASE")
	echo "| off | $prev_off | | | | | | | | |"
	: >"$work/rows-$load"
	for i in $(seq 1 "$PAIRS"); do
		read -r on fs sps nsr bpf ag hk tot < <(on_phase "$load" "$PERIOD")
		off=$(tps_of "$load" "$PHASE")
		ratio=$(awk -v on="$on" -v a="$prev_off" -v b="$off" 'BEGIN { printf "%.3f", on / ((a + b) / 2) }')
		echo "$ratio $fs $sps $nsr $bpf $ag $hk $tot" >>"$work/rows-$load"
		echo "| on | $on | $ratio | $fs | $sps | $nsr | $bpf | $ag | $hk | $tot |"
		echo "| off | $off | | | | | | | | |"
		prev_off=$off
	done
	m() { cut -d' ' -f"$1" "$work/rows-$load" | median; }
	echo "| **median** | | **$(m 1)** | $(m 2) | $(m 3) | $(m 4) | $(m 5) | $(m 6) | $(m 7) | **$(m 8)** |"
	echo
done

echo "## Periods under pgbench -C -S (one phase each)"
echo
echo "| faults-period | bytes a sample | faults/s | samples/s | ns per run | program % | agent % | hook % | total % |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in $PERIODS; do
	read -r on fs sps nsr bpf ag hk tot < <(on_phase C "$p")
	echo "| $p | $((p * $(getconf PAGESIZE) / 1024)) KiB | $fs | $sps | $nsr | $bpf | $ag | $hk | $tot |"
done
