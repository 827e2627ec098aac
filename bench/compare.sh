#!/bin/bash
# ebprof side by side with the profilers people would use instead, on the
# same PostgreSQL workload in the same run (issue 5):
#
#   baseline (no profiler) | ebprof agent (19 Hz) | ebprof record (99 Hz) |
#   perf record -F 99 -g + perf script | bpftrace profile:hz:99 |
#   bcc profile-bpfcc -F 99 (or the error it fails with) |
#   perf record -F 99 --call-graph dwarf + perf script (issue 32: the peer
#   whose stacks are as true as ours; in the phases of DWARF_PHASES, -S by
#   default), with a section of its own against ebprof record: CPU, peak
#   RSS, output size, stacks reaching main or cut
#
# Workload: a throwaway PostgreSQL from Debian's packages (tools/pgcluster.sh),
# pgbench at scale SCALE, CLIENTS = 2 x cores, two phases: read-only (-S) and
# the TPC-B-like mix without the branch/teller updates (-N). In each phase the
# configurations run RUNS times interleaved (baseline A B C ... baseline A B C
# ... baseline), each run DUR seconds of sampling. Every profiler is stopped
# while pgbench still runs (pgbench runs DUR + TAIL seconds), so the
# processes are alive when a tool symbolizes at exit. bpftrace runs with its
# user symbol cache on (BPFTRACE_CACHE_USER_SYMBOLS=1); one extra run on its
# defaults (phase -S) shows what its default costs.
#
# Figures per run: pgbench TPS and its ratio to the mean of the baseline runs
# before and after it; the profiler's CPU time (user+sys of the tool and its
# children, start-up, shutdown and post-processing included) per wall second
# of sampling; peak RSS; output bytes per minute of sampling; time from the
# end of sampling (the stop signal) to a usable profile; stack quality (see
# bench/stackstats.py). Then microbenchmarks: ebprof's symbolizer against
# addr2line and eu-addr2line on the PostgreSQL addresses seen, and pprof
# encoding of a 60 s, 19 Hz profile of all backends.
#
# Writes bench/results/compare-<date>.md. Run as root; installs the peers
# (linux-perf, bpftrace, bpfcc-tools) but never kernel headers.
# Knobs: RUNS, DUR, TAIL, SCALE, CLIENTS, ENC_DUR, COLD_RUNS, BT_DEFAULT_MAX
# (cap on the bpftrace-defaults run, 0 = skip it), DWARF_PHASES (phases
# with perf --call-graph dwarf: "S", "S N" or ""), PHASES (default "S N");
# KEEP=1 keeps the temporary directory (every tool's output) for
# inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
DUR=${DUR:-15}
TAIL=${TAIL:-2}
BT_DEFAULT_MAX=${BT_DEFAULT_MAX:-150} # cap on the one run of bpftrace on its defaults
SCALE=${SCALE:-10}
NCPU=$(nproc)
CLIENTS=${CLIENTS:-$((2 * NCPU))}
ENC_DUR=${ENC_DUR:-60}
DWARF_PHASES=${DWARF_PHASES-S}
PHASES=${PHASES:-S N}
COLD_RUNS=${COLD_RUNS:-5}
FREQ=99       # ebprof record, perf, bpftrace, bcc
AGENT_FREQ=19 # the agent's default
t_script0=$(date +%s.%N)

log() { echo "compare: $*" >&2; }
[ "$(id -u)" = 0 ] || { echo "compare: run as root" >&2; exit 1; }

# --- prerequisites -------------------------------------------------------
need=""
have() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in time linux-perf bpftrace bpfcc-tools elfutils binutils gcc libelf-dev libdw-dev \
	libiberty-dev zlib1g-dev postgresql postgresql-client python3 procps; do
	have "$p" || need="$need $p"
done
if [ -n "$need" ]; then
	log "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	# --no-install-recommends: no kernel headers come in by the back door
	apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $need >/dev/null; }
fi
[ -x "$BUILD/ebprof" ] || make --no-print-directory "$BUILD/ebprof"
PERF=$(command -v perf)
BPFTRACE=$(command -v bpftrace)
BCC_PROFILE=$(command -v profile-bpfcc || echo /usr/sbin/profile-bpfcc)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
POSTGRES="$PGBIN/postgres"
# No downloads of debug files for anyone (elfutils, perf): the figures are
# those of this host's files.
unset DEBUGINFOD_URLS

# --- helpers, built against the project's objects ------------------------
make --no-print-directory BUILD="$BUILD" "$BUILD/bench/pprofutil" "$BUILD/bench/symbench" >/dev/null
PPROFUTIL="$BUILD/bench/pprofutil"
STACKSTATS="python3 bench/stackstats.py"

