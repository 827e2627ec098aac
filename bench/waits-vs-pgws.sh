#!/bin/bash
# The wait sampler's counts against pg_wait_sampling's as ground truth
# (issue 31), in one run: a cluster with pg_wait_sampling preloaded (its
# default 10 ms period) under pgbench's TPC-B at scale 1 with CLIENTS
# clients (row locks on the branches: Lock waits, and WAL, LWLock, Client
# waits) and IDLE idle sessions; `ebprof record --type offcpu` at RATE Hz
# over the same SECS seconds, pg_wait_sampling's profile reset as it
# starts. Prints seconds of each wait event both saw (pg_wait_sampling:
# samples x 10 ms; ebprof: offcpu/nanoseconds by wait_event label) and
# their ratio.
#   bench/waits-vs-pgws.sh [SECS]     (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${1:-20}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-10}
IDLE=${IDLE:-20}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
pgws_require
bench_cluster waitsvs 1
bin=/usr/lib/postgresql/15/bin
idle_pids=""
bench_pid=""
trap '[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null; [ -z "$bench_pid" ] || kill $bench_pid 2>/dev/null; bench_cleanup' EXIT
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 -m fast \
	-o "-p $port -k $pgdir -c listen_addresses='' -c fsync=off -c max_connections=$((IDLE + 50)) \
	-c shared_preload_libraries=pg_wait_sampling" restart >/dev/null
P="psql -X -At -h $pgdir -p $port -U postgres postgres"
$P -c 'CREATE EXTENSION pg_wait_sampling' >/dev/null
idle_start "$IDLE"
pgbench -n -c "$CLIENTS" -j 2 -T $((SECS + 6)) -h "$pgdir" -p "$port" -U postgres postgres \
	>"$work/pgbench.log" 2>&1 &
bench_pid=$!
sleep 2
"$BUILD/ebprof" record --type offcpu --offcpu-rate "$RATE" -d $((SECS + 20)) -v \
	-p "$(head -1 "$pgdir/data/postmaster.pid")" \
	-o "$work/waits.pb.gz" 2>"$work/rec.log" &
agent_pid=$!
until grep -qs "following" "$work/rec.log"; do sleep 0.1; done
sleep 1
$P -c 'SELECT pg_wait_sampling_reset_profile()' >/dev/null
w1=$(date +%s.%N)
sleep "$SECS"
$P -F ' ' -c "SELECT event, sum(count) * 0.01 FROM pg_wait_sampling_profile
	WHERE event IS NOT NULL GROUP BY event" >"$work/pgws"
w2=$(date +%s.%N)
kill -INT "$agent_pid"
wait "$agent_pid" || true
agent_pid=""
wait "$bench_pid" || true
bench_pid=""
pwin=$(echo "$w2 - $w1" | bc)
ewin=$(go tool pprof -top "$work/waits.pb.gz" 2>/dev/null | sed -n 's/^off-CPU, \([0-9.]*\) s,.*/\1/p')
go tool pprof -tags -sample_index=offcpu "$work/waits.pb.gz" 2>/dev/null |
	awk '/^ *wait_event:/ { on = 1; next } on && NF == 0 { on = 0 } on {
		v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		s = u == "s" ? v : u == "ms" ? v / 1e3 : u == "us" ? v / 1e6 : u == "mins" ? v * 60 : u == "hrs" ? v * 3600 : v / 1e9
		print $NF, s }' >"$work/ebprof"
echo "ebprof: $(sed -n 's/.*\(wrote .*\)/\1/p' "$work/rec.log" | head -1)"
echo "pgbench: $(sed -n 's/^tps = \([0-9.]*\).*/\1 TPS/p' "$work/pgbench.log")"
echo
echo "Windows: pg_wait_sampling $pwin s, ebprof's recording $ewin s; average sessions in each wait"
echo "event = its seconds / the window."
echo
echo "| wait event | pg_wait_sampling, s | sessions | ebprof, s | sessions | ebprof / pg_wait_sampling |"
echo "|---|---|---|---|---|---|"
awk -v pw="$pwin" -v ew="$ewin" 'NR == FNR { p[$1] = $2; next } { e[$1] = $2 }
	END { for (k in p) all[k] = 1; for (k in e) all[k] = 1
		for (k in all) printf "%s %.2f %.3f %.2f %.3f\n", k, p[k], p[k] / pw, e[k], e[k] / ew }' \
	"$work/pgws" "$work/ebprof" | sort -k3 -g -r |
	awk '{ printf "| %s | %.2f | %.3f | %.2f | %.3f | %s |\n", $1, $2, $3, $4, $5, ($3 > 0 ? sprintf("%.2f", $5 / $3) : "-") }'
