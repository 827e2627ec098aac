#!/bin/sh
# `make run`: record the postgres-related processes on their defaults and
# say where the profile went. When no PostgreSQL runs here, start a
# throwaway cluster under pgbench -S load for the recording, then stop it.
set -eu
BUILD=${BUILD:-build}
EBPROF="$BUILD/ebprof"
SECONDS_TO_RECORD=${SECONDS_TO_RECORD:-10}
outdir=$(mktemp -d /tmp/ebprof-run-XXXXXX)
out="$outdir/profile.pb.gz"
pgdir=""

cleanup() {
	[ -n "$pgdir" ] && tools/pgcluster.sh stop "$pgdir"
	[ -n "${bench:-}" ] && kill "$bench" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "make run: ebprof loads BPF programs; run it as root (sudo make run)" >&2
	exit 1
fi

if ! pgrep -x 'postgres|postmaster' >/dev/null 2>&1; then
	pgdir=$(mktemp -d /tmp/ebprof-pg-XXXXXX)
	echo "No PostgreSQL is running here: starting a throwaway cluster in $pgdir under pgbench -S load."
	info=$(tools/pgcluster.sh start "$pgdir")
	port=$(echo "$info" | sed -n 's/port=\([0-9]*\).*/\1/p')
	tools/pgcluster.sh init-bench "$pgdir" 5
	pgbench -n -S -c 2 -j 2 -T $((SECONDS_TO_RECORD + 5)) -h "$pgdir" -p "$port" -U postgres postgres \
		>"$outdir/pgbench.log" 2>&1 &
	bench=$!
	sleep 1
fi

echo "Recording the postgres-related processes for ${SECONDS_TO_RECORD}s at 99 Hz (Ctrl-C stops early)..."
"$EBPROF" record -F 99 -d "$SECONDS_TO_RECORD" -o "$out"
echo
echo "Profile written to $out"
echo "Top functions (go tool pprof -top):"
HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} go tool pprof -top -nodecount=15 "$out" 2>/dev/null | sed 's/^/  /'
echo
echo "Open it with:  go tool pprof -http=localhost:8080 $out"
echo "          or:  go tool pprof -top $out"
