#!/bin/bash
# Overhead of `ebprof record` on PostgreSQL under pgbench -S, with
# `perf record -g` on the same processes as the peer, interleaved
# (ebprof, perf, ebprof, perf, ...) so drift of the shared machine falls on
# both. Reports medians and ranges of:
#   - the profiler's own CPU time (user+sys) per wall second of recording,
#     in % of one core (perf: record + the `perf script` it needs to be read)
#   - peak RSS
#   - time from the end of sampling to a usable profile
# Writes bench/results/record-overhead-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
DUR=${DUR:-30}
FREQ=${FREQ:-99}
SCALE=${SCALE:-10}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
need=""
command -v /usr/bin/time >/dev/null || need="$need time"
command -v perf >/dev/null || need="$need linux-perf"
command -v bc >/dev/null || need="$need bc"
[ -n "$need" ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null

. bench/lib.sh
bench_cluster bench "$SCALE"
trap 'kill "${bench_pid:-0}" 2>/dev/null || true; bench_cleanup' EXIT
total=$(( (DUR + 15) * RUNS * 2 + 30 ))
pgbench -n -S -c 2 -j 2 -T "$total" -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
bench_pid=$!
sleep 3

hz=$(getconf CLK_TCK)
range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }

: >"$work/ebprof.tsv"; : >"$work/perf.tsv"
for i in $(seq 1 "$RUNS"); do
	# ebprof: one process does sampling, symbolization and encoding. CPU
	# during sampling is read from /proc between "sampling at" and just
	# before the end; the whole life (BPF load, symbolization, encoding)
	# comes from time(1).
	/usr/bin/time -f "%U %S %M" -o "$work/time.txt" \
		"$BUILD/ebprof" record -F "$FREQ" -d "$DUR" -o "$work/e$i.pb.gz" -v 2>"$work/e$i.log" &
	tpid=$!
	until grep -q 'sampling at' "$work/e$i.log" 2>/dev/null; do sleep 0.05; done
	epid=$(pgrep -P "$tpid" -x ebprof)
	c0=$(cpu_ticks "$epid"); t0=$(date +%s.%N)
	sleep $((DUR - 1))
	c1=$(cpu_ticks "$epid"); t1=$(date +%s.%N)
	wait "$tpid"
	read -r u s rss <"$work/time.txt"
	during=$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l)
	write_ms=$(sed -n 's/.*profile written \([0-9]*\) ms after sampling ended.*/\1/p' "$work/e$i.log")
	samples=$(sed -n 's/.*: \([0-9]*\) samples from.*/\1/p' "$work/e$i.log")
	echo "$(echo "($u + $s) / $DUR * 100" | bc -l) $rss $write_ms $samples $(stat -c %s "$work/e$i.pb.gz") $during" >>"$work/ebprof.tsv"

	# perf: record, then perf script to get something a person can read.
	pids=$(pgrep -d, -x postgres)
	/usr/bin/time -f "%U %S %M" -o "$work/time.txt" \
		perf record -q -F "$FREQ" -g -p "$pids" -o "$work/p$i.data" -- sleep "$DUR" 2>/dev/null
	read -r u s rss <"$work/time.txt"
	t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S %M" -o "$work/time2.txt" perf script -i "$work/p$i.data" >"$work/p$i.txt" 2>/dev/null
	t1=$(date +%s.%N)
	read -r u2 s2 rss2 <"$work/time2.txt"
	peak=$(( rss > rss2 ? rss : rss2 ))
	echo "$(echo "($u + $s + $u2 + $s2) / $DUR * 100" | bc -l) $peak $(echo "($t1 - $t0) * 1000" | bc -l) - $(stat -c %s "$work/p$i.data")" >>"$work/perf.tsv"
done

col() { awk -v c="$2" '{print $c}' "$1"; }
row() { # name file
	printf "| %s | %.3f (%s) | %.1f (%s) | %.0f (%s) |\n" "$1" \
		"$(col "$2" 1 | median)" "$(col "$2" 1 | awk '{printf "%.3f\n",$1}' | range)" \
		"$(col "$2" 2 | awk '{print $1/1024}' | median)" "$(col "$2" 2 | awk '{printf "%.1f\n",$1/1024}' | range)" \
		"$(col "$2" 3 | median)" "$(col "$2" 3 | awk '{printf "%.0f\n",$1}' | range)"
}
e_cpu=$(col "$work/ebprof.tsv" 1 | median); p_cpu=$(col "$work/perf.tsv" 1 | median)

out="bench/results/record-overhead-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof record overhead — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`RUNS=$RUNS DUR=$DUR FREQ=$FREQ SCALE=$SCALE bench/record-overhead.sh\`"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB"
	echo "- kernel: $(uname -r); ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-); $(perf --version)"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}') \`pgbench -S -c 2 -j 2\`, scale $SCALE, throughout all runs"
	echo "- debug packages installed: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none)"
	echo "- each run records ${DUR} s at ${FREQ} Hz; $RUNS runs of each tool, interleaved"
	echo
	echo "| tool | CPU, % of one core: median (range) | peak RSS MiB: median (range) | end of sampling → usable profile, ms: median (range) |"
	echo "| --- | --- | --- | --- |"
	row "ebprof record (sampling + symbolization + pprof)" "$work/ebprof.tsv"
	row "perf record -g + perf script" "$work/perf.tsv"
	echo
	echo "CPU ratio ebprof / perf (whole life, post-processing included): $(echo "$e_cpu / $p_cpu" | bc -l | xargs printf '%.2f')"
	echo
	echo "ebprof CPU during sampling only (from \"sampling at\" to 1 s before the end), % of one core: median $(col "$work/ebprof.tsv" 6 | median | xargs printf '%.3f') ($(col "$work/ebprof.tsv" 6 | awk '{printf "%.3f\n",$1}' | range))"
	echo
	echo "Raw ebprof runs (cpu% rss_kb write_ms samples bytes cpu%_during_sampling):"
	echo '```'; cat "$work/ebprof.tsv"; echo '```'
	echo "Raw perf runs (cpu% rss_kb script_ms - bytes):"
	echo '```'; cat "$work/perf.tsv"; echo '```'
} >"$out"
cat "$out"
echo "written: $out"
