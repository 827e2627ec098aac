/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Off-CPU time (--type offcpu), included by profile.bpf.c after the
 * unwinder. At sched_switch, when a targeted thread leaves the CPU (the
 * switch runs in its context): its kernel and user stacks, statement,
 * state and PostgreSQL wait event go into `offcpu_start` with the time;
 * when a thread with an entry comes back, the time it was away is added
 * under that key in the active `offcpu_counts` map. sched_switch fires for
 * every task of the host: untargeted threads are dropped first, and only
 * offcpu_pct percent of switch-outs are taken (userspace scales the time
 * back); waits shorter than offcpu_min_ns are counted and dropped.
 */
#ifndef EBPROF_OFFCPU_BPF_H
#define EBPROF_OFFCPU_BPF_H

const volatile __u64 offcpu_min_ns = 0;
const volatile __u32 offcpu_pct = 100;

/* Threads away now, by tid (LRU: a thread that exits while away leaves
 * its entry behind). */
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
	__type(value, struct offcpu_start);
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

/* The wait event a PostgreSQL backend set as it left (its
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

/* The thread leaving the CPU (current), up to its user stack: the
 * scratch entry with its key filled, NULL when it is not profiled;
 * *user: a user stack is to be taken. */
static __always_inline struct offcpu_start *offcpu_begin(void *ctx, struct task_struct *prev,
							 bool preempt, bool *user)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct offcpu_start *o;
	struct seen_state *seen;
	bool has_mm, lost;

	if (tid == 0 || (filter_targets && !bpf_map_lookup_elem(&targets, &tgid)))
		return NULL;
	if (offcpu_pct < 100 && bpf_get_prandom_u32() % 100 >= offcpu_pct) {
		stat_inc(STAT_OFFCPU_SKIPPED);
		return NULL;
	}
	o = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!o)
		return NULL;
	__builtin_memset(o, 0, sizeof(*o));
	o->key.s.tgid = tgid;
	o->key.s.tid = tid;
	bpf_get_current_comm(&o->key.s.comm, sizeof(o->key.s.comm));
	o->key.state = offcpu_state_of(prev, preempt);
	if (want_kernel) {
		o->key.s.kstack = store_stack(ctx, false, &lost);
		o->key.s.flags |= lost ? SAMPLE_KSTACK_LOST : 0;
	}
	seen = task_common(&o->key.s, &has_mm);
	read_wait_event(seen, &o->key);
	*user = want_user && has_mm;
	return o;
}

static __always_inline void offcpu_keep(struct offcpu_start *o)
{
	o->ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&offcpu_starts, &o->key.s.tid, o, BPF_ANY))
		stat_inc(STAT_OFFCPU_FULL);
}

/* The thread coming back (next): its time away, counted. */
static __always_inline void offcpu_end(struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct offcpu_value one = {}, *v;
	struct offcpu_start *o;
	__u64 ns;
	void *counts;
	long ret;

	if (tid == 0)
		return;
	o = bpf_map_lookup_elem(&offcpu_starts, &tid);
	if (!o)
		return;
	ns = bpf_ktime_get_ns() - o->ts;
	if (ns < offcpu_min_ns) {
		stat_inc(STAT_OFFCPU_SHORT);
		bpf_map_delete_elem(&offcpu_starts, &tid);
		return;
	}
	counts = active_counts ? (void *)&offcpu_counts1 : (void *)&offcpu_counts0;
	v = bpf_map_lookup_elem(counts, &o->key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->ns, ns);
	} else {
		one.count = 1;
		one.ns = ns;
		ret = (int)bpf_map_update_elem(counts, &o->key, &one, BPF_NOEXIST);
		if (ret == -EEXIST) {
			v = bpf_map_lookup_elem(counts, &o->key);
			if (v) {
				__sync_fetch_and_add(&v->count, 1);
				__sync_fetch_and_add(&v->ns, ns);
			}
		} else if (ret) {
			stat_inc(STAT_OFFCPU_FULL);
		}
	}
	bpf_map_delete_elem(&offcpu_starts, &tid);
}

/* User stacks by frame pointers (--unwind fp). */
SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	bool lost, user = false;
	struct offcpu_start *o = offcpu_begin(ctx, prev, preempt, &user);

	if (o) {
		if (user) {
			o->key.s.ustack = store_stack(ctx, true, &lost);
			o->key.s.flags |= lost ? SAMPLE_USTACK_LOST : 0;
		}
		offcpu_keep(o);
	}
	offcpu_end(next);
	return 0;
}

/* User stacks unwound from the binaries' CFI (bpf_loop, 5.17+). */
SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_loop, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	bool user = false;
	struct offcpu_start *o = offcpu_begin(ctx, prev, preempt, &user);
	struct uw_state *st;

	if (o && user && (st = uw_state_get())) {
		st->key = o->key.s;
		/* in the kernel now: the user registers saved on entry */
		if (unwind_begin((struct bpf_perf_event_data *)ctx, false, st, o->key.s.tgid)) {
			bpf_loop(EBPROF_MAX_UNWIND_DEPTH + 1, loop_step, NULL, 0);
			unwind_publish(st);
		}
		o->key.s = st->key;
	}
	if (o)
		offcpu_keep(o);
	offcpu_end(next);
	return 0;
}

/* User stacks unwound from CFI by tail calls (kernels without bpf_loop):
 * the perf_event unwinder's steps in raw_tp programs of their own (a tail
 * call stays within a program type). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_unwind_prog SEC(".maps");

SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_tail, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct offcpu_start *o;
	struct uw_state *st;
	bool user = false;

	offcpu_end(next); /* first: a tail call does not come back */
	o = offcpu_begin(ctx, prev, preempt, &user);
	if (!o)
		return 0;
	if (user && (st = uw_state_get())) {
		st->key = o->key.s;
		if (unwind_begin((struct bpf_perf_event_data *)ctx, false, st, o->key.s.tgid)) {
			bpf_tail_call(ctx, &offcpu_unwind_prog, 0);
			st->key.flags |= SAMPLE_USTACK_LOST; /* no tail call: no stack */
		}
		o->key.s = st->key;
	}
	offcpu_keep(o);
	return 0;
}

/* UNWIND_PER_CALL frames, then itself again; at the end the wait starts
 * (the entry waiting in offcpu_scratch: the same CPU, no preemption). */
SEC("raw_tp/sched_switch")
int offcpu_unwind_tail(void *ctx)
{
	bool done = unwind_some();
	struct uw_state *st = uw_state_get();
	struct offcpu_start *o;
	__u32 zero = 0;

	o = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	if (!st || !o)
		return 0;
	if (!done) {
		st->calls++;
		bpf_tail_call(ctx, &offcpu_unwind_prog, 0);
		st->rec.end = UNWIND_END_DEPTH; /* out of tail calls */
	}
	unwind_publish(st);
	o->key.s = st->key;
	offcpu_keep(o);
	return 0;
}

#endif /* EBPROF_OFFCPU_BPF_H */
