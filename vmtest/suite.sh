#!/bin/sh
# vmtest/suite.sh: the focused BPF integration tests the kernel matrix runs
# on every kernel (inside a qemu guest through vmtest/init, or natively on
# the host). Uses the binaries of $BUILD (default build) built on the host.
#
# Prints the feature probe's line for this kernel ("vmtest: features:
# kernel ...: BTF yes, ..."), Criterion's output of each test, one
# "vmtest: <result> suite/test (N s)" line per test and, last,
#   VMTEST-RESULT: passed=P failed=F skipped=S
# Exit status 0 when nothing failed.
#
# Each selected test runs on its own (--filter suite/name --jobs=1) and its
# result is read from Criterion's TAP output by name: a test Criterion
# skipped (cr_skip_test) counts as skipped, one without a result as failed;
# tests not selected here are not counted at all.
set -eu

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD

# binary (under $BUILD/tests/integration) : suite/test, and why it is here:
#  - record/cpu_split_and_sample_count: load, attach, sampling of a fixture
#    workload, complete symbolized stacks, the profile read back by go tool
#    pprof; it asserts CPU-time ratios (samples within 15% of the CPU time
#    the workload measured, a 75/25 split +-10) and is kept in guests: the
#    perf cpu-clock and the guest's CPU-time clock run on the same virtual
#    clock, so the ratios hold under TCG (6.12: 298 samples for 2.996 s).
#  - record/children_that_exit_early_are_symbolized: fork following in BPF
#    (raw_tp/sched_process_fork), short-lived children symbolized.
#  - record/external_btf_file_serves_the_relocations: --btf, the CO-RE
#    relocations from a file (a copy of the kernel's BTF), with fork following.
#  - record/all_folded_to_stdout: -a (every task, kernel stacks), exit events.
#  - record/no_kernel_and_no_user: the want_kernel/want_user switches.
#  - record/sigint_still_writes_a_complete_profile: detach on a signal.
#  - agent/processes_entering_a_target_cgroup_are_followed: exec following
#    (raw_tp/sched_process_exec) and bpf_get_current_cgroup_id (cgroup2).
#  - agent/short_lived_children_share_a_profile_each_sample_its_pid: the
#    agent's interval drains (counts0/counts1 flip, batch ops), exit events
#    and titles at exit (fentry or kprobe on do_group_exit, per kernel).
#  - http/pprof_get_profile_and_svg_as_documented: an ad hoc profile beside
#    the continuous one (a second load and attach in the same process).
#  - postgres/pgbench_select_profile_has_backend_frames: what ebprof is for,
#    on each kernel: a real PostgreSQL cluster under pgbench -S, backends
#    forked after the start followed, their frames symbolized (~35 s in a
#    TCG guest).
#  - stacks/*: DWARF unwinding in BPF, by bpf_loop() where the kernel has it
#    (5.17+) and by tail calls where it does not (5.10): true callers of
#    -O2 leaves without frame pointers, 1500 frames deep, through a signal
#    frame (also one taken at a function's first byte), through a PLT call
#    into a library without frame pointers.
#  - offcpu/*: off-CPU time timed at sched_switch (raw tracepoint), its
#    stacks taken where the thread resumes (a kprobe on finish_task_switch
#    in these kernels, sched_exit_tp on 6.16+ hosts), user stacks unwound
#    under bpf_loop() where the kernel has it, by tail calls where it does
#    not (5.10): a 3:1 split of time away from the CPU; and PostgreSQL's
#    wait events read from the resumed backends: a row lock wait
#    (Lock/transactionid under the UPDATE) and an idle client.
#  - offcpu_paths/*: the off-CPU path each kernel takes, said in the log
#    (the wait sampler's task iterator from 5.18, the switch hooks on
#    5.10), and the threads an iterator visit looks at (the targets'
#    alone: in one run on 6.7+ where the build has it, a link per target
#    process on 6.1+; the host's before); the links per process follow
#    the targets that fork and exit, none left open.
#  - offcpu_pgproc/*: a PostgreSQL 13 backend's wait event, read from its
#    PGPROC at an offset (the fixture stands in for the version).
#  - faults/*: page faults sampled by a PERF_COUNT_SW_PAGE_FAULTS event
#    (every 100th fault of a CPU), its program running in the faulting
#    task with the fault's registers: a 3:1 split of bytes faulted under
#    main -> touch_*, the function that touched the page as the leaf,
#    user stacks unwound under bpf_loop() or by the fault programs' own
#    tail calls (5.10), the total within a quarter of what was touched.
#  - memory/hostile_trees_end_within_their_bounds: memory contexts read
#    from outside a process named postgres (process_vm_readv; its trees a
#    cycle, garbage, unmapped, too wide, changing while read) and the OOM
#    watch loaded (the mark_victim raw tracepoint: its argument a pid up
#    to 6.7, a task from 6.8). The agreement with PostgreSQL's own view is
#    the host's (nothing of it is the kernel's: 55 s a guest).
#  - plpgsql/nested_functions_and_hostile_stacks_of_a_fixture: PL/pgSQL
#    frames, the error_context_stack walk in its global functions (called
#    in a bounded loop where bpf_loop is not needed: it runs on 5.10 too),
#    the per-CPU record, plpgsql_epoch picking up a callback given after a
#    process's first sample; and its bounds over a cyclic and an unmapped
#    list (a stand-in plpgsql.so and backend, ~8 s; the PostgreSQL test
#    of it is the host's).
#  - first_second/*: a new program's children (fork_burst) under the agent:
#    forks of a parent without tables wake userspace (BPF_RB_FORCE_WAKEUP),
#    which gives the parent its set, inherited at the next forks; exec'd
#    children marked EBPROF_UNWIND_NO_SET, their maps read by the
#    read-ahead thread from the `fresh` ring while the event loop is held
#    (ptrace of the agent's main thread alone).
# Left out: agent/sighup_reloads_without_losing_samples asserts that the
# profiles account for the workload's CPU time across a reload; under TCG
# the reload (a new load, verification and attach, ~10-30x slower) leaves a
# gap of about a second (6.12: 6.75 s of 7.99 s), a timing effect of the
# emulation rather than of the kernel (the HTTP test covers a second load
# and attach). Also left out: agent_churn (pgbench -C needs hundreds of
# connections a second, which a TCG guest does not give); the bad-input
# and privilege tests (nothing kernel-specific), the other HTTP and push tests (the same BPF paths as
# the one above), the browser test (a browser under TCG would take most of
# the time budget for no kernel coverage).
TESTS="
test_record:record/cpu_split_and_sample_count
test_record:record/children_that_exit_early_are_symbolized
test_record:record/external_btf_file_serves_the_relocations
test_record:record/all_folded_to_stdout
test_record:record/no_kernel_and_no_user
test_record:record/sigint_still_writes_a_complete_profile
test_agent:agent/processes_entering_a_target_cgroup_are_followed
test_agent:agent/short_lived_children_share_a_profile_each_sample_its_pid
test_http_pprof:http/pprof_get_profile_and_svg_as_documented
test_postgres:postgres/pgbench_select_profile_has_backend_frames
test_stacks:stacks/chain_without_frame_pointers
test_stacks:stacks/recursion_1500_frames_deep
test_stacks:stacks/signal_handler_over_its_interrupted_code
test_stacks:stacks/signal_at_a_functions_first_byte_names_that_function
test_stacks:stacks/plt_call_into_a_library_without_frame_pointers
test_offcpu:offcpu/time_away_splits_3_to_1_under_complete_stacks
test_offcpu:offcpu/postgres_lock_wait_and_idle_client
test_offcpu_paths:offcpu_paths/kernel_takes_its_path
test_offcpu_paths:offcpu_paths/iterator_visits_the_targets_threads_alone
test_offcpu_paths:offcpu_paths/links_follow_the_target_processes
test_offcpu_pgproc:offcpu_pgproc/postgres_13_wait_event_read_from_pgproc
test_faults:faults/bytes_split_3_to_1_under_complete_stacks
test_memory:memory/hostile_trees_end_within_their_bounds
test_plpgsql:plpgsql/nested_functions_and_hostile_stacks_of_a_fixture
test_first_second:first_second/forked_children_of_a_new_program_under_the_agent
test_first_second:first_second/execd_children_gone_before_the_event_loop_looks
"

