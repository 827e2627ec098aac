#!/bin/bash
# Where the agent's CPU goes under connection churn (issue 32's "CPU under
# churn" target): the agent on its defaults (--profile-types cpu, the
# bench's cluster only) under `pgbench -S -C`, and after WARM seconds
# (default 70: its first flush done) `perf record --call-graph dwarf` of
# its threads for SECS seconds (default 60: one interval's drain and
# flush), at FREQ Hz (default 1999). Prints the agent's CPU over that time
# (perf attached) and the share of its samples under each of a list of
# functions; the perf data stays in OUT (default a temporary directory).
#   bench/churn-profile.sh          (run as root; about 2.5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
WARM=${WARM:-70}
SECS=${SECS:-60}
FREQ=${FREQ:-1999}
CLIENTS=${CLIENTS:-4}
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v perf >/dev/null || { echo "bench: perf is missing" >&2; exit 1; }
. bench/lib.sh
bench_cluster churnprof 10
OUT=${OUT:-$work}
pm=$(head -1 "$pgdir/data/postmaster.pid")
pgbench -n -S -C -c "$CLIENTS" -j 2 -T $((WARM + SECS + 60)) -h "$pgdir" -p "$port" \
	-U postgres postgres >/dev/null 2>&1 &
load=$!
sleep 2
log=$work/agent.log
"$BUILD/ebprof" agent --config /dev/null --profile-types cpu --comm= --pid "$pm" \
	--output-dir "$work/prof" --http-listen '' 2>"$log" &
agent_pid=$!
until grep -q 'sampling at' "$log"; do
	kill -0 "$agent_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
	sleep 0.1
done
sleep "$WARM"
c0=$(cpu_ns "$agent_pid")
t0=$(date +%s.%N)
perf record -o "$OUT/perf.data" --call-graph dwarf,16384 -F "$FREQ" -p "$agent_pid" \
	-- sleep "$SECS" 2>"$OUT/perf.err" >/dev/null
c1=$(cpu_ns "$agent_pid")
t1=$(date +%s.%N)
kill "$load" 2>/dev/null || true
echo "agent CPU: $(echo "($c1 - $c0) / 1000000000 / ($t1 - $t0) * 100" | bc -l |
	xargs printf '%.3f')% of a core over ${SECS} s (perf attached)"
grep 'interval from' "$log" | tail -2
# one line of frames a sample, then the share of samples under each
perf script -i "$OUT/perf.data" -F ip,sym 2>/dev/null |
	awk 'NF == 0 { if (n) print s; s = ""; n = 0; next } { s = s " " $2; n++ } END { if (n) print s }' \
		>"$OUT/stacks.txt"
n=$(wc -l <"$OUT/stacks.txt")
echo "perf samples: $n"
for f in handle_event session_unwind_process unwind_tables_forget procs_on_fork pg_attach \
	session_flush_from builder_add exc_page_fault madvise epoll_wait; do
	c=$(grep -c -- "$f" "$OUT/stacks.txt" || true)
	printf '%-24s %5.1f%%\n' "$f" "$(echo "100 * $c / $n" | bc -l)"
done
echo "perf data: $OUT/perf.data"
