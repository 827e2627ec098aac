/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The wait sampler's visit of the targets' threads in one run
 * (waits_visit_targets: kfuncs, Linux 6.7+), included by waits.bpf.h in
 * the object of its own, waits_targets.bpf.c (EBPROF_WAITS_TARGETS), not
 * in profile.bpf.c's. It visits each thread it lists with
 * waits_visit_task() of waits.bpf.h.
 */
#ifndef EBPROF_WAITS_TARGETS_BPF_H
#define EBPROF_WAITS_TARGETS_BPF_H

/*
 * The targets' threads only (6.7+), so that a visit costs what the
 * targets have and not what the host has. The link is made for one task
 * (userspace's main thread: the tid filter of 6.1+), so that a read runs
 * this once; that run finds the targets' threads itself:
 *  - the processes of the host whose tgid is in `targets`, walked under
 *    RCU (bpf_iter_task, a few ns a process, no program run per thread):
 *    one with a single thread, its leader alive (a PostgreSQL backend),
 *    is looked at there (waits_look()); another is listed by tgid,
 *    marked WAITS_LIST_TGID;
 *  - the threads of those marked (bpf_iter_task over the process's
 *    threads, under RCU too), looked at as they come;
 *  - a thread looked at is done with there when it has not run since its
 *    last visit (waits_quick(): most of them), else listed by tid;
 *  - each thread listed then taken (bpf_task_from_pid) and visited
 *    outside RCU, as the visit sleeps (bpf_copy_from_user_task()).
 * A thread that exits between the list and its visit is not found.
 */
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;
extern void bpf_rcu_read_lock(void) __ksym __weak;
extern void bpf_rcu_read_unlock(void) __ksym __weak;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __ksym __weak;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym __weak;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym __weak;
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym __weak;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym __weak;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym __weak;

/* The targets' single threads' tids and the other targets' tgids
 * (WAITS_LIST_TGID), then those's threads' tids: sized by userspace from
 * waits_threads (the threads a session keeps), 1 when unused. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} waits_list SEC(".maps");

/* Entries of waits_list in use (kept in memory, not a register: the
 * verifier then sees each turn of a loop that adds one as the same), in
 * a section of its own: .bss, .data and .rodata are profile.bpf.c's,
 * shared, so they must be laid out as there (sampling/waits_targets.c) */
__u32 waits_n SEC(".data.waits_n") = 0;

static __always_inline void waits_list_add(__u32 v)
{
	__u32 i = waits_n, *slot = bpf_map_lookup_elem(&waits_list, &i);

	if (!slot) {
		stat_inc(STAT_WAITS_LIST_FULL);
		return;
	}
	*slot = v;
	waits_n = i + 1;
}

/* A thread of a target, under RCU: done with (waits_quick()), or listed
 * for a whole visit. A function of its own: its stack is not added to
 * that of the calls the visit makes (512 bytes for them all). */
static __noinline void waits_look(struct task_struct *t)
{
	stat_inc(STAT_WAITS_SEEN);
	if (!waits_quick(t, t->pid))
		waits_list_add(t->pid);
}

/* The threads of the process tgid into waits_list. (libbpf 1.1 has no
 * bpf_for_each(): its iterators are called by hand.) */
static __always_inline void waits_list_threads(__u32 tgid)
{
	struct task_struct *p = bpf_task_from_pid(tgid), *t;
	struct bpf_iter_task it;

	if (!p)
		return;
	bpf_rcu_read_lock();
	bpf_iter_task_new(&it, p, BPF_TASK_ITER_PROC_THREADS);
	while ((t = bpf_iter_task_next(&it)))
		waits_look(t);
	bpf_iter_task_destroy(&it);
	bpf_rcu_read_unlock();
	bpf_task_release(p);
}

/* An entry of waits_list that is a process's tgid, its threads to list
 * (pids are below 2^22, PID_MAX_LIMIT) */
#define WAITS_LIST_TGID 0x80000000u

/* The thread at i of waits_list, visited (a bpf_loop() callback: the
 * verifier checks the visit once, not once per way through an
 * open-coded loop, which it cannot follow that far). */
static long waits_visit_one(__u64 i, void *unused)
{
	__u32 k = (__u32)i, *v = bpf_map_lookup_elem(&waits_list, &k);
	struct task_struct *t;

	if (!v)
		return 1;
	if (*v & WAITS_LIST_TGID)
		return 0;
	t = bpf_task_from_pid(*v);
	if (!t)
		return 0;
	waits_visit_task(t, true);
	bpf_task_release(t);
	return 0;
}

SEC("iter.s/task")
int waits_visit_targets(struct bpf_iter__task *ctx)
{
	struct task_struct *p;
	struct bpf_iter_task procs;
	struct bpf_iter_num it;
	__u32 ntg, k, *v;
	int *i;

	if (!ctx->task)
		return 0; /* the end of the walk (of one task) */
	waits_n = 0;
	bpf_rcu_read_lock();
	bpf_iter_task_new(&procs, NULL, BPF_TASK_ITER_ALL_PROCS);
	while ((p = bpf_iter_task_next(&procs))) {
		k = p->tgid;
		if (!bpf_map_lookup_elem(&targets, &k))
			continue;
		/* its one thread, the leader: no walk of its threads later */
		if (p->signal->nr_threads == 1 && !p->exit_state)
			waits_look(p);
		else
			waits_list_add(k | WAITS_LIST_TGID);
	}
	bpf_iter_task_destroy(&procs);
	bpf_rcu_read_unlock();
	ntg = waits_n;

	bpf_iter_num_new(&it, 0, (int)ntg);
	while ((i = bpf_iter_num_next(&it))) {
		k = (__u32)*i;
		v = bpf_map_lookup_elem(&waits_list, &k);
		if (v && (*v & WAITS_LIST_TGID))
			waits_list_threads(*v & ~WAITS_LIST_TGID);
	}
	bpf_iter_num_destroy(&it);

	bpf_loop(waits_n, waits_visit_one, NULL, 0);
	return 0;
}

#endif /* EBPROF_WAITS_TARGETS_BPF_H */
