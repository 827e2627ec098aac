/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * (Named bpf_features.h: a "features.h" under -Iuserspace would shadow
 * glibc's <features.h>.)
 * Feature probe: what ebprof's BPF program (bpf/profile.bpf.c) needs from
 * the running kernel, asked of the kernel itself through libbpf's probing
 * helpers (tiny programs and maps that are loaded and dropped) and the
 * vmlinux BTF, before the real program is loaded. A missing feature is
 * reported in one line naming it and the Linux version that brought it,
 * instead of a verifier dump. Needs CAP_BPF (or root) like the load itself.
 */
#ifndef EBPROF_BPF_FEATURES_H
#define EBPROF_BPF_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

struct features {
	char release[65];  /* uname -r */
	bool btf;	   /* vmlinux BTF readable (sysfs, or the --btf file) */
	bool perf_event;   /* BPF_PROG_TYPE_PERF_EVENT: the sampler (4.9) */
	bool raw_tp;	   /* raw tracepoints: sched_process_{fork,exec,exit} (4.17) */
	bool hash;	   /* BPF_MAP_TYPE_HASH */
	bool percpu_array; /* BPF_MAP_TYPE_PERCPU_ARRAY (4.6) */
	bool ringbuf;	   /* BPF_MAP_TYPE_RINGBUF: fork/exec/exit events (5.8) */
	bool get_stack;	   /* bpf_get_stack() in perf_event programs (4.18) */
	bool current_task; /* bpf_get_current_task() (4.8) */
	bool cgroup_id;	   /* bpf_get_current_cgroup_id() (4.18) */
	bool read_kernel;  /* bpf_probe_read_kernel_str() (5.5) */
	bool batch_ops;	   /* map lookup-and-delete in batches (5.6); optional */
	bool loop;	   /* bpf_loop() (5.17); optional: else tail calls */
	bool no_prealloc;  /* hash maps allocated as used (BPF_F_NO_PREALLOC) in
			    * perf_event programs (6.1); optional: else
			    * preallocated, sized smaller */
	/* In the kernel's own BTF (iterators attach through it): */
	bool task_iter;		/* a task iterator with bpf_get_task_stack() (5.9): off-CPU
				 * waits in progress cut at a drain; optional */
	bool task_iter_s;	/* ... sleepable, with bpf_copy_from_user_task() and
				 * bpf_task_pt_regs() (5.18): off-CPU sampled; optional,
				 * else timed at every switch */
	bool task_iter_targets; /* ... that visits the targets' threads alone:
				 * bpf_task_from_pid(), bpf_iter_task (6.7);
				 * else every thread of the host */
	bool task_iter_pid;	/* ... whose link is made for one process (union
				 * bpf_iter_link_info's task, 6.1): the targets'
				 * threads a link per process; before, a link's
				 * process is ignored (it walks the host) */
	bool task_iter_asked;	/* the three above probed (not asked: left out of
				 * features_format(); parsing the kernel's BTF
				 * costs a session that takes no off-CPU 10 ms) */
};

/*
 * Probe the running kernel. btf_path: the --btf file, or NULL for
 * /sys/kernel/btf/vmlinux. Fills *f (a feature that cannot be probed
 * counts as missing). Returns 0, or a negative errno when the kernel
 * cannot load even a trivial program (no BPF, or no privilege): then *f
 * only has release and btf filled.
 */
int features_probe(const char *btf_path, struct features *f);

/* One line, "kernel 6.1.0-13-amd64: BTF yes, perf_event yes, ...", in buf. */
void features_format(const struct features *f, char *buf, size_t len);

/*
 * 0 when every feature the BPF program needs is there; otherwise
 * -ENOTSUP and, in err, one line naming what is missing and since which
 * Linux version it exists. Optional features with a fallback (batch ops:
 * the counts are drained key by key) never fail the check.
 */
int features_check(const struct features *f, char *err, size_t errlen);

/*
 * What the BPF program needs before it is loaded, checked in one place:
 * the privileges (naming the capability that is missing: -EPERM), the BTF
 * (the kernel's, or the btf_path file: -ENOTSUP, or the error reading the
 * file), and the features (probed once per process, a documented cache:
 * the kernel does not change under us; the probe's line is logged at info
 * level). 0, or a negative errno with one line in err.
 */
int features_require(const char *btf_path, char *err, size_t errlen);

/* bpf_loop() is there (after features_require()): DWARF unwinding in
 * one program rather than a chain of tail calls. */
bool features_have_loop(void);

/* The task iterators there are (after features_require()): the wait
 * sampler's sleepable one, the plain one that cuts waits in progress. */
bool features_have_task_iter_s(void);
/* ... and the kfuncs of a visit of the targets' threads alone (6.7+). */
bool features_have_task_iter_targets(void);
/* A task iterator's link made for one process (Linux 6.1+). */
bool features_have_task_iter_pid(void);
bool features_have_task_iter(void);

/* Hash maps allocated as used are allowed in every program of the
 * sampler (after features_require()). */
bool features_have_no_prealloc(void);

/*
 * The trampoline for titles at exit (fentry/do_group_exit) is refused by
 * some kernels (EPERM from a kernel without direct ftrace calls), and a
 * refusal costs a whole second load of the program: once it happened,
 * it is remembered for the process and, in /run/ebprof/fentry-refused
 * (the boot's id inside), for the boot, so that the next sessions load
 * the kprobe variant at once. features_fentry_refused(): was it refused
 * (or is fentry not to be tried); features_fentry_refuse(): it was.
 */
bool features_fentry_refused(void);
void features_fentry_refuse(void);

/* strerror() that also names libbpf's own codes (LIBBPF_ERRNO__*, 4000+). */
const char *features_libbpf_strerror(int err);

#endif /* EBPROF_BPF_FEATURES_H */
