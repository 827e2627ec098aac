#!/bin/bash
# Agent memory by unwinder: `ebprof agent` (interval 10 s) on PostgreSQL
# under pgbench -S, ROUNDS rounds alternating --unwind fp and dwarf; after
# SECS seconds of sampling each, VmRSS, VmHWM and their parts
# (smaps_rollup: anonymous, file, shared memory and BPF maps mapped by the
# agent), then the largest mappings of the last round of each. Prints
# markdown. Run as root.
#   bench/unwind-rss.sh [ROUNDS [SECS]]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
SECS=${2:-40}
CLIENTS=${CLIENTS:-2}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster rss 10

pgbench -n -S -c "$CLIENTS" -j "$CLIENTS" -T $((ROUNDS * 2 * (SECS + 15) + 30)) \
	-h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
bench_pid=$!
trap 'kill $bench_pid 2>/dev/null; bench_cleanup' EXIT
sleep 2

kb() { awk -v k="$2:" '$1 == k {print $2}' "$1"; }
mib() { awk -v v="$1" 'BEGIN {printf "%.1f", v / 1024}'; }

echo "| round | unwind | VmRSS MiB | VmHWM MiB | anon | file | BPF maps (mapped) |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	for mode in fp dwarf; do
		log="$work/agent-$mode-$r.log"
		"$BUILD/ebprof" agent --config /dev/null --unwind "$mode" --interval 10 \
			--output-dir "$work/profiles-$mode" --http-listen '' 2>"$log" &
		agent_pid=$!
		until grep -q 'sampling at' "$log" 2>/dev/null; do sleep 0.05; done
		sleep "$SECS"
		st=/proc/$agent_pid/status
		roll=/proc/$agent_pid/smaps_rollup
		bpf=$(awk '/^[0-9a-f]+-[0-9a-f]+ / {bpf = ($6 ~ /bpf-map/)} bpf && $1 == "Rss:" {s += $2} END {print s + 0}' \
			"/proc/$agent_pid/smaps")
		echo "| $r | $mode | $(mib "$(kb "$st" VmRSS)") | $(mib "$(kb "$st" VmHWM)") |" \
			"$(mib "$(kb "$roll" Anonymous)") | $(mib $(($(kb "$roll" Rss) - $(kb "$roll" Anonymous) - bpf))) |" \
			"$(mib "$bpf") |"
		awk '/^[0-9a-f]+-[0-9a-f]+ / {name = ($6 == "" ? "[anon]" : $6)} $1 == "Rss:" {s[name] += $2}
			END {for (n in s) if (s[n] >= 512) printf "%d KiB %s\n", s[n], n}' \
			"/proc/$agent_pid/smaps" | sort -rn >"$work/smaps-$mode.txt"
		kill -TERM "$agent_pid"
		wait "$agent_pid" || true
		agent_pid=""
	done
done
for mode in fp dwarf; do
	echo
	echo "Largest mappings (RSS >= 512 KiB), last round, --unwind $mode:"
	echo '```'
	cat "$work/smaps-$mode.txt"
	echo '```'
done
