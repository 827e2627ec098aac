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
	[ -n "$agent_pid" ] && kill $agent_pid 2>/dev/null
	tools/pgcluster.sh stop "$pgdir" || true
}

# CPU ticks (user + system, in CLK_TCK units) of process $1.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU time in ns of the threads of process $1 alive now (the scheduler's
# own count, /proc/PID/task/*/schedstat: finer than cpu_ticks' 10 ms).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# Median of the numbers on stdin, one a line (the mean of the middle two
# when there is an even count of them).
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# TPS of `pgbench -n ARGS` on the bench_cluster ($pgdir, $port).
run_pgbench_tps() {
	pgbench -n "$@" -h "$pgdir" -p "$port" -U postgres postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

# The waits `ebprof record --type offcpu -v` counted, from its log $1.
rec_waits() { sed -n 's/.*: \([0-9]*\) waits (.*/\1/p' "$1" | head -1; }

# bpf_stats_on: kernel.bpf_stats_enabled=1 (programs' run_time_ns and
# run_cnt), its value before kept for bpf_stats_restore (call it on exit).
bpf_stats_on() {
	bpf_stats_old=${bpf_stats_old:-$(sysctl -n kernel.bpf_stats_enabled)}
	sysctl -qw kernel.bpf_stats_enabled=1
}
# prog_ids_of PID: the ids of the BPF programs process PID holds (its
# program and link fds), one a line: on a shared host other profilers'
# programs of the same name are not its own.
prog_ids_of() { grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u; }
bpf_stats_restore() { [ -z "${bpf_stats_old:-}" ] || sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_old"; }

# "ID TYPE NAME RUN_TIME_NS RUN_CNT" of every loaded BPF program, one a
# line in bpftool's order (by id); NAME "-" when it has none, the counts 0
# without bpf_stats. Callers add them up with awk (printf "%.0f": exact to
# 2^53 ns).
bpf_progs() {
	bpftool -j prog show | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    print(p["id"], p.get("type", "-"), p.get("name") or "-", p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

# "NS CNT" of $agent_pid's wait sampler programs (waits_visit*, bpf_stats)
waits_iter_stats() {
	bpf_progs | awk -v ids="$(prog_ids_of "$agent_pid" | tr '\n' ' ')" \
		'BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) own[a[i]] = 1 }
		$3 ~ /^waits_visit/ && ($1 in own) { ns += $4; cnt += $5 }
		END { printf "%.0f %.0f\n", ns, cnt }'
}

# waits_record_start VISITS OPTS SECS OUT LOG: offcpu_record_start with
# OPTS, the wait sampler's visit forced (EBPROF_WAITS_VISIT) by VISITS:
# "host" (every thread of the host), "processes" (the targets' threads, a
# link per process, 6.1+), "kfunc" (the targets' threads in one run, 6.7+,
# a WAITS_TARGETS=1 build); anything else ("targets") leaves the session's
# own choice. Back WARM s (default 3) after it logged "sampling at" (its
# start, seconds with 200 backends, is not its cost).
waits_record_start() {
	local v=""
	case "$1" in
	host | processes) v=$1 ;;
	kfunc) v=targets ;;
	esac
	EBPROF_WAITS_VISIT=$v OFFCPU_OPTS="$2" WARM=0 offcpu_record_start "$3" "$4" "$5"
	until grep -qs "sampling at" "$5"; do sleep 0.2; done
	sleep "${WARM:-3}"
}

# waits_per_read VISITS LOG: the threads a read of the wait sampler looked
# at, from record -v's wait sampler line in LOG; exit 1 unless it visited
# as VISITS says (waits_record_start's; "targets": the targets' threads,
# either way)
waits_per_read() {
	local re=$1
	case "$1" in
	kfunc) re=targets ;;
	targets) re="\(targets\|processes\)" ;;
	esac
	grep -q "wait sampler ($re)" "$2" || { echo "bench: not the $1 visit" >&2; exit 1; }
	sed -n 's/.*wait sampler ([a-z]*): \([0-9]*\) visits.*, \([0-9]*\) threads looked at.*/\1 \2/p' \
		"$2" | awk '{ printf "%.1f", $1 ? $2 / $1 : 0 }'
}

