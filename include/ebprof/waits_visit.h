/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whether the BPF program holds the wait sampler's visit of the targets'
 * threads alone (bpf/waits.bpf.h: waits_visit_targets, Linux 6.7+), for
 * the program, userspace and the tests alike. It calls kfuncs, and a
 * libbpf before 1.3 fails to load an object that names a kfunc the
 * kernel lacks (6.1-6.6) without CAP_SYS_ADMIN (it cannot look through
 * the modules' BTF; the agent's unit has no CAP_SYS_ADMIN), even when
 * the program that calls it is not loaded. So it is in by default only
 * with libbpf 1.3+; `make WAITS_TARGETS=1` puts it in anyway (for hosts
 * whose kernel is 6.7+, or that run as root). Without it, 6.1+ visits
 * the targets' threads a task iterator link per process
 * (sampling/waits_links.c), no kfunc.
 */
#ifndef EBPROF_WAITS_VISIT_H
#define EBPROF_WAITS_VISIT_H

#include <bpf/libbpf_version.h>

#ifndef EBPROF_WAITS_TARGETS
#if LIBBPF_MAJOR_VERSION > 1 || (LIBBPF_MAJOR_VERSION == 1 && LIBBPF_MINOR_VERSION >= 3)
#define EBPROF_WAITS_TARGETS 1
#else
#define EBPROF_WAITS_TARGETS 0
#endif
#endif

#endif /* EBPROF_WAITS_VISIT_H */
