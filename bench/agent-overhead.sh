#!/bin/bash
# Overhead of `ebprof agent` on its defaults (19 Hz, 60 s interval) on
# PostgreSQL under pgbench -S, in two parts:
#  1. TPS: phases of PHASE seconds alternate without and with the agent
#     (off, on, off, on, ..., off), so machine drift falls on both; each
#     "on" phase is compared with the mean of the "off" phases around it.
#  2. The agent's own cost: one continuous run of CONT seconds (default
#     5 minutes) under the same load: CPU time (user+sys, /proc) per wall
#     second from "sampling at" to the end (first flush, kallsyms load and
#     symbolization included), the start-up separately, and peak RSS.
# Writes bench/results/agent-overhead-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PAIRS=${PAIRS:-3}
PHASE=${PHASE:-60}
CONT=${CONT:-300}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-2}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v bc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc >/dev/null

. bench/lib.sh
bench_cluster bench "$SCALE"
hz=$(getconf CLK_TCK)

bench_phase() { # -> tps
	run_pgbench_tps -S -c "$CLIENTS" -j "$CLIENTS" -T "$PHASE"
}

: >"$work/off.txt"; : >"$work/on.txt"
start_agent() { # log file; sets agent_pid, waits until it samples
	"$BUILD/ebprof" agent --config /dev/null --output-dir "$work/profiles" --http-listen '' 2>"$1" &
	agent_pid=$!
	until grep -q 'sampling at' "$1" 2>/dev/null; do sleep 0.05; done
}
stop_agent() {
	kill -TERM "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
}

# Part 1: TPS, interleaved.
echo "$(bench_phase)" >>"$work/off.txt"
for i in $(seq 1 "$PAIRS"); do
	start_agent "$work/agent$i.log"
	echo "$(bench_phase)" >>"$work/on.txt"
	stop_agent
	echo "$(bench_phase)" >>"$work/off.txt"
done

# Part 2: one continuous run of CONT seconds under load.
pgbench -n -S -c "$CLIENTS" -j "$CLIENTS" -T "$((CONT + 20))" -h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
bench_pid=$!
sleep 3
t_start=$(date +%s.%N)
start_agent "$work/agent-cont.log"
t_sampling=$(date +%s.%N)
c_sampling=$(cpu_ticks "$agent_pid")
sleep "$CONT"
c_end=$(cpu_ticks "$agent_pid")
t_end=$(date +%s.%N)
rss=$(awk '/VmHWM/{print $2}' "/proc/$agent_pid/status")
rss_now=$(awk '/VmRSS/{print $2}' "/proc/$agent_pid/status")
stop_agent
wait "$bench_pid" || true
cont_cpu=$(echo "($c_end - $c_sampling) / $hz / ($t_end - $t_sampling) * 100" | bc -l)
startup_s=$(echo "$c_sampling / $hz" | bc -l)
startup_wall=$(echo "$t_sampling - $t_start" | bc -l)

# ratio of each on phase to the mean of its neighbours
paste <(head -n "$PAIRS" "$work/off.txt") "$work/on.txt" <(tail -n "$PAIRS" "$work/off.txt") |
	awk '{printf "%.4f\n", $2 / (($1 + $3) / 2)}' >"$work/ratios.txt"
profiles=$(find "$work/profiles" -name '*.pb.gz' | wc -l)
bytes=$(find "$work/profiles" -name '*.pb.gz' -printf '%s\n' | awk '{s += $1} END {print s + 0}')

out="bench/results/agent-overhead-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof agent overhead — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`PAIRS=$PAIRS PHASE=$PHASE CONT=$CONT SCALE=$SCALE CLIENTS=$CLIENTS bench/agent-overhead.sh\`"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
	echo "- ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-), agent on its defaults (19 Hz, interval 60 s)"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}'), \`pgbench -S -c $CLIENTS -j $CLIENTS\`, scale $SCALE; TPS phases of ${PHASE} s: off, then $PAIRS × (on, off); then one agent run of ${CONT} s"
	echo "- debug packages installed: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none)"
	echo
	echo "| figure | value |"
	echo "| --- | --- |"
	echo "| pgbench TPS with agent / without (neighbouring phases), median of $PAIRS | $(median <"$work/ratios.txt") (all: $(tr '\n' ' ' <"$work/ratios.txt")) |"
	echo "| agent CPU, % of one core, ${CONT} s continuous run after start-up | $(printf '%.4f' "$cont_cpu") |"
	echo "| agent start-up: CPU s (wall s) until sampling | $(printf '%.3f' "$startup_s") ($(printf '%.2f' "$startup_wall")) |"
	echo "| agent peak RSS (VmHWM) / RSS at the end, MiB | $(echo "$rss / 1024" | bc -l | xargs printf '%.1f') / $(echo "$rss_now / 1024" | bc -l | xargs printf '%.1f') |"
	echo
	echo "Profiles written (both parts): $profiles, $bytes bytes."
	echo
	echo "TPS without agent: $(tr '\n' ' ' <"$work/off.txt")"
	echo
	echo "TPS with agent: $(tr '\n' ' ' <"$work/on.txt")"
	echo
	echo "Agent log of the continuous run (interval lines):"
	echo '```'; grep 'interval from' "$work/agent-cont.log" || true; echo '```'
} >"$out"
cat "$out"
echo "written: $out"
