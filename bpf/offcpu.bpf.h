/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Off-CPU time (--type offcpu), included by profile.bpf.c after the
 * unwinder. sched_switch fires for every task of the host and its program
 * stays cheap: untargeted threads are dropped first; a targeted thread
 * leaving the CPU leaves only the time and its state in `offcpu_starts`
 * (offcpu_pct percent of them: userspace scales the time back); when a
 * thread with an entry comes back, its wait is decided by its length
 * (shorter than offcpu_min_ns: counted and dropped; at least
 * offcpu_period_ns: taken; shorter: taken with the probability ns/period
 * and counted as the period) and a wait taken is left in this CPU's
 * `offcpu_pending`. Its stacks are taken where the same switch ends, in
 * the resumed thread's own context (below): its kernel and user stacks
 * are those it left with, and its PostgreSQL wait event is still set. So the DWARF unwind, the
 * costly part, runs for the waits taken only, never for a switch-out.
 */
#ifndef EBPROF_OFFCPU_BPF_H
#define EBPROF_OFFCPU_BPF_H

const volatile __u64 offcpu_min_ns = 0;
const volatile __u64 offcpu_period_ns = 0; /* 0: every wait; at most 2^32 */
const volatile __u32 offcpu_pct = 100;

/* Targeted threads by tid: since when away (0: on a CPU) and how. LRU:
 * entries stay from one wait to the next, and an exited thread's goes
 * when the space is needed. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_starts SEC(".maps");

struct offcpu_counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_value);
};
struct offcpu_counts_map offcpu_counts0 SEC(".maps");
struct offcpu_counts_map offcpu_counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_pending);
} offcpu_pending SEC(".maps");

/* The wait being counted: its key as it is filled, and its time. */
struct offcpu_taken {
	struct offcpu_key key;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_taken);
} offcpu_scratch SEC(".maps");

/* task_struct's state before 5.14 (then __state). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u8 offcpu_state_of(struct task_struct *t, bool preempt)
{
	long state;

	if (bpf_core_field_exists(t->__state))
		state = BPF_CORE_READ(t, __state);
	else
		state = BPF_CORE_READ((struct task_struct___pre514 *)t, state);
	if (preempt || state == 0) /* TASK_RUNNING: preempted, or yielded */
		return OFFCPU_RUNNABLE;
	if (state & 2) /* TASK_UNINTERRUPTIBLE */
		return OFFCPU_DISK;
	return OFFCPU_SLEEPING;
}

/* The wait event a PostgreSQL backend set before it waited (its
 * my_wait_event_info points to where it keeps it). */
static __always_inline void read_wait_event(const struct seen_state *seen, struct offcpu_key *k)
{
	__u64 where = 0;

	if (!seen || !seen->stmt.pg_known || !seen->stmt.pg.wait_event)
		return;
	k->has_wait = 1;
	k->pg_major = (__u16)seen->stmt.pg.major;
	if (!bpf_probe_read_user(&where, sizeof(where), (void *)seen->stmt.pg.wait_event) && where)
		bpf_probe_read_user(&k->wait_event, sizeof(k->wait_event), (void *)where);
}

/* The thread leaving the CPU (current, prev): since when, if targeted.
 * Its entry is written in place once it has one: map updates and deletes
 * take locks, lookups do not. */
static __always_inline void offcpu_leaves(struct task_struct *prev, bool preempt)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct offcpu_start *s, fresh = {};

	if (tid == 0 || (filter_targets && !bpf_map_lookup_elem(&targets, &tgid)))
		return;
	if (offcpu_pct < 100 && bpf_get_prandom_u32() % 100 >= offcpu_pct) {
		stat_inc(STAT_OFFCPU_SKIPPED);
		return;
	}
	s = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (s) {
		s->state = offcpu_state_of(prev, preempt);
		s->ts = bpf_ktime_get_ns();
		return;
	}
	fresh.state = offcpu_state_of(prev, preempt);
	fresh.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_starts, &tid, &fresh, BPF_ANY))
		stat_inc(STAT_OFFCPU_FULL);
}

