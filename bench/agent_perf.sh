#!/bin/bash
# Where the agent's CPU goes in the steady state: `ebprof agent` (BUILD's,
# its defaults but --profile-types cpu and the bench cluster's postmaster
# as its target) under `pgbench -S [-C] -c 4 -j 2`, profiled by
# `perf record --call-graph dwarf` for SECS seconds from the end of its
# first interval; then bench/perf_buckets.py puts the samples in buckets
# (between flushes / flushes). Run as root.
#   BUILD=DIR LOAD=S|C SECS=125 OUT=/tmp/agent-perf bench/agent_perf.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LOAD=${LOAD:-S}
SECS=${SECS:-125}
HZ=${HZ:-3999}
OUT=${OUT:-/tmp/agent-perf-$LOAD}
. bench/lib.sh
bench_cluster agentperf 10
churn=""
[ "$LOAD" = C ] && churn=-C
pgbench -n -S $churn -c 4 -j 2 -T $((SECS + 150)) -h "$pgdir" -p "$port" -U postgres postgres \
	>/dev/null 2>&1 &
bench_pid=$!
sleep 2
"$BUILD/ebprof" agent --config /dev/null --profile-types cpu --comm= \
	--pid "$(head -1 "$pgdir/data/postmaster.pid")" --output-dir "$work/profiles" \
	--http-listen '' 2>"$OUT.log" &
agent_pid=$!
until grep -q 'interval from' "$OUT.log"; do sleep 0.5; done
c0=$(cpu_ticks "$agent_pid")
t0=$(date +%s.%N)
perf record --call-graph dwarf,16384 -F "$HZ" -p "$agent_pid" -o "$OUT.perf.data" \
	-- sleep "$SECS" >/dev/null 2>&1 || true
c1=$(cpu_ticks "$agent_pid")
t1=$(date +%s.%N)
kill -TERM "$agent_pid"
wait "$agent_pid" || true
agent_pid=""
kill "$bench_pid" 2>/dev/null || true
wait "$bench_pid" || true
echo "agent CPU over the window: $(echo "($c1 - $c0) / $(getconf CLK_TCK) / ($t1 - $t0) * 100" |
	bc -l | xargs printf '%.3f')% of a core (perf's own cost included)"
perf script -i "$OUT.perf.data" -F time,ip,sym 2>/dev/null >"$OUT.txt"
bench/perf_buckets.py "$OUT.txt" "$HZ"
