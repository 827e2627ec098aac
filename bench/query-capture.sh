#!/bin/bash
# Cost of statement capture (query-labels) on PostgreSQL under pgbench -S,
# where every transaction sends a new text (the worst case for sending
# and normalizing):
#  1. BPF: the sampler's nanoseconds per run (kernel bpf_stats) of
#     `ebprof record` with --query-labels off and normalized, alternated
#     RUNS times each, RECORD seconds per recording, at 99 Hz; with
#     PostgreSQL's compute_query_id off, then on.
#  2. Userspace: the agent at 19 Hz, interval 10 s (a few flushes in every
#     run, so each pays for symbolization alike), AGENT seconds per run,
#     with query-labels off and normalized alternated RUNS times: its CPU
#     per wall second (after its first flush), and /metrics' statement figures
#     (texts read and sent, normalizations, shape-cache hits, time per
#     normalization).
# Writes bench/results/query-capture-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-3} RECORD=${RECORD:-15} AGENT=${AGENT:-60}
bin=${BUILD:-build}/ebprof
make -s all
bench_cluster qcap 5
pgbench -n -S -c 2 -j 2 -T $((RUNS * 2 * (3 * RECORD + AGENT + 25) + 200)) -h "$pgdir" -p "$port" \
	-U postgres postgres >"$work/pgbench.log" 2>&1 &
bench_pid=$!
sleep 2
sysctl -qw kernel.bpf_stats_enabled=1
out=bench/results/query-capture-$(date +%Y%m%d-%H%M).md
ns_per_run() { # the do_sample program's run_time_ns / run_cnt, while $1 runs
	sleep $((RECORD - 2))
	bpf_progs | awk '$2 == "perf_event" && $3 ~ /^do_sample/ { t = $4; c = $5 }
		END { if (c) printf "%.0f %d\n", t / c, c; else print "0 0" }'
}
{
	echo "# Statement capture cost, $(date -u +%FT%TZ)"
	echo
	echo "pgbench -S -c 2 on a 2-CPU host, scale 5; kernel $(uname -r); $(nproc) CPUs."
	echo "Host load at start: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "## BPF: ns per sample (bpf_stats), record -F 99 --no-kernel for ${RECORD} s each"
	echo
	echo "Every pgbench -S transaction sends a new text (its literal changes). With"
	echo "compute_query_id on, a sample whose statement pointer and query id are those"
	echo "of the backend's last sample reads no text. Kernel stacks are left out: their"
	echo "walk varies by microseconds from run to run and hides the difference."
	echo
	echo "| run | compute_query_id | query-labels | ns/run | runs |"
	echo "| --- | --- | --- | --- | --- |"
} >"$out"
pm=$(head -1 "$pgdir/data/postmaster.pid")
for qid in off on; do
	psql -X -q -h "$pgdir" -p "$port" -U postgres -c "ALTER SYSTEM SET compute_query_id = $qid" \
		-c "SELECT pg_reload_conf()" postgres >/dev/null
	for r in $(seq 1 "$RUNS"); do
		for mode in off normalized; do
			$bin record -F 99 -d "$RECORD" -p "$pm" --query-labels "$mode" --no-kernel \
				-o "$work/$mode.pb.gz" 2>/dev/null &
			rec=$!
			res=$(ns_per_run)
			wait $rec
			echo "| $r | $qid | $mode | ${res% *} | ${res#* } |" >>"$out"
		done
	done
done
sysctl -qw kernel.bpf_stats_enabled=0