# --- cluster, cleanup ----------------------------------------------------
work=$(mktemp -d /tmp/ebprof-compare-XXXXXX)
chmod 755 "$work" # the postgres user must reach the cluster inside
pgdir="$work/pg"
tracked="" # pids of processes we started that may still run
track() { tracked="$tracked $*"; }
untrack() { # pid: waited for, no longer ours to kill
	local p keep=""
	for p in $tracked; do [ "$p" = "$1" ] || keep="$keep $p"; done
	tracked=$keep
}
kill_tree() { # pid: its children first, then itself
	local c
	for c in $(pgrep -P "$1" 2>/dev/null || true); do kill -KILL "$c" 2>/dev/null || true; done
	kill -KILL "$1" 2>/dev/null || true
}
cleanup() {
	local p
	for p in $tracked; do kill -0 "$p" 2>/dev/null && kill_tree "$p"; done
	tools/pgcluster.sh stop "$pgdir" >/dev/null 2>&1 || true
	if [ "${KEEP:-0}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

load0=$(cut -d' ' -f1-3 /proc/loadavg)
info=$(tools/pgcluster.sh start "$pgdir")
port=$(echo "$info" | sed -n 's/port=\([0-9]*\).*/\1/p')
pm=$(echo "$info" | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
log "PostgreSQL on port $port (postmaster $pm), pgbench -i -s $SCALE"
tools/pgcluster.sh init-bench "$pgdir" "$SCALE"
foreign0=$(pgrep -x postgres | grep -vxF -f <(echo "$pm"; pgrep -P "$pm") | wc -l || true)
cluster_pids() { { echo "$pm"; pgrep -P "$pm"; } | paste -sd, -; }

now() { date +%s.%N; }
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", (b - a) * 1000}'; }
times_cpu() { { tail -1 "$1" 2>/dev/null || true; } | awk '{printf "%.3f", $2 + $3}'; } # "%e %U %S %M" -> user+sys
times_rss() { { tail -1 "$1" 2>/dev/null || true; } | awk '{print $4}'; }
fsize() { stat -c %s "$1" 2>/dev/null || echo 0; }

pgbench_start() { # phase logfile
	local opt=-S
	[ "$1" = N ] && opt=-N
	pgbench -n $opt -c "$CLIENTS" -j "$NCPU" -T "$((DUR + TAIL))" -h "$pgdir" -p "$port" -U postgres postgres \
		>"$2" 2>&1 &
	pgb_pid=$!
	track "$pgb_pid"
}
pgbench_tps() { { sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$1" 2>/dev/null || true; } | tail -1; }

perf_fds() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'anon_inode:\[perf_event\]' || true; }
ready() { # config child-pid dir
	case "$1" in
	agent | record) grep -q 'sampling at' "$3/stderr" 2>/dev/null ;;
	bpftrace*) grep -q 'Attaching' "$3/out" 2>/dev/null && [ "$(perf_fds "$2")" -ge "$NCPU" ] ;;
	# perf -p: events per target thread, all open before it enables them;
	# a backend forked before then is sampled through the inherited event
	# but its fork and comm records are not written (not enabled yet):
	# perf knows neither its name nor its mappings, every frame of it is
	# [unknown] (4 of 11 runs in trials that waited for the first
	# descriptor only). Ready once its descriptors have stopped growing
	# for half a second (10 polls).
	perf | perf_dwarf)
		local n
		n=$(perf_fds "$2")
		if [ "$n" -ge 1 ] && [ "$n" = "$perf_prev" ]; then perf_same=$((perf_same + 1)); else perf_same=0; fi
		perf_prev=$n
		[ "$perf_same" -ge 10 ]
		;;
	bcc) [ "$(perf_fds "$2")" -ge 1 ] ;;
	esac
}

# The command lines, as run (PIDS = the cluster's postmaster and children
# at the start of the run, PM = the postmaster, D = the run's directory).
declare -A CMD
CMD[agent]="ebprof agent --config /dev/null --comm '' -p PM -F $AGENT_FREQ --interval 60 --output-dir D/profiles --queue-dir D/queue --http-listen ''   (stopped by SIGTERM)"
CMD[record]="ebprof record -F $FREQ -p PM -v -o D/profile.pb.gz   (stopped by SIGINT)"
CMD[perf]="perf --buildid-dir W/perf-buildids record -q -F $FREQ -g -p PIDS -o D/perf.data   (stopped by SIGINT); then perf --buildid-dir W/perf-buildids script -i D/perf.data > D/perf.txt"
CMD[perf_dwarf]="perf --buildid-dir W/perf-buildids record -q -F $FREQ --call-graph dwarf -p PIDS -o D/perf.data   (stopped by SIGINT); then perf --buildid-dir W/perf-buildids script -i D/perf.data > D/perf.txt"
BT_PROG="profile:hz:$FREQ /pid == PM || curtask->real_parent->tgid == PM/ { @[kstack, ustack] = count(); } interval:s:$DUR { exit(); }"
CMD[bpftrace]="BPFTRACE_CACHE_USER_SYMBOLS=1 bpftrace -e '$BT_PROG' > D/out   (stops itself after $DUR s and prints the map)"
CMD[bpftrace_default]="bpftrace -e '$BT_PROG' > D/out   (the same on bpftrace's defaults: no user symbol cache with ASLR on)"
CMD[bcc]="profile-bpfcc -F $FREQ -f > D/out   (stopped by SIGINT; every process, the stacks of comm postgres counted)"

