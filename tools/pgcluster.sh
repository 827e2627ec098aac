#!/bin/sh
# A throwaway PostgreSQL cluster from Debian's packages, for `make run`,
# the benchmarks and the tests. Runs as root; the server runs as the
# postgres user, listens only on a Unix socket inside DIR.
#
#   pgcluster.sh start DIR [PORT]   initdb + start; prints "port=N pid=N"
#   pgcluster.sh init-bench DIR SCALE
#   pgcluster.sh stop DIR           stop and remove DIR
#   pgcluster.sh template DIR SCALE initdb + pgbench -i, stopped: DIR/data
#                                   for EBPROF_PG_TEMPLATE
# EBPROF_PG_OPTS: more server options for start ("-c max_connections=1100").
# EBPROF_PG_TEMPLATE=DIR: start copies DIR/data instead of running initdb
# (a guest under TCG spends a minute in initdb and pgbench -i; the kernel
# matrix makes the template once on the host).
set -eu

# EBPROF_PG_BINDIR: another PostgreSQL's bin directory (a version Debian
# does not ship, built by hand) instead of the newest installed.
bindir() {
	if [ -n "${EBPROF_PG_BINDIR:-}" ]; then
		[ -x "$EBPROF_PG_BINDIR/initdb" ] && [ -x "$EBPROF_PG_BINDIR/pg_ctl" ] || {
			echo "pgcluster: EBPROF_PG_BINDIR=$EBPROF_PG_BINDIR: no initdb and pg_ctl there" >&2
			exit 1
		}
		echo "$EBPROF_PG_BINDIR"
		return
	fi
	v=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)
	[ -n "$v" ] || { echo "pgcluster: PostgreSQL server not installed (apt-get install postgresql)" >&2; exit 1; }
	echo "/usr/lib/postgresql/$v/bin"
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + $$ % 20000))
}

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|init-bench|stop|template DIR [ARG]" >&2; exit 2; }
case "$cmd" in
start)
	bin=$(bindir)
	port=${3:-$(free_port)}
	mkdir -p "$dir"
	chown postgres: "$dir"
	chmod 755 "$dir"
	if [ -n "${EBPROF_PG_TEMPLATE:-}" ]; then
		cp -a "$EBPROF_PG_TEMPLATE/data" "$dir/data" || exit 1
	elif ! runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2; exit 1
	fi
	if ! runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-p $port -k $dir -c listen_addresses='' -c fsync=off ${EBPROF_PG_OPTS:-}" start >/dev/null 2>&1; then
		cat "$dir/server.log" >&2; exit 1
	fi
	echo "port=$port pid=$(head -1 "$dir/data/postmaster.pid")"
	;;
init-bench)
	port=$(sed -n 4p "$dir/data/postmaster.pid")
	pgbench -i -q -s "${3:-1}" -h "$dir" -p "$port" -U postgres postgres >"$dir/pgbench-init.log" 2>&1 ||
		{ cat "$dir/pgbench-init.log" >&2; exit 1; }
	;;
template)
	bin=$(bindir)
	rm -rf "$dir"
	out=$(EBPROF_PG_TEMPLATE= sh "$0" start "$dir") || exit 1
	sh "$0" init-bench "$dir" "${3:-1}" || exit 1
	runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || exit 1
	rm -f "$dir/server.log" "$dir/initdb.log" "$dir/pgbench-init.log"
	;;
stop)
	bin=$(bindir)
	[ -d "$dir/data" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
	rm -rf "$dir"
	;;
*)
	echo "usage: $0 start|init-bench|stop|template DIR [ARG]" >&2; exit 2
	;;
esac
