#!/bin/bash
# Memory profiles (issue: where memory goes), what they cost:
#  1. A snapshot's walk against the contexts a backend has: an idle
#     backend (~110 contexts), one that touched 1 000 and 3 000 tables
#     (an index info context each); bench/memwalk.c walks it RUNS + 1
#     times as the agent does: the first (cold) and the others' median.
#  2. The agent with memory profiles on against off, at the default
#     interval (60 s), 100 connected backends (pgbench -S -c 100, the
#     connections held) on a 2-CPU host: both agents at once over WINDOW
#     seconds, ROUNDS times; their CPU and its difference, median.
#  3. Agreement under load: a backend of the pgbench run snapshotted while
#     it runs statements, then pg_log_backend_memory_contexts of it: the
#     difference of the totals, median over RUNS.
# Writes bench/results/memory-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-7} ROUNDS=${ROUNDS:-3} WINDOW=${WINDOW:-130}
BUILD=${BUILD:-build}
bin=$BUILD/ebprof
make -s all "$BUILD/bench/memwalk"
bench_cluster memory 10
out=bench/results/memory-$(date +%Y%m%d-%H%M).md
P="psql -X -At -q -h $pgdir -p $port -U postgres postgres"
major=$($P -c 'SHOW server_version_num' | cut -c1-2)

# top_var PID: the address of TopMemoryContext's variable in PID (hex):
# its .dynsym value plus where the binary's first mapping starts
top_var() {
	local exe base sym
	exe=$(readlink "/proc/$1/exe")
	base=$(awk -v e="$exe" '$6 == e { split($1, a, "-"); print a[1]; exit }' "/proc/$1/maps")
	sym=$(nm -D "$exe" | awk '$3 == "TopMemoryContext" { print $1 }')
	printf '%x\n' $((0x$base + 0x$sym))
}
# a session touching N tables, left idle: its pid
session() {
	local fifo=$work/fifo.$1
	mkfifo "$fifo"
	(sleep 3600 >"$fifo" &)
	$P <"$fifo" >"$work/sess.$1" 2>&1 &
	echo "SELECT pg_backend_pid();" >"$fifo"
	[ "$1" -gt 0 ] && echo "DO \$\$ BEGIN FOR i IN 1..$1 LOOP EXECUTE format('SELECT 1 FROM t%s', i); END LOOP; END \$\$;" >"$fifo"
	sleep 3
	head -1 "$work/sess.$1"
}