start_profiler() { # config dir -> sets prof_tpid
	local c=$1 d=$2 T=(/usr/bin/time -f "%e %U %S %M" -o "$d/time")
	case "$c" in
	agent)
		"${T[@]}" "$BUILD/ebprof" agent --config /dev/null --comm '' -p "$pm" -F "$AGENT_FREQ" --interval 60 \
			--output-dir "$d/profiles" --queue-dir "$d/queue" --http-listen '' >"$d/out" 2>"$d/stderr" &
		;;
	record)
		"${T[@]}" "$BUILD/ebprof" record -F "$FREQ" -p "$pm" -v -o "$d/profile.pb.gz" >"$d/out" 2>"$d/stderr" &
		;;
	perf | perf_dwarf)
		local cg=-g pids
		pids=$(cluster_pids)
		perf_prev=-1
		perf_same=0
		[ "$c" = perf_dwarf ] && cg="--call-graph=dwarf"
		"${T[@]}" "$PERF" --buildid-dir "$work/perf-buildids" record -q -F "$FREQ" "$cg" -p "$pids" \
			-o "$d/perf.data" >"$d/out" 2>"$d/stderr" &
		;;
	bpftrace)
		BPFTRACE_CACHE_USER_SYMBOLS=1 "${T[@]}" "$BPFTRACE" -e "${BT_PROG//PM/$pm}" >"$d/out" 2>"$d/stderr" &
		;;
	bpftrace_default)
		"${T[@]}" "$BPFTRACE" -e "${BT_PROG//PM/$pm}" >"$d/out" 2>"$d/stderr" &
		;;
	bcc)
		"${T[@]}" "$BCC_PROFILE" -F "$FREQ" -f >"$d/out" 2>"$d/stderr" &
		;;
	esac
	prof_tpid=$!
	track "$prof_tpid"
}

RAW="$work/raw.tsv"
printf 'phase\tround\tconfig\tstatus\ttps\tcpu_pct\trss_kb\tout_bytes\tout_kib_per_min\tstop_to_usable_ms\tsamples\tleaf_symbolized_pct\treaches_main_pct\tmedian_depth\tframes_symbolized_pct\tsampling_s\tcpu_s\tnote\n' >"$RAW"

