#!/bin/bash
# The agent's footprint against the host's size (issue 32): the figures of
# bench/footprint.sh (peak RSS, CPU % of a core, the kernel memory of its
# BPF maps and programs) against
#
#   connected backends: the agent on its defaults (19 Hz, interval 60 s)
#   on PostgreSQL (max_connections raised) with N idle sessions (pgbench
#   clients sleeping in a \sleep script: connected, idle) beside
#   `pgbench -S -c CLIENTS`, N in BACKENDS (10 100 1000), measured;
#
#   CPUs: 2 measured (this host: the run with the fewest backends), 16
#   and 64 (CPUS) through the pipeline simulator (bench/pipeline-scale.c:
#   the agent's flush path fed CPUS x 19 Hz x 60 s samples, as many
#   distinct stacks per sample as the measured run had, 2 backends a CPU
#   plus the auxiliary processes) and the map sizing formula
#   (bench/map-sizes.c on userspace/sampling/map_sizes.c), the simulator
#   also run for 2 CPUs so the modelled figures are the measured ones plus
#   the difference it makes:
#     RSS(N) = RSS measured + peak RSS of the simulator at N - at 2
#     CPU(N) = CPU measured + (flush CPU at N - at 2) / 60 s
#     maps(N) = per-CPU maps x N/2 + ring buffers as the formula sizes them
#               at N + counts and stacks maps x N/2 (allocated as used:
#               their memlock follows the samples an interval holds), at
#               most the formula's bound + the rest as measured (unwind
#               tables, process maps: binaries and processes, not CPUs)
#
# Writes bench/results/footprint-scaling-<date>.md. Run as root.
#   ROUNDS=2 SECS=65 BACKENDS="10 100 1000" CPUS="16 64" bench/footprint-scaling.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-2}
SECS=${SECS:-65}
CLIENTS=${CLIENTS:-4}
SCALE=${SCALE:-10}
BACKENDS=${BACKENDS:-"10 100 1000"}
CPUS=${CPUS:-"16 64"}
HZ=19
INTERVAL=60

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "bench: bpftool is missing" >&2; exit 1; }
make --no-print-directory -s BUILD="$BUILD" all "$BUILD/bench/pipeline-scale" "$BUILD/bench/map-sizes" \
	"$BUILD/bench/pprofutil" >&2
. bench/lib.sh

maxb=$(echo "$BACKENDS" | tr ' ' '\n' | sort -n | tail -1)
ulimit -n $((maxb * 2 + 1024))
EBPROF_PG_OPTS="-c max_connections=$((maxb + CLIENTS + 50))" bench_cluster scaling "$SCALE"
idle_bench_pid=""
load_pid=""
# (KEEP=1 keeps $work: the agents' logs and profiles, bpftool's lists)
trap 'kill $idle_bench_pid $load_pid 2>/dev/null || true; bench_cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)
printf '\\sleep 3600 s\n' >"$work/idle.sql"
connected() {
	psql -Atq -h "$pgdir" -p "$port" -U postgres -c \
		"select count(*) from pg_stat_activity where backend_type = 'client backend'" postgres
}

