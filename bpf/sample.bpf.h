/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The perf_event programs, included by profile.bpf.c after the unwinder:
 * a sample is a tick of the cpu-clock event (--type cpu, F Hz on every
 * CPU) or every faults_period-th page fault on a CPU (--type faults, a
 * PERF_COUNT_SW_PAGE_FAULTS event, whose registers are the faulting
 * ones: the user instruction that touched the page, or the kernel's when
 * it faulted on a user address, as in copy_to_user). Both take the same
 * kernel and user stacks, statement and process announcement; each
 * counts into counts of its own (counts0/1, fault_counts0/1, flipped
 * together by active_counts), so a CPU profile and a fault profile never
 * mix. One template per unwinder (frame pointers, bpf_loop, tail calls)
 * makes both programs of it: `fault` is a constant in each, so the CPU
 * programs are the code they were before faults existed, and userspace
 * loads the fault programs only for a session that takes faults.
 */
#ifndef EBPROF_SAMPLE_BPF_H
#define EBPROF_SAMPLE_BPF_H

/* Page faults sampled; sized by userspace from the fault rate it
 * expects (1 entry when faults are off). */
struct counts_map fault_counts0 SEC(".maps");
struct counts_map fault_counts1 SEC(".maps");

/*
 * Everything of a sample but its user stack: the target filter, the
 * kernel stack, the process's announcement and its statement, into key.
 * False when the task is not sampled.
 */
static __always_inline bool sample_begin(struct bpf_perf_event_data *ctx, struct sample_key *key,
					 bool *user_mode, bool *has_mm, bool fault)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	bool lost;

	if (tid == 0) /* the idle task is not CPU use */
		return false;
	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid))
		return false;
	stat_inc(fault ? STAT_FAULT_SAMPLES : STAT_SAMPLES);

	key->tgid = tgid;
	key->tid = tid;
	bpf_get_current_comm(&key->comm, sizeof(key->comm));

	*user_mode = in_user_mode(ctx);
	if (want_kernel && !*user_mode) {
		key->kstack = store_stack(ctx, false, &lost);
		key->flags |= lost ? SAMPLE_KSTACK_LOST : 0;
	}
	task_common(key, has_mm);
	return true;
}

static __always_inline void count_sample(const struct sample_key *key, bool fault)
{
	__u64 one = 1, *count;
	void *counts;
	long ret;

	if (fault)
		counts = active_counts ? (void *)&fault_counts1 : (void *)&fault_counts0;
	else
		counts = active_counts ? (void *)&counts1 : (void *)&counts0;
	count = bpf_map_lookup_elem(counts, key);
	if (count) {
		__sync_fetch_and_add(count, 1);
	} else {
		ret = (int)bpf_map_update_elem(counts, key, &one,
					       BPF_NOEXIST); /* see store_stack() */
		if (ret == -EEXIST) {			     /* another CPU inserted it meanwhile */
			count = bpf_map_lookup_elem(counts, key);
			if (count)
				__sync_fetch_and_add(count, 1);
		} else if (ret) {
			stat_inc(fault ? STAT_FAULTS_FULL : STAT_COUNTS_FULL);
		}
	}
}

/* --unwind fp: user stacks walked by the kernel along frame pointers. */
static __always_inline int sample_fp(struct bpf_perf_event_data *ctx, bool fault)
{
	struct sample_key key = {};
	bool user_mode, has_mm, lost;

	if (!sample_begin(ctx, &key, &user_mode, &has_mm, fault))
		return 0;
	if (want_user && has_mm) {
		key.ustack = store_stack(ctx, true, &lost);
		key.flags |= lost ? SAMPLE_USTACK_LOST : 0;
		if (key.ustack && !user_mode && user_pc_exact())
			key.flags |= SAMPLE_USER_EXACT;
	}
	count_sample(&key, fault);
	return 0;
}

/* One frame: a global function, so the verifier checks it once rather
 * than at every iteration of the loops that call it (5.6+). */
__noinline int uw_step(void)
{
	struct uw_state *st = uw_state_get();

	if (!st)
		return 1;
	return unwind_step(st, NULL);
}

/* UNWIND_PER_CALL frames of a tail-called unwinder: true when the stack
 * ended (the state says why). */
