#!/bin/sh
# `make test`'s runner: two lanes at once, each through tests/run.sh.
#   tests/lanes.sh "BESIDE..." -- PROGRAM...
# The host's lane runs PROGRAM... one at a time in the foreground (the
# unit and integration tests, the sanitized suite, the packages: they
# share the host's BPF, perf events and PostgreSQL, and measure CPU
# time); the BESIDE lane runs at the same time, niced, what shares
# nothing with them: the kernel matrix (qemu guests with kernels of
# their own) and the fuzzers (CPU only). The BESIDE lane's output is
# printed after the host's, then one line for both: "N passed, N failed"
# (exit status 0 only when nothing failed). Each lane says how long it
# took; tests/run.sh says it of each program.
set -u
BUILD=${BUILD:-build}
beside=$1
shift
[ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
log="$BUILD/lane-beside.log"
host_log=$(mktemp /tmp/ebprof-lane-host.XXXXXX)
trap 'rm -f "$host_log"' EXIT
start=$(date +%s)
bpid=""
if [ -n "$beside" ]; then
	mkdir -p "$BUILD"
	echo "lanes: running beside the host's tests: $beside (output in $log, printed at the end)"
	# shellcheck disable=SC2086
	( nice -n 5 "$root/tests/run.sh" $beside >"$log" 2>&1
	  echo "lane took $(($(date +%s) - start)) s" >>"$log" ) &
	bpid=$!
fi
"$root/tests/run.sh" "$@" | tee "$host_log"
echo "lanes: the host's lane took $(($(date +%s) - start)) s"
if [ -n "$bpid" ]; then
	wait "$bpid"
	echo "=== the lane beside (kernel matrix, fuzzers):"
	cat "$log"
fi
# the totals of both lanes: each log's last "N passed, N failed"
total() { grep -a '^[0-9]* passed, [0-9]* failed$' "$1" 2>/dev/null | tail -1; }
a=$(total "$host_log")
b=$([ -n "$bpid" ] && total "$log" || echo "0 passed, 0 failed")
[ -n "$a" ] || a="0 passed, 1 failed" # the host's lane gave no result
[ -n "$b" ] || b="0 passed, 1 failed"
p=$(($(echo "$a" | cut -d' ' -f1) + $(echo "$b" | cut -d' ' -f1)))
f=$(($(echo "$a" | cut -d' ' -f3) + $(echo "$b" | cut -d' ' -f3)))
echo "make test took $(($(date +%s) - start)) s of tests (both lanes)"
echo "$p passed, $f failed"
[ "$f" = 0 ]
