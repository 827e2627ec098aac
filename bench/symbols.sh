#!/bin/bash
# Names for every frame (issue "A name for every frame"):
#  1. PostgreSQL under pgbench -S: the share of samples whose user leaf
#     resolves to a function, per binary, with the debug information this
#     host has (`ebprof record --offline`).
#  2. The flush time of a profile (the summary's "profile written N ms
#     after sampling ended") with no debuginfod (--offline) and with a
#     debuginfod server that takes connections and never answers (every
#     lookup pending for the whole run), alternated RUNS times.
#  3. A stripped binary (the work_split_stripped fixture) with and without
#     its debug file on a real debuginfod server (Debian's): leaf share
#     before and after.
# Writes bench/results/symbols-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-5} RECORD=${RECORD:-10}
build=${BUILD:-build}
bin=$build/ebprof util=$build/bench/pprofutil
make -s all "$build/bench/pprofutil" "$build/fixtures/work_split_stripped"
bench_cluster syms 5
pgbench -n -S -c 2 -j 2 -T $((RUNS * 2 * (RECORD + 3) + 60)) -h "$pgdir" -p "$port" \
	-U postgres postgres >"$work/pgbench.log" 2>&1 &
sleep 2
out=bench/results/symbols-$(date +%Y%m%d-%H%M).md

# a server that takes connections and never answers
python3 -c 'import socket,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(64); print(s.getsockname()[1], flush=True)
time.sleep(100000)' >"$work/hole.port" &
hole_pid=$!
for _ in $(seq 50); do [ -s "$work/hole.port" ] && break; sleep 0.1; done
hole="http://127.0.0.1:$(cat "$work/hole.port")"
dbgd_pid=""
trap 'kill $hole_pid $dbgd_pid 2>/dev/null; bench_cleanup' EXIT

flush_ms() { sed -n 's/.*profile written \([0-9]*\) ms after sampling ended.*/\1/p' "$1"; }

{
	echo "# Symbolization, $(date -u +%FT%TZ)"
	echo
	echo "pgbench -S -c 2 on a $(nproc)-CPU host, scale 5; kernel $(uname -r); PostgreSQL"
	echo "$(psql -X -At -h "$pgdir" -p "$port" -U postgres -c 'SHOW server_version' postgres)"
	echo "(Debian's stripped binary: .dynsym only). \`ebprof record -F 99 -d $RECORD\` of"
	echo "every postgres process, $RUNS runs of each setting, alternated."
	echo
	echo "## Flush time with debuginfod lookups pending"
	echo
	echo "| run | --offline: flush ms | pending debuginfod: flush ms |"
	echo "| --- | --- | --- |"
} >"$out"
for r in $(seq 1 "$RUNS"); do
	$bin record --offline -F 99 -d "$RECORD" -o "$work/off-$r.pb.gz" -v 2>"$work/off-$r.log"
	DEBUGINFOD_URLS=$hole DEBUGINFOD_CACHE_PATH=$work/cache \
		$bin record -F 99 -d "$RECORD" -o "$work/hole-$r.pb.gz" -v 2>"$work/hole-$r.log"
	echo "| $r | $(flush_ms "$work/off-$r.log") | $(flush_ms "$work/hole-$r.log") |" >>"$out"
done
off=$(for r in $(seq 1 "$RUNS"); do flush_ms "$work/off-$r.log"; done | median)
pend=$(for r in $(seq 1 "$RUNS"); do flush_ms "$work/hole-$r.log"; done | median)
{
	echo
	echo "Median: $off ms offline, $pend ms with every lookup pending."
	echo
	echo "## PostgreSQL samples whose user leaf has a name (--offline, all runs)"
	echo
	echo '```'
	$util leafshare "$work"/off-*.pb.gz
	echo '```'
	echo
	echo "Per run (share of user leaves named): $(for r in $(seq 1 "$RUNS"); do
		$util leafshare "$work/off-$r.pb.gz" | sed -n '1s/.*share=//p'; done | tr '\n' ' ')"
	echo
	echo "What the agent's summary says of each binary (last run):"
	echo
	echo '```'
	grep -E '^ebprof: +[0-9.]+% of' "$work/off-$RUNS.log" | sed 's/^ebprof: *//'
	echo '```'
} >>"$out"

# 3. a stripped binary and a real debuginfod server
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
debuginfod -F "$build/fixtures/remote" -p "$port2" -d "$work/dbgd.sqlite" -t0 -g0 \
	>"$work/dbgd.log" 2>&1 &
dbgd_pid=$!
id=$(readelf -n "$build/fixtures/work_split_stripped" | sed -n 's/.*Build ID: *//p')
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$port2/buildid/$id/debuginfo" && break
	sleep 0.1
done
split() { # $1: name, rest: env
	local name=$1
	shift
	(echo go | "$build/fixtures/work_split_stripped" 3 >/dev/null) &
	sleep 0.2
	env "$@" $bin record -F 99 -p "$(pgrep -n work_split_stri)" -o "$work/$name.pb.gz" -v \
		2>"$work/$name.log"
}
split stripped-offline DEBUGINFOD_CACHE_PATH="$work/c1"
split stripped-debuginfod DEBUGINFOD_URLS="http://127.0.0.1:$port2" DEBUGINFOD_CACHE_PATH="$work/c2"
{
	echo
	echo "## A stripped binary, its debug file on a debuginfod server"
	echo
	echo "The work_split_stripped fixture (3 s of CPU, 3:1 in two static functions)."
	echo
	echo "| setting | user leaves named | source (record -v) |"
	echo "| --- | --- | --- |"
	for n in stripped-offline stripped-debuginfod; do
		echo "| $n | $($util leafshare "$work/$n.pb.gz" | sed -n '1s/.*share=//p')% |" \
			"$(grep -o 'by [a-z-]*: [^ ]*work_split_stripped' "$work/$n.log" | cut -d: -f1) |"
	done
} >>"$out"
echo "wrote $out"
cat "$out"