# offcpu_record_start SECS OUT LOG: `ebprof record --type offcpu
# $OFFCPU_OPTS -d SECS -v -o OUT 2>LOG` ($BUILD's) in the background as
# $agent_pid, then WARM seconds (default 8): loaded, attached, and past
# the start (symbolizer prewarm).
offcpu_record_start() {
	# shellcheck disable=SC2086
	"$BUILD/ebprof" record --type offcpu ${OFFCPU_OPTS:-} -d "$1" -v -o "$2" 2>"$3" &
	agent_pid=$!
	sleep "${WARM:-8}"
}

# offcpu_record_stop: SIGINT to $agent_pid (it writes its profile and
# exits), waited for.
offcpu_record_stop() {
	kill -INT "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
}

# loader_start OUT OBJECT [PROGRAM...]: $BUILD/bench/switch-floor holding
# OBJECT's programs (or only those named) in the background as
# $loader_pid, its output in OUT; back once they are attached, else exit 1.
loader_start() {
	local out=$1
	shift
	"$BUILD/bench/switch-floor" "$@" >"$out" &
	loader_pid=$!
	for _ in $(seq 50); do
		grep -q attached "$out" && return 0
		sleep 0.1
	done
	echo "bench: the programs of $1 did not attach" >&2
	exit 1
}

# pgws_require: exit 1 unless pg_wait_sampling (Debian's
# postgresql-15-pg-wait-sampling, `make deps`) is installed.
pgws_require() {
	[ -f /usr/lib/postgresql/15/lib/pg_wait_sampling.so ] ||
		{ echo "bench: apt-get install postgresql-15-pg-wait-sampling (make deps)" >&2; exit 1; }
}

# idle_start N: N sessions of the bench_cluster connected and silent
# (psql reading a FIFO that one sleep, $idle_pids, holds open: once it is
# killed, they read its end and quit); idle_stop ends them.
idle_start() {
	idle_pids=""
	[ "$1" != 0 ] || return 0
	[ -p "$work/idle.fifo" ] || mkfifo "$work/idle.fifo"
	sleep 100000 >"$work/idle.fifo" 2>/dev/null </dev/null &
	idle_pids=$!
	for _ in $(seq 1 "$1"); do
		psql -X -q -h "$pgdir" -p "$port" -U postgres postgres <"$work/idle.fifo" >/dev/null 2>&1 &
	done
	sleep 3
}
idle_stop() {
	[ -z "${idle_pids:-}" ] || kill $idle_pids 2>/dev/null || true
	idle_pids=""
	sleep 1
}

# serve_start [BIN [ARGS...]]: a collector (serve) on $store ($bin's by
# default), its log in $work/serve.log; sets serve_pid and base. serve_stop
# stops it.
serve_start() {
	local b=${1:-$bin} port_s=""
	[ $# -gt 0 ] && shift
	"$b" serve --listen 127.0.0.1:0 --store "$store" --retention off "$@" 2>"$work/serve.log" &
	serve_pid=$!
	for _ in $(seq 600); do
		port_s=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$work/serve.log")
		[ -n "$port_s" ] && break
		sleep 0.1
	done
	[ -n "$port_s" ] || { echo "serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
	base="http://127.0.0.1:$port_s"
}
serve_stop() { kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=""; }

# waits_counters PID: "SEEN VISITS SAME IDLE", the wait sampler's BPF
# counters (bpf_shared.h's enum ebprof_stat) of the recorder PID: threads
# looked at, found off the CPU, of them not run since their last visit, and
# idle with their last idle stacks
waits_counters() {
	local ids id names
	names=$(sed -n '/^enum ebprof_stat {/,/^};/p' include/ebprof/bpf_shared.h |
		grep -oE '^\s+STAT_[A-Z_0-9]+' | grep -v STAT_LOSS_END | tr '\n' ' ')
	ids=$(grep -h '^map_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
	id=$(bpftool -j map show | python3 -c '
import json, sys
ids = set(sys.argv[1].split())
print(" ".join(str(m["id"]) for m in json.load(sys.stdin) if m.get("name") == "stats" and str(m["id"]) in ids))' "$ids")
	bpftool -j map dump id "$id" | python3 -c '
import json, sys
names = sys.argv[1].split()
v = {names[e["formatted"]["key"]]: sum(x["value"] for x in e["formatted"]["values"])
     for e in json.load(sys.stdin) if e["formatted"]["key"] < len(names)}
print(v["STAT_WAITS_SEEN"], v["STAT_WAITS_VISITS"], v["STAT_WAITS_SAME"], v["STAT_WAITS_IDLE"])' "$names"
}
