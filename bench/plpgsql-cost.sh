#!/bin/bash
# The BPF cost of PL/pgSQL frames per sample, on the same ticks: two
# `ebprof record` of one build attached to the same PostgreSQL at the same
# time, A with --no-plpgsql, B with PL/pgSQL frames (the default), so both
# programs run on the same samples under the same conditions (as
# bench/bpf-ab.sh does for two builds). Per round: ns per program run of
# each (kernel.bpf_stats_enabled), B - A and B/A; then the medians. Two
# loads, one at a time:
#   nested   one backend in three nested PL/pgSQL functions
#            (bench.f1 -> bench.f2 -> bench.f3, the work in f3)
#   outside  one backend with plpgsql.so loaded (a DO block each
#            transaction) running a plain SELECT: the walk finds
#            error_context_stack empty
#   bench/plpgsql-cost.sh [ROUNDS [SECS [FREQ [LOADS]]]]
# e.g. bench/plpgsql-cost.sh 7 10 499 "nested outside"
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${1:-5}
SECS=${2:-10}
FREQ=${3:-499}
LOADS=${4:-nested outside}
BUILD=${BUILD:-build}
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
bench_cluster plpgsql-cost 1
tmp=$work/tmp
mkdir -p "$tmp"
trap 'bpf_stats_restore; bench_cleanup' EXIT
bpf_stats_on
pm=$(head -1 "$pgdir/data/postmaster.pid")

psql -X -q -v ON_ERROR_STOP=1 -h "$pgdir" -p "$port" -U postgres postgres <<'EOF'
CREATE SCHEMA bench;
CREATE FUNCTION bench.f3(n integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE s numeric := 0;
BEGIN
  FOR i IN 1..n LOOP
    s := s + sqrt(i::numeric);
  END LOOP;
  RETURN s;
END $$;
CREATE FUNCTION bench.f2(n integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE s numeric := 0;
BEGIN
  FOR i IN 1..5 LOOP
    s := s + bench.f3(n);
  END LOOP;
  RETURN s;
END $$;
CREATE FUNCTION bench.f1(n integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE s numeric := 0;
BEGIN
  FOR i IN 1..5 LOOP
    s := s + bench.f2(n);
  END LOOP;
  RETURN s;
END $$;
EOF
echo "SELECT bench.f1(200);" >"$tmp/nested.sql"
printf 'DO $$ BEGIN END $$;\nSELECT sum(i) FROM generate_series(1, 3000000) i;\n' >"$tmp/outside.sql"

# "NS CNT" of the sampling program (perf_event do_sample*) process $1
# holds: found by its file descriptors, so that the programs of other
# sessions on the machine count for nothing.
prog_of() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }' | sort -u | tr '\n' ' ')
	bpf_progs | awk -v ids=" $ids" '$2 == "perf_event" && $3 ~ /^do_sample/ &&
		index(ids, " " $1 " ") { print $4, $5; exit }'
}

echo "$(uname -r), $(nproc) CPUs, $FREQ Hz, $SECS s a round, $ROUNDS rounds; $(git rev-parse --short HEAD)"
for load in $LOADS; do
	echo
	echo "### $load"
	echo
	echo "| round | A ns/run (--no-plpgsql) | B ns/run | B - A | B/A | runs |"
	echo "|---|---|---|---|---|---|"
	: >"$tmp/rows"
	for r in $(seq 1 "$ROUNDS"); do
		pgbench -n -c 1 -T $((SECS + 12)) -f "$tmp/$load.sql" -h "$pgdir" -p "$port" \
			-U postgres postgres >"$tmp/pgbench.log" 2>&1 &
		bench=$!
		sleep 1
		"$BUILD/ebprof" record --no-plpgsql -F "$FREQ" -p "$pm" -d $((SECS + 9)) \
			-o "$tmp/a.pb.gz" 2>/dev/null &
		ra=$!
		sleep 1.5
		"$BUILD/ebprof" record -v -F "$FREQ" -p "$pm" -d $((SECS + 7)) -o "$tmp/b.pb.gz" \
			2>"$tmp/b.log" &
		rb=$!
		sleep 5 # loaded and attached, also on a busy machine
		a1=$(prog_of "$ra") b1=$(prog_of "$rb")
		sleep "$SECS"
		a2=$(prog_of "$ra") b2=$(prog_of "$rb")
		[ -n "$a1" ] && [ -n "$b1" ] && [ -n "$a2" ] && [ -n "$b2" ] ||
			{ echo "round $r: a program not found" >&2; exit 1; }
		echo "$r $a1 $a2 $b1 $b2" | awk '{
			a = ($4 - $2) / ($5 - $3 > 0 ? $5 - $3 : 1); b = ($8 - $6) / ($9 - $7 > 0 ? $9 - $7 : 1)
			n = $5 - $3 < $9 - $7 ? $5 - $3 : $9 - $7
			printf "| %s | %.0f | %.0f | %+.0f | %.3f | %d |\n", $1, a, b, b - a, a ? b / a : 0, n }' |
			tee -a "$tmp/rows"
		wait "$ra" "$rb" 2>/dev/null || true
		kill "$bench" 2>/dev/null || true
		wait "$bench" 2>/dev/null || true
	done
	awk -F'|' '{a[NR] = $3; b[NR] = $4; d[NR] = $5; q[NR] = $6}
		function med(v, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) {t = v[i]; v[i] = v[j]; v[j] = t}
			return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
		END {printf "| median | %.0f | %.0f | %+.0f | %.3f | |\n", med(a, NR), med(b, NR), med(d, NR), med(q, NR)}' "$tmp/rows"
	grep -h 'PL/pgSQL' "$tmp/b.log" || true
done
