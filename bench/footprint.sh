#!/bin/bash
# The agent's footprint, build before vs build after in the same run:
# `ebprof agent` on its defaults (19 Hz, interval 60 s) on PostgreSQL
# under `pgbench -S` and `pgbench -S -C` (a connection per transaction),
# with --profile-types cpu (the default) and cpu,offcpu,faults (the
# heavier types). Per run, after SECS seconds of sampling (one flush at
# least): peak and final RSS, CPU % of one core since "sampling at", and
# the kernel memory of its BPF maps and programs as bpftool reports it
# (memlock: maps allocated as used count what they hold), the maps found
# through the agent's descriptors and the inner maps of its maps of maps;
# the largest maps; the interval lines' losses. Rounds alternate the two
# builds. Writes bench/results/footprint-<date>.md. Run as root.
#   BEFORE=DIR bench/footprint.sh   (DIR: a build directory; without it,
#   BEFORE_REV, default main, is built in a temporary directory)
# STEADY=N: the steady state instead: both builds run side by side on the
# same cluster and load (each with its own BPF programs), and the CPU is
# taken over N whole intervals after the first SKIP (default 2: the first
# one is cut short at a minute's boundary, the next one holds most of the
# first-time symbolization), from the end of each agent's SKIPth interval
# line to the end of its (SKIP+N)th; RSS, peak and maps at that moment.
# Each round then lasts about 60 s * (N + SKIP) + 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-2}
SECS=${SECS:-65}
CLIENTS=${CLIENTS:-4}
SCALE=${SCALE:-10}
TYPES=${TYPES:-"cpu cpu,offcpu,faults"}
LOADS=${LOADS:-"S C"}
STEADY=${STEADY:-0}
SKIP=${SKIP:-2}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "bench: bpftool is missing" >&2; exit 1; }
. bench/lib.sh

if [ -z "${BEFORE:-}" ]; then
	rev=${BEFORE_REV:-main}
	src=$(mktemp -d /tmp/ebprof-before-XXXXXX)
	echo "building $rev into $src (BEFORE=DIR uses a build instead)" >&2
	git archive "$rev" | tar -x -C "$src"
	make -C "$src" -s all >&2
	BEFORE=$src/build
	before_name="$rev ($(git rev-parse --short "$rev"))"
else
	before_name=$BEFORE
fi
after_name="$(git rev-parse --abbrev-ref HEAD) ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', uncommitted changes'))"

bench_cluster footprint "$SCALE"
hz=$(getconf CLK_TCK)

# "KiB_maps KiB_progs nmaps KiB_unwind top" of the BPF objects process $1 holds: the
# maps and programs of its descriptors, and the maps inside its maps of
# maps (unwind tables, KiB_unwind of the maps); top: its 4 largest maps,
# name:MiB.
bpf_memlock() {
	local top
	bench/bpf_maps.py "$1" >"$work/bpf.txt"
	top=$(awk '$1 == "map" {print $5, $4}' "$work/bpf.txt" | sort -rn | head -4 |
		awk '{printf "%s%s:%.1f", (NR > 1 ? "," : ""), $2, $1 / 1048576}')
	awk -v top="$top" '$1 == "map" {m += $5; n++; if ($4 == "ebprof_unwind") u += $5}
		$1 == "prog" {p += $5}
		END {printf "%.0f %.0f %d %.0f %s\n", m / 1024, p / 1024, n, u / 1024, top}' "$work/bpf.txt"
}

lbl() { if [ "$1" = C ]; then echo "-S -C"; else echo "-S"; fi; }
kb() { awk -v k="$2:" '$1 == k {print $2}' "$1"; }
mib() { awk -v v="$1" 'BEGIN {printf "%.1f", v / 1024}'; }

