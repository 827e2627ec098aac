# Shared by the bench scripts, sourced from the checkout's top directory:
# a throwaway PostgreSQL cluster and a process's CPU time.

# bench_cluster NAME SCALE: a cluster in a new /tmp/ebprof-NAME-* directory
# ($work), initialized for pgbench at SCALE; sets work, pgdir, port and
# agent_pid="" (set it to the agent's pid: on exit the agent is killed and
# the cluster stopped).
bench_cluster() {
	work=$(mktemp -d "/tmp/ebprof-$1-XXXXXX")
	chmod 755 "$work" # the postgres user must reach the cluster inside
	pgdir="$work/pg"
	agent_pid=""
	trap bench_cleanup EXIT
	info=$(tools/pgcluster.sh start "$pgdir")
	port=$(echo "$info" | sed -n 's/port=\([0-9]*\).*/\1/p')
	tools/pgcluster.sh init-bench "$pgdir" "$2"
}

bench_cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null
	tools/pgcluster.sh stop "$pgdir" || true
}

# CPU ticks (user + system, in CLK_TCK units) of process $1.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
