#!/bin/bash
# The flush path at a 64-CPU host's load (bench/pipeline-scale.c): 64 CPUs
# x 99 Hz x 10 s = 63 360 samples per interval, Zipf-like over the
# distinct stacks, through the agent's own session code into the store.
# Runs each case of CASES ("PROCS:STACKS[:own]", own: every process its
# own maps snapshot) for INTERVALS intervals after WARMUP, niced, and
# writes bench/results/pipeline-scale-<date>.md: the machine, the
# commands, every interval's line and the medians. STORE: the directory
# the store writes to (a temporary one under it; default /var/tmp, a
# disk; /dev/shm leaves the disk out). Run as root (/proc/kallsyms).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CASES=${CASES:-"1000:1000 1000:10000 1000:50000 100:10000 1000:10000:own"}
INTERVALS=${INTERVALS:-5}
WARMUP=${WARMUP:-1}
STORE=${STORE:-/var/tmp}
NICE=${NICE:-10}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
make --no-print-directory BUILD="$BUILD" "$BUILD/bench/pipeline-scale" >/dev/null
mkdir -p bench/results
out=bench/results/pipeline-scale-$(date -u +%Y%m%d-%H%M).md
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

fs=$(df -T "$STORE" | awk 'NR == 2 {print $2}')
{
	echo "# pipeline-scale: the flush path at a 64-CPU host's load"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
	echo "- machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ {print $2}') GiB, shared with other jobs"
	echo "- kernel: $(uname -r); $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
	echo "- load: 64 CPUs x 99 Hz x 10 s = 63 360 samples per interval, one per stack and the rest Zipf (rank 1/r); stacks of 10-40 user frames (function symbols of every object the benchmark maps) and, for half, 4-16 kernel frames (kallsyms); stack i in process i mod PROCS; the same stacks every interval"
	echo "- store: $STORE ($fs); nice -n $NICE; $INTERVALS intervals after $WARMUP warm-up, medians over those $INTERVALS"
	echo
	echo "| processes | stacks | maps | locations | flush wall ms | flush CPU ms | drain CPU ms | peak RSS MiB | steady RSS MiB | builders' heap MiB | heap B/stack | heap B/location | peak RSS B/stack | flush CPU µs/stack |"
	echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$out"

for c in $CASES; do
	IFS=: read -r procs stacks own <<<"$c"
	args=(--procs "$procs" --stacks "$stacks" --intervals "$INTERVALS" --warmup "$WARMUP")
	[ "${own:-}" = own ] && args+=(--own-maps)
	dir=$(mktemp -d "$STORE/pipeline-scale.XXXXXX")
	cmd="nice -n $NICE $BUILD/bench/pipeline-scale ${args[*]} --dir $dir"
	echo "== $cmd" | tee -a "$raw"
	nice -n "$NICE" "$BUILD/bench/pipeline-scale" "${args[@]}" --dir "$dir" | tee -a "$raw" >"$dir.out"
	rm -rf "$dir"
	f() { sed -n "s/.*[ :]$1=\([0-9.]*\).*/\1/p" "$dir.out" | head -1; }
	mib() { echo "scale=1; $1 / 1024" | bc; }
	heap=$(awk -v s="$stacks" -v b="$(f heap_bytes)" 'BEGIN {printf "%.1f", s * b / 1048576}')
	echo "| $procs | $stacks | ${own:-shared} | $(f locations) | $(f flush_wall_ms) | $(f flush_cpu_ms) | $(f drain_cpu_ms) | $(mib "$(f rss_peak_kib)") | $(mib "$(f rss_steady_kib)") | $heap | $(f heap_bytes) | $(sed -n 's/^per_location: .*heap_bytes=\([0-9]*\).*/\1/p' "$dir.out") | $(f peak_rss_bytes) | $(f flush_cpu_us) |" >>"$out"
	rm -f "$dir.out"
done
{
	echo
	echo "Columns: flush = the drain (raw samples into the builders, symbolized: drain CPU) plus every profile finished, pprof-encoded and written by the store (O_TMPFILE, fsync, index line), wall and CPU time of the process; peak RSS during a flush (VmHWM, reset before each); steady RSS after the flush and \`malloc_trim\`, as the agent does; builders' heap = malloc'ed bytes held at the drain's end beyond those held before it (mallinfo2), i.e. every profile of the interval being built; locations = distinct (process, address) pairs, one pprof Location each."
	echo
	echo "## Commands and every interval"
	echo
	echo '```'
	cat "$raw"
	echo '```'
} >>"$out"
echo "wrote $out"