# run BUILDDIR TYPES LOAD NAME: one agent run; appends a line to $work/runs.txt:
# name types load hwm_kib rss_kib cpu_pct maps_kib progs_kib nmaps unwind_kib top intervals lossy
run() {
	local build=$1 types=$2 load=$3 name=$4 log="$work/agent-$4-$2-$3.log" churn=""
	[ "$load" = C ] && churn=-C
	pgbench -n -S $churn -c "$CLIENTS" -j 2 -T $((SECS + 30)) \
		-h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
	local bench_pid=$!
	sleep 2
	# the bench's cluster only (--comm= --pid): other PostgreSQL on a
	# shared host would change what the agent holds
	"$build/ebprof" agent --config /dev/null --profile-types "$types" \
		--comm= --pid "$(head -1 "$pgdir/data/postmaster.pid")" \
		--output-dir "$work/profiles-$name" --http-listen '' 2>"$log" &
	agent_pid=$!
	until grep -q 'sampling at' "$log" 2>/dev/null; do
		kill -0 "$agent_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.05
	done
	local t0 c0 t1 c1 mem
	t0=$(date +%s.%N)
	c0=$(cpu_ticks "$agent_pid")
	sleep "$SECS"
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	mem=$(bpf_memlock "$agent_pid")
	echo "$name $types $load $(kb "/proc/$agent_pid/status" VmHWM) $(kb "/proc/$agent_pid/status" VmRSS)" \
		"$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l | xargs printf '%.3f')" \
		"$mem $(grep -c 'interval from' "$log") $(grep 'interval from' "$log" | grep -vc 'nothing lost')" \
		>>"$work/runs.txt"
	kill -TERM "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
	kill "$bench_pid" 2>/dev/null || true
	wait "$bench_pid" || true
}


# nlines LOG: the interval lines an agent logged so far
nlines() {
	local n
	n=$(grep -c 'interval from' "$1" 2>/dev/null) || true
	echo "${n:-0}"
}

