#!/bin/bash
# What off-CPU profiling adds to a context switch, measured without
# bpf_stats (whose own clock reads cost about 1 us a program run on this
# kind of VM and swamp what they measure): `perf bench sched pipe` pinned
# to one CPU (two processes passing a byte back and forth: every round trip
# is two switches, each one targeted thread leaving and one coming back),
# rounds alternating no profiler and `ebprof record --type offcpu` on the
# bench's processes with each option set given, e.g.
#   bench/offcpu-switch.sh [ROUNDS [LOOPS]] -- "" "--offcpu-period 0"
# Reports per set the median us per round trip, and the added ns per
# switch against the medians of the "off" rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BUILD=${BUILD:-build}
ROUNDS=${1:-5}
LOOPS=${2:-200000}
shift $(($# >= 2 ? 2 : $#))
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || set -- ""
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench: needs perf (linux-perf)" >&2; exit 1; }
work=$(mktemp -d /tmp/ebprof-offcpu-switch-XXXXXX)
rec=""
trap '[ -n "$rec" ] && kill "$rec" 2>/dev/null; rm -rf "$work"' EXIT

run_bench() { # -> us per round trip
	taskset -c 0 perf bench sched pipe -l "$LOOPS" 2>/dev/null |
		sed -n 's/^ *\([0-9.]*\) usecs\/op.*/\1/p'
}
with_record() { # OPTS -> us per round trip under the recorder
	rm -f "$work/go"
	mkfifo "$work/go"
	# the bench waits for the recorder to follow it (and its child)
	bash -c 'read -r _ <"$1"; exec taskset -c 0 perf bench sched pipe -l "$2"' _ \
		"$work/go" "$LOOPS" >"$work/bench.out" 2>/dev/null &
	local holder=$!
	# shellcheck disable=SC2086
	"$BUILD/ebprof" record -v --type offcpu -p "$holder" $1 -d 600 -o "$work/o.pb.gz" \
		2>"$work/rec.log" &
	rec=$!
	for _ in $(seq 100); do
		grep -q "following" "$work/rec.log" && break
		sleep 0.1
	done
	grep -q "following" "$work/rec.log" || { cat "$work/rec.log" >&2; exit 1; }
	sleep 1 # past the start
	echo go >"$work/go"
	wait "$holder"
	kill -INT "$rec"
	wait "$rec" || true
	rec=""
	rec_waits "$work/rec.log" >"$work/waits"
	sed -n 's/^ *\([0-9.]*\) usecs\/op.*/\1/p' "$work/bench.out"
}

echo "| round | set | us per round trip |"
echo "|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	t=$(run_bench)
	echo "| $r | off | $t |"
	echo "off $t" >>"$work/rows"
	i=0
	for opts in "$@"; do
		i=$((i + 1))
		t=$(with_record "$opts")
		echo "| $r | \`${opts:-(defaults)}\` | $t ($(cat "$work/waits") waits taken) |"
		echo "set$i $t" >>"$work/rows"
	done
done
off=$(awk '$1 == "off" {print $2}' "$work/rows" | median)
echo
echo "| set | median us per round trip | added ns per switch |"
echo "|---|---|---|"
echo "| off | $off | |"
i=0
for opts in "$@"; do
	i=$((i + 1))
	m=$(awk -v s="set$i" '$1 == s {print $2}' "$work/rows" | median)
	echo "| \`${opts:-(defaults)}\` | $m | $(awk -v m="$m" -v o="$off" 'BEGIN {printf "%.0f", (m - o) * 1000 / 2}') |"
done
