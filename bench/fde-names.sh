#!/bin/bash
# One frame per unnamed function (issue: frames of stripped code named
# after the start of their function, symbolizer/fde_index.c), on Debian's
# stripped PostgreSQL under pgbench -S:
#  1. `ebprof record --offline` of the cluster, RUNS times: the distinct
#     names of postgres frames no symbol names, as they were (one per
#     address, postgres+0xADDR) and as they are (one per function,
#     postgres+0xSTART), counted on the same profiles (bench/pprofutil
#     unnamed);
#  2. `perf record --call-graph dwarf` of the same processes, alternated
#     with 1: perf's [unknown] frames of postgres, their distinct
#     addresses, and how many functions (readelf's FDEs) they stand for
#     (bench/unknown_frames.py);
#  3. the symbolizer's cost per binary, postgres and libc (bench/fdebench):
#     the heap the ranges take, RSS growth, the first lookup (which reads
#     .eh_frame_hdr's table; for postgres also with that table made
#     unusable, so .eh_frame is walked), a warm lookup.
# Writes bench/results/fde-names-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-3} RECORD=${RECORD:-10} COST_RUNS=${COST_RUNS:-9}
build=${BUILD:-build}
bin=$build/ebprof util=$build/bench/pprofutil
make -s all "$build/bench/pprofutil" "$build/bench/fdebench"
bench_cluster fdenames 5
trap 'bench_cleanup; rm -rf "$work"' EXIT
pm=$(echo "$info" | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
pgbin=$(readlink -f "/proc/$pm/exe")
libc=$(awk '$6 ~ /libc\.so/ { print $6; exit }' "/proc/$pm/maps")
pgbench -n -S -c 2 -j 2 -T $((RUNS * 2 * (RECORD + 10) + 30)) -h "$pgdir" -p "$port" \
	-U postgres postgres >"$work/pgbench.log" 2>&1 &
sleep 2
# where postgres's code is mapped: the same in every process the postmaster forked
read -r text_start text_off < <(awk -v b="$pgbin" '$6 == b && $2 ~ /x/ {
	split($1, a, "-"); print a[1], $3; exit }' "/proc/$pm/maps")
out=bench/results/fde-names-$(date +%Y%m%d-%H%M).md

for r in $(seq 1 "$RUNS"); do
	$bin record --offline -F 99 -d "$RECORD" -p "$pm" -o "$work/eb-$r.pb.gz" -v \
		2>"$work/eb-$r.log"
	pids=$(pgrep -d, -P "$pm"),$pm
	perf record -q -F 99 --call-graph dwarf -p "$pids" -o "$work/perf-$r.data" \
		-- sleep "$RECORD" >/dev/null 2>"$work/perf-$r.log"
	perf script -F ip,sym,dso -i "$work/perf-$r.data" >"$work/perf-$r.txt" 2>/dev/null
done

# the FDE middles of a binary: where fdebench looks up
middles() {
	readelf -wN --debug-dump=frames "$1" | python3 -c '
import re, sys
for l in sys.stdin:
    m = re.search(r" FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)", l)
    if m and int(m.group(2), 16) > int(m.group(1), 16):
        print("%x" % ((int(m.group(1), 16) + int(m.group(2), 16)) // 2))'
}
middles "$pgbin" >"$work/pg.offs"
middles "$libc" >"$work/libc.offs"
cp "$pgbin" "$work/postgres-nohdr"
hdr=$(readelf -SW "$work/postgres-nohdr" | awk '$2 == ".eh_frame_hdr" { print $5 }')
printf '\x02' | dd of="$work/postgres-nohdr" bs=1 seek=$((0x$hdr)) conv=notrunc status=none

kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
{
	echo "# One frame per unnamed function, $(date -u +%FT%TZ)"
	echo
	echo "pgbench -S -c 2 -j 2 on a $(nproc)-CPU host (shared), scale 5; kernel $(uname -r);"
	echo "PostgreSQL $(psql -X -At -h "$pgdir" -p "$port" -U postgres -c 'SHOW server_version' postgres),"
	echo "\`$pgbin\` (Debian's, stripped: .dynsym only, $(readelf -wN --debug-dump=frames "$pgbin" | grep -c ' FDE ') FDEs)."
	echo "$RUNS runs, alternated: \`ebprof record --offline -F 99 -d $RECORD -p POSTMASTER\`, then"
	echo "\`perf record -F 99 --call-graph dwarf -p POSTMASTER,BACKENDS -- sleep $RECORD\` +"
	echo "\`perf script -F ip,sym,dso\`. Script: \`bench/fde-names.sh\` (RUNS=$RUNS RECORD=$RECORD)."
	echo
	echo "## Names of the postgres frames no symbol names"
	echo
	echo "ebprof: \`build/bench/pprofutil unnamed /bin/postgres PROFILE\`, on the same profile:"
	echo "*before* the distinct names readers gave such frames (one per address), *after*"
	echo "the distinct names now (one per function; an address in no FDE keeps its own)."
	echo "perf: \`bench/unknown_frames.py\` on \`perf script\`: every such frame is \`[unknown]\`;"
	echo "*functions* are the distinct FDEs (readelf) its addresses fall in."
	echo
	echo "| run | ebprof frames of postgres | unnamed | before: names | after: names | of them functions | perf frames of postgres | [unknown] | its addresses | functions behind [unknown] | outside any FDE |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for r in $(seq 1 "$RUNS"); do
		e=$($util unnamed /bin/postgres "$work/eb-$r.pb.gz")
		p=$(bench/unknown_frames.py "$work/perf-$r.txt" "$pgbin" "$text_start" "$text_off")
		echo "| $r | $(kv "$e" frames) | $(kv "$e" unnamed_frames) | $(kv "$e" before) | $(kv "$e" after) | $(kv "$e" functions) | $(kv "$p" frames) | $(kv "$p" unknown_frames) | $(kv "$p" unknown_addresses) | $(kv "$p" unknown_functions) | $(kv "$p" unknown_outside) |"
	done
	e=$($util unnamed /bin/postgres "$work"/eb-*.pb.gz)
	echo
	echo "All ebprof runs together: \`$e\`."
	echo
	echo "Per-binary summary of the last ebprof run (\`record -v\`):"
	echo
	echo '```'
	grep -E '^ebprof: +[0-9.]+% of|^ebprof: wrote' "$work/eb-$RUNS.log" | sed 's/^ebprof: *//'
	echo '```'
	echo
	echo "## The symbolizer's cost per binary"
	echo
	echo "\`build/bench/fdebench BINARY OFFSETS $COST_RUNS\` (bench/fdebench.c): a new symbolizer per run,"
	echo "the first lookup timed (it reads the ranges), median of $COST_RUNS (min-max); then every FDE's"
	echo "middle looked up for 0.5 s. *index* is the heap the ranges take (8 bytes an FDE),"
	echo "*RSS* the process's growth over the first lookup (the index and the file pages read)."
	echo
	echo "| binary | ranges from | index bytes | RSS KiB | first lookup ms | warm lookup ns | FDE middles named |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	for b in "$pgbin:.eh_frame_hdr:pg" "$work/postgres-nohdr:.eh_frame (table unusable):pg" "$libc:.eh_frame_hdr:libc"; do
		IFS=: read -r path src offs <<<"$b"
		c=$($build/bench/fdebench "$path" "$work/$offs.offs" "$COST_RUNS")
		echo "| $(basename "$path") | $src | $(kv "$c" index_bytes) | $(kv "$c" rss_kib) | $(kv "$c" first_median_ms) ($(kv "$c" first_min_ms)-$(kv "$c" first_max_ms)) | $(kv "$c" warm_ns) | $(kv "$c" named) of $(kv "$c" offsets) |"
	done
} >"$out"
echo "wrote $out"
cat "$out"
