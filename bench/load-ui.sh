#!/bin/bash
# The collector's database load view (issue 31, item 4): the web UI's first
# paint (page load to drawn, headless Chromium) of the load view
# (/?mode=load: GET /api/ui/load reads every CPU and off-CPU profile of the
# range) over an hour of a PostgreSQL host, against its peer in the same
# run: the flamegraph view of the same hour's CPU profiles (/api/ui/data,
# merged through the span cache).
#  - the profiles: real per-process ones, the agent (cpu,offcpu, -F 19,
#    10-s intervals) on a pgbench -S -c 4 load with 2 sessions blocked on a
#    row lock; pushed HOSTS_MIN (60) times each 60 s apart, as a host at
#    the agent's 60-s interval would push them in an hour;
#  - RUNS (5) paints of each view alternated, after a first one of each
#    (a fresh collector: spans made then), medians.
# Writes bench/results/load-ui-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-5} MINUTES=${MINUTES:-60}
build=${BUILD:-build}
bin=$build/ebprof
make -s all browser-deps
bench_cluster load-ui 5
serve_pid=""
trap '[ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true; bench_cleanup' EXIT
P="psql -X -At -h $pgdir -p $port -U postgres postgres"
# two sessions wait on a row the first holds (idle in its transaction)
(echo "BEGIN; SELECT abalance FROM pgbench_accounts WHERE aid = 1 FOR UPDATE;"; sleep 40) | $P >/dev/null &
sleep 1
for _ in 1 2; do $P -c "UPDATE pgbench_accounts SET abalance = 0 WHERE aid = 1" >/dev/null 2>&1 & done
pgbench -n -S -c 4 -j 2 -T 30 -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
sleep 1
$bin agent --profile-types cpu,offcpu -F 19 --interval 10 --output-dir "$work/agent" \
	--queue-dir "$work/queue" --http-listen "" 2>"$work/agent.log" &
agent_pid=$!
sleep 21
kill -INT "$agent_pid"
wait "$agent_pid" || true
agent_pid=""
mapfile -t src < <(find "$work/agent" -name '*.pb.gz' | sort | awk -F/ '{print}' )
[ "${#src[@]}" -gt 0 ] || { echo "no agent profiles" >&2; exit 1; }
store=$work/store
serve_start
# one interval's profiles (the agent's first full one) pushed once a minute
python3 - "$base" "$MINUTES" "${src[@]}" <<'PY'
import http.client, sys, urllib.parse, datetime, re, collections
base, minutes, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
u = urllib.parse.urlparse(base)
c = http.client.HTTPConnection(u.hostname, u.port)
by = collections.defaultdict(list)
for f in files:
    by[re.sub(r'.*/', '', f)[:6]].append(f)
stamps = sorted(by)
one = by[stamps[1] if len(stamps) > 2 else stamps[0]]
t0 = datetime.datetime(2026, 1, 1)
for m in range(minutes):
    at = (t0 + datetime.timedelta(seconds=60 * m)).strftime('%Y-%m-%dT%H:%M:%S')
    for f in one:
        typ = 'block' if f.endswith('.offcpu.pb.gz') else 'cpu'
        pid = re.search(r'-(\d+)-', f).group(1)
        c.request('POST', f'/api/0/profiles?service=pghost&type={typ}&labels=pid={pid}&created_at={at}',
                  open(f, 'rb').read())
        r = c.getresponse(); r.read()
        if r.status != 200:
            sys.exit(f'push {f}: {r.status}')
print(f"{len(one)} profiles an interval", file=sys.stderr)
PY
nprof=$(sqlite3 "$store/catalog.sqlite" "SELECT count(*) FROM profiles")
serve_stop
to=$(date -u -d "@$((1767225600 + 60 * MINUTES))" +%Y-%m-%dT%H:%M:%S)
q="service=pghost&from=2026-01-01T00:00:00&to=$to"
serve_start
for r in $(seq 0 "$RUNS"); do
	NODE_PATH=$build/browser/node_modules node bench/ui_paint.js "$base/?$q&mode=load" >>"$work/paint-load.txt"
	NODE_PATH=$build/browser/node_modules node bench/ui_paint.js "$base/?$q&type=cpu" >>"$work/paint-flame.txt"
done
curl -sf -o "$work/load.json" "$base/api/ui/load?$q"
t0=$(date +%s.%N)
for _ in $(seq "$RUNS"); do curl -sf -o /dev/null "$base/api/ui/load?$q"; done
t1=$(date +%s.%N)
rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$serve_pid/status")
serve_stop
out=bench/results/load-ui-$(date +%Y%m%d-%H%M).md
lmed=$(tail -n +2 "$work/paint-load.txt" | awk '{print $1}' | median)
fmed=$(tail -n +2 "$work/paint-flame.txt" | awk '{print $1}' | median)
{
	echo "# The database load view's first paint, $(date -u +%FT%TZ)"
	echo
	echo "Command: \`sudo RUNS=$RUNS MINUTES=$MINUTES bench/load-ui.sh\` ($(git rev-parse --short HEAD))."
	echo "$(nproc) CPUs, kernel $(uname -r); a shared, noisy machine."
	echo
	echo "$nprof stored profiles: one agent interval's real CPU and off-CPU profiles of a"
	echo "PostgreSQL host (pgbench -S -c 4, 2 sessions on a row lock) pushed once a minute"
	echo "for $MINUTES minutes; the views over that hour (120 buckets of 30 s). Each profile"
	echo "covers 10 s of its minute, so the averages are a sixth of the load the host had;"
	echo "what this measures is the cost of reading and drawing them."
	echo
	echo "| view | first paint, fresh collector: ms | median of $RUNS more: ms | runs: ms |"
	echo "| --- | --- | --- | --- |"
	echo "| load (/?mode=load) | $(head -1 "$work/paint-load.txt" | cut -d' ' -f1) | $lmed | $(awk '{print $1}' "$work/paint-load.txt" | tr '\n' ' ')|"
	echo "| flamegraph, CPU (peer) | $(head -1 "$work/paint-flame.txt" | cut -d' ' -f1) | $fmed | $(awk '{print $1}' "$work/paint-flame.txt" | tr '\n' ' ')|"
	echo
	echo "Load view / flamegraph view (medians): $(echo "scale=2; $lmed / $fmed" | bc)x."
	echo "GET /api/ui/load alone: $(echo "scale=3; ($t1 - $t0) / $RUNS" | bc) s a request (mean of $RUNS);"
	echo "the collector's peak RSS $rss MiB."
	echo
	echo "What was drawn: load \`$(tail -1 "$work/paint-load.txt" | cut -d' ' -f2-)\`;"
	echo "flamegraph \`$(tail -1 "$work/paint-flame.txt" | cut -d' ' -f2-)\`."
	echo "Load averages: \`$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["body"]["average"])' "$work/load.json")\`."
	echo
	echo "The load view reads every CPU and off-CPU profile of the range (no span cache:"
	echo "its buckets need each profile's time); the flamegraph merges spans cached whole."
} >"$out"
echo "wrote $out"
cat "$out"
