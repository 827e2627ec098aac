/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Structures shared by the BPF sampler (bpf/profile.bpf.c) and userspace
 * (userspace/sampling/sampler.c). Included from BPF after vmlinux.h and from
 * userspace after <linux/types.h>; it must not include anything itself.
 */
#ifndef EBPROF_BPF_SHARED_H
#define EBPROF_BPF_SHARED_H

#define EBPROF_TASK_COMM_LEN 16
#define EBPROF_MAX_STACK_DEPTH 127 /* PERF_MAX_STACK_DEPTH */
#define EBPROF_MAX_COMMS 8	   /* names in the default target rule */

/* Key of the counts maps: one entry per distinct (thread, name, stacks). */
struct sample_key {
	__u32 tgid;
	__u32 tid;
	__u64 kstack; /* key of the kernel stack in `stacks`, 0: none */
	__u64 ustack; /* key of the user stack in `stacks`, 0: none */
	char comm[EBPROF_TASK_COMM_LEN];
	__u32 flags; /* SAMPLE_*_LOST: a stack was taken but could not be kept */
	__u32 pad;
};

#define SAMPLE_KSTACK_LOST 1u
#define SAMPLE_USTACK_LOST 2u

/* Value of the `stacks` map, keyed by a 64-bit hash of its frames:
 * addresses leaf first, zero-filled after the last frame. */
struct stack_trace {
	__u64 ips[EBPROF_MAX_STACK_DEPTH];
};

/* Indices into the per-CPU `stats` array: every sample is counted once
 * under STAT_SAMPLES, and every failure under its own cause. */
enum ebprof_stat {
	STAT_SAMPLES = 0,   /* samples of targeted tasks */
	STAT_STACKS_FULL,   /* stack map full: stack lost */
	STAT_KSTACK_EFAULT, /* kernel stack could not be read */
	STAT_USTACK_EFAULT, /* user stack could not be read */
	STAT_STACK_OTHER,   /* any other bpf_get_stack error */
	STAT_COUNTS_FULL,   /* counts map full: sample lost */
	STAT_EVENTS_LOST,   /* ring buffer full: process event lost */
	STAT_TARGETS_FULL,  /* target map full: new process not followed */
	STAT_SEEN_FULL,	    /* seen map full: sampled process not announced */
	STAT_MAX,
};

enum ebprof_event_type {
	EVENT_FORK = 1,	 /* pid = child tgid, ppid = parent tgid */
	EVENT_EXEC = 2,	 /* pid = tgid that exec'd (maps replaced) */
	EVENT_EXIT = 3,	 /* pid = tgid whose last thread exited */
	EVENT_FIRST = 4, /* pid = tgid sampled for the first time */
	EVENT_TITLE = 5, /* pid = sampled tgid: its title (struct ebprof_title) */
	EVENT_MAPS = 6,	 /* pid = sampled tgid whose executable mappings changed */
};

/* Ring buffer record for process life-cycle events of targets. */
struct ebprof_event {
	__u32 type;
	__u32 pid;
	__u32 ppid;
	__u32 pad;
	__u64 ktime_ns;
	/* EVENT_FIRST, EVENT_MAPS: pages of its executable mappings (the
	 * kernel's mm->exec_vm, /proc/PID/status VmExe + VmLib): a forked
	 * child with its parent's count has its parent's code mapped. */
	__u64 exec_pages;
	char comm[EBPROF_TASK_COMM_LEN];
};

/* EVENT_TITLE: the argv area of a sampled process as it exits, where
 * PostgreSQL keeps its process title ("postgres: alice shop [local]
 * idle"): a short-lived backend is often gone before userspace could
 * read /proc/PID/cmdline. len bytes of title, at most EBPROF_TITLE_LEN. */
#define EBPROF_TITLE_LEN 256

struct ebprof_title {
	struct ebprof_event h;
	__u32 len;
	__u32 pad;
	char title[EBPROF_TITLE_LEN];
};

#endif /* EBPROF_BPF_SHARED_H */
