#!/bin/bash
# The agent under connection churn: PostgreSQL under `pgbench -C -S` (a new
# connection, so a new backend process, per transaction) at the highest
# rate the machine gives, against the same run without churn (`pgbench -S`,
# long-lived backends). The agent runs on its defaults (19 Hz, interval
# 60 s, short-lived processes grouped) for DURATION seconds of load, then
# AFTER seconds idle. For each run:
#   - agent RSS every 5 s (rss-MODE.tsv): at the start, peak, at the end
#     of the load, and after the load (the last sample);
#   - agent CPU (user+sys, /proc) per wall second during the load;
#   - profile files and bytes per interval, samples counted by BPF (the
#     interval lines) and written (bench/pprofutil count, every file),
#     and the samples that carry a pid label.
# DEBUG=none runs the whole bench (cluster and agent) in a mount namespace
# where /usr/lib/debug is empty: a host without debug packages (they add
# their DWARF's memory, once per binary, which is not what churn costs).
# The cluster too: the agent looks for debug files through the target's
# root (/proc/PID/root), as it must for containers.
# Writes bench/results/churn-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-600}
AFTER=${AFTER:-150}
CLIENTS=${CLIENTS:-4}
MODES=${MODES:-"steady churn"}
DEBUG=${DEBUG:-host}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
if [ "$DEBUG" = none ] && [ -z "${EBPROF_BENCH_NODEBUG:-}" ]; then
	export EBPROF_BENCH_NODEBUG=1
	exec unshare -m --propagation private sh -c 'mount -t tmpfs none /usr/lib/debug && exec "$@"' \
		sh bash bench/churn.sh "$@" # the cwd is the checkout
fi
command -v bc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bc >/dev/null
make --no-print-directory BUILD="$BUILD" "$BUILD/bench/pprofutil" >/dev/null

. bench/lib.sh
bench_cluster churn 1
hz=$(getconf CLK_TCK)
rss_kb() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
mib() { echo "$1 / 1024" | bc -l | xargs printf '%.1f'; }

