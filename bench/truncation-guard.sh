#!/bin/bash
# What the SIGBUS guard of the symbolizer's file mappings costs
# (symbolizer/sym_guard.c): the symbolizer of BEFORE (a build directory;
# default: main, built in a temporary directory) against this tree's, side
# by side, ROUNDS rounds (default 7) alternated, medians:
#  - bench/symbench on libc.so.6 (DWARF from libc6-dbg's debug file) and on
#    PostgreSQL's binary (Debian's: .dynsym only), at the start of ROUNDS
#    function symbols of each: cold (a new symbolizer opens the binary and
#    resolves every offset once: guarded, names copied out of the file) and
#    warm (the same offsets again: memoised answers, no guard);
#  - bench/ksymbench: the core kernel's symbols (the boot's file, mapped):
#    every lookup guarded and its name copied;
#  - bench/fdebench on PostgreSQL's binary: a function start from
#    .eh_frame (how a stripped binary's frames are named), each guarded.
# Writes bench/results/truncation-guard-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-7} NSYMS=${NSYMS:-2000}
LIBC=${LIBC:-$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')}
POSTGRES=${POSTGRES:-$(ls /usr/lib/postgresql/*/bin/postgres | tail -1)}
work=$(mktemp -d /tmp/ebprof-guard-XXXXXX)
trap 'rm -rf "$work"' EXIT
cflags="-O2 -g -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer -Iinclude"
libs="-ldw -lelf -lz -liberty -lpthread"

if [ -z "${BEFORE:-}" ]; then
	src=$work/before
	mkdir -p "$src"
	git archive "${BEFORE_REV:-main}" | tar -x -C "$src"
	make -C "$src" -s build/bench/symbench >&2
	BEFORE=$src/build
	before_name="${BEFORE_REV:-main} ($(git rev-parse --short "${BEFORE_REV:-main}"))"
else
	before_name=$BEFORE
fi
after_name="$(git rev-parse --abbrev-ref HEAD) ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', uncommitted changes'))"
make -s build/bench/symbench build/bench/ksymbench build/bench/fdebench
# the same drivers against each tree's symbolizer objects
cc $cflags -o "$work/ksym-before" bench/ksymbench.c "$BEFORE"/symbolizer/*.o $libs
cc $cflags -o "$work/fde-before" bench/fdebench.c "$BEFORE"/symbolizer/*.o $libs
cp build/bench/ksymbench "$work/ksym-after"
cp build/bench/fdebench "$work/fde-after"

# file offsets of the first NSYMS function symbols (+4: inside them)
offsets() {
	python3 - "$1" "$NSYMS" <<'PY'
import subprocess, sys
path, n = sys.argv[1], int(sys.argv[2])
loads = []
for l in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
seen = set()
for l in subprocess.run(["readelf", "-sW", "--dyn-syms", path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) < 8 or f[3] != "FUNC" or f[6] == "UND" or int(f[2], 0 if f[2].startswith("0x") else 10) < 8:
        continue
    v = int(f[1], 16) + 4
    for off, va, sz in loads:
        if va <= v < va + sz and v not in seen:
            seen.add(v)
            print(hex(v - va + off))
            break
    if len(seen) >= n:
        break
PY
}
offsets "$LIBC" >"$work/libc.off"
offsets "$POSTGRES" >"$work/pg.off"
awk '$2 ~ /^[tT]$/ && $1 ~ /^ffffffff8/ && NF == 3 {print $1}' /proc/kallsyms | head -"$NSYMS" >"$work/kernel.addr"

kv() { sed -n "s/.*\<$2=\([^ ]*\).*/\1/p" <<<"$1"; }
for r in $(seq 1 "$ROUNDS"); do
	for side in before after; do
		bin=$BEFORE/bench/symbench
		[ $side = after ] && bin=build/bench/symbench
		for t in libc pg; do
			b=$LIBC
			[ $t = pg ] && b=$POSTGRES
			out=$("$bin" "$b" "$work/$t.off" 5 /dev/null /dev/null)
			echo "$(kv "$out" cold_median_ms) $(kv "$out" warm_addr_per_s) $(kv "$out" resolved)" \
				>>"$work/$t.$side"
		done
		out=$("$work/ksym-$side" "$work/kernel.addr")
		echo "$(kv "$out" warm_ns_per_addr) $(kv "$out" resolved)" >>"$work/kernel.$side"
		out=$("$work/fde-$side" "$POSTGRES" "$work/pg.off" 3)
		echo "$(kv "$out" warm_ns) $(kv "$out" named)" >>"$work/fde.$side"
	done
done
col() { awk -v c="$2" '{print $c}' "$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", b / a}'; }
out=bench/results/truncation-guard-$(date +%Y%m%d-%H%M).md
{
	echo "# The SIGBUS guard's cost, $(date -u +%FT%TZ)"
	echo
	echo "\`ROUNDS=$ROUNDS NSYMS=$NSYMS bench/truncation-guard.sh\`: before = $before_name,"
	echo "after = $after_name; $(nproc) CPUs (shared host), kernel $(uname -r). Rounds alternate"
	echo "before and after; medians over the rounds (symbench's cold figure is itself the"
	echo "median of 5 new symbolizers)."
	echo
	echo "| what | before | after | after / before |"
	echo "| --- | --- | --- | --- |"
	for t in libc pg; do
		name="libc.so.6 (DWARF, debug file)"
		[ $t = pg ] && name="postgres (.dynsym)"
		b=$(col "$work/$t.before" 1) a=$(col "$work/$t.after" 1)
		echo "| $name: cold, ms for $(wc -l <"$work/$t.off") offsets | $b | $a | $(ratio "$b" "$a") |"
		b=$(col "$work/$t.before" 2) a=$(col "$work/$t.after" 2)
		echo "| $name: warm (memoised), addresses/s | $b | $a | $(ratio "$b" "$a") |"
		echo "| $name: resolved | $(col "$work/$t.before" 3) | $(col "$work/$t.after" 3) | |"
	done
	b=$(col "$work/kernel.before" 1) a=$(col "$work/kernel.after" 1)
	echo "| kernel (core table, mapped): ns per lookup, $(wc -l <"$work/kernel.addr") addresses | $b | $a | $(ratio "$b" "$a") |"
	b=$(col "$work/fde.before" 1) a=$(col "$work/fde.after" 1)
	echo "| postgres: function start from .eh_frame, ns per lookup (warm) | $b | $a | $(ratio "$b" "$a") |"
	echo
	echo "Raw (cold ms, warm addr/s, resolved; kernel: ns, resolved; fde: ns, named), one line per round:"
	echo
	for f in libc pg kernel fde; do
		echo "- $f before: $(tr '\n' ';' <"$work/$f.before")"
		echo "- $f after: $(tr '\n' ';' <"$work/$f.after")"
	done
} >"$out"
cat "$out"
