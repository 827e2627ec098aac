#!/bin/bash
# The collector (issue "ebprof serve"):
#  1. Merge of MERGE_N (10 000) stored profiles of a PostgreSQL host, each
#     holding what a 60-s profile at the agent's 19 Hz holds (real ones: the
#     agent at -F 76 with 15-s intervals on a pgbench -S load, pushed N
#     times in turn with times 6 s apart): `ebprof serve`'s
#     /api/0/profiles/merge against `go tool pprof -proto` of the same
#     files, wall time and peak RSS, RUNS runs alternated, each collector
#     freshly started.
#  2. The web UI's first paint (page load to the flamegraph drawn, headless
#     Chromium) of a merged hour (600 profiles) and of a merged day (N,
#     14 400: a host of 10 processes at the agent's 60-s interval): a fresh
#     collector's first paint of each (its merged spans made then), then
#     RUNS more; the same with --span-cache off (every profile merged every
#     time) and, with BASE_BIN=path, an older ebprof.
#  3. List queries over ROWS (100 000) catalogued profiles (rows added to
#     the same catalog with sqlite3): a page of 100, a label that 1% carry,
#     a 10-minute range; RUNS timings each.
# Writes bench/results/serve-<date>.md. Run as root. N=1200 RUNS=2 for a
# quick pass (the "day" is then 2 hours).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-5} N=${N:-14400} MERGE_N=${MERGE_N:-10000} ROWS=${ROWS:-100000}
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

serve_start
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
serve_stop
# the first MERGE_N pushed, as the catalog has them
first=$(date -u -d "@$((1767225600 + 6 * (MERGE_N - 1)))" +%Y-%m-%dT%H:%M:%S)
mapfile -t stored < <(sqlite3 "$store/catalog.sqlite" \
	"SELECT path FROM profiles WHERE created_ns <= $(((1767225600 + 6 * (MERGE_N - 1)) * 1000000000))" |
	sed "s|^|$store/|")
sel="from=2026-01-01T00:00:00&to=$first"
all="from=2025-12-31T00:00:00&to=2026-01-02T00:00:00"

{
	echo "# ebprof serve, $(date -u +%FT%TZ)"
	echo
	echo "$(nproc) CPUs, kernel $(uname -r), $(go version | cut -d' ' -f3)."
	echo "${#src[@]} real per-process profiles of PostgreSQL under pgbench -S -c 4 (the agent"
	echo "at -F 76, 15-s intervals: the samples of a 60-s profile at 19 Hz; median"
	echo "$(ls -l "${src[@]}" | awk '{print $5}' | median) bytes), pushed in turn $N times."
	echo
	echo "## 1. Merge of ${#stored[@]} stored profiles"
	echo
	echo "| run | serve: s | serve: peak RSS MiB | go tool pprof -proto: s | go: peak RSS MiB |"
	echo "| --- | --- | --- | --- | --- |"
} >"$out"
for r in $(seq 1 "$RUNS"); do
	serve_start
	t0=$(date +%s.%N)
	curl -sf -o "$work/serve-merge.pb.gz" "$base/api/0/profiles/merge?service=pghost&type=cpu&$sel"
	t1=$(date +%s.%N)
	s_rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$serve_pid/status")
	serve_stop
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

# 2. UI first paint of an hour and of a day
hour="service=pghost&type=cpu&from=2026-01-01T00:00:00&to=2026-01-01T01:00:00"
dayto=$(date -u -d "@$((1767225600 + 6 * N))" +%Y-%m-%dT%H:%M:%S)
day="service=pghost&type=cpu&from=2026-01-01T00:00:00&to=$dayto"
# paint LABEL BIN [ARGS...]: a fresh collector, each view's first paint then
# RUNS more, and the collector's peak RSS; one table row
paint() {
	local label=$1 b=$2
	shift 2
	serve_start "$b" "$@"
	for v in hour day; do
		url="$base/?${!v}"
		for r in $(seq 0 "$RUNS"); do
			NODE_PATH=$build/browser/node_modules node bench/ui_paint.js "$url"
		done >"$work/paint-$v.txt"
		curl -sf -o "$work/data-$v.json" "$base/api/ui/data?${!v}"
	done
	rss=$(awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$serve_pid/status")
	serve_stop
	printf '| %s | %s | %s | %s | %s | %s |\n' "$label" \
		"$(head -1 "$work/paint-hour.txt" | cut -d' ' -f1)" \
		"$(tail -n +2 "$work/paint-hour.txt" | awk '{print $1}' | median)" \
		"$(head -1 "$work/paint-day.txt" | cut -d' ' -f1)" \
		"$(tail -n +2 "$work/paint-day.txt" | awk '{print $1}' | median)" "$rss" >>"$out"
	for v in hour day; do
		echo "$label, $v: $(tail -1 "$work/paint-$v.txt" | cut -d' ' -f2-); ms: $(awk '{print $1}' "$work/paint-$v.txt" | tr '\n' ' ')" >>"$work/paint-notes.txt"
		grep -o '"merge": *{[^}]*}' "$work/data-$v.json" | sed "s/^/  $label, $v, then: /" >>"$work/paint-notes.txt" || true
	done
}
{
	echo
	echo "## 2. UI first paint of a merged hour and a merged day"
	echo
	echo "Page load to the flamegraph drawn, headless Chromium, milliseconds: \`/?$hour\`"
	echo "($(sqlite3 "$store/catalog.sqlite" "SELECT COUNT(*) FROM profiles WHERE created_ns <= 1767229200000000000") profiles) and \`/?$day\` ($N profiles). \"first\": a fresh collector's first"
	echo "paint of the view; then the median of $RUNS more."
	echo
	echo "| collector | hour: first | hour: then | day: first | day: then | peak RSS MiB |"
	echo "| --- | --- | --- | --- | --- | --- |"
} >>"$out"
: >"$work/paint-notes.txt"
[ -z "${BASE_BIN:-}" ] || paint "$("$BASE_BIN" --version 2>&1 | head -1) (BASE_BIN)" "$BASE_BIN"
paint "this one, --span-cache off" "$bin" --span-cache off
paint "this one" "$bin"
{
	echo
	echo '```'
	cat "$work/paint-notes.txt"
	echo '```'
} >>"$out"
# 2. list queries over ROWS rows: the pushed ones and copies of their rows
serve_start
have=$(sqlite3 "$store/catalog.sqlite" 'SELECT COUNT(*) FROM profiles')
serve_stop
sqlite3 "$store/catalog.sqlite" <<EOF
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < $ROWS - $have)
INSERT INTO profiles SELECT printf('%032x', i), 'pghost', 'cpu',
  1767225600000000000 + i * 1000000000, 'profiles/pghost/missing.pb.gz', 1000, 1, 0 FROM k;
INSERT INTO labels SELECT id, 'pid', CAST(1000 + (rowid % 100) AS TEXT) FROM profiles
  WHERE path = 'profiles/pghost/missing.pb.gz';
EOF
serve_start
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
serve_stop

cat "$out"
