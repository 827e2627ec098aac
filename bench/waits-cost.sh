#!/bin/bash
# Cost of the wait sampler (issue 31: off-CPU sampled by a sleepable task
# iterator, no hook at switches) against its peer pg_wait_sampling
# (Debian's postgresql-15-pg-wait-sampling, its default 10 ms period), in
# the same run. Rounds of five phases of PHASE seconds under pgbench -S
# with CLIENTS clients: no profiler; `ebprof record --type offcpu` (the
# iterator at RATE Hz, default targets: the postgres processes) visiting
# the targets' threads a link per process ("processes", 6.1+, $BUILD),
# the same in one run of the kfunc program ("kfunc", 6.7+, $KBUILD: any
# build since the program has its own object; KBUILD= leaves it out), then
# walking every thread of the host ("host"; EBPROF_WAITS_VISIT forces
# each); the cluster restarted with pg_wait_sampling preloaded. Per phase:
# TPS, and its ratio to the "none" phase of the same round; for ebprof the
# threads a read looks at (record -v's wait sampler line; a backend is a
# process of one thread), the iterator's BPF run time (bpf_stats) in % of
# one core, the recorder's CPU and its wait sampler thread's (ebprof-waits)
# (their schedstat, to the ns: the program runs in the thread's reads, so
# this includes it; bpf_stats counts a sleepable run's wall time, preempted
# or asleep, so "BPF %" can exceed it on a busy host), from WARM s
# (default 3) after its start is done, and from the thread's the cost per
# read and per thread looked at per read (us: per target process on
# "processes", per host thread on "host"); for pg_wait_sampling its
# collector's CPU. Then medians. IDLE=N adds N idle connections (waiting for their
# client) to every phase (max_connections raised to fit). PHASES picks
# the phases (processes, kfunc, host; base: the kfunc visit of the build
# in BASE, e.g. main's, in the same rounds; auto and main: $KBUILD's and
# $BASE's own choice, forcing none, e.g. main's default build against
# this one's).
#   bench/waits-cost.sh [ROUNDS [PHASE]]     (default 3 rounds of 15 s)
#   PHASES="kfunc base" KBUILD=build BASE=../main/build bench/waits-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
KBUILD=${KBUILD-build}
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
# waits_ns PID: the CPU time (ns) of PID's wait sampler thread
waits_ns() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" != ebprof-waits ] || cut -d' ' -f1 "$t/schedstat"
	done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# rec_phase VISITS: a recording of the cluster's processes under pgbench
# (waits_record_start's VISITS), "TPS BPF%-of-a-core recorder% sampler%
# threads-looked-at-per-read"
rec_phase() {
	local b=$BUILD v=$1
	[ "$1" != kfunc ] || b=$KBUILD
	[ "$1" != base ] || { b=$BASE; v=kfunc; }
	[ "$1" != auto ] || { b=$KBUILD; v=targets; }
	[ "$1" != main ] || { b=$BASE; v=targets; }
	BUILD=$b waits_record_start "$v" "--offcpu-rate $RATE -p $(postmaster)" $((PHASE * 4)) \
		"$work/w.pb.gz" "$work/rec.log"
	read -r ns1 _ < <(waits_iter_stats)
	c1=$(cpu_ns "$agent_pid")
	s1=$(waits_ns "$agent_pid")
	t1=$(date +%s.%N)
	on=$(tps_of)
	read -r ns2 _ < <(waits_iter_stats)
	c2=$(cpu_ns "$agent_pid")
	s2=$(waits_ns "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	# the session's own choice: whichever visit it logged
	[ "$v" != targets ] || v=$(sed -n 's/.*wait sampler (\([a-z]*\)).*/\1/p' "$work/rec.log" | head -1)
	per=$(waits_per_read "$v" "$work/rec.log")
	awk -v on="$on" -v ns1="$ns1" -v ns2="$ns2" -v c1="$c1" -v c2="$c2" -v t1="$t1" \
		-v t2="$t2" -v per="$per" -v s1="$s1" -v s2="$s2" 'BEGIN { w = t2 - t1
		printf "%.0f %.4f %.3f %.4f %s\n", on, 100 * (ns2 - ns1) / 1e9 / w,
			100 * (c2 - c1) / 1e9 / w, 100 * (s2 - s1) / 1e9 / w, per }'
}

phases="processes"
[ -z "$KBUILD" ] || phases="$phases kfunc"
phases="$phases host"
# PHASES="kfunc base" BASE=DIR: the kfunc visit of $KBUILD against that of
# the build in DIR (main's, say: before and after in the same rounds)
phases=${PHASES:-$phases}
hdr="| round | none TPS |"
sep="|---|---|"
for p in $phases; do
	hdr="$hdr $p: TPS (ratio) | threads per read | BPF % of a core | recorder % | sampler thread % | us per read | us per thread per read |"
	sep="$sep---|---|---|---|---|---|---|"
done
echo "$hdr pg_wait_sampling TPS (ratio) | collector % of a core |"
echo "$sep---|---|"
: >"$work/rows"
for r in $(seq 1 "$ROUNDS"); do
	none=$(printf '%.0f' "$(tps_of)")
	row="$none"
	line="| $r | $none |"
	for p in $phases; do
		read -r on bpf rec smp per < <(rec_phase "$p")
		set -- $(awk -v on="$on" -v none="$none" -v smp="$smp" -v per="$per" -v rate="$RATE" \
			'BEGIN { r = smp / 100 * 1e6 / rate
				printf "%.3f %.1f %.3f", on / none, r, (per > 0 ? r / per : 0) }')
		row="$row $on $1 $per $bpf $rec $smp $2 $3"
		line="$line $on ($1) | $per | $bpf | $rec | $smp | $2 | $3 |"
	done
	idle_stop
	pg_restart pg_wait_sampling
	idle_start "$IDLE"
	sleep 1
	cp=$(collector_pid)
	k1=$(cpu_ns "$cp")
	u1=$(date +%s.%N)
	pw=$(printf '%.0f' "$(tps_of)")
	k2=$(cpu_ns "$cp")
	u2=$(date +%s.%N)
	idle_stop
	pg_restart ""
	idle_start "$IDLE"
	set -- $(awk -v none="$none" -v pw="$pw" -v k1="$k1" -v k2="$k2" -v u1="$u1" -v u2="$u2" \
		'BEGIN { printf "%.3f %.3f", pw / none, 100 * (k2 - k1) / 1e9 / (u2 - u1) }')
	echo "$row $pw $1 $2" >>"$work/rows"
	echo "$line $pw ($1) | $2 |"
done
col() { cut -d' ' -f"$1" "$work/rows" | median; }
n=$(head -1 "$work/rows" | wc -w)
line="| **median** | $(col 1) |"
i=2
for p in $phases; do
	line="$line $(col $i) ($(col $((i + 1)))) | $(col $((i + 2))) | $(col $((i + 3))) | $(col $((i + 4))) | $(col $((i + 5))) | $(col $((i + 6))) | $(col $((i + 7))) |"
	i=$((i + 8))
done
echo "$line $(col $i) ($(col $((i + 1)))) | $(col $n) |"
