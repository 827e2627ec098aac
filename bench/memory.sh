#!/bin/bash
# Memory profiles (issue: where memory goes), what they cost:
#  1. A snapshot's walk against the contexts a backend has: an idle
#     backend (~110 contexts), one that touched 1 000 and 3 000 tables
#     (an index info context each); `ebprof record --type memory -p PID`
#     RUNS times each, the walk's time from its summary, median.
#  2. The agent with memory profiles on against off, at the default
#     interval (60 s), 100 connected backends (pgbench -S -c 100 -C off:
#     connections held) on a 2-CPU host: the agent's CPU over WINDOW
#     seconds, the two alternated ROUNDS times, medians, and the points of
#     a core between them.
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
make -s all
bench_cluster memory 10
out=bench/results/memory-$(date +%Y%m%d-%H%M).md
P="psql -X -At -q -h $pgdir -p $port -U postgres postgres"

# walk_ms PID: the walk's milliseconds of one snapshot of PID
walk_ms() {
	"$bin" record --type memory -p "$1" -d 1 -o "$work/w.pb.gz" -v 2>&1 |
		sed -n 's/.*snapshots (\([0-9.]*\) ms walking).*/\1/p'
}
# contexts PID: how many contexts its last snapshot had
contexts() {
	go tool pprof -raw -symbolize=none "$work/w.pb.gz" 2>/dev/null |
		awk '/^Samples/{s=1;next} /^Locations/{s=0} s && NF>=4 && $3 ~ /:$/ {n += $3+0} END {print n}'
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
	echo "\`ebprof record --type memory -p PID\`, $RUNS runs each; the walk's wall time (a"
	echo "process_vm_readv(2) per group of pages, CPU-bound: its CPU time)."
	echo
	echo "| backend | contexts | walk ms (median) | min | max | µs per context |"
	echo "| --- | --- | --- | --- | --- | --- |"
	for tables in 0 1000 3000; do
		pid=$(session "$tables")
		walk_ms "$pid" >/dev/null
		n=$(contexts)
		for _ in $(seq "$RUNS"); do walk_ms "$pid"; done >"$work/walks"
		med=$(median <"$work/walks")
		echo "| touched $tables tables | $n | $med | $(sort -g "$work/walks" | head -1) | $(sort -g "$work/walks" | tail -1) | $(echo "scale=2; $med * 1000 / $n" | bc) |"
	done
	echo
	echo "## 2. The agent at the default interval, 100 connected backends"
	echo
	pgbench -n -S -c 100 -j 2 -T $((WINDOW * ROUNDS * 2 + 60)) -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
	bench=$!
	sleep 10
	echo "pgbench -S -c 100 (connections held), the agent on its defaults but"
	echo "\`profile-types\`, $ROUNDS rounds of $WINDOW s alternated (the first 10 s of each"
	echo "left out: the start's symbolization)."
	echo
	echo "| round | profile-types | agent CPU, % of a core | memory profiles written |"
	echo "| --- | --- | --- | --- |"
	for r in $(seq "$ROUNDS"); do
		for types in cpu cpu,memory; do
			"$bin" agent --profile-types "$types" --output-dir "$work/store-$types-$r" \
				--queue-dir "$work/queue" --http-listen "" -v 2>"$work/agent.log" &
			agent_pid=$!
			sleep 10
			t0=$(cpu_ticks "$agent_pid")
			sleep $((WINDOW - 10))
			t1=$(cpu_ticks "$agent_pid")
			kill -INT "$agent_pid"
			wait "$agent_pid" || true
			agent_pid=""
			pct=$(echo "scale=3; ($t1 - $t0) * 100 / $(getconf CLK_TCK) / ($WINDOW - 10)" | bc)
			echo "$types $pct" >>"$work/cpu"
			echo "| $r | $types | $pct | $(find "$work/store-$types-$r" -name '*.memory.pb.gz' | wc -l) |"
		done
	done
	off=$(awk '$1 == "cpu" {print $2}' "$work/cpu" | median)
	on=$(awk '$1 == "cpu,memory" {print $2}' "$work/cpu" | median)
	echo
	echo "Medians: off $off%, on $on% of a core: memory profiles cost $(echo "scale=3; $on - $off" | bc) points."
	echo
	echo "## 3. Agreement under load"
	echo
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
