#!/bin/bash
# The fixed cost of a recording (issue 36): what `ebprof record` spends
# before its first sample, and what an ad hoc profile costs a running
# agent, on PostgreSQL backends under pgbench -S. Every figure is taken for
# this build (A) and, with BEFORE=path/to/another/ebprof (say main's), for
# it (B) in the same run, interleaved, medians of RUNS runs:
#
#   1. `record -p PIDS -F 99 -d 2`, the whole process (farm-bench): CPU and
#      wall time beyond the 2 s;
#   2. from its start to "sampling at" (programs verified, maps made, perf
#      events attached: the first sample follows within 1/99 s) and the
#      CPU used by then (bench/record_start.py);
#   3. its bpf() calls (verifier and map set-up): count and system time,
#      from strace -c;
#   4. the instructions the verifier walked per program (bpf_prog_info's
#      verified_insns), and for A its own time per program
#      (EBPROF_VERIFIER_STATS=1);
#   5. a 15-s recording's CPU against perf record --call-graph dwarf +
#      perf script on the same backends, pair by pair (farm-bench --vs);
#   6. an ad hoc HTTP profile (5 s at the agent's 99 Hz) from a running
#      agent: the agent's CPU (a cpuacct cgroup of its own) during it minus
#      its CPU in as many seconds before (the continuous profile's own
#      cost), for 1-s and 5-s profiles: the fixed part is the intercept;
#   7. `record -p PID -F 99 -d 2` of a process that is not PostgreSQL (a
#      shell's busy loop): no statement reader to load (farm-bench).
# The load average is noted with every section (the machine is shared).
# Writes bench/results/record-start-<date>.md. Run as root.
#   BEFORE=/tmp/main/build/ebprof RUNS=7 bench/record-start.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-7}
SCALE=${SCALE:-10}
LONG_RUNS=${LONG_RUNS:-3}
A=$(realpath "$BUILD/ebprof")
B=${BEFORE:+$(realpath "$BEFORE")}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
for t in perf strace curl farm-bench; do
	command -v "$t" >/dev/null || { echo "bench: $t is needed" >&2; exit 1; }
done

. bench/lib.sh
bench_cluster start "$SCALE"
busy_pid=""
trap '[ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null; kill "${bench_pid:-0}" 2>/dev/null || true; bench_cleanup; sleep 1; rmdir /sys/fs/cgroup/cpuacct/ebprof-bench-$$-* 2>/dev/null || true' EXIT
pgbench -n -S -c 2 -j 2 -T 3600 -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
bench_pid=$!
sleep 3
# the cluster's long-lived processes: the postmaster, the backends of
# pgbench and the auxiliary processes (an autovacuum worker would exit
# within a run, and a recording's -p refuses a pid gone)
pids=$( (head -1 "$pgdir/data/postmaster.pid"
	psql -Atq -h "$pgdir" -p "$port" -U postgres -c \
		"select pid from pg_stat_activity where backend_type <> 'autovacuum worker' and pid <> pg_backend_pid()" postgres) |
	paste -sd,)
out="bench/results/record-start-$(date +%Y%m%d-%H%M).md"
res="$work/results.md"
: >"$res"
tools="A"
[ -n "$B" ] && tools="A B"
bin() { if [ "$1" = A ]; then echo "$A"; else echo "$B"; fi; }
range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }
fig() { sed -n "s/.*\\b$2=\\([-0-9.]*\\).*/\\1/p" "$1"; }

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# 1. record -d 2, the whole process.
echo "1: $(loadavg)" >"$work/load.txt"
rec="record -p $pids -F 99 -d 2 -o $work/fb.pb.gz"
if [ -n "$B" ]; then
	farm-bench -n "$RUNS" --timeout 600 --vs "$B $rec" -- "$A" $rec >"$work/fb2.txt" 2>&1
else
	farm-bench -n "$RUNS" --timeout 600 -- "$A" $rec >"$work/fb2.txt" 2>&1
fi

# 2. start to "sampling at", interleaved.
echo "2: $(loadavg)" >>"$work/load.txt"
for i in $(seq 1 "$RUNS"); do
	for t in $tools; do
		python3 bench/record_start.py start "$(bin $t)" record -p "$pids" -F 99 -d 2 \
			-o "$work/s.pb.gz" >>"$work/start-$t.txt"
	done
done

