#!/bin/bash
# The first second of new processes: fixtures/fork_burst (20 children
# burning 100 ms of CPU each in child_burn, called from main; frame
# pointers) under
#  - the agent (-F 99 --interval 2, --comm fork_burst), started before the
#    program: the parent is new to it, as a program started on a host
#    already profiled;
#  - `record -p PARENT` (the parent seeded at the start, its children new);
# its children forked (fork) or exec'ing the fixture again (exec: a new
# address space), one after another or all at once (-par). The fixture is
# compiled for every run with a build-id of its own, so its unwind table is
# compiled from its CFI, not read from the disk cache: a binary new to the
# agent.
#
# Per configuration, medians (and ranges) over ROUNDS runs of: the share of
# the children's samples whose stack has main below child_burn; samples
# whose user frames are all unnamed; samples marked [truncated: ...];
# children without one sample of the chain; and, over every child of every
# run, the time from its exec (or fork) to its mappings and unwind tables
# in place (the agent's debug line), with how many children got there
# before they exited.
#
#   bench/first-second.sh [ROUNDS]   (default 5)
#   EBPROF=path/to/ebprof (default $BUILD/ebprof), CONFIGS="agent:fork ..."
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${1:-5}
BUILD=${BUILD:-build}
EBPROF=${EBPROF:-$BUILD/ebprof}
CONFIGS=${CONFIGS:-"agent:fork agent:exec agent:fork-par agent:exec-par record:fork record:exec record:exec-par"}
make --no-print-directory BUILD="$BUILD" "$BUILD/bench/pprofutil" >/dev/null
tmp=$(mktemp -d /tmp/ebprof-first-second-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The fixture with a build-id never seen before.
fresh_fixture() {
	cc -O0 -g -fno-omit-frame-pointer \
		-Wl,--build-id=0x"$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')" \
		-o "$tmp/fork_burst" tests/fixtures/fork_burst.c
}

# wait_log FILE TEXT: until FILE has a line with TEXT (at most 30 s).
wait_log() {
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no '$2' in $1" >&2
	return 1
}

# run_agent DIR FIXTURE-ARGS...
run_agent() {
	local d=$1 ag
	shift
	printf 'http-listen = ""\n' >"$d/conf"
	"$EBPROF" agent --config "$d/conf" -F 99 --interval 2 --output-dir "$d/profiles" \
		--comm fork_burst -vv 2>"$d/log" &
	ag=$!
	wait_log "$d/log" "sampling at"
	"$tmp/fork_burst" "$@" >"$d/fx.out"
	sleep 3 # an interval boundary after the last child
	kill -TERM "$ag"
	wait "$ag"
	find "$d/profiles" -name '*.pb.gz' -print0 | xargs -0 -r "$BUILD/bench/pprofutil" pstacks >"$d/pstacks"
}

# run_record DIR FIXTURE-ARGS...
run_record() {
	local d=$1 rec line
	shift
	coproc FX { "$tmp/fork_burst" --wait "$@"; }
	read -r line <&"${FX[0]}"
	"$EBPROF" record -p "${line#pid=}" -F 99 -vv -o "$d/p.pb.gz" 2>"$d/log" &
	rec=$!
	wait_log "$d/log" "following"
	sleep 0.5
	echo go >&"${FX[1]}"
	cat <&"${FX[0]}" >"$d/fx.out"
	wait "$rec"
	"$BUILD/bench/pprofutil" pstacks "$d/p.pb.gz" >"$d/pstacks"
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p; s/^$1=\([^ ]*\).*/\1/p"; }
range() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s-%s", lo, hi}'; }

echo "| run | children | chain main -> child_burn, % of their samples (median, range) | all-unknown samples | truncated, % | children without the chain | ready before exit | exec/fork -> tables ready, ms (median, p90, max) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for cfg in $CONFIGS; do
	how=${cfg%%:*}
	mode=${cfg#*:}
	args=()
	case "$mode" in *exec*) args+=(--exec) ;; esac
	case "$mode" in *par*) args+=(--parallel) ;; esac
	: >"$tmp/lines"
	for r in $(seq 1 "$ROUNDS"); do
		d="$tmp/$how-$mode-$r"
		mkdir -p "$d"
		fresh_fixture
		"run_$how" "$d" "${args[@]}"
		python3 bench/first_second.py "$d/fx.out" "$d/pstacks" "$d/log" >>"$tmp/lines"
	done
	chain=$(field chain_pct <"$tmp/lines")
	ready_ms=$(field ready_ms <"$tmp/lines" | tr ',' '\n' | grep -v '^-$' || true)
	nready=$(echo "$ready_ms" | grep -c . || true)
	p90=$(echo "$ready_ms" | sort -g | awk '{a[NR] = $1} END {i = int(NR * 0.9 + 0.5); if (i < 1) i = 1; print NR ? a[i] : "-"}')
	printf "| %s %s | %s | %s (%s) | %s (%s) | %s | %s (%s) | %s of %s | %s, %s, %s |\n" \
		"$how" "$mode" "$(field children <"$tmp/lines" | median)" \
		"$(echo "$chain" | median)" "$(echo "$chain" | range)" \
		"$(field unknown <"$tmp/lines" | median)" "$(field unknown <"$tmp/lines" | range)" \
		"$(field truncated_pct <"$tmp/lines" | median)" \
		"$(field without_chain <"$tmp/lines" | median)" "$(field without_chain <"$tmp/lines" | range)" \
		"$nready" "$(field children <"$tmp/lines" | awk '{s += $1} END {print s}')" \
		"$(echo "$ready_ms" | median)" "$p90" "$(echo "$ready_ms" | sort -g | tail -1)"
done
