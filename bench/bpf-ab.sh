#!/bin/bash
# The BPF sampling program of two builds side by side, in the same run:
# `ebprof record` of build A and of build B attached to the same fixture
# (deep_recurse at DEPTH frames) at the same time, so both programs run on
# the same ticks under the same conditions (on a VM, steal time makes the
# cost of one build measured alone swing 5x between runs). Per round: ns
# per program run of each (kernel.bpf_stats_enabled), and B/A; then the
# medians. A is started first, so its program has the lower id.
#   bench/bpf-ab.sh BUILD_A BUILD_B [ROUNDS [DEPTH [MODE]]]
# e.g. git worktree add /tmp/old HEAD~1 && make -C /tmp/old all
#      build/fixtures/stacks/deep_recurse; bench/bpf-ab.sh /tmp/old/build build
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
A=${1:?build directory A}
B=${2:?build directory B}
ROUNDS=${3:-5}
DEPTH=${4:-30}
MODE=${5:-dwarf}
FIX=$B/fixtures/stacks/deep_recurse
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'bpf_stats_restore; rm -rf "$tmp"' EXIT
bpf_stats_on

stats() { # "ID NS CNT" of the sampling program of each recorder ($ra, $rb),
	# found by the program ids of its file descriptors: not those of other
	# ebprof processes the host may run meanwhile
	bpftool -j prog show | python3 -c '
import glob, json, sys
mine = set()
for pid in sys.argv[1:]:
    for f in glob.glob("/proc/%s/fdinfo/*" % pid):
        try:
            for line in open(f):
                if line.startswith("prog_id:"):
                    mine.add(int(line.split()[1]))
        except OSError:
            pass
for p in json.load(sys.stdin):
    if p.get("type") == "perf_event" and (p.get("name") or "").startswith("do_sample") and \
            p["id"] in mine:
        print(p["id"], p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$ra" "$rb"
}

echo "| round | A ns/run | B ns/run | B/A |"
echo "|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
	coproc FX { exec "$FIX" 14 "$DEPTH"; }
	fxpid=$FX_PID
	read -r line <&"${FX[0]}"
	pid=${line#pid=}
	"$A/ebprof" record --unwind "$MODE" -p "$pid" -d 13 -o "$tmp/a.pb.gz" 2>/dev/null &
	ra=$!
	sleep 0.7
	"$B/ebprof" record --unwind "$MODE" -p "$pid" -d 13 -o "$tmp/b.pb.gz" 2>/dev/null &
	rb=$!
	sleep 1
	echo go >&"${FX[1]}"
	sleep 1.5
	stats >"$tmp/s1"
	sleep 8
	stats >"$tmp/s2"
	python3 - "$tmp/s1" "$tmp/s2" "$r" <<'EOF' | tee -a "$tmp/rows"
import sys
def read(path):
    return {int(l.split()[0]): tuple(map(int, l.split()[1:])) for l in open(path)}
s1, s2 = read(sys.argv[1]), read(sys.argv[2])
ids = sorted(i for i in s1 if i in s2)
if len(ids) != 2:
    sys.exit("round %s: %d sampling programs, not 2" % (sys.argv[3], len(ids)))
a, b = [(s2[i][0] - s1[i][0]) / max(1, s2[i][1] - s1[i][1]) for i in ids]
print("| %s | %.0f | %.0f | %.2f |" % (sys.argv[3], a, b, b / a if a else 0))
EOF
	wait "$ra" "$rb" 2>/dev/null || true
	kill "$pid" 2>/dev/null || true
	wait "$fxpid" 2>/dev/null || true
done
awk -F'|' '{a[NR] = $3; b[NR] = $4; q[NR] = $5}
	function med(v, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) {t = v[i]; v[i] = v[j]; v[j] = t}
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
	END {printf "| median | %.0f | %.0f | %.2f |\n", med(a, NR), med(b, NR), med(q, NR)}' "$tmp/rows"
