#!/bin/bash
# Where `ebprof record --type offcpu` spends its CPU outside the wait
# sampler's thread (issue 31: the whole recorder against the sampler
# thread alone, bench/waits-cost.sh): its threads' CPU (schedstat) over
# SECS seconds under pgbench -S (CLIENTS clients, IDLE idle connections
# more), and `perf record -g` of it then, its report by thread and
# symbol. BUILD's session visits as it chooses. Run as root.
#   IDLE=200 SECS=30 BUILD=build OUT=/tmp/waits-perf bench/waits-perf.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${SECS:-30}
CLIENTS=${CLIENTS:-8}
IDLE=${IDLE:-200}
OUT=${OUT:-/tmp/waits-perf}
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster waitsperf 10
bin=/usr/lib/postgresql/15/bin
idle_pids=""
trap 'idle_stop; bench_cleanup' EXIT
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 -m fast \
	-o "-p $port -k $pgdir -c listen_addresses='' -c fsync=off -c max_connections=$((IDLE + 50))" \
	restart >/dev/null
idle_start "$IDLE"
pgbench -n -S -c "$CLIENTS" -j 2 -T $((SECS + 40)) -h "$pgdir" -p "$port" -U postgres postgres \
	>/dev/null 2>&1 &
sleep 2
"$BUILD/ebprof" record --type offcpu -p "$(head -1 "$pgdir/data/postmaster.pid")" \
	-d $((SECS + 25)) -v -o "$OUT.pb.gz" 2>"$OUT.log" &
agent_pid=$!
until grep -qs "sampling at" "$OUT.log"; do sleep 0.2; done
sleep 8
threads() {
	for t in /proc/"$agent_pid"/task/*; do
		printf '%s:%s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" "$(cut -d' ' -f1 "$t/schedstat")"
	done | sort
}
threads >"$OUT.t0"
t0=$(date +%s.%N)
perf record -g -F 997 -p "$agent_pid" -o "$OUT.data" -- sleep "$SECS" >/dev/null 2>&1
t1=$(date +%s.%N)
threads >"$OUT.t1"
echo "## threads' CPU over $SECS s (% of a core)"
join "$OUT.t0" "$OUT.t1" | awk -v w="$(echo "$t1 - $t0" | bc)" \
	'{ d = ($3 - $2) / 1e9 / w * 100; s += d; printf "%-28s %.3f\n", $1, d } END { printf "%-28s %.3f\n", "all", s }'
echo "## perf: by thread"
perf report -i "$OUT.data" --no-children --sort tid --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20
echo "## perf: by thread and symbol"
perf report -i "$OUT.data" --no-children --sort tid,dso,sym --stdio -g none 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -60
wait "$agent_pid" || true
agent_pid=""
