#!/bin/sh
# `make run`: the agent on its defaults (19 Hz, a profile per process every
# 60 s into /var/lib/ebprof/profiles), until Ctrl-C. When no PostgreSQL
# runs here, a throwaway cluster under pgbench -S load is started for the
# run and stopped afterwards. Extra agent flags: make run ARGS='...'.
set -eu
BUILD=${BUILD:-build}
EBPROF="$BUILD/ebprof"
OUTPUT_DIR=/var/lib/ebprof/profiles
pgdir=""
bench=""

if [ "$(id -u)" != 0 ]; then
	echo "make run: ebprof loads BPF programs; run it as root (sudo make run)" >&2
	exit 1
fi

cleanup() {
	[ -n "$bench" ] && kill "$bench" 2>/dev/null
	[ -n "$pgdir" ] && tools/pgcluster.sh stop "$pgdir"
	true
}
trap cleanup EXIT

if ! pgrep -x 'postgres|postmaster' >/dev/null 2>&1; then
	pgdir=$(mktemp -d /tmp/ebprof-pg-XXXXXX)
	echo "No PostgreSQL is running here: starting a throwaway cluster in $pgdir under pgbench -S load."
	info=$(tools/pgcluster.sh start "$pgdir")
	port=$(echo "$info" | sed -n 's/port=\([0-9]*\).*/\1/p')
	tools/pgcluster.sh init-bench "$pgdir" 5
	pgbench -n -S -c 2 -j 2 -T 86400 -h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
	bench=$!
fi

since=$(date '+%Y-%m-%dT%H:%M:%S')
echo "Starting the agent on its defaults; profiles go to $OUTPUT_DIR (one per process per minute)."
echo "Press Ctrl-C to stop it."
# The agent flushes its last interval on SIGINT; keep the script alive.
trap 'true' INT
"$EBPROF" agent ${ARGS:-} || true
trap - INT
echo
echo "Profiles stored since $since:"
"$EBPROF" ls --dir "$OUTPUT_DIR" --from "$since" 2>/dev/null | tail -20 || echo "  (none)"
echo
echo "Merge them into one profile and open it:"
echo "  $EBPROF merge --dir $OUTPUT_DIR --from $since -o /tmp/merged.pb.gz"
echo "  go tool pprof -http=localhost:8080 /tmp/merged.pb.gz"
echo "Only the checkpointer:  $EBPROF ls --label backend_type=checkpointer"
echo "Statements side by side: $EBPROF flamegraph --group-by query /tmp/merged.pb.gz -o /tmp/q.svg"
echo "CPU by statement, live:  $EBPROF top"