/* The thread coming back (next): is its wait taken, and for how long?
 * (Its entry stays, its time cleared, for the next wait.) */
static __always_inline void offcpu_resumes(struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid), zero = 0;
	struct offcpu_pending *p;
	struct offcpu_start *s;
	__u64 ns;

	if (tid == 0)
		return;
	s = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!s || !s->ts)
		return;
	ns = bpf_ktime_get_ns() - s->ts;
	s->ts = 0;
	if (ns < offcpu_min_ns) {
		stat_inc(STAT_OFFCPU_SHORT);
		return;
	}
	if (ns < offcpu_period_ns) {
		/* taken with probability ns / period, as the period */
		if (((__u64)bpf_get_prandom_u32() * offcpu_period_ns) >> 32 >= ns) {
			stat_inc(STAT_OFFCPU_UNTAKEN);
			return;
		}
		ns = offcpu_period_ns;
	}
	p = bpf_map_lookup_elem(&offcpu_pending, &zero);
	if (!p)
		return;
	p->ns = ns;
	p->state = s->state;
	p->tid = tid;
}

/* Every switch of the host: the thread coming back first (this CPU's
 * pending wait is for it), then the one leaving. */
SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_resumes(next);
	offcpu_leaves(prev, preempt);
	return 0;
}

/* Where the switch ends, the thread that resumed (current): the scratch
 * entry with its key filled up to the user stack when its wait was taken,
 * else NULL; *user: a user stack is to be taken. */
static __always_inline struct offcpu_taken *offcpu_resumed(void *ctx, bool *user)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct offcpu_pending *p = bpf_map_lookup_elem(&offcpu_pending, &zero);
	struct offcpu_taken *o;
	struct seen_state *seen;
	bool has_mm, lost;

	if (!p || !p->tid)
		return NULL;
	if (p->tid != tid) { /* not the thread it was taken for */
		p->tid = 0;
		return NULL;
	}
	p->tid = 0;
	o = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!o)
		return NULL;
	__builtin_memset(o, 0, sizeof(*o));
	o->ns = p->ns;
	o->key.state = p->state;
	o->key.s.tgid = id >> 32;
	o->key.s.tid = tid;
	bpf_get_current_comm(&o->key.s.comm, sizeof(o->key.s.comm));
	if (want_kernel) {
		o->key.s.kstack = store_stack(ctx, false, &lost);
		o->key.s.flags |= lost ? SAMPLE_KSTACK_LOST : 0;
	}
	seen = task_common(&o->key.s, &has_mm);
	read_wait_event(seen, &o->key);
	*user = want_user && has_mm;
	return o;
}