static __always_inline bool unwind_some(void)
{
#pragma clang loop unroll(disable)
	for (int i = 0; i < UNWIND_PER_CALL; i++)
		if (uw_step())
			return true;
	return false;
}

/* --unwind dwarf, kernels with bpf_loop() (5.17+). */
static long loop_step(__u32 index, void *data)
{
	return uw_step() ? 1 : 0;
}

/* A sample of --unwind dwarf up to its user stack: the scratch state with
 * the key filled and the unwind started, NULL when the task is not sampled
 * (*unwind false: counted without a user stack). */
static __always_inline struct uw_state *dwarf_sample(struct bpf_perf_event_data *ctx, bool *unwind,
						     bool fault)
{
	struct uw_state *st = uw_state_get();
	bool user_mode, has_mm;

	if (!st)
		return NULL;
	__builtin_memset(&st->key, 0, sizeof(st->key));
	if (!sample_begin(ctx, &st->key, &user_mode, &has_mm, fault))
		return NULL;
	*unwind = want_user && has_mm && unwind_begin(ctx, user_mode, st, st->key.tgid);
	return st;
}

static __always_inline int sample_loop(struct bpf_perf_event_data *ctx, bool fault)
{
	bool unwind;
	struct uw_state *st = dwarf_sample(ctx, &unwind, fault);

	if (!st)
		return 0;
	if (unwind) {
		bpf_loop(EBPROF_MAX_UNWIND_DEPTH + 1, loop_step, NULL, 0);
		unwind_publish(st);
	}
	count_sample(&st->key, fault);
	return 0;
}

/* --unwind dwarf, kernels without bpf_loop(): UNWIND_PER_CALL frames per
 * program, then a tail call of the program in progs (unwind_tail,
 * fault_unwind_tail), which goes on the same way. */
static __always_inline int sample_tail(struct bpf_perf_event_data *ctx, void *progs, bool fault)
{
	bool unwind;
	struct uw_state *st = dwarf_sample(ctx, &unwind, fault);

	if (!st)
		return 0;
	if (unwind) {
		bpf_tail_call(ctx, progs, 0);
		st->key.flags |= SAMPLE_USTACK_LOST; /* no tail call: no stack */
	}
	count_sample(&st->key, fault);
	return 0;
}

static __always_inline int unwind_more(struct bpf_perf_event_data *ctx, void *progs, bool fault)
{
	bool done = unwind_some();
	struct uw_state *st = uw_state_get();

	if (!st)
		return 0;
	if (!done) {
		st->calls++;
		bpf_tail_call(ctx, progs, 0);
		st->rec.end = UNWIND_END_DEPTH; /* out of tail calls */
	}
	unwind_publish(st);
	count_sample(&st->key, fault);
	return 0;
}

/* The fault programs' own tail-call table: their last step counts into
 * the fault counts. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fault_unwind_prog SEC(".maps");

#ifndef EBPROF_WAITS_ONLY /* not in the one-run visit's object (waits_targets.bpf.c) */
SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	return sample_fp(ctx, false);
}

SEC("perf_event")
int do_sample_loop(struct bpf_perf_event_data *ctx)
{
	return sample_loop(ctx, false);
}

SEC("perf_event")
int do_sample_tail(struct bpf_perf_event_data *ctx)
{
	return sample_tail(ctx, &unwind_prog, false);
}

SEC("perf_event")
int unwind_tail(struct bpf_perf_event_data *ctx)
{
	return unwind_more(ctx, &unwind_prog, false);
}

SEC("perf_event")
int do_fault(struct bpf_perf_event_data *ctx)
{
	return sample_fp(ctx, true);
}

SEC("perf_event")
int do_fault_loop(struct bpf_perf_event_data *ctx)
{
	return sample_loop(ctx, true);
}

SEC("perf_event")
int do_fault_tail(struct bpf_perf_event_data *ctx)
{
	return sample_tail(ctx, &fault_unwind_prog, true);
}

SEC("perf_event")
int fault_unwind_tail(struct bpf_perf_event_data *ctx)
{
	return unwind_more(ctx, &fault_unwind_prog, true);
}

#endif /* EBPROF_WAITS_ONLY */
#endif /* EBPROF_SAMPLE_BPF_H */
