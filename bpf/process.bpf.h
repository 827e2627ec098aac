/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Processes coming and going (included by profile.bpf.c last): a fork of a
 * target, or in a --cgroup, is a target; an exec whose name matches --comm,
 * or in a --cgroup, makes one; a sampled process sends its title as it
 * exits and its exit after; every exiting thread's off-CPU entry is cleared.
 */
#ifndef EBPROF_PROCESS_BPF_H
#define EBPROF_PROCESS_BPF_H

static __always_inline bool comm_matches(const char *comm)
{
	for (__u32 i = 0; i < EBPROF_MAX_COMMS; i++) {
		bool same = true;

		if (i >= ncomms)
			break;
		for (int j = 0; j < EBPROF_TASK_COMM_LEN; j++) {
			if (comm[j] != comms[i][j]) {
				same = false;
				break;
			}
			if (!comm[j])
				break;
		}
		if (same)
			return true;
	}
	return false;
}

static __always_inline bool in_target_cgroup(void)
{
	__u64 id = bpf_get_current_cgroup_id();

	return bpf_map_lookup_elem(&target_cgroups, &id) != NULL;
}

/*
 * The process tracepoints are raw tracepoints read through CO-RE
 * (BPF_CORE_READ), not tp_btf programs: tp_btf attaches through the
 * kernel's own BTF, so a kernel without /sys/kernel/btf/vmlinux could not
 * load them even with an external --btf file; raw tracepoints (4.17) only
 * need the relocations, which --btf serves.
 */
#ifndef EBPROF_WAITS_ONLY /* not in waits_targets.bpf.c's object */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	bool unready;
	__u8 yes = 1;

	if (ptgid == ctgid) /* a new thread: targeted through its tgid */
		return 0;
	if (want_queries || want_plpgsql) { /* a backend: the postmaster's symbols are its own */
		struct ebprof_pg_proc *pg = bpf_map_lookup_elem(&pg_procs, &ptgid);
		struct ebprof_plpgsql_proc *pl = bpf_map_lookup_elem(&plpgsql_procs, &ptgid);

		if (pg && bpf_map_update_elem(&pg_procs, &ctgid, pg, BPF_ANY))
			stat_inc(STAT_PG_FULL);
		if (pl && bpf_map_update_elem(&plpgsql_procs, &ctgid, pl, BPF_ANY))
			stat_inc(STAT_PG_FULL);
	}
	{ /* the child has its parent's mappings until it execs */
		__u32 *set = bpf_map_lookup_elem(&unwind_pids, &ptgid);

		if (set && *set == EBPROF_UNWIND_NO_SET)
			set = NULL;
		if (set && bpf_map_update_elem(&unwind_pids, &ctgid, set, BPF_ANY))
			stat_inc(STAT_UNWIND_PROCS_FULL);
		unready = wake_unready && !set;
	}
	if (filter_targets) {
		/* current is the parent: its cgroup is the child's */
		if (!(follow_forks && bpf_map_lookup_elem(&targets, &ptgid)) && !in_target_cgroup())
			return 0;
		if (bpf_map_update_elem(&targets, &ctgid, &yes, BPF_ANY)) {
			stat_inc(STAT_TARGETS_FULL);
			return 0;
		}
	}
	/* a child without tables: userspace reads its parent's maps at once */
	emit(EVENT_FORK, ctgid, ptgid, 0, unready ? EVENT_F_UNREADY : 0, unready);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), no_set = EBPROF_UNWIND_NO_SET;
	char comm[EBPROF_TASK_COMM_LEN];
	__u8 yes = 1;

	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid)) {
		BPF_CORE_READ_STR_INTO(&comm, p, comm);
		if (!(ncomms && comm_matches(comm)) && !in_target_cgroup())
			return 0;
		if (bpf_map_update_elem(&targets, &tgid, &yes, BPF_ANY)) {
			stat_inc(STAT_TARGETS_FULL);
			return 0;
		}
	}
	/* New address space: the next sample announces the tgid again so
	 * userspace takes a fresh snapshot of its maps (and finds out
	 * whether it is PostgreSQL). */
	bpf_map_delete_elem(&seen, &tgid);
	bpf_map_delete_elem(&pg_procs, &tgid);
	bpf_map_delete_elem(&plpgsql_procs, &tgid);
	/* no set for the new image, and none userspace made before it */
	if (bpf_map_update_elem(&unwind_pids, &tgid, &no_set, BPF_ANY))
		bpf_map_delete_elem(&unwind_pids, &tgid);
	emit(EVENT_EXEC, tgid, 0, 0, 0, false);
	return 0;
}

/* Its title as a sampled process exits (exit_group(2), or a fatal
 * signal), while its memory is still there (at sched_process_exit it is
 * gone): through a BPF trampoline where the kernel has them, else a
 * kprobe; userspace loads and attaches one of the two, or neither. */
static __always_inline int title_at_exit(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (bpf_map_lookup_elem(&seen, &tgid)) /* no samples: no need */
		send_title((struct task_struct *)bpf_get_current_task(), tgid);
	return 0;
}

SEC("fentry/do_group_exit")
int BPF_PROG(on_group_exit_fentry, int exit_code)
{
	return title_at_exit();
}

SEC("kprobe/do_group_exit")
int BPF_KPROBE(on_group_exit_kprobe)
{
	return title_at_exit();
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	offcpu_forget(tid);
	if (tid != tgid) /* a thread, not the process */
		return 0;
	bpf_map_delete_elem(&pg_procs, &tgid);
	bpf_map_delete_elem(&plpgsql_procs, &tgid);
	bpf_map_delete_elem(&unwind_pids, &tgid);
	if (filter_targets && !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	if (!filter_targets && !bpf_map_lookup_elem(&seen, &tgid))
		return 0; /* -a: only processes we sampled are of interest */
	bpf_map_delete_elem(&targets, &tgid);
	bpf_map_delete_elem(&seen, &tgid);
	emit(EVENT_EXIT, tgid, 0, 0, 0, false);
	return 0;
}
#endif /* EBPROF_WAITS_ONLY */

#endif /* EBPROF_PROCESS_BPF_H */