# 3. bpf() calls, from strace -c (3 runs each; strace slows what it counts).
echo "3: $(loadavg)" >>"$work/load.txt"
for i in 1 2 3; do
	for t in $tools; do
		strace -f -c -e trace=bpf -o "$work/strace-$t-$i.txt" \
			"$(bin $t)" record -p "$pids" -F 99 -d 2 -o "$work/st.pb.gz" 2>/dev/null
		awk '$NF == "bpf" {print $2, $4}' "$work/strace-$t-$i.txt" >>"$work/bpf-$t.txt"
	done
done

# 4. verified_insns of each program the recorder holds (--type cpu).
for t in $tools; do
	EBPROF_VERIFIER_STATS=1 "$(bin $t)" record -p "$pids" -F 99 -d 6 -o "$work/v.pb.gz" \
		-v 2>"$work/verifier-$t.log" &
	vpid=$!
	sleep 0.2
	until grep -q 'sampling at' "$work/verifier-$t.log"; do sleep 0.1; done
	python3 bench/record_start.py insns "$vpid" >"$work/insns-$t.txt"
	wait "$vpid"
done

# 5. 15 s: ebprof record vs perf record --call-graph dwarf + perf script.
echo "5: $(loadavg)" >>"$work/load.txt"
perf_cmd="sh -c 'perf record -q -F 99 --call-graph dwarf -p $pids -o $work/p.data -- sleep 15 2>/dev/null && perf script -i $work/p.data >/dev/null 2>&1'"
for t in $tools; do
	farm-bench -n "$LONG_RUNS" --warmup 0 --timeout 900 --vs "$perf_cmd" -- \
		"$(bin $t)" record -p "$pids" -F 99 -d 15 -o "$work/l.pb.gz" >"$work/fb15-$t.txt" 2>&1
done
perf_bytes=$(stat -c %s "$work/p.data"); ebprof_bytes=$(stat -c %s "$work/l.pb.gz")

# 6. An ad hoc profile from a running agent, at the agent's own rate.
echo "6: $(loadavg)" >>"$work/load.txt"
for t in $tools; do
	hp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$(bin $t)" agent --config /dev/null -F 99 --interval 3600 --pid "$pids" --comm x-none \
		--output-dir "$work/ag-$t" --http-listen "127.0.0.1:$hp" 2>"$work/agent-$t.log" &
	agent_pid=$!
	# its CPU, threads that exited included, to the ns: a cpuacct group of its own
	cg=/sys/fs/cgroup/cpuacct/ebprof-bench-$$-$t
	mkdir "$cg"
	echo "$agent_pid" >"$cg/cgroup.procs"
	sleep 0.2
	until grep -q 'sampling at' "$work/agent-$t.log"; do sleep 0.1; done
	sleep 2
	adhoc() { curl -sf -o "$work/adhoc.pb.gz" "http://127.0.0.1:$hp/profile/cpu?seconds=$1&frequency=99&pid=$pids"; }
	adhoc 2 # not counted: the symbol tables of postgres loaded (an interval's end would have)
	for i in $(seq 1 "$RUNS"); do
		for secs in 5 1; do
			c0=$(cat "$cg/cpuacct.usage")
			sleep "$secs"
			c1=$(cat "$cg/cpuacct.usage")
			adhoc "$secs"
			c2=$(cat "$cg/cpuacct.usage")
			echo "$c0 $c1 $c2" | awk '{printf "%.3f\n", ($3 - $2 - ($2 - $1)) / 1e6}' >>"$work/adhoc$secs-$t.txt"
			echo "$c0 $c1" | awk '{printf "%.3f\n", ($2 - $1) / 1e6}' >>"$work/idle$secs-$t.txt"
		done
	done
	kill "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
	rmdir "$cg"
done

# 7. record -d 2 of a process that is not PostgreSQL: a shell's busy loop.
echo "7: $(loadavg)" >>"$work/load.txt"
sh -c 'while :; do :; done' &
busy_pid=$!
nrec="record -p $busy_pid -F 99 -d 2 -o $work/n.pb.gz"
if [ -n "$B" ]; then
	farm-bench -n "$RUNS" --timeout 600 --vs "$B $nrec" -- "$A" $nrec >"$work/fb-np.txt" 2>&1
else
	farm-bench -n "$RUNS" --timeout 600 -- "$A" $nrec >"$work/fb-np.txt" 2>&1
fi
kill "$busy_pid"
busy_pid=""
echo "end: $(loadavg)" >>"$work/load.txt"

