#!/bin/bash
# Cost of the wait sampler (issue 31: off-CPU sampled by a sleepable task
# iterator, no hook at switches) against its peer pg_wait_sampling
# (Debian's postgresql-15-pg-wait-sampling, its default 10 ms period), in
# the same run. Rounds of four phases of PHASE seconds under pgbench -S
# with CLIENTS clients: no profiler; `ebprof record --type offcpu` (the
# iterator at RATE Hz, default targets: the postgres processes) visiting
# the targets' threads alone (6.7+), then walking every thread of the
# host (EBPROF_WAITS_HOST=1: kernels before 6.7); the cluster restarted
# with pg_wait_sampling preloaded. Per phase: TPS, and its ratio to the
# "none" phase of the same round; for ebprof the threads a read looks at
# (record -v's wait sampler line), the iterator's BPF run time
# (bpf_stats) in % of one core, and the recorder's CPU
# (its threads' schedstat, to the ns: the program runs in its reads, so
# this includes it; bpf_stats counts a sleepable run's wall time, preempted
# or asleep, so "BPF %" can exceed it on a busy host),
# from WARM s (default 3) after its start is done; for pg_wait_sampling its collector's
# CPU. Then medians. IDLE=N adds N idle connections (waiting for their
# client) to every phase (max_connections raised to fit).
# Per ebprof phase also the recorder's CPU per read (its CPU over RATE
# reads a second) and per thread a read looked at. BASE=DIR adds the same
# phases with DIR's build (main's, say) in every round, after $BUILD's;
# HOST=0 leaves the host walk out.
#   [BASE=build-main] [HOST=0] bench/waits-cost.sh [ROUNDS [PHASE]]     (default 3 rounds of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
PHASE=${2:-15}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-10}
IDLE=${IDLE:-0}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
pgws_require
bench_cluster waits 10
hz=$(getconf CLK_TCK)
bin=/usr/lib/postgresql/15/bin
idle_pids=""
cleanup() {
	bpf_stats_restore
	[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
bpf_stats_on

# pg_restart [LIBS]: the cluster again, with shared_preload_libraries=LIBS
pg_restart() {
	runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
		-m fast -o "-p $port -k $pgdir -c listen_addresses='' -c fsync=off \
		-c max_connections=$((IDLE + 50)) -c shared_preload_libraries='${1:-}'" \
		restart >/dev/null
	run_pgbench_tps -S -c "$CLIENTS" -j 2 -T 5 >/dev/null # warm its buffers again
}
tps_of() { run_pgbench_tps -S -c "$CLIENTS" -j 2 -T "$PHASE"; }
postmaster() { head -1 "$pgdir/data/postmaster.pid"; }
collector_pid() { pgrep -P "$(postmaster)" -f 'pg_wait_sampling collector' | head -1; }

pg_restart ""
idle_start "$IDLE"
# rec_phase VISITS: a recording of the cluster's processes under pgbench
# ("targets": their threads alone; "host": EBPROF_WAITS_HOST=1, every
# thread of the host), "TPS BPF%-of-a-core recorder% threads-looked-at-per-read"
rec_phase() {
	waits_record_start "$1" "--offcpu-rate $RATE -p $(postmaster)" $((PHASE * 4)) \
		"$work/w.pb.gz" "$work/rec.log"
	read -r ns1 _ < <(waits_iter_stats)
	c1=$(cpu_ns "$agent_pid")
	t1=$(date +%s.%N)
	on=$(tps_of)
	read -r ns2 _ < <(waits_iter_stats)
	c2=$(cpu_ns "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	per=$(waits_per_read "$1" "$work/rec.log")
	awk -v on="$on" -v ns1="$ns1" -v ns2="$ns2" -v c1="$c1" -v c2="$c2" -v t1="$t1" \
		-v t2="$t2" -v per="$per" 'BEGIN { w = t2 - t1
		printf "%.0f %.4f %.3f %s\n", on, 100 * (ns2 - ns1) / 1e9 / w,
			100 * (c2 - c1) / 1e9 / w, per }'
}

# the phases of a round: "targets" and "host" with $BUILD, then (BASE=DIR:
# another build, e.g. main's, alternating with this one in every round)
# the same with $BASE; HOST=0 leaves the host walk out
phases="targets"
[ "${HOST:-1}" = 0 ] || phases="$phases host"
builds="$BUILD"
[ -z "${BASE:-}" ] || builds="$BUILD $BASE"
echo "| round | phase | TPS | TPS / none | threads per read | BPF % of a core | recorder % of a core | recorder us per read | ns per thread looked at |"
echo "|---|---|---|---|---|---|---|---|---|"
: >"$work/rows"
for r in $(seq 1 "$ROUNDS"); do
	none=$(tps_of)
	printf "%s none %.0f 1 - - - - -\n" "$r" "$none" >>"$work/rows"
	for b in $builds; do
		for ph in $phases; do
			read -r on bpf rec per < <(BUILD=$b rec_phase "$ph")
			awk -v r="$r" -v ph="$b:$ph" -v on="$on" -v none="$none" -v bpf="$bpf" \
				-v rec="$rec" -v per="$per" -v rate="$RATE" 'BEGIN {
				us = rec / 100 * 1e6 / rate # CPU per s / reads per s
				printf "%s %s %.0f %.3f %s %s %s %.1f %.0f\n", r, ph, on, on / none,
					per, bpf, rec, us, (per > 0 ? us * 1000 / per : 0) }' >>"$work/rows"
		done
	done
	idle_stop
	pg_restart pg_wait_sampling
	idle_start "$IDLE"
	sleep 1
	cp=$(collector_pid)
	k1=$(cpu_ns "$cp")
	u1=$(date +%s.%N)
	pw=$(tps_of)
	k2=$(cpu_ns "$cp")
	u2=$(date +%s.%N)
	idle_stop
	pg_restart ""
	idle_start "$IDLE"
	awk -v r="$r" -v pw="$pw" -v none="$none" -v k1="$k1" -v k2="$k2" -v u1="$u1" -v u2="$u2" \
		'BEGIN { printf "%s pg_wait_sampling %.0f %.3f - - %.3f - -\n", r, pw, pw / none,
			100 * (k2 - k1) / 1e9 / (u2 - u1) }' >>"$work/rows"
	grep "^$r " "$work/rows" | while read -r -a f; do
		echo "| ${f[0]} | ${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} | ${f[5]} | ${f[6]} | ${f[7]} | ${f[8]} |"
	done
done
# medians per phase, in the order the phases ran
for ph in $(awk '$1 == 1 { print $2 }' "$work/rows"); do
	col() { awk -v ph="$ph" -v c="$1" '$2 == ph { print $c }' "$work/rows" | grep -v '^-$' | median; }
	echo "| **median** | $ph | $(col 3) | $(col 4) | $(col 5) | $(col 6) | $(col 7) | $(col 8) | $(col 9) |"
done
