#!/bin/bash
# How the wait sampler's cost (issue 31) scales with threads and rate,
# without load: `ebprof record --type offcpu` at each RATE of RATES over
# PHASE seconds, for two target sets on the same host:
#   - "host pass": one sleeping process, so every visit but one is a thread
#     of the host left at the target check (the iterator visits them all);
#   - "idle backends": a PostgreSQL cluster with IDLE sessions connected
#     and silent (their switch counts unchanged: one lookup each).
# Per run: visits a second and the host's threads, BPF ns per visit
# (bpf_stats) and the recorder's CPU in % of a core, from WARM s after
# it logged "sampling at". Medians of ROUNDS runs per row.
#   bench/waits-scale.sh [ROUNDS [PHASE]]    (default 3 rounds of 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-3}
PHASE=${2:-10}
RATES=${RATES:-10 20 50}
IDLE=${IDLE:-200}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster waits-scale 1
hz=$(getconf CLK_TCK)
bin=/usr/lib/postgresql/15/bin
idle_pids=""
sleeper=""
cleanup() {
	bpf_stats_restore
	[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null || true
	[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
bpf_stats_on
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
	-m fast -o "-p $port -k $pgdir -c listen_addresses='' -c max_connections=$((IDLE + 20))" \
	restart >/dev/null
iter_stats() { # "NS CNT" of the recorder's wait sampler program (bpf_stats)
	bpf_progs | awk -v ids="$(prog_ids_of "$agent_pid" | tr '\n' ' ')" \
		'BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) own[a[i]] = 1 }
		$3 == "waits_visit" && ($1 in own) { ns += $4; cnt += $5 }
		END { printf "%.0f %.0f\n", ns, cnt }'
}

# one_run RATE PID: "visits/s ns/visit recorder%" of a recording of PID
one_run() {
	OFFCPU_OPTS="--offcpu-rate $1 -p $2" WARM=0 offcpu_record_start $((PHASE * 4)) \
		"$work/s.pb.gz" "$work/s.log"
	until grep -qs "sampling at" "$work/s.log"; do sleep 0.2; done
	sleep "${WARM:-3}"
	read -r ns1 cnt1 < <(iter_stats)
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	sleep "$PHASE"
	read -r ns2 cnt2 < <(iter_stats)
	c2=$(cpu_ticks "$agent_pid")
	t2=$(date +%s.%N)
	offcpu_record_stop
	awk -v ns1="$ns1" -v ns2="$ns2" -v n1="$cnt1" -v n2="$cnt2" -v c1="$c1" -v c2="$c2" \
		-v t1="$t1" -v t2="$t2" -v hz="$hz" 'BEGIN { w = t2 - t1; v = n2 - n1
		printf "%.0f %.0f %.3f\n", v / w, v ? (ns2 - ns1) / v : 0, 100 * (c2 - c1) / hz / w }'
}

# rows NAME PID: one row per rate, medians of ROUNDS runs
rows() {
	for rate in $RATES; do
		: >"$work/r"
		for _ in $(seq 1 "$ROUNDS"); do one_run "$rate" "$2" >>"$work/r"; done
		th=$(ps -e -L -o comm= | wc -l)
		m() { cut -d' ' -f"$1" "$work/r" | median; }
		echo "| $1 | $rate | $(m 1) ($th) | $(m 2) | $(m 3) |"
	done
}

echo "| targets | rate Hz | visits/s (host threads) | BPF ns per visit | recorder % of a core |"
echo "|---|---|---|---|---|"
sleep 100000 &
sleeper=$!
rows "host pass (1 sleeping process)" "$sleeper"
idle_start "$IDLE"
rows "$IDLE idle backends" "$(head -1 "$pgdir/data/postmaster.pid")"