features=$("$BUILD/ebprof" record -a -d 1 -v --format folded -o - 2>&1 >/dev/null |
	sed -n 's/^ebprof: \(kernel [^ ]*: BTF .*\)$/\1/p' | head -1) || true
echo "vmtest: features: ${features:-none (the feature probe printed no line)}"

# VMTEST_ONLY (a part of suite/test names, e.g. stacks/plt) narrows the
# list and VMTEST_REPEAT runs each selected test that many times: a flaky
# test chased on one kernel (make vmtest KERNEL=5.10 VMTEST_ONLY=stacks/plt
# VMTEST_REPEAT=20).
if [ -n "${VMTEST_ONLY:-}" ]; then
	TESTS=$(for t in $TESTS; do case "$t" in *"$VMTEST_ONLY"*) echo "$t" ;; esac; done)
	[ -n "$TESTS" ] || { echo "vmtest: VMTEST_ONLY=$VMTEST_ONLY names no test of the suite"; exit 2; }
fi
repeat=${VMTEST_REPEAT:-1}
case "$repeat" in '' | *[!0-9]* | 0)
	echo "vmtest: VMTEST_REPEAT=$repeat is not a count"
	exit 2
	;;
esac
TESTS=$(i=0; while [ "$i" -lt "$repeat" ]; do echo "$TESTS"; i=$((i + 1)); done)

