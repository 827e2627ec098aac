#!/bin/bash
# Overhead of `ebprof agent` on its defaults (19 Hz, 60 s interval) on
# PostgreSQL under pgbench -S. Phases of PHASE seconds alternate without and
# with the agent (off, on, off, on, ..., off), so machine drift falls on
# both; each "on" phase is compared with the mean of the "off" phases on
# either side. Reports:
#   - pgbench TPS per phase and the on/off ratio (median over pairs)
#   - the agent's CPU time (user+sys, from /proc) per wall second, % of one
#     core, over its whole life in each phase (start-up and last flush included)
#   - the agent's peak RSS (VmHWM)
# Writes bench/results/agent-overhead-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PAIRS=${PAIRS:-5}
PHASE=${PHASE:-60}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-2}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v bc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc >/dev/null

work=$(mktemp -d /tmp/ebprof-bench-XXXXXX)
pgdir="$work/pg"
agent_pid=""
cleanup() { [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null; tools/pgcluster.sh stop "$pgdir" || true; }
trap cleanup EXIT

info=$(tools/pgcluster.sh start "$pgdir")
port=$(echo "$info" | sed -n 's/port=\([0-9]*\).*/\1/p')
tools/pgcluster.sh init-bench "$pgdir" "$SCALE"
hz=$(getconf CLK_TCK)

bench_phase() { # -> tps
	pgbench -n -S -c "$CLIENTS" -j "$CLIENTS" -T "$PHASE" -h "$pgdir" -p "$port" -U postgres postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

: >"$work/off.txt"; : >"$work/on.txt"; : >"$work/agent.txt"
echo "$(bench_phase)" >>"$work/off.txt"
for i in $(seq 1 "$PAIRS"); do
	"$BUILD/ebprof" agent --config /dev/null --output-dir "$work/profiles" --http-listen '' 2>"$work/agent$i.log" &
	agent_pid=$!
	t0=$(date +%s.%N)
	echo "$(bench_phase)" >>"$work/on.txt"
	rss=$(awk '/VmHWM/{print $2}' "/proc/$agent_pid/status")
	kill -TERM "$agent_pid"
	# CPU of the whole life, read just before it exits: sample the last
	# value while it flushes.
	last=0
	while kill -0 "$agent_pid" 2>/dev/null; do
		c=$(cpu_ticks "$agent_pid" 2>/dev/null || echo "$last"); last=${c:-$last}; sleep 0.05
	done
	wait "$agent_pid" || true
	agent_pid=""
	t1=$(date +%s.%N)
	echo "$last $(echo "$t1 - $t0" | bc -l) $rss" >>"$work/agent.txt"
	echo "$(bench_phase)" >>"$work/off.txt"
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# ratio of each on phase to the mean of its neighbours
paste <(head -n "$PAIRS" "$work/off.txt") "$work/on.txt" <(tail -n "$PAIRS" "$work/off.txt") |
	awk '{printf "%.4f\n", $2 / (($1 + $3) / 2)}' >"$work/ratios.txt"
awk -v hz="$hz" '{printf "%.4f\n", $1 / hz / $2 * 100}' "$work/agent.txt" >"$work/cpu.txt"
total_cpu=$(awk -v hz="$hz" '{c += $1 / hz; w += $2} END {printf "%.4f", c / w * 100}' "$work/agent.txt")
profiles=$(find "$work/profiles" -name '*.pb.gz' | wc -l)
bytes=$(find "$work/profiles" -name '*.pb.gz' -printf '%s\n' | awk '{s += $1} END {print s + 0}')

out="bench/results/agent-overhead-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof agent overhead — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`PAIRS=$PAIRS PHASE=$PHASE SCALE=$SCALE CLIENTS=$CLIENTS bench/agent-overhead.sh\`"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
	echo "- ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-), agent on its defaults (19 Hz, interval 60 s)"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}'), \`pgbench -S -c $CLIENTS -j $CLIENTS\`, scale $SCALE, phases of ${PHASE} s: off, then $PAIRS × (on, off)"
	echo
	echo "| figure | median | all runs |"
	echo "| --- | --- | --- |"
	echo "| pgbench TPS with agent / without (neighbouring phases) | $(median <"$work/ratios.txt") | $(tr '\n' ' ' <"$work/ratios.txt") |"
	echo "| agent CPU, % of one core (whole life per phase) | $(median <"$work/cpu.txt") | $(tr '\n' ' ' <"$work/cpu.txt") |"
	echo "| agent peak RSS, MiB | $(awk '{print $3/1024}' "$work/agent.txt" | median) | $(awk '{printf "%.1f ", $3/1024}' "$work/agent.txt") |"
	echo
	echo "Agent CPU over all $PAIRS phases together: ${total_cpu}% of one core."
	echo "Profiles written: $profiles, $bytes bytes."
	echo
	echo "TPS without agent: $(tr '\n' ' ' <"$work/off.txt")"
	echo
	echo "TPS with agent: $(tr '\n' ' ' <"$work/on.txt")"
	echo
	echo "Raw agent phases (cpu_ticks at ${hz}/s, wall s, VmHWM kB):"
	echo '```'; cat "$work/agent.txt"; echo '```'
} >"$out"
cat "$out"
echo "written: $out"