# One run: config phase round. Appends a line to $RAW.
run_one() {
	local c=$1 ph=$2 r=$3 d="$work/$2-$1-$3" child="" t_ready t_stop t_exit t_done cpu rss bytes
	local stats="" note="" status=ok tps i alive prc
	mkdir -p "$d"
	log "phase -$ph round $r: $c"
	if [ "$c" = baseline ]; then
		pgbench_start "$ph" "$d/pgbench.log"
		wait "$pgb_pid" || true
		untrack "$pgb_pid"
		tps=$(pgbench_tps "$d/pgbench.log")
		printf '%s\t%s\t%s\tok\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\n' "$ph" "$r" "$c" "${tps:-0}" >>"$RAW"
		return
	fi
	start_profiler "$c" "$d"
	for i in $(seq 1 1200); do # up to 60 s to start
		# the profiler is the child of time(1), once the shell has exec'ed it
		[ -n "$child" ] || [ "$(cat "/proc/$prof_tpid/comm" 2>/dev/null)" != time ] ||
			child=$(pgrep -P "$prof_tpid" | head -1 || true)
		[ -n "$child" ] && ready "$c" "$child" "$d" && break
		kill -0 "$prof_tpid" 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$child" ] || ! kill -0 "$child" 2>/dev/null || ! ready "$c" "$child" "$d"; then
		kill_tree "$prof_tpid"
		wait "$prof_tpid" 2>/dev/null || true
		untrack "$prof_tpid"
		note="did not start: $({ grep -v '^Command exited' "$d/stderr" || true; } | tail -3 | tr '\t\n' '  ')"
		printf '%s\t%s\t%s\tfailed\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$ph" "$r" "$c" "$note" >>"$RAW"
		log "  $c failed: $note"
		return
	fi
	t_ready=$(now)
	pgbench_start "$ph" "$d/pgbench.log"
	sleep "$DUR"
	t_stop=$(now)
	case "$c" in
	agent) kill -TERM "$child" ;;
	bpftrace) ;; # stops itself (interval:s:DUR { exit(); })
	bpftrace_default) kill -STOP "$pgb_pid" ;; # keep the backends alive while it prints
	*) kill -INT "$child" ;;
	esac
	if [ "$c" = bpftrace_default ]; then
		for i in $(seq 1 $((BT_DEFAULT_MAX * 10))); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$child" 2>/dev/null; then
			kill_tree "$prof_tpid"
			note="did not finish printing within $BT_DEFAULT_MAX s after the end of sampling (killed); "
			status=failed
		fi
	fi
	prc=0
	wait "$prof_tpid" || prc=$?
	t_exit=$(now)
	untrack "$prof_tpid"
	kill -0 "$pgb_pid" 2>/dev/null && alive=yes || alive=no
	if [ "$c" = bpftrace_default ]; then kill -CONT "$pgb_pid"; fi
	wait "$pgb_pid" || true
	untrack "$pgb_pid"
	tps=$(pgbench_tps "$d/pgbench.log")
	if [ "$c" = bpftrace_default ]; then tps=-; fi # paused: not a TPS figure
	cpu=$(times_cpu "$d/time")
	rss=$(times_rss "$d/time")
	t_done=$t_exit
	case "$c" in
	# (every step below tolerates a tool that failed: its row says so)
	agent)
		bytes=$({ find "$d/profiles" -name '*.pb.gz' -printf '%s\n' 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}')
		{ find "$d/profiles" -name '*.pb.gz' -print0 2>/dev/null || true; } | sort -z |
			xargs -0 -r "$PPROFUTIL" stacks >"$d/stacks" || true
		stats=$($STACKSTATS stats ebprof "$d/stacks" || true)
		note="profiles=$({ find "$d/profiles" -name '*.pb.gz' 2>/dev/null || true; } | wc -l)"
		;;
	record)
		bytes=$(fsize "$d/profile.pb.gz")
		"$PPROFUTIL" stacks "$d/profile.pb.gz" >"$d/stacks" 2>>"$d/stderr" || true
		stats=$($STACKSTATS stats ebprof "$d/stacks" || true)
		note="own_log: $(grep -o 'profile written.*' "$d/stderr" | head -1 || true)"
		;;
	perf | perf_dwarf)
		bytes=$(fsize "$d/perf.data")
		local ts0 ts1
		ts0=$(now)
		/usr/bin/time -f "%e %U %S %M" -o "$d/time2" \
			"$PERF" --buildid-dir "$work/perf-buildids" script -i "$d/perf.data" >"$d/perf.txt" 2>"$d/script.err" || true
		ts1=$(now)
		cpu=$(awk -v a="$cpu" -v b="$(times_cpu "$d/time2")" 'BEGIN {printf "%.3f", a + b}')
		rss=$(awk -v a="$rss" -v b="$(times_rss "$d/time2")" 'BEGIN {print (a > b ? a : b)}')
		t_done=$(awk -v a="$t_exit" -v b="$ts0" -v c="$ts1" 'BEGIN {printf "%.6f", a + (c - b)}')
		stats=$($STACKSTATS stats perf "$d/perf.txt" || true)
		note="record_exit_ms=$(ms_between "$t_stop" "$t_exit") script_ms=$(ms_between "$ts0" "$ts1") script_bytes=$(fsize "$d/perf.txt")"
		;;
	bpftrace*)
		bytes=$(fsize "$d/out")
		stats=$($STACKSTATS stats bpftrace "$d/out" || true)
		note="${note}stack_id_errors=$(grep -c 'failed to look up stack id' "$d/stderr" || true)"
		;;
	bcc)
		bytes=$(fsize "$d/out")
		stats=$($STACKSTATS stats folded "$d/out" || true)
		;;
	esac
	local samples leaf main depth fsym sampling
	samples=$(echo "$stats" | sed -n 's/.*samples=\([0-9]*\).*/\1/p')
	leaf=$(echo "$stats" | sed -n 's/.*leaf_symbolized_pct=\([0-9.]*\).*/\1/p')
	main=$(echo "$stats" | sed -n 's/.*reaches_main_pct=\([0-9.]*\).*/\1/p')
	depth=$(echo "$stats" | sed -n 's/.*median_depth=\([0-9]*\).*/\1/p')
	fsym=$(echo "$stats" | sed -n 's/.*frames_symbolized_pct=\([0-9.]*\).*/\1/p')
	sampling=$(awk -v a="$t_ready" -v b="$t_stop" 'BEGIN {printf "%.3f", b - a}')
	note="$note exit_status=$prc workload_alive_at_exit=$alive"
	[ "${samples:-0}" -gt 0 ] || { status=failed; note="no samples in its output; $note $(tail -2 "$d/stderr" | tr '\t\n' '  ' || true)"; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ph" "$r" "$c" "$status" \
		"${tps:-0}" "$(awk -v c="$cpu" -v s="$sampling" 'BEGIN {printf "%.3f", c / s * 100}')" "$rss" "$bytes" \
		"$(awk -v b="$bytes" -v s="$sampling" 'BEGIN {printf "%.1f", b / 1024 / (s / 60)}')" \
		"$(ms_between "$t_stop" "$t_done")" "${samples:-0}" "${leaf:-0}" "${main:-0}" "${depth:-0}" "${fsym:-0}" \
		"$sampling" "$cpu" "$note" >>"$RAW"
}