$P -c "DO \$\$ BEGIN FOR i IN 1..3000 LOOP EXECUTE format('CREATE TABLE t%s (a int PRIMARY KEY)', i); END LOOP; END \$\$;"
{
	echo "# Memory profiles: cost, $(date -u +%FT%TZ)"
	echo
	echo "$(nproc) CPUs, kernel $(uname -r), PostgreSQL $($P -c 'SHOW server_version'), ebprof $(git rev-parse --short HEAD)."
	echo
	echo "## 1. A snapshot's walk"
	echo
	echo "The walk as the agent makes it (bench/memwalk.c: the agent's limits, used"
	echo "bytes included, a new reader each time), $RUNS times each: the first (cold:"
	echo "the reader's pieces are new memory) and the median of the others, in CPU"
	echo "time of the walking thread; its process_vm_readv(2) calls and bytes."
	echo
	echo "| backend | contexts | used bytes measured | CPU ms, median | min | max | cold | µs per context | system calls | KiB read |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for tables in 0 1000 3000; do
		pid=$(session "$tables")
		"$BUILD/bench/memwalk" "$pid" "$major" "$(top_var "$pid")" "$((RUNS + 1))" >"$work/mw"
		eval "$(tr ' ' '\n' <"$work/mw" | sed 's/^/mw_/')"
		echo "| touched $tables tables | $mw_contexts | $mw_used_known | $mw_median_ms | $mw_min_ms | $mw_max_ms | $mw_cold_ms | $(echo "scale=2; $mw_median_ms * 1000 / $mw_contexts" | bc) | $mw_fetches | $((mw_bytes / 1024)) |"
	done
	echo
	echo "## 2. The agent at the default interval, 100 connected backends"
	echo
	pgbench -n -S -c 100 -j 2 -T $((WINDOW * ROUNDS + 60)) -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
	bench=$!
	sleep 10
	echo "pgbench -S -c 100 (connections held); two agents on their defaults but"
	echo "\`profile-types\`, side by side over the same $WINDOW s (so both see the"
	echo "same load and the same neighbours), $ROUNDS rounds; the first 10 s of each left"
	echo "out (the start's symbolization). Their difference is what memory profiles cost."
	echo
	echo "| round | cpu: agent CPU, % of a core | cpu,memory | difference, points | memory profiles written |"
	echo "| --- | --- | --- | --- | --- |"
	for r in $(seq "$ROUNDS"); do
		pids=()
		for types in cpu cpu,memory; do
			"$bin" agent --profile-types "$types" --output-dir "$work/store-$types-$r" \
				--queue-dir "$work/queue-$types" --http-listen "" -v 2>"$work/agent-$types.log" &
			pids+=($!)
		done
		agent_pid="${pids[*]}"
		sleep 10
		a0=$(cpu_ticks "${pids[0]}") b0=$(cpu_ticks "${pids[1]}")
		sleep $((WINDOW - 10))
		a1=$(cpu_ticks "${pids[0]}") b1=$(cpu_ticks "${pids[1]}")
		kill -INT "${pids[@]}"
		wait "${pids[@]}" || true
		agent_pid=""
		hz=$(getconf CLK_TCK)
		off=$(echo "scale=3; ($a1 - $a0) * 100 / $hz / ($WINDOW - 10)" | bc)
		on=$(echo "scale=3; ($b1 - $b0) * 100 / $hz / ($WINDOW - 10)" | bc)
		echo "$(echo "$on - $off" | bc)" >>"$work/diff"
		echo "| $r | $off | $on | $(echo "$on - $off" | bc) | $(find "$work/store-cpu,memory-$r" -name '*.memory.pb.gz' | wc -l) |"
	done
	echo
	echo "Median difference: $(median <"$work/diff") points of a core."
	echo
	echo "## 3. Agreement under load"
	echo
	kill "$bench" 2>/dev/null || true
	pgbench -n -S -c 4 -j 2 -T $((RUNS * 4 + 30)) -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench3.log" 2>&1 &
	bench=$!
	sleep 3
	pid=$($P -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' LIMIT 1")
	for _ in $(seq "$RUNS"); do
		"$bin" record --type memory -p "$pid" -d 1 -o "$work/l.pb.gz" 2>/dev/null
		: >"$pgdir/server.log"
		$P -c "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null
		sleep 1
		ours=$(go tool pprof -raw -symbolize=none "$work/l.pb.gz" 2>/dev/null |
			awk '/^Samples/{s=1;next} /^Locations/{s=0} s && NF>=4 && $3 ~ /:$/ {t += $1} END {print t}')
		theirs=$(grep "\[$pid\] LOG:  level:" "$pgdir/server.log" |
			sed -n 's/.*: \([0-9]*\) total in.*/\1/p' | awk '{t += $1} END {print t}')
		echo "$ours $theirs" | awk '{printf "%.3f\n", ($1 - $2) * 100 / $2}'
	done >"$work/err"
	echo "A pgbench -S backend running statements, $RUNS times: the snapshot's total"
	echo "against pg_log_backend_memory_contexts' (taken about 1 s later, at the"
	echo "backend's next interrupt check): difference in % of the total, median"
	echo "$(median <"$work/err")%, min $(sort -g "$work/err" | head -1)%, max $(sort -g "$work/err" | tail -1)%."
	kill "$bench" 2>/dev/null || true
} | tee "$out"
echo "wrote $out"
