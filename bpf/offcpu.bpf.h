/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Off-CPU time (--type offcpu), included by profile.bpf.c after the
 * unwinder. Two hooks see every switch of the host, so both stay cheap:
 *  - sched_switch, in the thread leaving: a targeted thread leaves only
 *    the time and its state in its `offcpu_starts` entry (offcpu_pct
 *    percent of its switches: userspace scales the time back);
 *  - where the switch ends, in the thread coming back (the sched_exit_tp
 *    tracepoint, 6.16+, else a kprobe on finish_task_switch): a thread
 *    with a time has its wait decided by its length (shorter than
 *    offcpu_min_ns: counted and dropped; at least offcpu_period_ns: taken;
 *    shorter: taken with the probability ns/period and counted as the
 *    period) and a wait taken gets its stacks, statement and PostgreSQL
 *    wait event there and then: nothing has run in the thread since it
 *    left, so they are those it waited with.
 * The DWARF unwind, the costly part, runs for the waits taken only.
 */
#ifndef EBPROF_OFFCPU_BPF_H
#define EBPROF_OFFCPU_BPF_H

const volatile __u64 offcpu_min_ns = 0;
const volatile __u64 offcpu_period_ns = 0; /* 0: every wait; at most 2^32 */
const volatile __u32 offcpu_pct = 100;
const volatile bool offcpu_on = false;

/* Targeted threads by tid (struct offcpu_start). An entry stays from one
 * wait to the next, written in place (map updates and deletes take locks,
 * lookups do not), and is cleared when its thread exits (offcpu_forget);
 * LRU, so that a full map makes room. */
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

#define TASK_DEAD_BIT 0x80 /* TASK_DEAD */

/* task_struct's state before 5.14 (then __state). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long offcpu_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline __u8 offcpu_state_of(long state, bool preempt)
{
	if (preempt || state == 0) /* TASK_RUNNING: preempted, or yielded */
		return OFFCPU_RUNNABLE;
	if (state & 2) /* TASK_UNINTERRUPTIBLE */
		return OFFCPU_DISK;
	return OFFCPU_SLEEPING;
}

/* The wait event a PostgreSQL backend set before it waited: at
 * *my_wait_event_info (14+) or in *MyProc (12, 13), wait_event_off in;
 * read in task (NULL: the current one, as read_user()). */
static __always_inline void read_wait_event(const struct seen_state *seen, struct offcpu_key *k,
					    struct task_struct *task)
{
	__u64 where = 0;

	if (!seen || !seen->stmt.pg_known || !seen->stmt.pg.wait_event)
		return;
	k->has_wait = 1;
	k->pg_major = (__u16)seen->stmt.pg.major;
	if (!read_user(&where, sizeof(where), (void *)seen->stmt.pg.wait_event, task) && where)
		read_user(&k->wait_event, sizeof(k->wait_event),
			  (void *)(where + seen->stmt.pg.wait_event_off), task);
}

/* The thread leaving the CPU (current, prev): since when and how, if
 * targeted. Its state is the tracepoint's prev_state argument where the
 * kernel passes it (5.18+: with_state), else read from prev. A thread with
 * an entry of its own process is known to be targeted (entries are cleared when
 * their thread exits): the lookup in `targets` is for the others. */
static __always_inline void offcpu_leaves(struct task_struct *prev, bool preempt, bool with_state,
					  long prev_state)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct offcpu_start *s, fresh = {};

	if (tid == 0)
		return;
	s = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if ((!s || s->tgid != tgid) && filter_targets && !bpf_map_lookup_elem(&targets, &tgid))
		return;
	if (offcpu_pct < 100 && bpf_get_prandom_u32() % 100 >= offcpu_pct) {
		stat_inc(STAT_OFFCPU_SKIPPED);
		return;
	}
	if (!with_state)
		prev_state = offcpu_task_state(prev);
	if (prev_state & TASK_DEAD_BIT) /* its last switch: no wait to come */
		return;
	if (s) {
		s->tgid = tgid;
		s->state = offcpu_state_of(prev_state, preempt);
		s->ts = bpf_ktime_get_ns();
		return;
	}
	fresh.tgid = tgid;
	fresh.state = offcpu_state_of(prev_state, preempt);
	fresh.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_starts, &tid, &fresh, BPF_ANY))
		stat_inc(STAT_OFFCPU_FULL);
}

/* A thread exits: its entry is cleared in place, not deleted (its tid may
 * come back in another process, which then meets no entry of its own;
 * the LRU reuses the slot when it needs one). From on_exit, for every
 * thread of the host. */
static __always_inline void offcpu_forget(__u32 tid)
{
	struct offcpu_start *s;

	if (!offcpu_on || !(s = bpf_map_lookup_elem(&offcpu_starts, &tid)))
		return;
	s->tgid = 0;
	s->ts = 0;
}

/* Every switch of the host, in the thread leaving. The kernels since 5.18
 * pass prev's state as a fourth argument: on_switch_state reads it there
 * (its attachment fails before 5.18, where on_switch is attached). */
#ifndef EBPROF_WAITS_ONLY /* not in waits_targets.bpf.c's object */
SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_state, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	offcpu_leaves(prev, preempt, true, prev_state);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_leaves(prev, preempt, false, 0);
	return 0;
}
#endif /* EBPROF_WAITS_ONLY */