# run NIDLE ROUND: one agent run; appends to $work/runs.txt:
# nidle round hwm_kib rss_kib cpu_pct maps_kib progs_kib percpu_kib ringbuf_kib samplemaps_kib procs samples stacks
run() {
	local n=$1 r=$2 log="$work/agent-$1-$2.log" d="$work/profiles-$1-$2"
	pgbench -n -c "$n" -j 2 -T 3600 -f "$work/idle.sql" -h "$pgdir" -p "$port" -U postgres postgres \
		>"$work/idle-$n.log" 2>&1 &
	idle_bench_pid=$!
	for _ in $(seq 1 600); do
		[ "$(connected)" -ge "$n" ] && break
		sleep 0.2
	done
	[ "$(connected)" -ge "$n" ] || { echo "bench: $n idle sessions did not connect" >&2; cat "$work/idle-$n.log" >&2; exit 1; }
	pgbench -n -S -c "$CLIENTS" -j 2 -T 3600 -h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
	load_pid=$!
	sleep 2
	"$BUILD/ebprof" agent --config /dev/null --output-dir "$d" --http-listen '' 2>"$log" &
	agent_pid=$!
	until grep -q 'sampling at' "$log" 2>/dev/null; do
		kill -0 "$agent_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.05
	done
	local t0 c0 t1 c1 procs
	t0=$(date +%s.%N)
	c0=$(cpu_ticks "$agent_pid")
	sleep "$SECS"
	c1=$(cpu_ticks "$agent_pid")
	t1=$(date +%s.%N)
	bench/bpf_maps.py "$agent_pid" >"$work/bpf-$n-$r.txt"
	procs=$(pgrep -c -x postgres || true)
	echo "$n $r $(awk '$1 == "VmHWM:" {print $2}' "/proc/$agent_pid/status")" \
		"$(awk '$1 == "VmRSS:" {print $2}' "/proc/$agent_pid/status")" \
		"$(echo "($c1 - $c0) / $hz / ($t1 - $t0) * 100" | bc -l | xargs printf '%.3f')" \
		"$(awk '$1 == "map" {m += $5} $1 == "prog" {p += $5}
			$1 == "map" && $3 ~ /percpu/ {c += $5}
			$1 == "map" && $3 == "ringbuf" {r += $5}
			$1 == "map" && ($4 == "counts0" || $4 == "counts1" || $4 == "stacks") {s += $5}
			END {printf "%.0f %.0f %.0f %.0f %.0f", m / 1024, p / 1024, c / 1024, r / 1024, s / 1024}' \
			"$work/bpf-$n-$r.txt")" \
		"$procs $(sed -n 's/.*interval from.*processes, \([0-9]*\) samples.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')" \
		"$(find "$d" -name '*.pb.gz' -print0 2>/dev/null | xargs -0 -r -n 1 sh -c '"$0" pstacks "$1" | cut -f2- | sort -u' "$BUILD/bench/pprofutil" 2>/dev/null | wc -l)" \
		>>"$work/runs.txt"
	grep -h 'interval from' "$log" | sed "s/^/[$n idle, round $r] /" >>"$work/intervals.txt" || true
	kill -TERM "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
	kill "$load_pid" "$idle_bench_pid" 2>/dev/null || true
	wait "$load_pid" "$idle_bench_pid" 2>/dev/null || true
	load_pid=""
	idle_bench_pid=""
	sleep 2
}

: >"$work/runs.txt"
: >"$work/intervals.txt"
for r in $(seq 1 "$ROUNDS"); do
	for n in $BACKENDS; do
		echo "round $r: $n idle sessions + pgbench -S -c $CLIENTS" >&2
		run "$n" "$r"
	done
done

med() { awk -v n="$1" -v f="$2" '$1 == n {print $f}' "$work/runs.txt" | median; }
mib() { awk -v v="$1" 'BEGIN {printf "%.1f", v / 1024}'; }
base=$(echo "$BACKENDS" | tr ' ' '\n' | sort -n | head -1)

# --- CPUs: the simulator and the formula ------------------------------------
b_samples=$(med "$base" 12)
b_stacks=$(med "$base" 13)
ratio=$(awk -v s="$b_samples" -v k="$b_stacks" 'BEGIN {r = s > 0 ? k / s : 0.5; if (r > 1) r = 1; if (r <= 0) r = 0.5; printf "%.3f", r}')
aux=6
: >"$work/sim.txt"
for c in 2 $CPUS; do
	samples=$((c * HZ * INTERVAL))
	stacks=$(awk -v s="$samples" -v r="$ratio" 'BEGIN {printf "%d", s * r < 1 ? 1 : s * r}')
	procs=$((2 * c + aux))
	dir=$(mktemp -d /var/tmp/pipeline-scale.XXXXXX)
	cmd="nice -n 10 $BUILD/bench/pipeline-scale --cpus $c --hz $HZ --interval $INTERVAL --procs $procs --stacks $stacks --intervals 3 --warmup 1 --dir $dir"
	echo "== $cmd" >&2
	nice -n 10 "$BUILD/bench/pipeline-scale" --cpus "$c" --hz "$HZ" --interval "$INTERVAL" --procs "$procs" \
		--stacks "$stacks" --intervals 3 --warmup 1 --dir "$dir" >"$work/sim-$c.out"
	rm -rf "$dir"
	f() { sed -n "s/.*[ :]$1=\([0-9.]*\).*/\1/p" "$work/sim-$c.out" | head -1; }
	sizes=$("$BUILD/bench/map-sizes" "$c" "$HZ" "$INTERVAL" "$(ls /proc | grep -c '^[0-9]')" 0)
	echo "$c $samples $stacks $procs $(f rss_peak_kib) $(f flush_cpu_ms) $sizes" >>"$work/sim.txt"
	echo "$cmd" >>"$work/sim-cmds.txt"