# --- does bcc run at all here? -------------------------------------------
log "probing bcc: $BCC_PROFILE -F $FREQ -f 1"
bcc_rc=0
timeout 120 "$BCC_PROFILE" -F "$FREQ" -f 1 >"$work/bcc-probe.out" 2>"$work/bcc-probe.err" || bcc_rc=$?
configs="agent record perf bpftrace"
if [ "$bcc_rc" = 0 ] && [ -s "$work/bcc-probe.out" ]; then
	configs="$configs bcc"
	bcc_status="runs (exit 0, $(wc -l <"$work/bcc-probe.out") stack lines in 1 s); measured like the others"
else
	bcc_status="does not run: exit status $bcc_rc, no profile; it says: $({ grep -h -E 'kernel headers|No such file|^Exception' "$work/bcc-probe.out" "$work/bcc-probe.err" || true; } | head -3 | sed 's/ Try rebuilding.*//' | tr '\n|' '  ')"
fi

# --- the interleaved runs ------------------------------------------------
for ph in $PHASES; do
	phase_configs=$configs
	case " $DWARF_PHASES " in *" $ph "*) phase_configs="$configs perf_dwarf" ;; esac
	for r in $(seq 1 "$RUNS"); do
		for c in baseline $phase_configs; do run_one "$c" "$ph" "$r"; done
	done
	run_one baseline "$ph" "$((RUNS + 1))"
	# bpftrace on its own defaults, once (its symbolization at exit takes
	# long: the workload is paused meanwhile, so this run has no TPS)
	if [ "$ph" = S ] && [ "$BT_DEFAULT_MAX" -gt 0 ]; then run_one bpftrace_default "$ph" 1; fi
done

# --- pprof encoding: a 60 s (ENC_DUR), 19 Hz profile of all backends -----
log "pprof encoding: ebprof record -F $AGENT_FREQ for $ENC_DUR s under pgbench -S"
DUR_SAVE=$DUR
DUR=$ENC_DUR
pgbench_start S "$work/enc-pgbench.log"
"$BUILD/ebprof" record -F "$AGENT_FREQ" -p "$pm" -d "$ENC_DUR" -o "$work/enc.pb.gz" 2>"$work/enc.err"
wait "$pgb_pid" || true
untrack "$pgb_pid"
DUR=$DUR_SAVE
enc=$("$PPROFUTIL" encode "$work/enc.pb.gz" 2)
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# --- symbolizer: ebprof vs addr2line vs eu-addr2line ---------------------
log "symbolizer microbenchmark"
"$PPROFUTIL" offsets "/bin/$(basename "$POSTGRES")" "$work"/*-record-*/profile.pb.gz "$work/enc.pb.gz" >"$work/offsets"
sym=$("$BUILD/bench/symbench" "$POSTGRES" "$work/offsets" "$COLD_RUNS" "$work/names" "$work/vaddrs")
naddr=$(kv "$sym" addresses)
# (eu-addr2line exits 1 when some address has no name; the time is what counts)
a2l_rc=0; eu_rc=0
/usr/bin/time -f "%e %U %S %M" -o "$work/a2l.time" addr2line -a -f -i -e "$POSTGRES" <"$work/vaddrs" >"$work/a2l.out" || a2l_rc=$?
/usr/bin/time -f "%e %U %S %M" -o "$work/eu.time" eu-addr2line -a -f -i -e "$POSTGRES" <"$work/vaddrs" >"$work/eu.out" || eu_rc=$?
readelf -sW "$POSTGRES" >"$work/symbols" 2>/dev/null || true
agree=$($STACKSTATS agree "$work/names" "$work/a2l.out" "$work/eu.out" "$work/symbols")
rate() { tail -1 "$1" | awk -v n="$naddr" '{printf "%.0f", n / ($1 > 0 ? $1 : 0.001)}'; }