/* Where the switch ends, the thread that resumed (current): if it was
 * away and its wait is taken, the scratch entry with its key filled up to
 * the user stack, else NULL; *user: a user stack is to be taken. */
static __always_inline struct offcpu_taken *offcpu_resumed(void *ctx, bool *user)
{
	__u64 id = bpf_get_current_pid_tgid(), ns;
	__u32 tid = (__u32)id, zero = 0;
	struct offcpu_start *s;
	struct offcpu_taken *o;
	struct seen_state *seen;
	bool has_mm, lost;

	if (tid == 0)
		return NULL;
	s = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!s || !s->ts)
		return NULL;
	ns = bpf_ktime_get_ns() - s->ts;
	s->ts = 0;
	if (ns < offcpu_min_ns) {
		stat_inc(STAT_OFFCPU_SHORT);
		return NULL;
	}
	if (ns < offcpu_period_ns) {
		/* taken with probability ns / period, as the period */
		if (((__u64)bpf_get_prandom_u32() * offcpu_period_ns) >> 32 >= ns) {
			stat_inc(STAT_OFFCPU_UNTAKEN);
			return NULL;
		}
		ns = offcpu_period_ns;
	}
	o = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!o)
		return NULL;
	__builtin_memset(o, 0, sizeof(*o));
	o->ns = ns;
	o->key.state = s->state;
	o->key.s.tgid = id >> 32;
	o->key.s.tid = tid;
	bpf_get_current_comm(&o->key.s.comm, sizeof(o->key.s.comm));
	if (want_kernel) {
		o->key.s.kstack = store_stack(ctx, false, &lost);
		o->key.s.flags |= lost ? SAMPLE_KSTACK_LOST : 0;
	}
	seen = task_common(&o->key.s, &has_mm);
	read_wait_event(seen, &o->key, NULL);
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
		if (o->key.s.ustack && user_pc_exact())
			o->key.s.flags |= SAMPLE_USER_EXACT;
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
#ifndef EBPROF_WAITS_ONLY /* not in waits_targets.bpf.c's object */
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
#endif /* EBPROF_WAITS_ONLY */

/* The record of a wait cut (a scratch per CPU: the program does not
 * sleep). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_cut_rec);
} offcpu_cut_scratch SEC(".maps");

/* A thread of a target away since before it was known (at the start, a
 * new target): away from now on. */
static __always_inline void offcpu_seed(struct task_struct *task, __u32 tid, __u32 tgid)
{
	struct offcpu_start fresh = { .tgid = tgid };
	long state;

	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid))
		return;
	if (BPF_CORE_READ(task, on_cpu) || BPF_CORE_READ(task, exit_state))
		return;
	state = offcpu_task_state(task);
	if (state & TASK_DEAD_BIT)
		return;
	fresh.state = offcpu_state_of(state, false);
	fresh.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_starts, &tid, &fresh, BPF_NOEXIST) == -E2BIG)
		stat_inc(STAT_OFFCPU_FULL);
}

/*
 * At the start and at each drain (userspace reads it then), every thread
 * of the host: one of a target away now has the part of its wait so far
 * cut off, decided by its length as a wait is where it ends
 * (offcpu_resumed()), and written to the reader with its kernel stack;
 * its start moves to now, so the rest is counted where it ends or at the
 * next cut. A part shorter than offcpu_min_ns is left to the wait's end.
 * One away that the switch program never saw leave (it left before the
 * start) is away from now on.
 */
#ifndef EBPROF_WAITS_ONLY /* not in waits_targets.bpf.c's object */
SEC("iter/task")
int offcpu_cut(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct offcpu_cut_rec *r;
	struct offcpu_start *s;
	__u32 tid, tgid, zero = 0;
	__u64 now, ns;
	long len;

	if (!task)
		return 0;
	tid = BPF_CORE_READ(task, pid);
	tgid = BPF_CORE_READ(task, tgid);
	s = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!s || s->tgid != tgid) {
		offcpu_seed(task, tid, tgid);
		return 0;
	}
	if (!s->ts)
		return 0;
	now = bpf_ktime_get_ns();
	if (now <= s->ts || now - s->ts < offcpu_min_ns)
		return 0;
	ns = now - s->ts;
	s->ts = now;
	if (ns < offcpu_period_ns) {
		if (((__u64)bpf_get_prandom_u32() * offcpu_period_ns) >> 32 >= ns) {
			stat_inc(STAT_OFFCPU_UNTAKEN);
			return 0;
		}
		ns = offcpu_period_ns;
	}
	r = bpf_map_lookup_elem(&offcpu_cut_scratch, &zero);
	if (!r)
		return 0;
	r->tgid = s->tgid;
	r->tid = tid;
	r->ns = ns;
	r->state = s->state;
	BPF_CORE_READ_STR_INTO(&r->comm, task, comm);
	r->nkernel = 0;
	if (want_kernel) {
		len = bpf_get_task_stack(task, r->ips, sizeof(r->ips), 0);
		r->nkernel = len > 0 ? len / sizeof(__u64) : 0;
	}
	bpf_seq_write(seq, r, sizeof(*r));
	stat_inc(STAT_WAITS_CUT);
	return 0;
}
#endif /* EBPROF_WAITS_ONLY */

#endif /* EBPROF_OFFCPU_BPF_H */