# run_steady TYPES LOAD: both builds side by side (STEADY=N); appends a
# line per build to $work/runs.txt as run() does, the CPU over N whole
# intervals after the first.
run_steady() {
	local types=$1 load=$2 churn="" name build log i
	local -A pid c0 t0 done=()
	[ "$load" = C ] && churn=-C
	pgbench -n -S $churn -c "$CLIENTS" -j 2 -T $((60 * (STEADY + SKIP + 1) + 60)) \
		-h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
	local bench_pid=$!
	sleep 2
	for name in before after; do
		if [ "$name" = before ]; then build=$BEFORE; else build=$BUILD; fi
		log="$work/agent-$name-$types-$load.log"
		"$build/ebprof" agent --config /dev/null --profile-types "$types" \
			--comm= --pid "$(head -1 "$pgdir/data/postmaster.pid")" \
			--output-dir "$work/profiles-$name" --http-listen '' 2>"$log" &
		pid[$name]=$!
		agent_pid="${pid[before]:-} ${pid[after]:-}"
	done
	# the end of the SKIPth interval (its line is logged after the
	# flush), then N more
	while [ ${#done[@]} -lt 2 ]; do
		for name in before after; do
			[ -n "${done[$name]:-}" ] && continue
			log="$work/agent-$name-$types-$load.log"
			kill -0 "${pid[$name]}" 2>/dev/null || { cat "$log" >&2; exit 1; }
			i=$(nlines "$log")
			if [ -z "${c0[$name]:-}" ] && [ "$i" -ge "$SKIP" ]; then
				c0[$name]=$(cpu_ticks "${pid[$name]}")
				t0[$name]=$(date +%s.%N)
			elif [ -n "${c0[$name]:-}" ] && [ "$i" -ge $((STEADY + SKIP)) ]; then
				local c1 t1 mem
				c1=$(cpu_ticks "${pid[$name]}")
				t1=$(date +%s.%N)
				mem=$(bpf_memlock "${pid[$name]}")
				echo "$name $types $load $(kb "/proc/${pid[$name]}/status" VmHWM)" \
					"$(kb "/proc/${pid[$name]}/status" VmRSS)" \
					"$(echo "($c1 - ${c0[$name]}) / $hz / ($t1 - ${t0[$name]}) * 100" | bc -l | xargs printf '%.3f')" \
					"$mem $i $(grep 'interval from' "$log" | grep -vc 'nothing lost')" \
					>>"$work/runs.txt"
				done[$name]=1
			fi
		done
		sleep 0.2
	done
	kill -TERM ${pid[before]} ${pid[after]}
	wait ${pid[before]} ${pid[after]} || true
	agent_pid=""
	kill "$bench_pid" 2>/dev/null || true
	wait "$bench_pid" || true
}

: >"$work/runs.txt"
for r in $(seq 1 "$ROUNDS"); do
	for types in $TYPES; do
		for load in $LOADS; do
			if [ "$STEADY" != 0 ]; then
				echo "round $r: both builds side by side, --profile-types $types, pgbench $(lbl "$load"), $STEADY intervals after the first $SKIP" >&2
				run_steady "$types" "$load"
				continue
			fi
			if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
			for name in $order; do
				if [ "$name" = before ]; then b=$BEFORE; else b=$BUILD; fi
				echo "round $r: $name --profile-types $types, pgbench $(lbl "$load")" >&2
				run "$b" "$types" "$load" "$name"
			done
		done
	done
done

# med NAME TYPES LOAD FIELD: the median of FIELD (awk column) over the rounds
med() { awk -v n="$1" -v t="$2" -v l="$3" -v f="$4" '$1 == n && $2 == t && $3 == l {print $f}' \
	"$work/runs.txt" | median; }
out="bench/results/footprint-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof agent footprint — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	if [ "$STEADY" != 0 ]; then
		echo "Command: \`STEADY=$STEADY SKIP=$SKIP ROUNDS=$ROUNDS CLIENTS=$CLIENTS TYPES='$TYPES' LOADS='$LOADS' make bench-footprint\` (bench/footprint.sh)"
	else
		echo "Command: \`ROUNDS=$ROUNDS SECS=$SECS CLIENTS=$CLIENTS make bench-footprint\` (bench/footprint.sh)"
	fi
	echo
	echo "- machine: $(nproc) CPUs, $(free -m | awk '/Mem:/{print $2}') MiB; kernel $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- before: $before_name; after: $after_name"
	echo "- agent on its defaults (19 Hz, interval 60 s, memory-budget of the build) but --profile-types and its targets (--comm= --pid: the bench's cluster only, not other PostgreSQL on the host); $(if [ "$STEADY" != 0 ]; then echo "steady state: both builds side by side on the same load, CPU over $STEADY whole intervals after the first $SKIP"; else echo "$SECS s of sampling a run (a flush at least), rounds alternate the builds"; fi)"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}'), \`pgbench -S [-C] -c $CLIENTS -j 2\`, scale $SCALE"
	echo "- debug packages: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none)"
	echo
	echo "Medians of $ROUNDS rounds. BPF maps: bpftool's memlock of the agent's maps (a map allocated as used counts what it holds), programs' separately."
	echo
	echo "| types | pgbench | build | peak RSS MiB | RSS at end MiB | CPU % of a core | BPF maps MiB (unwind tables) | BPF programs KiB | maps |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for types in $TYPES; do
		for load in $LOADS; do
			for name in before after; do
				echo "| $types | $(lbl "$load") | $name | $(mib "$(med $name "$types" "$load" 4)") |" \
					"$(mib "$(med $name "$types" "$load" 5)") | $(med $name "$types" "$load" 6) |" \
					"$(mib "$(med $name "$types" "$load" 7)") ($(mib "$(med $name "$types" "$load" 10)")) |" \
					"$(med $name "$types" "$load" 8) |" \
					"$(med $name "$types" "$load" 9) |"
			done
		done
	done
	echo
	echo "Every run (name types load peak_KiB rss_KiB cpu% maps_KiB progs_KiB nmaps unwind_tables_KiB largest_maps:MiB intervals intervals_with_losses):"
	echo '```'
	cat "$work/runs.txt"
	echo '```'
	echo
	echo "Map sizes the after build logged (last run):"
	echo '```'
	grep -h 'BPF maps for' "$work"/agent-after-*.log | sed 's/.*ebprof: //' | sort -u
	echo '```'
	echo
	echo "Interval lines with losses, if any:"
	echo '```'
	grep -h 'interval from' "$work"/agent-*.log | grep -v 'nothing lost' || true
	echo '```'
	echo
	echo "Processes and samples per interval (the last run of each build and load; the first interval cut short):"
	echo '```'
	for log in "$work"/agent-*.log; do
		echo "$(basename "$log" .log): $(grep 'interval from' "$log" |
			sed 's/.*(\([0-9]*\) s): \([0-9]*\) processes, \([0-9]*\) samples.*/\1s:\2p:\3s/' | tr '\n' ' ')"
	done
	echo '```'
} >"$out"
cat "$out"
echo "written: $out"