# --- report --------------------------------------------------------------
load1=$(cut -d' ' -f1-3 /proc/loadavg)
foreign1=$(pgrep -x postgres | grep -vxF -f <(echo "$pm"; pgrep -P "$pm") | wc -l || true)
elapsed=$(awk -v a="$t_script0" -v b="$(now)" 'BEGIN {printf "%.0f", b - a}')
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
out="bench/results/compare-$(date +%Y%m%d-%H%M).md"
{
	echo "# ebprof side by side with perf, bpftrace and bcc — $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`RUNS=$RUNS DUR=$DUR TAIL=$TAIL SCALE=$SCALE CLIENTS=$CLIENTS ENC_DUR=$ENC_DUR COLD_RUNS=$COLD_RUNS PHASES='$PHASES' DWARF_PHASES='$DWARF_PHASES' bench/compare.sh\` (the script's wall time: ${elapsed} s)"
	echo
	echo "- machine: $NCPU CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB; $(. /etc/os-release && echo "$PRETTY_NAME"); kernel $(uname -r)"
	echo "- kernel headers: $(ls -d "/lib/modules/$(uname -r)/build" 2>/dev/null || echo "none (/lib/modules/$(uname -r)/build absent)"); /sys/kernel/kheaders.tar.xz: $([ -e /sys/kernel/kheaders.tar.xz ] && echo present || echo absent)"
	echo "- ebprof $("$BUILD/ebprof" --version | cut -d' ' -f2-); $("$PERF" --version) (linux-perf $(pkgver linux-perf)); bpftrace $(pkgver bpftrace) ($("$BPFTRACE" --version 2>&1 | head -1)); bcc (bpfcc-tools) $(pkgver bpfcc-tools); PostgreSQL $("$POSTGRES" --version | awk '{print $3}'); elfutils $(pkgver elfutils); binutils $(pkgver binutils)"
	echo "- debug packages installed: $(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' '*-dbg' '*-dbgsym' 2>/dev/null | awk '$1 == "ii" {printf "%s ", $2}' | grep . || echo none); DEBUGINFOD_URLS unset for every tool"
	echo "- host load (1/5/15 min) before: $load0, after: $load1; postgres processes of other clusters on the host: $foreign0 at the start, $foreign1 at the end (not profiled, but they share the CPUs)"
	echo "- workload: \`pgbench -n -S|-N -c $CLIENTS -j $NCPU -T $((DUR + TAIL))\`, scale $SCALE, on a fresh cluster (fsync=off, Unix socket); phases: $(for ph in $PHASES; do [ $ph = S ] && printf -- '-S (read-only) ' || printf -- '-N (TPC-B-like without the teller/branch updates) '; done); in each, $RUNS rounds of (baseline $(echo "$configs" | sed 's/ / → /g')$( [ -n "$DWARF_PHASES" ] && echo " → perf_dwarf in phase(s) -$DWARF_PHASES")) and a last baseline"
	echo "- each profiler is started and waited for (ebprof: its \"sampling at\" line; perf, bcc: its perf_event file descriptors; bpftrace: \"Attaching\" and one perf_event per CPU), then pgbench starts; after $DUR s the profiler is stopped (SIGTERM for the agent, SIGINT for the others; bpftrace stops itself with \`interval:s:$DUR { exit(); }\` because a SIGINT was sometimes ignored by bpftrace 0.17 in trials) while pgbench runs about $TAIL s more, so the processes are alive when a tool symbolizes at exit (\`workload_alive_at_exit\` in the raw runs says whether they still were when it exited); pgbench's TPS covers its whole $((DUR + TAIL)) s, the profiler's stop included"
	echo "- bpftrace runs in the rotation with \`BPFTRACE_CACHE_USER_SYMBOLS=1\` (documented in bpftrace(8)): on its default with ASLR on it builds a new symbol table of the process for every user frame it prints, which took minutes per run in trials, too long for the rotation. The cache is keyed by executable, which is right here (every backend is a fork of one postmaster, same layout). One extra run on its defaults, in phase -S after the rotation, shows that case; pgbench is paused (SIGSTOP) from the end of sampling until bpftrace exits (at most $BT_DEFAULT_MAX s) so the processes stay alive, hence no TPS for it"
	echo "- every profiler is restricted to this cluster's processes (the postmaster and its children, new backends included) except bcc's profile, which has no such filter (its stacks of comm postgres are counted). ebprof and bpftrace sample with one perf event per CPU and filter in BPF; \`perf record -p\` opens events per task, inherited by the backends the postmaster forks (\`-p\` alone would miss backends started later; pgbench connects after perf starts, and they were all followed)"
	echo
	echo "## Definitions"
	echo
	echo "- **TPS ratio**: the run's pgbench TPS over the mean TPS of the baseline runs just before and just after its round (same phase)."
	echo "- **CPU**: user+sys CPU seconds of the profiler's process and its children over its whole life (start-up, sampling, stop, writing) plus post-processing (\`perf script\`), divided by the sampling wall time (≈ $DUR s), in % of one core; from \`/usr/bin/time -f '%e %U %S %M'\`. Work done in the sampling interrupt itself (BPF programs, perf's stack copy, perf's per-task event switching) is charged to the sampled processes, not to the profiler: it shows in TPS only."
	echo "- **peak RSS**: \`/usr/bin/time\`'s %M (the largest process of the tree; perf: the larger of record and script)."
	echo "- **output**: the bytes the tool leaves (ebprof: .pb.gz files; perf: perf.data; bpftrace, bcc: their stdout), per minute of sampling."
	echo "- **end of sampling → usable profile**: from the stop signal to the tool's exit, plus \`perf script\`'s wall time for perf."
	echo "- **stacks** (\`bench/stackstats.py\`, the same rules for every tool): a stack is the kernel frames then the user frames of one sample; one frame per physical frame (sampled ip or return address). *Leaf symbolized*: the innermost frame has a function name (not \`[unknown]\`, not a bare hex address, not a pseudo-frame like \`[lost user stack]\`). *Reaches main*: some frame is \`main\` (PostgreSQL's). *Depth*: number of frames; median over samples. All weighted by sample count. User stacks are walked with frame pointers by every tool here; Debian's binaries lack them in places (libc, some PostgreSQL functions), so stacks stop or skip frames there for all of them alike."
	echo "- ebprof stacks come from \`build/bench/pprofutil stacks FILE...\` (bench/pprofutil.c, ebprof's pprof decoder); perf's from \`perf script\`; bpftrace's from its printed map; bcc's from its folded lines."
	echo "- Values are medians over the runs, (min–max) after them."
	echo
	echo "## Commands"
	echo
	echo "| configuration | command |"
	echo "| --- | --- |"
	echo "| baseline | (no profiler) |"
	for c in agent record perf perf_dwarf bpftrace bpftrace_default bcc; do echo "| $c | \`${CMD[$c]//|/\\|}\` |"; done
	echo
	echo "bcc \`profile-bpfcc\` on this host: **$bcc_status**"
	echo
	echo "Probe: \`timeout 120 profile-bpfcc -F $FREQ -f 1\`; its stdout, then its stderr:"
	echo '```'; head -c 2000 "$work/bcc-probe.out"; echo '```'
	echo '```'; head -c 3000 "$work/bcc-probe.err"; echo '```'
	echo
	for ph in $PHASES; do
		echo "## Phase -$ph ($([ $ph = S ] && echo read-only || echo 'TPC-B-like, -N'))"
		echo
		python3 bench/stackstats.py table "$RAW" "$ph" "bcc:$bcc_status"
		echo
	done
	for ph in $DWARF_PHASES; do
		case " $PHASES " in *" $ph "*) ;; *) continue ;; esac
		echo "## ebprof record against perf record --call-graph dwarf, phase -$ph"
		echo
		echo "The same backends, rate ($FREQ Hz), duration ($DUR s) and rounds as above; perf's cost includes \`perf script\` (its usable output: perf.data alone names no function). Output: ebprof's .pb.gz against perf.data (perf script's text is in the raw runs' note, script_bytes). Stack truth: a sample's stack reaches \`main\` (PostgreSQL's; every backend, forked from the postmaster, runs under main → PostmasterMain) or is cut (ends short of it: unwinding stopped, a frame unreadable, a depth limit, or perf's 8 KiB copy of the user stack (--call-graph dwarf's default) ran out). Medians over the runs; ratio = perf's / ebprof's."
		echo
		python3 bench/stackstats.py pair "$RAW" "$ph" record perf_dwarf
		echo
	done
	echo "## Symbolizer throughput and agreement"
	echo
	echo "$naddr distinct file offsets inside \`$POSTGRES\` (every PostgreSQL address of the \`ebprof record\` profiles above and of the ${ENC_DUR} s profile below: \`pprofutil offsets /bin/postgres FILES\`), converted to ELF addresses through the PT_LOAD headers for the two addr2line tools. Cold: a new symbolizer (binary opened and its symbols loaded) per pass, $COLD_RUNS passes, median; warm: the same symbolizer again. addr2line tools: one process for the whole list (so cold), \`/usr/bin/time\`."
	echo
	echo "| symbolizer | command | addresses/s | wall ms | peak RSS MiB |"
	echo "| --- | --- | --- | --- | --- |"
	echo "| ebprof, cold | \`build/bench/symbench $POSTGRES offsets $COLD_RUNS names vaddrs\` | $(kv "$sym" cold_addr_per_s) | $(kv "$sym" cold_median_ms) (min $(kv "$sym" cold_min_ms), max $(kv "$sym" cold_max_ms)) | – |"
	echo "| ebprof, warm | (same; $(kv "$sym" warm_passes) passes) | $(kv "$sym" warm_addr_per_s) | $(kv "$sym" warm_pass_ms) per pass | – |"
	echo "| addr2line | \`addr2line -a -f -i -e $POSTGRES < vaddrs\` | $(rate "$work/a2l.time") | $(tail -1 "$work/a2l.time" | awk '{printf "%.0f", $1 * 1000}') | $(tail -1 "$work/a2l.time" | awk '{printf "%.1f", $4 / 1024}') |"
	echo "| eu-addr2line | \`eu-addr2line -a -f -i -e $POSTGRES < vaddrs\` | $(rate "$work/eu.time") | $(tail -1 "$work/eu.time" | awk '{printf "%.0f", $1 * 1000}') | $(tail -1 "$work/eu.time" | awk '{printf "%.1f", $4 / 1024}') |"
	echo
	echo "Agreement of the innermost function name per address (\`bench/stackstats.py agree names a2l.out eu.out\`; \"??\" = no name; agreement counts same name and both without a name):"
	echo
	echo "| peer | agreement % | same name | both unknown | different names | only ebprof named | only the peer named | of those, address outside that symbol's extent |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	for p in addr2line eu_addr2line; do
		echo "| $p | $(kv "$agree" ${p}_agree_pct) | $(kv "$agree" ${p}_same_name) | $(kv "$agree" ${p}_both_unknown) | $(kv "$agree" ${p}_different_name) | $(kv "$agree" ${p}_only_ebprof_named) | $(kv "$agree" ${p}_only_${p}_named) | $(kv "$agree" ${p}_only_${p}_named_outside_symbol) |"
	done
	echo
	echo "The extent check: \`readelf -sW $POSTGRES\` gives each function symbol's [st_value, st_value + st_size); a name only the peer gives whose address lies outside every symbol of that name is the nearest preceding symbol, not the function the address is in (a static function the stripped binary has no symbol for). Exit status: addr2line $a2l_rc, eu-addr2line $eu_rc (eu-addr2line exits 1 when an address has no name)."
	echo
	echo "Examples of disagreement (ELF address: ebprof's name, the peer's name):"
	echo
	for p in addr2line eu_addr2line; do echo "- $p: $(echo "$agree" | sed -n "s/^${p}_examples=//p")"; done
	echo
	echo "symbench: \`$sym\`"
	echo
	echo "## pprof encoding"
	echo
	echo "Profile: \`ebprof record -F $AGENT_FREQ -p PM -d $ENC_DUR -o enc.pb.gz\` under \`pgbench -S -c $CLIENTS\` (every backend of the cluster); then \`build/bench/pprofutil encode enc.pb.gz 2\` decodes it once and encodes it again and again for 2 s each way (ebprof's \`pprof_encode\`)."
	echo
	echo "| profile | samples | distinct stacks | locations | functions | encode + gzip ms | gzip bytes | encode raw ms | raw bytes | decode ms |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "| $(kv "$enc" duration_s) s at $AGENT_FREQ Hz | $(kv "$enc" samples) | $(kv "$enc" distinct_stacks) | $(kv "$enc" locations) | $(kv "$enc" functions) | $(kv "$enc" gzip_ms) | $(kv "$enc" gzip_bytes) | $(kv "$enc" raw_ms) | $(kv "$enc" raw_bytes) | $(kv "$enc" decode_ms) |"
	echo
	echo "pprofutil: \`$enc\`"
	echo
	echo "## Raw runs"
	echo
	echo "Every run, in the order run (\`tps_ratio\` computed as defined above; \`note\`: perf's record exit and script times, bpftrace's \"failed to look up stack id\" errors, ebprof record's own timing line):"
	echo
	python3 bench/stackstats.py raw "$RAW"
	echo
	echo "First lines of each tool's stderr in its first -S run:"
	echo
	for c in $configs perf_dwarf bpftrace_default; do
		echo "- $c: \`$(grep -v '^$' "$work/S-$c-1/stderr" 2>/dev/null | head -3 | tr '\n`' ' \x27' | cut -c1-400)\`"
	done
	echo
	echo "\`perf script\`'s stderr, first lines, every run:"
	echo
	for f in "$work"/*-perf*-*/script.err; do
		[ -e "$f" ] || continue
		echo "- $(basename "$(dirname "$f")"): \`$(grep -v '^$' "$f" | head -3 | tr '\n`' ' \x27' | cut -c1-400)\`"
	done
} >"$out"
cat "$out"
log "written: $out (${elapsed} s)"
