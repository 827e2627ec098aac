#!/bin/bash
# Two builds' wait samplers side by side (issue 31): `ebprof record --type
# offcpu` of $BUILD and of $BASE (main's, say) recording the same pgbench
# cluster AT ONCE (the targets' visit, RATE Hz), so that both see the same
# threads in the same states on the same shared host. Per round, for each:
# its CPU (its threads' schedstat) over SECS in % of a core and per read,
# and its wait sampler's counters (BPF `stats`): threads found off the CPU,
# of them not run since their last visit (counted again) and idle with
# their last idle stacks; the rest took stacks anew. IDLE=N idle
# connections, CLIENTS pgbench -S clients (0: none). Reads in the window:
# threads looked at there over threads per read (record -v's count).
#   BASE=build-main bench/waits-ab.sh [ROUNDS [SECS]]    (default 3 of 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BASE=${BASE:?BASE=DIR: the build to compare with}
ROUNDS=${1:-3}
SECS=${2:-15}
CLIENTS=${CLIENTS:-8}
RATE=${RATE:-10}
IDLE=${IDLE:-0}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
. bench/lib.sh
bench_cluster waitsab 10
idle_pids=""
pgb=""
pids=""
cleanup() {
	[ -z "$pids" ] || kill $pids 2>/dev/null || true
	[ -z "$pgb" ] || kill "$pgb" 2>/dev/null || true
	[ -z "$idle_pids" ] || kill $idle_pids 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
bin=/usr/lib/postgresql/15/bin
runuser -u postgres -- "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 \
	-m fast -o "-p $port -k $pgdir -c listen_addresses='' -c fsync=off \
	-c max_connections=$((IDLE + 50))" restart >/dev/null
idle_start "$IDLE"
pm=$(head -1 "$pgdir/data/postmaster.pid")
echo "| round | build | recorder % of a core | us per read | ns per thread looked at | reads per s | threads per read | found off the CPU | not run since | idle, last idle stacks | stacks taken anew per read |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
: >"$work/rows"
for r in $(seq 1 "$ROUNDS"); do
	[ "$CLIENTS" = 0 ] || { pgbench -n -S -c "$CLIENTS" -j 2 -T $((SECS + 30)) -h "$pgdir" \
		-p "$port" -U postgres postgres >/dev/null 2>&1 & pgb=$!; }
	# the order of their start alternates
	order="$BUILD $BASE"
	[ $((r % 2)) = 1 ] || order="$BASE $BUILD"
	pids=""
	for b in $order; do
		"$b/ebprof" record --type offcpu --offcpu-rate "$RATE" -p "$pm" -d $((SECS + 25)) -v \
			-o "$work/$r-${b//\//_}.pb.gz" 2>"$work/$r-${b//\//_}.log" &
		pids="$pids $!"
	done
	for b in $order; do
		until grep -qs "sampling at" "$work/$r-${b//\//_}.log"; do sleep 0.2; done
	done
	sleep 3
	set -- $pids
	declare -A c1 s1
	t1=$(date +%s.%N)
	for p in "$@"; do c1[$p]=$(cpu_ns "$p"); s1[$p]=$(waits_counters "$p"); done
	sleep "$SECS"
	t2=$(date +%s.%N)
	declare -A c2 s2
	for p in "$@"; do c2[$p]=$(cpu_ns "$p"); s2[$p]=$(waits_counters "$p"); done
	kill -INT $pids 2>/dev/null || true
	wait $pids 2>/dev/null || true
	# the reads in the window: threads looked at there over threads per
	# read (the recorder's own count, record -v)
	i=0
	for b in $order; do
		i=$((i + 1))
		p=${!i}
		per=$(waits_per_read targets "$work/$r-${b//\//_}.log")
		read -r se2 vi2 sa2 id2 <<<"${s2[$p]}"
		read -r se1 vi1 sa1 id1 <<<"${s1[$p]}"
		awk -v r="$r" -v b="$b" -v c="$((${c2[$p]} - ${c1[$p]}))" -v t1="$t1" -v t2="$t2" \
			-v per="$per" -v se="$((se2 - se1))" -v vi="$((vi2 - vi1))" -v sa="$((sa2 - sa1))" \
			-v id="$((id2 - id1))" 'BEGIN { w = t2 - t1; reads = se / per
			printf "%s %s %.3f %.1f %.0f %.1f %.1f %d %d %d %.2f\n", r, b, 100 * c / 1e9 / w,
				c / 1e3 / reads, c / se, reads / w, per, vi, sa, id, (vi - sa - id) / reads }' >>"$work/rows"
	done
	pids=""
	[ -z "$pgb" ] || { kill "$pgb" 2>/dev/null || true; wait "$pgb" 2>/dev/null || true; pgb=""; }
	grep "^$r " "$work/rows" | while read -r -a f; do
		echo "| ${f[0]} | ${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} | ${f[5]} | ${f[6]} | ${f[7]} | ${f[8]} | ${f[9]} | ${f[10]} |"
	done
done
for b in $BUILD $BASE; do
	col() { awk -v b="$b" -v c="$1" '$2 == b { print $c }' "$work/rows" | median; }
	echo "| **median** | $b | $(col 3) | $(col 4) | $(col 5) | $(col 6) | $(col 7) | $(col 8) | $(col 9) | $(col 10) | $(col 11) |"
done