{
	echo "# ebprof record's start — $(date -u '+%Y-%m-%d %H:%M') UTC"
	echo
	echo "Command: \`BEFORE=${BEFORE:-} RUNS=$RUNS SCALE=$SCALE bench/record-start.sh\`"
	echo
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); kernel $(uname -r)"
	echo "- A: $A ($("$A" --version 2>&1 | head -1)); B: ${B:-none}"
	echo "- workload: PostgreSQL \`pgbench -S -c 2 -j 2\`, scale $SCALE; targets: the postmaster, its auxiliary processes and pgbench's backends ($(echo "$pids" | tr , '\n' | wc -l) pids)"
	echo "- load average (1, 5, 15 min) as each section began: $(paste -sd';' "$work/load.txt" | sed 's/;/; /g')"
	echo
	echo "## 1. \`record -p PIDS -F 99 -d 2\`, whole process (farm-bench, A then B in turn)"
	echo
	echo '```'
	cat "$work/fb2.txt"
	echo '```'
	echo
	echo "## 2. Start to \"sampling at\" (set-up done, perf events attached), median (range) of $RUNS"
	echo
	echo "| | set-up, ms | CPU by then, ms | whole run wall, ms | whole run CPU, ms |"
	echo "| --- | --- | --- | --- | --- |"
	for t in $tools; do
		f="$work/start-$t.txt"
		printf "| %s | %s (%s) | %s (%s) | %s (%s) | %s (%s) |\n" "$t" \
			"$(fig "$f" setup_ms | median)" "$(fig "$f" setup_ms | range)" \
			"$(fig "$f" setup_cpu_ms | median)" "$(fig "$f" setup_cpu_ms | range)" \
			"$(fig "$f" wall_ms | median)" "$(fig "$f" wall_ms | range)" \
			"$(fig "$f" cpu_ms | median)" "$(fig "$f" cpu_ms | range)"
	done
	echo
	echo "## 3. bpf() calls of a \`record -d 2\` (strace -f -c), median of 3"
	echo
	echo "| | calls | system seconds in bpf() |"
	echo "| --- | --- | --- |"
	for t in $tools; do
		printf "| %s | %s | %s (%s) |\n" "$t" "$(awk '{print $2}' "$work/bpf-$t.txt" | median)" \
			"$(awk '{print $1}' "$work/bpf-$t.txt" | median)" "$(awk '{print $1}' "$work/bpf-$t.txt" | range)"
	done
	echo
	echo "## 4. Instructions verified per program (--type cpu, bpf_prog_info's verified_insns)"
	echo
	for t in $tools; do
		echo "$t: $(awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2; s += $2} END {printf "; total %d\n", s}' "$work/insns-$t.txt")"
		echo
	done
	echo "A's verifier, by its own statistics (EBPROF_VERIFIER_STATS=1):"
	echo '```'
	grep 'verifier:' "$work/verifier-A.log" | sed 's/^ebprof: //'
	echo '```'
	echo
	echo "## 5. A 15-s recording vs perf record --call-graph dwarf + perf script (A = ebprof, B = perf; the last run wrote $ebprof_bytes bytes, perf $perf_bytes)"
	for t in $tools; do
		echo
		echo "ebprof $t:"
		echo '```'
		cat "$work/fb15-$t.txt"
		echo '```'
	done
	echo
	echo "## 6. An ad hoc profile at 99 Hz from an agent at 99 Hz (--interval 3600): the agent's CPU during it above its CPU in as many seconds before, ms, median (range) of $RUNS (after one not counted)"
	echo
	echo "The agent's CPU is its cpuacct group's (ns, threads that exited included). A profile of S seconds costs c(S) = fixed + S × per-second (its samples: symbolized, encoded); the fixed part, the CPU above the samples' own cost, is (5 c(1) - c(5)) / 4 of the medians."
	echo
	echo "| | 1 s | 5 s | fixed part | the agent alone, 5 s |"
	echo "| --- | --- | --- | --- | --- |"
	for t in $tools; do
		c1=$(median <"$work/adhoc1-$t.txt"); c5=$(median <"$work/adhoc5-$t.txt")
		printf "| %s | %s (%s) | %s (%s) | %.0f | %s |\n" "$t" "$c1" "$(range <"$work/adhoc1-$t.txt")" \
			"$c5" "$(range <"$work/adhoc5-$t.txt")" "$(echo "(5 * $c1 - $c5) / 4" | bc -l)" \
			"$(median <"$work/idle5-$t.txt")"
	done
	echo
	echo "## 7. \`record -p PID -F 99 -d 2\` of a process that is not PostgreSQL (a shell's busy loop), whole process (farm-bench, A then B in turn)"
	echo
	echo '```'
	cat "$work/fb-np.txt"
	echo '```'
} >"$out"
echo "wrote $out"