/* The wait taken, added under its key in the active counts. */
static __always_inline void offcpu_count(struct offcpu_taken *o)
{
	struct offcpu_value one = { .count = 1, .ns = o->ns }, *v;
	void *counts = active_counts ? (void *)&offcpu_counts1 : (void *)&offcpu_counts0;
	long ret;

	v = bpf_map_lookup_elem(counts, &o->key);
	if (!v) {
		ret = bpf_map_update_elem(counts, &o->key, &one, BPF_NOEXIST);
		if (!ret)
			return;
		if (ret != -EEXIST || !(v = bpf_map_lookup_elem(counts, &o->key))) {
			stat_inc(STAT_OFFCPU_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->ns, o->ns);
}

/* The stacks of a wait taken, user stacks by frame pointers (--unwind fp). */
static __always_inline void offcpu_stacks_fp(void *ctx)
{
	bool lost, user = false;
	struct offcpu_taken *o = offcpu_resumed(ctx, &user);

	if (!o)
		return;
	if (user) {
		o->key.s.ustack = store_stack(ctx, true, &lost);
		o->key.s.flags |= lost ? SAMPLE_USTACK_LOST : 0;
	}
	offcpu_count(o);
}

/* ... user stacks unwound from the binaries' CFI (bpf_loop, 5.17+). */
static __always_inline void offcpu_stacks_loop(void *ctx)
{
	bool user = false;
	struct offcpu_taken *o = offcpu_resumed(ctx, &user);
	struct uw_state *st;

	if (!o)
		return;
	if (user && (st = uw_state_get())) {
		st->key = o->key.s;
		/* in the kernel now: the user registers saved on entry */
		if (unwind_begin((struct bpf_perf_event_data *)ctx, false, st, o->key.s.tgid)) {
			bpf_loop(EBPROF_MAX_UNWIND_DEPTH + 1, loop_step, NULL, 0);
			unwind_publish(st);
		}
		o->key.s = st->key;
	}
	offcpu_count(o);
}

/* ... user stacks unwound from CFI by tail calls (kernels without
 * bpf_loop): the perf_event unwinder's steps in programs of the same type
 * as the hook's (a tail call stays within a program type), `progs`
 * holding the next one. */
static __always_inline void offcpu_stacks_tail(void *ctx, void *progs)
{
	bool user = false;
	struct offcpu_taken *o = offcpu_resumed(ctx, &user);
	struct uw_state *st;

	if (!o)
		return;
	if (user && (st = uw_state_get())) {
		st->key = o->key.s;
		if (unwind_begin((struct bpf_perf_event_data *)ctx, false, st, o->key.s.tgid)) {
			bpf_tail_call(ctx, progs, 0);
			st->key.flags |= SAMPLE_USTACK_LOST; /* no tail call: no stack */
		}
		o->key.s = st->key;
	}
	offcpu_count(o);
}

/* UNWIND_PER_CALL frames, then itself again; at the end the wait is
 * counted (its entry waiting in offcpu_scratch: the same CPU, no
 * preemption). */
static __always_inline void offcpu_unwind_more(void *ctx, void *progs)
{
	bool done = unwind_some();
	struct uw_state *st = uw_state_get();
	struct offcpu_taken *o;
	__u32 zero = 0;

	o = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!st || !o)
		return;
	if (!done) {
		st->calls++;
		bpf_tail_call(ctx, progs, 0);
		st->rec.end = UNWIND_END_DEPTH; /* out of tail calls */
	}
	unwind_publish(st);
	o->key.s = st->key;
	offcpu_count(o);
}

struct offcpu_tail_progs {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};
struct offcpu_tail_progs offcpu_unwind_tp SEC(".maps");
struct offcpu_tail_progs offcpu_unwind_kp SEC(".maps");

/*
 * Where the stacks are taken: the sched_exit_tp tracepoint, at the end of
 * __schedule() in the thread that resumed (6.16+), else a kprobe on
 * finish_task_switch, where the switch ends in that thread. One program
 * of each unwinder for each (userspace loads the pair it attaches).
 */
SEC("raw_tp/sched_exit_tp")
int offcpu_tp(void *ctx)
{
	offcpu_stacks_fp(ctx);
	return 0;
}

SEC("raw_tp/sched_exit_tp")
int offcpu_tp_loop(void *ctx)
{
	offcpu_stacks_loop(ctx);
	return 0;
}

SEC("raw_tp/sched_exit_tp")
int offcpu_tp_tail(void *ctx)
{
	offcpu_stacks_tail(ctx, &offcpu_unwind_tp);
	return 0;
}

SEC("raw_tp/sched_exit_tp")
int offcpu_tp_more(void *ctx)
{
	offcpu_unwind_more(ctx, &offcpu_unwind_tp);
	return 0;
}

SEC("kprobe")
int offcpu_kp(struct pt_regs *ctx)
{
	offcpu_stacks_fp(ctx);
	return 0;
}

SEC("kprobe")
int offcpu_kp_loop(struct pt_regs *ctx)
{
	offcpu_stacks_loop(ctx);
	return 0;
}

SEC("kprobe")
int offcpu_kp_tail(struct pt_regs *ctx)
{
	offcpu_stacks_tail(ctx, &offcpu_unwind_kp);
	return 0;
}

SEC("kprobe")
int offcpu_kp_more(struct pt_regs *ctx)
{
	offcpu_unwind_more(ctx, &offcpu_unwind_kp);
	return 0;
}

#endif /* EBPROF_OFFCPU_BPF_H */