# Inside a guest (vmtest/init sets VMTEST_GUEST=1) a test that fails runs
# once more: under TCG a flake of the emulation (a guest stalled for
# seconds) must not hide what the kernel does, yet none goes unseen. A
# test that then passes is FLAKY: counted apart (flaky=N below, and in the
# matrix line), its first run's output kept in the log above it. One that
# fails twice is a FAIL. On the host a failure is a failure.
passed=0 failed=0 skipped=0 flaky=0
tap=$(mktemp /tmp/vmtest-tap.XXXXXX)

run_one() { # BIN NAME: sets result
	tapname=$(echo "$2" | sed 's|/|::|')
	rm -f "$tap"
	"$1" --jobs=1 --verbose --filter="$2" --tap="$tap" 2>&1 || true
	line=$(grep -a " $tapname\( \|$\)" "$tap" 2>/dev/null | head -1) || true
	case "$line" in
	"ok "*"# SKIP"*) result=SKIP ;;
	"ok "*) result=PASS ;;
	"not ok "*) result=FAIL ;;
	*) result="FAIL (no result)" ;;
	esac
}

for t in $TESTS; do
	bin="$BUILD/tests/integration/${t%%:*}"
	name=${t#*:}
	start=$(date +%s)
	echo "vmtest: running $name"
	run_one "$bin" "$name"
	case "$result" in
	FAIL*)
		if [ "${VMTEST_GUEST:-0}" = 1 ]; then
			echo "vmtest: $result $name on its first run; running it once more"
			run_one "$bin" "$name"
			[ "$result" = PASS ] && result=FLAKY
		fi
		;;
	esac
	case "$result" in
	SKIP) skipped=$((skipped + 1)) ;;
	PASS) passed=$((passed + 1)) ;;
	FLAKY) passed=$((passed + 1)) flaky=$((flaky + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	secs=$(($(date +%s) - start))
	echo "vmtest: $result $name ($secs s)"
done
rm -f "$tap"
echo "VMTEST-RESULT: passed=$passed failed=$failed skipped=$skipped flaky=$flaky"
[ "$failed" = 0 ]
