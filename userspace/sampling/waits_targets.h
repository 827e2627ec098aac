/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wait sampler's visit of the targets' threads in one run (Linux
 * 6.7+): its program loaded from its own object (bpf/waits_targets.bpf.c)
 * on the session's maps, and linked for this process's main thread.
 */
#ifndef EBPROF_WAITS_TARGETS_H
#define EBPROF_WAITS_TARGETS_H

#include <stddef.h>

struct sampler;
struct bpf_link;

/* Loaded and linked: 0 and *out (the caller's: bpf_link__destroy()), or
 * a negative errno with why in err. Only where the kernel has its kfuncs
 * (features_have_task_iter_targets()). */
int waits_targets_attach(struct sampler *s, struct bpf_link **out, char *err, size_t errlen);

#endif /* EBPROF_WAITS_TARGETS_H */
