#!/bin/bash
# The collector (issue "ebprof serve"):
#  1. Merge of N (10 000) stored profiles of a PostgreSQL host, each holding
#     what a 60-s profile at the agent's 19 Hz holds (real ones: the agent at
#     -F 76 with 15-s intervals on a pgbench -S load, pushed N times in turn
#     with times 6 s apart): `ebprof serve`'s /api/0/profiles/merge against
#     `go tool pprof -proto` of the same files, wall time and peak RSS,
#     RUNS runs alternated, each collector freshly started.
#  2. The web UI's first paint (page load to the flamegraph drawn, headless
#     Chromium) of a merged hour of the host (600 profiles), RUNS times.
#  3. List queries over ROWS (100 000) catalogued profiles (rows added to
#     the same catalog with sqlite3): a page of 100, a label that 1% carry,
#     a 10-minute range; RUNS timings each.
# Writes bench/results/serve-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-5} N=${N:-10000} ROWS=${ROWS:-100000}
build=${BUILD:-build}
bin=$build/ebprof util=$build/bench/pprofutil
make -s all "$build/bench/pprofutil" browser-deps
bench_cluster serve 5
pgbench -n -S -c 4 -j 2 -T 80 -h "$pgdir" -p "$port" -U postgres postgres >"$work/pgbench.log" 2>&1 &
sleep 2
out=bench/results/serve-$(date +%Y%m%d-%H%M).md
store=$work/store
serve_pid=""
trap '[ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true; bench_cleanup' EXIT

# real profiles: a 60-s profile's worth of samples each
$bin agent -F 76 --interval 15 --output-dir "$work/agent" --queue-dir "$work/queue" \
	--http-listen "" 2>"$work/agent.log" &
agent_pid=$!
sleep 64
kill -INT "$agent_pid"
wait "$agent_pid" || true
agent_pid=""
mapfile -t src < <(find "$work/agent" -name '*.pb.gz' -size +2k | sort)
[ "${#src[@]}" -gt 0 ] || { echo "no agent profiles" >&2; exit 1; }

start_serve() {
	$bin serve --listen 127.0.0.1:0 --store "$store" --retention off 2>"$work/serve.log" &
	serve_pid=$!
	for _ in $(seq 100); do
	        port_s=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$work/serve.log")
		[ -n "$port_s" ] && break
		sleep 0.1
	done
	base="http://127.0.0.1:$port_s"
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=""; }

start_serve
# push N profiles, 6 s apart from 2026-01-01T00:00:00, the sources in turn
python3 - "$base" "$N" "${src[@]}" <<'EOF'
import http.client, sys, time, urllib.parse, datetime
base, n, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
u = urllib.parse.urlparse(base)
c = http.client.HTTPConnection(u.hostname, u.port)
bodies = [open(f, 'rb').read() for f in files]
t0 = datetime.datetime(2026, 1, 1)
for i in range(n):
    at = (t0 + datetime.timedelta(seconds=6 * i)).strftime('%Y-%m-%dT%H:%M:%S')
    pid = 1000 + i % len(files)
    c.request('POST', f'/api/0/profiles?service=pghost&type=cpu&labels=pid={pid},host=db1&created_at={at}',
              bodies[i % len(bodies)])
    r = c.getresponse(); r.read()
    if r.status != 200:
        sys.exit(f'push {i}: {r.status}')
EOF
stop_serve
mapfile -t stored < <(find "$store/profiles/pghost" -name '*.pb.gz')
all="from=2025-12-31T00:00:00&to=2026-01-02T00:00:00"

