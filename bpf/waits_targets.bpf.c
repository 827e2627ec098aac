// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wait sampler's visit of the targets' threads in one run
 * (waits_targets.bpf.h: kfuncs, Linux 6.7+) as an object of its own:
 * profile.bpf.c again with it. libbpf before 1.3 (Debian 12's 1.1) fails
 * to load an object that names a kfunc the kernel lacks (6.1-6.6)
 * without CAP_SYS_ADMIN, even when the program that calls it is not
 * loaded, so profile.bpf.c's object names none, and this one is opened
 * only where the kernel's BTF has them all (bpf_features.c). Userspace
 * loads its one program waits_visit_targets on profile.bpf.c's maps and
 * global data (bpf_map__reuse_fd(), sampling/waits_targets.c): the same
 * source, so the same layout, which userspace checks before.
 */
#define EBPROF_WAITS_TARGETS 1
#define EBPROF_WAITS_ONLY 1 /* no other program: offcpu.bpf.h, process.bpf.h, sample.bpf.h */
#include "profile.bpf.c"