run_mode() { # MODE: steady or churn; writes $work/MODE.* and prints one table row
	local mode=$1 flags="-S" t0 c0 c1 t1 elapsed
	[ "$mode" = churn ] && flags="-C -S"
	local log="$work/agent-$mode.log" out="$work/profiles-$mode" rss="$work/rss-$mode.tsv"
	"$BUILD/ebprof" agent --config /dev/null --output-dir "$out" --http-listen '' 2>"$log" &
	agent_pid=$!
	until grep -q 'sampling at' "$log" 2>/dev/null; do sleep 0.05; done
	sleep 2
	rss_start=$(rss_kb "$agent_pid")
	# shellcheck disable=SC2086 # flags are words
	pgbench -n $flags -c "$CLIENTS" -j "$CLIENTS" -T "$DURATION" -h "$pgdir" -p "$port" \
		-U postgres postgres >"$work/pgbench-$mode.log" 2>&1 &
	local bench=$!
	t0=$(date +%s.%N)
	c0=$(cpu_ticks "$agent_pid")
	peak=0
	: >"$rss"
	while kill -0 "$bench" 2>/dev/null; do
		r=$(rss_kb "$agent_pid")
		echo "$(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.0f')	$r	load" >>"$rss"
		[ "$r" -gt "$peak" ] && peak=$r
		sleep 5
	done
	wait "$bench" || true
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	rss_end_load=$(rss_kb "$agent_pid")
	for _ in $(seq 1 $((AFTER / 5))); do
		sleep 5
		r=$(rss_kb "$agent_pid")
		echo "$(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.0f')	$r	after" >>"$rss"
		[ "$r" -gt "$peak" ] && peak=$r
	done
	rss_after=$(rss_kb "$agent_pid")
	hwm=$(awk '/VmHWM/{print $2}' "/proc/$agent_pid/status")
	kill -TERM "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""

	elapsed=$(echo "$t1 - $t0" | bc -l)
	cpu=$(echo "($c1 - $c0) / $hz / $elapsed * 100" | bc -l | xargs printf '%.3f')
	conns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench-$mode.log")
	[ "$mode" = churn ] || conns=$CLIENTS
	rate=$(echo "$conns / $elapsed" | bc -l | xargs printf '%.0f')
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench-$mode.log" | head -1)
	# Interval lines: "... P processes, S samples, ...; W profiles written, F failed; ..."
	grep 'interval from' "$log" | sed -n 's/.*, \([0-9]*\) samples,.*; \([0-9]*\) profiles written, \([0-9]*\) failed.*/\1 \2 \3/p' >"$work/intervals-$mode.txt"
	counted=$(awk '{s += $1} END {print s + 0}' "$work/intervals-$mode.txt")
	failed=$(awk '{s += $3} END {print s + 0}' "$work/intervals-$mode.txt")
	files=$(find "$out" -name '*.pb.gz' | wc -l)
	bytes=$(find "$out" -name '*.pb.gz' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	# per interval (the file name's HHMMSS is its start): files and bytes
	find "$out" -name '*.pb.gz' -printf '%f %s\n' | awk '{split($1, a, "-"); n[a[1]]++; b[a[1]] += $2}
		END {for (k in n) print k, n[k], b[k]}' | sort >"$work/per-interval-$mode.txt"
	read -r fmed fmax bmed < <(awk '{print $2, $3}' "$work/per-interval-$mode.txt" | sort -n |
		awk '{f[NR] = $1; b[NR] = $2; if ($1 > m) m = $1} END {print f[int((NR + 1) / 2)] + 0, m + 0, b[int((NR + 1) / 2)] + 0}')
	written=$(find "$out" -name '*.pb.gz' -print0 | xargs -0 -r "$BUILD/bench/pprofutil" count | sed -n 's/samples=\([0-9]*\) with_pid=\([0-9]*\).*/\1 \2/p')
	read -r wsamples wpid <<<"${written:-0 0}"
	groups=$(find "$out" -name '*-0-*.pb.gz' -o -name '*-0.pb.gz' | wc -l)
	printf '| %s | %s | %s | %s | %s | %s / %s / %s / %s | %s | %s (%s) | %s | %s | %s | %s / %s / %s | %s |\n' \
		"$mode" "$flags" "$tps" "$rate" "$cpu" "$(mib "$rss_start")" "$(mib "$peak")" \
		"$(mib "$rss_end_load")" "$(mib "$rss_after")" "$(mib "$hwm")" "$files" "$groups" \
		"$fmed" "$fmax" "$(echo "$bmed / 1024" | bc -l | xargs printf '%.0f')" \
		"$counted" "$wsamples" "$wpid" "$failed" >"$work/row-$mode.txt"
}

for m in $MODES; do
	echo "bench: $m, ${DURATION} s of load, ${AFTER} s after" >&2
	run_mode "$m"
done

out="bench/results/churn-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof agent under connection churn — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`DURATION=$DURATION AFTER=$AFTER CLIENTS=$CLIENTS DEBUG=$DEBUG bench/churn.sh\` (\`make bench-churn\`)"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
	echo "- ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-), agent on its defaults (19 Hz, interval 60 s, group-short-lived on)"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}'), scale 1, \`pgbench -c $CLIENTS -j $CLIENTS -T $DURATION\` with the flags below; then ${AFTER} s without load"
	[ "$DEBUG" = none ] && echo "- DEBUG=none: cluster and agent saw an empty /usr/lib/debug (as without debug packages)"
	echo "- debug packages installed: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none)"
	echo
	echo "| run | pgbench | TPS | new backends/s | agent CPU, % of a core | RSS MiB: start / peak / end of load / ${AFTER} s after | VmHWM MiB | files (groups) | files per interval: median | max | KiB per interval, median | samples counted / written / with pid | failed |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for m in $MODES; do cat "$work/row-$m.txt"; done
	for m in $MODES; do
		echo
		echo "## $m"
		echo
		echo "Files and bytes per interval (start HHMMSS):"
		echo '```'; cat "$work/per-interval-$m.txt"; echo '```'
		echo "Agent RSS (s since the load started, KiB):"
		echo '```'; awk '{printf "%s:%s ", $1, $2} NR % 10 == 0 {print ""} END {print ""}' "$work/rss-$m.tsv"; echo '```'
		echo "Interval lines:"
		echo '```'; grep 'interval from' "$work/agent-$m.log" || true; echo '```'
	done
} >"$out"
cat "$out"
echo "written: $out"
