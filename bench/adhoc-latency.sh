#!/bin/bash
# Latency of ad hoc flamegraphs from the agent's HTTP API on PostgreSQL
# under pgbench -S: each `GET /profile/cpu?seconds=S&format=svg` should
# answer within S seconds plus 300 ms. Reports the overhead (total time
# minus S) of RUNS requests, median and range, and the same for pprof.
# Writes bench/results/adhoc-latency-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
SECS=${SECS:-5}
SCALE=${SCALE:-10}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
command -v curl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null

. bench/lib.sh
bench_cluster bench "$SCALE"
trap 'kill "${bench_pid:-0}" 2>/dev/null; bench_cleanup' EXIT
total=$(( (SECS + 2) * RUNS * 2 + 30 ))
pgbench -n -S -c 2 -j 2 -T "$total" -h "$pgdir" -p "$port" -U postgres postgres >/dev/null 2>&1 &
bench_pid=$!
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 3099)
"$BUILD/ebprof" agent --config /dev/null --output-dir "$work/profiles" --http-listen "127.0.0.1:$http_port" 2>"$work/agent.log" &
agent_pid=$!
until grep -q 'sampling at' "$work/agent.log"; do sleep 0.1; done
sleep 2

: >"$work/svg.txt"; : >"$work/pprof.txt"
for i in $(seq 1 "$RUNS"); do
	for fmt in svg pprof; do
		t=$(curl -sf -o "$work/out-$i.$fmt" -w '%{time_total}' \
			"http://127.0.0.1:$http_port/profile/cpu?seconds=$SECS&format=$fmt")
		echo "$(echo "($t - $SECS) * 1000" | bc -l)" >>"$work/$fmt.txt"
	done
done

range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.0f–%.0f", lo, hi}'; }
out="bench/results/adhoc-latency-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof ad hoc profile latency — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`RUNS=$RUNS SECS=$SECS SCALE=$SCALE bench/adhoc-latency.sh\`"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
	echo "- ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-): the agent on its defaults beside the ad hoc profiles"
	echo "- workload: PostgreSQL $(pgbench --version | awk '{print $3}'), \`pgbench -S -c 2 -j 2\`, scale $SCALE"
	echo "- requests: \`curl 'http://127.0.0.1:PORT/profile/cpu?seconds=$SECS&format=FMT'\`, $RUNS of each, alternating"
	echo
	echo "| format | time beyond seconds=$SECS, ms: median (range) | size of the last answer |"
	echo "| --- | --- | --- |"
	echo "| svg | $(median <"$work/svg.txt" | xargs printf '%.0f') ($(range <"$work/svg.txt")) | $(stat -c %s "$work/out-$RUNS.svg") B |"
	echo "| pprof (gzip) | $(median <"$work/pprof.txt" | xargs printf '%.0f') ($(range <"$work/pprof.txt")) | $(stat -c %s "$work/out-$RUNS.pprof") B |"
	echo
	echo "Raw overheads, ms: svg $(tr '\n' ' ' <"$work/svg.txt" | xargs printf '%.0f '); pprof $(tr '\n' ' ' <"$work/pprof.txt" | xargs printf '%.0f ')"
} >"$out"
cat "$out"
echo "written: $out"
