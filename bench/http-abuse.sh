#!/bin/bash
# The agent's HTTP API under abuse: latency of well-formed GET /metrics
# requests (median, p99, max of PROBES) while IDLE connections are held
# open (reopened as the server closes silent ones) and FLOODERS threads
# send malformed requests (random bytes, a 40 kB header, a bad method,
# truncated and mis-sized bodies, a 20 kB URL, 3000 headers, bad chunks);
# the agent's thread count and RSS before and during. The driver is
# bench/http-abuse.py. EBPROF=path runs another build (e.g. an older one),
# TAG=name goes into the report's file name.
# Writes bench/results/http-abuse-<date>.md. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
EBPROF=${EBPROF:-$BUILD/ebprof}
export IDLE=${IDLE:-500} PROBES=${PROBES:-200} FLOODERS=${FLOODERS:-4}

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || true # the driver holds IDLE sockets
work=$(mktemp -d /tmp/ebprof-bench-XXXXXX)
agent_pid=""
cleanup() { [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$EBPROF" agent --config /dev/null --output-dir "$work/profiles" --http-listen "127.0.0.1:$http_port" 2>"$work/agent.log" &
agent_pid=$!
until grep -q 'listening on' "$work/agent.log"; do sleep 0.1; done
sleep 2
python3 bench/http-abuse.py "$http_port" "$agent_pid" >"$work/out.txt"
v() { awk -v k="$1" '$1 == k {print $2}' "$work/out.txt"; }

out="bench/results/http-abuse-$(date +%Y%m%d-%H%M)${TAG:+-$TAG}.md"
{
	echo "# ebprof HTTP API under abuse — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`${TAG:+TAG=$TAG }${EBPROF:+EBPROF=$EBPROF }IDLE=$IDLE PROBES=$PROBES FLOODERS=$FLOODERS bench/http-abuse.sh\`"
	echo
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg); kernel $(uname -r)"
	echo "- \`$EBPROF\` ($("$EBPROF" --version | cut -d' ' -f2-)): \`ebprof agent --config /dev/null\` (its defaults) with the API on 127.0.0.1"
	echo "- abuse: $IDLE idle connections held (at least $(v held_min) open at any check), $(v malformed_sent) malformed requests from $FLOODERS threads during the probes"
	echo "- probes: $PROBES \`GET /metrics\` on a new connection each, 50 ms apart; $(v probes_failed) failed or not 200"
	echo
	echo "| GET /metrics | median | p99 | max |"
	echo "| --- | --- | --- | --- |"
	echo "| quiet (20 before the abuse) | $(v quiet_median_ms) ms | | $(v quiet_max_ms) ms |"
	echo "| under abuse (answered ones) | $(v median_ms) ms | $(v p99_ms) ms | $(v max_ms) ms |"
	echo
	echo "| agent | before | during (max) | 7 s after |"
	echo "| --- | --- | --- | --- |"
	echo "| threads | $(v threads_before) | $(v threads_max) | $(v threads_after) |"
	echo "| RSS | $(v rss_before_kib) KiB | $(v rss_max_kib) KiB | $(v rss_after_kib) KiB |"
} >"$out"
cat "$out"
echo "written: $out"