# 1b. The capture itself, timed inside the BPF program (a build with
# -DEBPROF_QUERY_TIMING: bpf_ktime_get_ns around it, per PostgreSQL sample).
tbuild=${BUILD:-build}/bench-timing
tbin=$tbuild/ebprof
make -s BUILD="$tbuild" BPF_DEFINES=-DEBPROF_QUERY_TIMING "$tbin"
stat_of() { # the sampler's stats map, summed over CPUs: "NS CALLS READ SENT"
	local id
	id=$(bpftool map show | awk '/ name stats / {sub(":","",$1); print $1}' | tail -1)
	bpftool map dump id "$id" -j | python3 -c '
import json, sys
tot = {}
for e in json.load(sys.stdin):
    k = e["key"]
    k = k if isinstance(k, int) else int.from_bytes(bytes(int(x, 16) for x in k), "little")
    s = 0
    for v in e["values"]:
        x = v["value"]
        s += x if isinstance(x, int) else int.from_bytes(bytes(int(b, 16) for b in x), "little")
    tot[k] = s
print(tot.get('"$1"', 0), tot.get('"$2"', 0), tot.get('"$3"', 0), tot.get('"$4"', 0))'
}
idx() { # the value of a stats index, from the shared header
	printf '#include <stdio.h>\n#include <linux/types.h>\n#include "ebprof/bpf_shared.h"\nint main(void) { printf("%%d", %s); return 0; }\n' "$1" |
		cc -Iinclude -x c -o "$work/idx" - && "$work/idx"
}
{
	echo
	echo "## The capture itself, timed inside BPF (ns per PostgreSQL sample)"
	echo
	echo "A build with -DEBPROF_QUERY_TIMING: bpf_ktime_get_ns() around the capture"
	echo "(two calls, included). record -F 99 for ${RECORD} s each."
	echo
	echo "| run | compute_query_id | ns per sample | samples | texts read | texts sent |"
	echo "| --- | --- | --- | --- | --- | --- |"
} >>"$out"
for qid in off on; do
	psql -X -q -h "$pgdir" -p "$port" -U postgres -c "ALTER SYSTEM SET compute_query_id = $qid" \
		-c "SELECT pg_reload_conf()" postgres >/dev/null
	for r in $(seq 1 "$RUNS"); do
		$tbin record -F 99 -d "$RECORD" -p "$pm" -o "$work/t.pb.gz" 2>/dev/null &
		rec=$!
		sleep $((RECORD - 2))
		set -- $(stat_of "$(idx STAT_QUERY_NS)" "$(idx STAT_QUERY_CALLS)" "$(idx STAT_QUERY_READS)" \
			"$(idx STAT_QUERY_SENT)")
		wait $rec
		awk -v r="$r" -v q="$qid" -v ns="$1" -v n="$2" -v rd="$3" -v sn="$4" \
			'BEGIN { printf "| %d | %s | %.0f | %d | %d | %d |\n", r, q, n ? ns / n : 0, n, rd, sn }' >>"$out"
	done
done
# CPU time of a process in ns, all its threads (schedstat: no tick rounding)
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ t += $1 } END { print t }'; }
{
	echo
	echo "## Agent at 19 Hz, ${AGENT} s per run, query-labels off and normalized alternated"
	echo
	echo "| run | query-labels | agent CPU, % of one CPU |"
	echo "| --- | --- | --- |"
} >>"$out"
for r in $(seq 1 "$RUNS"); do
	for mode in off normalized; do
		listen=127.0.0.1:$((20000 + RANDOM % 10000))
		$bin agent --config /dev/null --interval 10 --output-dir "$work/store-$mode" \
			--http-listen "$listen" \
			--query-labels "$mode" --pid "$(head -1 "$pgdir/data/postmaster.pid")" \
			2>"$work/agent-$mode.log" &
		agent_pid=$!
		sleep 15 # past the first flush, which opens and indexes the binaries
		t0=$(cpu_ns $agent_pid)
		sleep "$AGENT"
		t1=$(cpu_ns $agent_pid)
		[ "$mode" = off ] || curl -s "http://$listen/metrics" | grep '^ebprof_statement' >"$work/metrics.txt"
		kill $agent_pid
		wait $agent_pid || true
		awk -v r="$r" -v m="$mode" -v t=$((t1 - t0)) -v s="$AGENT" \
			'BEGIN { printf "| %d | %s | %.4f |\n", r, m, 100 * t / 1e9 / s }' >>"$out"
	done
done
agent_pid=""
{
	echo
	echo "Statement figures of the last normalized run:"
	echo
	echo '```'
	cat "$work/metrics.txt"
	echo '```'
	awk '/normalizations_total/ {n = $2} /shape_hits_total/ {h = $2}
		/normalize_seconds_total/ {s = $2} /texts_sent_total/ {t = $2}
		END { if (n) printf "\n%.1f us per normalization; %.1f%% of texts sent needed none (shape cache)\n",
			1e6 * s / n, t ? 100 * h / t : 0 }' "$work/metrics.txt"
} >>"$out"
kill $bench_pid 2>/dev/null || true
echo "wrote $out"
cat "$out"
