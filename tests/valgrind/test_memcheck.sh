#!/bin/sh
# valgrind memcheck of `ebprof record` and of a short agent run on a real
# workload (the BPF program loaded, samples drained, profiles symbolized and
# written): no memory error and 0 bytes definitely lost. The only
# suppressions (libbpf.supp beside this file) are for what valgrind cannot
# see the kernel write through bpf(2); the log of each run is printed when
# a check fails. Needs root (BPF) and valgrind (make deps installs it).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/testlib.sh
BUILD=${BUILD:-build}
EBPROF=$BUILD/ebprof
WORK=$BUILD/fixtures/work_split
SUPP=tests/valgrind/libbpf.supp
tmp=$(mktemp -d /tmp/ebprof-memcheck-XXXXXX)
trap 'kill $wpid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
wpid=""
plan 6

# A workload that runs for secs, its pid in $wpid.
start_work() {
	mkfifo "$tmp/go.$1"
	"$WORK" "$1" <"$tmp/go.$1" >"$tmp/work.$1.out" 2>&1 &
	wpid=$!
	exec 9>"$tmp/go.$1"
}

vg() { # LOG ARGS...: ebprof ARGS under memcheck (run as `vg ... &`: $! is valgrind)
	log=$1
	shift
	exec valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \
		--errors-for-leak-kinds=definite --suppressions="$SUPP" \
		--error-exitcode=99 --log-file="$log" "$EBPROF" "$@"
}

# check NAME LOG RC: the run exited 0 with no error and nothing definitely lost.
check() {
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$2" | tail -1)
	lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$2" | tail -1 | tr -d ,)
	if grep -q "All heap blocks were freed" "$2"; then lost=0; fi
	if [ "$3" = 0 ] && [ "${errors:-x}" = 0 ]; then
		pass "$1: memcheck found no error"
	else
		fail "$1" "exit $3, ${errors:-no} memcheck errors (log follows)"
		grep -v '^--' "$2" | head -80
	fi
	if [ "${lost:-x}" = 0 ]; then
		pass "$1: 0 bytes definitely lost"
	else
		fail "$1" "${lost:-an unknown number of} bytes definitely lost"
		grep -A12 "definitely lost in" "$2" | head -60
	fi
}

command -v valgrind >/dev/null || { fail valgrind "valgrind is not installed"; exit 1; }

# record: a 3 s workload from start to end (-p ends with it).
start_work 3
rc=0
vg "$tmp/record.vg" record -v -p "$wpid" -F 99 -d 60 -o "$tmp/rec.pb.gz" >"$tmp/record.out" 2>&1 &
vpid=$!
# under memcheck ebprof starts ~20-50x slower: the workload waits for it
i=0
while [ "$i" -lt 240 ] && ! grep -q "sampling at" "$tmp/record.out"; do
	sleep 0.5
	i=$((i + 1))
done
echo go >&9
exec 9>&-
wait "$vpid" || rc=$?
check record "$tmp/record.vg" "$rc"
if go tool pprof -top "$tmp/rec.pb.gz" >"$tmp/rec.top" 2>&1 && grep -q burn_three "$tmp/rec.top"; then
	pass "record: the profile written under memcheck reads back with go tool pprof"
else
	fail "record" "the profile does not read back: $(head -3 "$tmp/rec.top" 2>/dev/null)"
fi

# agent: three 1 s intervals of a workload, then SIGTERM (flush and exit).
start_work 300
echo go >&9
exec 9>&-
rc=0
vg "$tmp/agent.vg" agent --config /dev/null -p "$wpid" -F 99 --interval 1 \
	--output-dir "$tmp/store" --http-listen "" >"$tmp/agent.out" 2>&1 &
vpid=$!
i=0
while [ "$i" -lt 240 ] && [ "$(find "$tmp/store" -name '*.pb.gz' 2>/dev/null | wc -l)" -lt 3 ]; do
	sleep 1
	i=$((i + 1))
done
kill -TERM "$vpid"
wait "$vpid" || rc=$?
kill "$wpid" 2>/dev/null
check agent "$tmp/agent.vg" "$rc"
n=$(find "$tmp/store" -name '*.pb.gz' | wc -l)
if [ "$n" -ge 3 ]; then
	pass "agent: $n profiles written under memcheck"
else
	fail "agent" "$n profiles written in 240 s (log: $(tail -3 "$tmp/agent.out"))"
fi
exit $failed
