#!/bin/bash
# Where the wait sampler's time goes (issue 31): `perf record -a -g` of the
# host while `ebprof record --type offcpu` ($BUILD's, RATE Hz, targets'
# visit unless EBPROF_WAITS_VISIT=host) samples a pgbench cluster with IDLE
# idle connections and, unless CLIENTS=0, `pgbench -S` with CLIENTS
# clients; then the report of the recorder's threads and the wait
# sampler's stats (record -v). Output in OUT (default /tmp/waits-profile).
#   bench/waits-profile.sh [SECS]      (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${1:-10}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-10}
IDLE=${IDLE:-0}
OUT=${OUT:-/tmp/waits-profile}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster wprof 10
idle_pids=""
pgb=""
cleanup() {
	bpf_stats_restore
	[ -z "$pgb" ] || kill "$pgb" 2>/dev/null || true
	[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
bpf_stats_on
bin=/usr/lib/postgresql/15/bin
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
	-m fast -o "-p $port -k $pgdir -c listen_addresses='' -c fsync=off \
	-c max_connections=$((IDLE + 50))" restart >/dev/null
mkdir -p "$OUT"
idle_start "$IDLE"
if [ "$CLIENTS" != 0 ]; then
	pgbench -n -S -c "$CLIENTS" -j 2 -T $((SECS * 3)) -h "$pgdir" -p "$port" -U postgres \
		postgres >"$OUT/pgbench.txt" 2>&1 &
	pgb=$!
fi
postmaster=$(head -1 "$pgdir/data/postmaster.pid")
waits_record_start "${VISITS:-targets}" "--offcpu-rate $RATE -p $postmaster" $((SECS * 3)) \
	"$OUT/w.pb.gz" "$OUT/rec.log"
rec_pid=$agent_pid
read -r ns1 cnt1 < <(waits_iter_stats)
c1=$(cpu_ns "$agent_pid")
perf record -a -g -F 2999 -o "$OUT/perf.data" -- sleep "$SECS" 2>"$OUT/perf.err" >/dev/null
read -r ns2 cnt2 < <(waits_iter_stats)
c2=$(cpu_ns "$agent_pid")
echo "threads looked at, found off the CPU, not run since, idle with their last idle stacks:" \
	"$(waits_counters "$rec_pid")" >"$OUT/stats.txt"
offcpu_record_stop
cat "$OUT/stats.txt" 2>/dev/null || true
echo "uptime: $(uptime)"
echo "iterator runs: $((cnt2 - cnt1)), BPF ns/run: $(( (ns2 - ns1) / (cnt2 - cnt1 > 0 ? cnt2 - cnt1 : 1) )), recorder CPU ms: $(( (c2 - c1) / 1000000 )) over $SECS s"
grep "wait sampler" "$OUT/rec.log" | tail -3
perf report -i "$OUT/perf.data" --comm ebprof --no-children \
	--sort sym -g none --percent-limit 0.5 --stdio 2>/dev/null | head -70 >"$OUT/report.txt" || true
