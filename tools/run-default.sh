#!/bin/sh
# `make run`: the whole loop on one host, until Ctrl-C: `ebprof serve` (the
# collector and its web UI, 127.0.0.1:10100, store /var/lib/ebprof/serve)
# and the agent on its defaults (19 Hz, profiles into
# /var/lib/ebprof/profiles) but a profile per process every 10 s, pushed to
# that collector so the UI is live within seconds. When no PostgreSQL runs
# here, a throwaway cluster under pgbench -S load is started for the run and
# stopped afterwards. Extra agent flags: make run ARGS='...'.
set -eu
BUILD=${BUILD:-build}
EBPROF="$BUILD/ebprof"
OUTPUT_DIR=/var/lib/ebprof/profiles
SERVE_STORE=/var/lib/ebprof/serve
INTERVAL=10
pgdir=""
bench=""
serve=""
serve_log=""

if [ "$(id -u)" != 0 ]; then
	echo "make run: ebprof loads BPF programs; run it as root (sudo make run)" >&2
	exit 1
fi

cleanup() {
	[ -n "$serve" ] && kill "$serve" 2>/dev/null && wait "$serve" 2>/dev/null
	[ -n "$serve_log" ] && rm -f "$serve_log"
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

# The collector: profefe's port, or a free one when it is taken.
start_serve() {
	serve_log=$(mktemp /tmp/ebprof-serve-XXXXXX.log)
	# its own session: Ctrl-C stops the agent first, whose last push it takes
	setsid "$EBPROF" serve --listen "$1" --store "$SERVE_STORE" 2>"$serve_log" &
	serve=$!
	for _ in $(seq 50); do
		port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$serve_log")
		[ -n "$port" ] && return 0
		kill -0 "$serve" 2>/dev/null || break
		sleep 0.1
	done
	serve=""
	return 1
}
if ! start_serve 127.0.0.1:10100 && ! start_serve 127.0.0.1:0; then
	cat "$serve_log" >&2
	exit 1
fi
url="http://127.0.0.1:$port"

since=$(date '+%Y-%m-%dT%H:%M:%S')
echo "Web UI: $url/?range=15m   (live; from another machine: ssh -L $port:127.0.0.1:$port $(hostname))"
echo "Sampling every postgres-related process at 19 Hz; a profile per process every ${INTERVAL} s"
echo "into $OUTPUT_DIR and the collector (store $SERVE_STORE). Ctrl-C stops both."
# The agent flushes its last interval on SIGINT; keep the script alive.
trap 'true' INT
"$EBPROF" agent --interval "$INTERVAL" --push-profefe "$url" ${ARGS:-} || true
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
echo "The collector keeps them: $EBPROF serve --store $SERVE_STORE, then $url/?range=1h"
