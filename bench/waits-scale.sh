#!/bin/bash
# How the wait sampler's cost (issue 31) scales with the host's threads,
# the targets' and the rate, without load: `ebprof record --type offcpu`
# over PHASE seconds at each RATE of RATES, both ways of visiting in the
# same run:
#   - "targets": a read visits the targets' threads alone (6.7+, default);
#   - "host": a read walks every thread of the host (EBPROF_WAITS_VISIT=host,
#     what kernels before 6.7 and -a take);
# for two target sets, one sleeping process and a PostgreSQL cluster with
# IDLE sessions connected and silent (their switch counts unchanged), on
# the host as it is and with EXTRA more threads of a process that is not a
# target (asleep). Per run: the host's threads, threads looked at per read
# (record -v's wait sampler line), BPF ns per thread looked at (bpf_stats:
# one run per read on "targets", one per thread of the host on "host") and
# the recorder's CPU in % of a core (its threads' schedstat), from WARM s after it logged
# "sampling at". Medians of ROUNDS runs per row.
#   bench/waits-scale.sh [ROUNDS [PHASE]]    (default 3 rounds of 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
PHASE=${2:-10}
RATES=${RATES:-10}
IDLE=${IDLE:-200}
EXTRA=${EXTRA:-1000}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster waits-scale 1
hz=$(getconf CLK_TCK)
bin=/usr/lib/postgresql/15/bin
idle_pids=""
sleeper=""
crowd=""
cleanup() {
	bpf_stats_restore
	[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null || true
	[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true
	[ -z "$crowd" ] || kill "$crowd" 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
bpf_stats_on
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
	-m fast -o "-p $port -k $pgdir -c listen_addresses='' -c max_connections=$((IDLE + 20))" \
	restart >/dev/null

# one_run VISITS RATE PID: "host-threads looked/read ns/look recorder%"
one_run() {
	local host=0
	[ "$1" = host ] && host=1
	waits_record_start "$1" "--offcpu-rate $2 -p $3" $((PHASE * 4)) "$work/s.pb.gz" "$work/s.log"
	read -r ns1 cnt1 < <(waits_iter_stats)
	c1=$(cpu_ns "$agent_pid")
	t1=$(date +%s.%N)
	sleep "$PHASE"
	read -r ns2 cnt2 < <(waits_iter_stats)
	c2=$(cpu_ns "$agent_pid")
	t2=$(date +%s.%N)
	th=$(ps -e -L -o comm= | wc -l)
	offcpu_record_stop
	per=$(waits_per_read "$1" "$work/s.log")
	awk -v ns1="$ns1" -v ns2="$ns2" -v n1="$cnt1" -v n2="$cnt2" -v c1="$c1" -v c2="$c2" \
		-v t1="$t1" -v t2="$t2" -v host="$host" -v per="$per" -v th="$th" \
		'BEGIN { w = t2 - t1; looks = host ? n2 - n1 : (n2 - n1) * per
		printf "%d %s %.0f %.3f\n", th, per, looks ? (ns2 - ns1) / looks : 0,
			100 * (c2 - c1) / 1e9 / w }'
}

# rows NAME PID: one row per way of visiting and rate, medians of ROUNDS runs
rows() {
	for visits in targets host; do
		for rate in $RATES; do
			: >"$work/r"
			for _ in $(seq 1 "$ROUNDS"); do one_run "$visits" "$rate" "$2" >>"$work/r"; done
			m() { cut -d' ' -f"$1" "$work/r" | median; }
			echo "| $1 | $visits | $rate | $(m 1) | $(m 2) | $(m 3) | $(m 4) |"
		done
	done
}

# crowd_start N: a process (not a target) with N threads asleep
crowd_start() {
	python3 -c 'import sys, threading, time
for _ in range(int(sys.argv[1])):
    threading.Thread(target=time.sleep, args=(1e6,), daemon=True).start()
time.sleep(1e6)' "$1" &
	crowd=$!
	sleep 2
}

echo "| targets | visits | rate Hz | host threads | threads looked at per read | BPF ns per thread looked at | recorder % of a core |"
echo "|---|---|---|---|---|---|---|"
sleep 100000 &
sleeper=$!
pm=$(head -1 "$pgdir/data/postmaster.pid")
rows "1 sleeping process" "$sleeper"
idle_start "$IDLE"
rows "$IDLE idle backends" "$pm"
crowd_start "$EXTRA"
rows "$IDLE idle backends, $EXTRA more host threads" "$pm"
idle_stop
rows "1 sleeping process, $EXTRA more host threads" "$sleeper"