{
	echo "# ebprof serve, $(date -u +%FT%TZ)"
	echo
	echo "$(nproc) CPUs, kernel $(uname -r), $(go version | cut -d' ' -f3)."
	echo "${#src[@]} real per-process profiles of PostgreSQL under pgbench -S -c 4 (the agent"
	echo "at -F 76, 15-s intervals: the samples of a 60-s profile at 19 Hz; median"
	echo "$(ls -l "${src[@]}" | awk '{print $5}' | median) bytes), pushed in turn ${#stored[@]} times."
	echo
	echo "## 1. Merge of ${#stored[@]} stored profiles"
	echo
	echo "| run | serve: s | serve: peak RSS MiB | go tool pprof -proto: s | go: peak RSS MiB |"
	echo "| --- | --- | --- | --- | --- |"
} >"$out"
for r in $(seq 1 "$RUNS"); do
	start_serve
	t0=$(date +%s.%N)
	curl -sf -o "$work/serve-merge.pb.gz" "$base/api/0/profiles/merge?service=pghost&type=cpu&$all"
	t1=$(date +%s.%N)
	s_rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$serve_pid/status")
	stop_serve
	/usr/bin/time -f '%e %M' -o "$work/go.time" go tool pprof -proto "${stored[@]}" \
		>"$work/go-merge.pb.gz" 2>"$work/go.err"
	read -r g_s g_kb <"$work/go.time"
	s_s=$(echo "$t1 - $t0" | bc)
	echo "$s_s $s_rss $g_s $((g_kb / 1024))" >>"$work/merge.runs"
	printf '| %d | %.2f | %s | %.2f | %d |\n' "$r" "$s_s" "$s_rss" "$g_s" $((g_kb / 1024)) >>"$out"
done
s_med=$(awk '{print $1}' "$work/merge.runs" | median)
g_med=$(awk '{print $3}' "$work/merge.runs" | median)
s_mem=$(awk '{print $2}' "$work/merge.runs" | median)
g_mem=$(awk '{print $4}' "$work/merge.runs" | median)
{
	echo
	echo "Medians: serve $s_med s, $s_mem MiB; go tool pprof $g_med s, $g_mem MiB;"
	echo "serve takes $(echo "scale=2; $s_med / $g_med" | bc)x go's time."
	echo "Same samples: serve \`$($util count "$work/serve-merge.pb.gz")\`,"
	echo "go \`$($util count "$work/go-merge.pb.gz")\`."
} >>"$out"

# 3. UI first paint of an hour (600 profiles of the pushed ones)
start_serve
hour="service=pghost&type=cpu&from=2026-01-01T00:00:00&to=2026-01-01T01:00:00"
for r in $(seq 1 "$RUNS"); do
	NODE_PATH=$build/browser/node_modules node bench/ui_paint.js "$base/?$hour"
done >"$work/paint.txt"
stop_serve
{
	echo
	echo "## 2. UI first paint of a merged hour"
	echo
	echo "Page load to the flamegraph drawn, headless Chromium, \`/?$hour\`:"
	echo "$(head -1 "$work/paint.txt" | cut -d' ' -f2-)."
	echo "Milliseconds, $RUNS runs: $(awk '{print $1}' "$work/paint.txt" | tr '\n' ' ')"
	echo "(median $(awk '{print $1}' "$work/paint.txt" | median) ms)."
} >>"$out"
# 2. list queries over ROWS rows: the pushed ones and copies of their rows
start_serve
have=$(sqlite3 "$store/catalog.sqlite" 'SELECT COUNT(*) FROM profiles')
stop_serve
sqlite3 "$store/catalog.sqlite" <<EOF
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $ROWS - $have)
INSERT INTO profiles SELECT printf('%032x', i), 'pghost', 'cpu',
  1767225600000000000 + i * 1000000000, 'profiles/pghost/missing.pb.gz', 1000, 1 FROM k;
INSERT INTO labels SELECT id, 'pid', CAST(1000 + (rowid % 100) AS TEXT) FROM profiles
  WHERE path = 'profiles/pghost/missing.pb.gz';
EOF
start_serve
rows=$(sqlite3 "$store/catalog.sqlite" 'SELECT COUNT(*) FROM profiles')
{
	echo
	echo "## 3. List over $rows catalogued profiles"
	echo
	echo "| query | rows answered | median ms | min | max |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$out"
for q in "limit=100&$all" "labels=pid=1042&$all" \
	"from=2026-01-01T00:10:00&to=2026-01-01T00:20:00"; do
	url="$base/api/0/profiles?service=pghost&type=cpu&$q"
	curl -sf "$url" >/dev/null # warm
	n=$(curl -sf "$url" | grep -o '"id":' | wc -l)
	for r in $(seq 1 "$RUNS"); do
		curl -sf -o /dev/null -w '%{time_total}\n' "$url"
	done | awk '{print $1 * 1000}' >"$work/list.ms"
	echo "| \`$q\` | $n | $(median <"$work/list.ms") | $(sort -n "$work/list.ms" | head -1) | $(sort -n "$work/list.ms" | tail -1) |" >>"$out"
done
stop_serve

cat "$out"