done
sim() { awk -v c="$1" -v f="$2" '$1 == c {print $f}' "$work/sim.txt"; }
simkv() { awk -v c="$1" '$1 == c' "$work/sim.txt" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

out="bench/results/footprint-scaling-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof agent footprint against CPUs and connected backends — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`ROUNDS=$ROUNDS SECS=$SECS CLIENTS=$CLIENTS BACKENDS=\"$BACKENDS\" CPUS=\"$CPUS\" bench/footprint-scaling.sh\`"
	echo
	echo "- machine: $(nproc) CPUs, $(free -m | awk '/Mem:/{print $2}') MiB; kernel $(uname -r); shared with other jobs (load before the report: $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "- build: $(git rev-parse --abbrev-ref HEAD) ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', uncommitted changes'))"
	echo "- agent on its defaults (\`ebprof agent --config /dev/null --output-dir D --http-listen ''\`: 19 Hz, interval 60 s, cpu profiles, every postgres process); $SECS s of sampling a run (a flush at least); $ROUNDS rounds, medians"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}') (max_connections $((maxb + CLIENTS + 50))), \`pgbench -n -S -c $CLIENTS -j 2\`, scale $SCALE, beside N idle sessions: \`pgbench -n -c N -j 2 -f idle.sql\` with idle.sql \`\\sleep 3600 s\` (connected, idle between statements)"
	echo "- debug packages: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none)"
	echo
	echo "## Against connected backends (measured, 2 CPUs)"
	echo
	echo "BPF maps: bpftool's memlock of the agent's maps (bench/bpf_maps.py: its descriptors, its programs' maps, the unwind tables inside its maps of maps; a hash map allocated as used counts its buckets and what it holds); programs separately. Of the maps: per-CPU maps, ring buffers, and the counts and stacks maps."
	echo
	echo "| idle backends | postgres processes | peak RSS MiB | RSS at end MiB | CPU % of a core | BPF maps MiB | of which per-CPU KiB | ring buffers KiB | counts+stacks KiB | BPF programs KiB |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for n in $BACKENDS; do
		echo "| $n | $(med "$n" 11) | $(mib "$(med "$n" 3)") | $(mib "$(med "$n" 4)") | $(med "$n" 5) | $(mib "$(med "$n" 6)") | $(med "$n" 8) | $(med "$n" 9) | $(med "$n" 10) | $(med "$n" 7) |"
	done
	echo
	echo "## Against CPUs (2 measured; 16 and 64 modelled through the simulator and the sizing formula)"
	echo
	m_hwm=$(med "$base" 3); m_cpu=$(med "$base" 5); m_maps=$(med "$base" 6); m_pcpu=$(med "$base" 8)
	m_ring=$(med "$base" 9); m_samp=$(med "$base" 10); m_prog=$(med "$base" 7)
	echo "Base: the measured run with $base idle backends (medians above): peak RSS $(mib "$m_hwm") MiB, CPU $m_cpu %, maps $(mib "$m_maps") MiB ($m_pcpu KiB per-CPU, $m_ring KiB ring buffers, $m_samp KiB counts+stacks). Its intervals flushed while measured had $b_samples samples and their profiles $b_stacks distinct (process, stack) pairs, each profile's counted apart (an interval's): $ratio per sample, the simulator's stacks per sample at every size."
	echo
	echo "**The modelled rows are upper bounds.** The simulator's stacks are synthetic: 10 to 40 frames drawn from every function symbol of every object it maps, so nearly every frame of every stack is a location of its own, where PostgreSQL's backends share most of their frames (the same executor, the same callers); the symbolizer's and the builders' work grows with locations. And the distinct stacks per sample measured on 2 CPUs in part of an interval are taken for every size, where many CPUs running the same code repeat their stacks more. The measured row is what the agent did."
	echo
	echo "| CPUs | samples per 60 s interval (19 Hz) | distinct stacks (simulated) | processes (simulated) | simulator peak RSS MiB | simulator flush CPU ms | peak RSS MiB | CPU % of a core | counts entries (formula) | stacks entries (formula) | ring buffers KiB (formula) | BPF maps MiB | BPF programs KiB | how |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	s_rss2=$(sim 2 5); s_cpu2=$(sim 2 6)
	ring2=$(( ($(simkv 2 events_bytes) + $(simkv 2 ustacks_bytes)) / 1024 ))
	for c in 2 $CPUS; do
		ringc=$(( ($(simkv "$c" events_bytes) + $(simkv "$c" ustacks_bytes)) / 1024 ))
		bound=$(( $(simkv "$c" counts_stacks_bytes) / 1024 ))
		if [ "$c" = 2 ]; then
			rss=$(mib "$m_hwm"); cpu=$m_cpu; maps=$(mib "$m_maps"); how="measured (maps: bpftool)"
		else
			rss=$(awk -v m="$m_hwm" -v a="$(sim "$c" 5)" -v b="$s_rss2" 'BEGIN {printf "%.1f", (m + a - b) / 1024}')
			cpu=$(awk -v m="$m_cpu" -v a="$(sim "$c" 6)" -v b="$s_cpu2" -v i="$INTERVAL" 'BEGIN {printf "%.3f", m + (a - b) / 1000 / i * 100}')
			maps=$(awk -v all="$m_maps" -v pc="$m_pcpu" -v rg="$m_ring" -v sm="$m_samp" -v c="$c" -v r2="$ring2" -v rc="$ringc" -v bd="$bound" \
				'BEGIN {s = sm * c / 2; if (s > bd) s = bd; rest = all - pc - rg - sm;
				ring = rg * rc / r2; printf "%.1f", (rest + pc * c / 2 + ring + s) / 1024}')
			how="modelled (see the head of the script)"
		fi
		echo "| $c | $(sim "$c" 2) | $(sim "$c" 3) | $(sim "$c" 4) | $(mib "$(sim "$c" 5)") | $(sim "$c" 6) | $rss | $cpu | $(simkv "$c" counts) | $(simkv "$c" stacks) | $ringc | $maps | $m_prog | $how |"
	done
	echo
	echo "The formula sizes the counts maps for the samples of an interval and a quarter more, the stacks map for two intervals' samples (allocated as used on this kernel: max_entries only bounds them), the process-event ring at 64 KiB a CPU (4 MiB at most) and the unwound-stack ring at 2 KiB a sample per second; the programs do not grow with CPUs. Per-CPU maps (scratch space of the BPF programs, the statistics) grow with CPUs linearly."
	echo
	echo "## Every run"
	echo
	echo "nidle round peak_KiB rss_KiB cpu% maps_KiB progs_KiB percpu_KiB ringbuf_KiB counts_stacks_KiB postgres_procs samples_flushed distinct_process_stacks:"
	echo '```'
	cat "$work/runs.txt"
	echo '```'
	echo
	echo "Simulator runs (CPUs samples stacks procs rss_peak_KiB flush_cpu_ms, then the formula's sizes):"
	echo '```'
	cat "$work/sim-cmds.txt"
	cat "$work/sim.txt"
	echo '```'
	echo
	echo "The agent's interval lines:"
	echo '```'
	cat "$work/intervals.txt"
	echo '```'
	echo
	echo "BPF maps of the last run with $base idle backends (bench/bpf_maps.py: kind id type name memlock max_entries):"
	echo '```'
	cat "$work/bpf-$base-$ROUNDS.txt"
	echo '```'
} >"$out"
cat "$out"
echo "written: $out"
