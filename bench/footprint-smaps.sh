#!/bin/bash
# Where the agent's resident memory goes: `ebprof agent` on its defaults
# under `pgbench -S [-C] -c 4`, after SECS seconds (one flush at least),
# /proc/PID/smaps summed by mapping (anonymous, heap, each file: text,
# data, debug files; BPF ring buffers), largest first, plus
# smaps_rollup, VmHWM and the agent's own /metrics memory lines; and the
# resident memory at the first flush's steps (EBPROF_MEMTRACE: its start,
# after the drain symbolized every sample, its end).
# Run as root. LOAD=S|C (default S), SECS (default 70), AGENT_WRAP (a
# command the agent runs under, e.g. "env LD_PRELOAD=...": an allocation
# tracer).
#   bench/footprint-smaps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${SECS:-70}
LOAD=${LOAD:-S}
CLIENTS=${CLIENTS:-4}
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster smaps 10
churn=""
[ "$LOAD" = C ] && churn=-C
pgbench -n -S $churn -c "$CLIENTS" -j 2 -T $((SECS + 30)) \
	-h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
bench_pid=$!
sleep 2
log=$work/agent.log
EBPROF_MEMTRACE=1 ${AGENT_WRAP:-} "$BUILD/ebprof" agent --config /dev/null --output-dir "$work/profiles" \
	--comm= --pid "$(head -1 "$pgdir/data/postmaster.pid")" \
	--http-listen '' ${AGENT_OPTS:-} 2>"$log" &
agent_pid=$!
until grep -q 'sampling at' "$log" 2>/dev/null; do
	kill -0 "$agent_pid" 2>/dev/null || { cat "$log" >&2; agent_pid=""; exit 1; }
	sleep 0.05
done
# VmRSS every 0.2 s: when the peak comes (rises of 2 MiB and more)
(prev=0; while kill -0 "$agent_pid" 2>/dev/null; do
	r=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$agent_pid/status" 2>/dev/null || echo 0)
	if [ "${r:-0}" -gt $((prev + 2048)) ] || [ "${r:-0}" -lt $((prev - 2048)) ]; then
		echo "$(date +%T.%N | cut -c1-12) VmRSS ${r} kB"; prev=${r:-0}
	fi
	sleep 0.2
done) >"$work/rss.log" &
sleep "$SECS"
echo "== pgbench $([ -n "$churn" ] && echo '-S -C' || echo '-S'), agent $(git rev-parse --short HEAD), ${SECS}s"
grep -E 'VmHWM|VmRSS|RssAnon|RssFile' "/proc/$agent_pid/status"
python3 - "/proc/$agent_pid/smaps" <<'PY'
import sys, collections
tot = collections.Counter()
anon = collections.Counter()
big = []
name = None
cur = None
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and '-' in f[0] and not f[0].endswith(':'):
        perms = f[1]
        path = f[5] if len(f) >= 6 else '[anon]'
        kind = 'text' if 'x' in perms else ('rw' if 'w' in perms else 'ro')
        if path.startswith('anon_inode:bpf'):
            kind = perms
        name = (path, kind)
        lo, hi = (int(x, 16) for x in f[0].split('-'))
        cur = [path, perms, (hi - lo) // 1024, 0]
    elif f and f[0] == 'Rss:':
        tot[name] += int(f[1])
        cur[3] = int(f[1])
        if cur[0] in ('[anon]', '[heap]') and cur[3] >= 256:
            big.append(tuple(cur))
    elif f and f[0] == 'Anonymous:':
        anon[name[0]] += int(f[1])
s = sum(tot.values())
print("RSS by mapping (KiB), total %d" % s)
for (p, k), v in tot.most_common(30):
    if v:
        print("%8d  %-4s %s" % (v, k, p))
print("anonymous mappings and heap with >= 256 KiB resident (size KiB, rss KiB):")
for b in sorted(big, key=lambda b: -b[3]):
    print("  %-7s %s %8d %8d" % (b[0], b[1], b[2], b[3]))
print("copied-on-write pages of file mappings (KiB):", {p: v for p, v in anon.items() if v and p.startswith('/')})
PY
grep -i "memory budget" "$log" | head -3 || true
echo "The first flush, step by step (EBPROF_MEMTRACE):"; grep -m 3 memtrace "$log" || true
echo "RSS changes of 2 MiB and more:"; cat "$work/rss.log"
kill -TERM "$agent_pid"; wait "$agent_pid" || true; agent_pid=""
kill "$bench_pid" 2>/dev/null || true; wait "$bench_pid" 2>/dev/null || true
grep 'interval from' "$log" | tail -2
bench_cleanup
trap - EXIT
rm -rf "$work"
