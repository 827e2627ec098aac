/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Structures shared by the BPF sampler (bpf/profile.bpf.c) and userspace
 * (userspace/sampler.c). Included from BPF after vmlinux.h and from
 * userspace after <linux/types.h>; it must not include anything itself.
 */
#ifndef EBPROF_BPF_SHARED_H
#define EBPROF_BPF_SHARED_H

#define EBPROF_TASK_COMM_LEN 16
#define EBPROF_MAX_STACK_DEPTH 127 /* PERF_MAX_STACK_DEPTH */
#define EBPROF_MAX_COMMS 8	   /* names in the default target rule */
#define EBPROF_STACK_NONE (-0x10000) /* stack not collected */

/* Key of the counts maps: one entry per distinct (thread, name, stacks). */
struct sample_key {
	__u32 tgid;
	__u32 tid;
	__s32 kstack_id; /* >= 0: id in `stacks`; EBPROF_STACK_NONE: not
			  * collected (user mode, --no-kernel); other < 0:
			  * lost, negative errno of bpf_get_stackid */
	__s32 ustack_id; /* same for the user stack (kernel threads: NONE) */
	char comm[EBPROF_TASK_COMM_LEN];
};

/* Indices into the per-CPU `stats` array: every sample is counted once
 * under STAT_SAMPLES, and every failure under its own cause. */
enum ebprof_stat {
	STAT_SAMPLES = 0,     /* samples of targeted tasks */
	STAT_KSTACK_EEXIST,   /* kernel stack id collision, stack lost */
	STAT_USTACK_EEXIST,   /* user stack id collision, stack lost */
	STAT_KSTACK_EFAULT,   /* kernel stack could not be read */
	STAT_USTACK_EFAULT,   /* user stack could not be read */
	STAT_STACK_OTHER,     /* any other bpf_get_stackid error */
	STAT_COUNTS_FULL,     /* counts map full: sample lost */
	STAT_EVENTS_LOST,     /* ring buffer full: process event lost */
	STAT_TARGETS_FULL,    /* target map full: new process not followed */
	STAT_MAX,
};

enum ebprof_event_type {
	EVENT_FORK = 1,	 /* pid = child tgid, ppid = parent tgid */
	EVENT_EXEC = 2,	 /* pid = tgid that exec'd (maps replaced) */
	EVENT_EXIT = 3,	 /* pid = tgid whose last thread exited */
	EVENT_FIRST = 4, /* pid = tgid sampled for the first time */
};

/* Ring buffer record for process life-cycle events of targets. */
struct ebprof_event {
	__u32 type;
	__u32 pid;
	__u32 ppid;
	__u32 pad;
	__u64 ktime_ns;
	char comm[EBPROF_TASK_COMM_LEN];
};

#endif /* EBPROF_BPF_SHARED_H */
