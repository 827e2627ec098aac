/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OOM kills, as the kernel decides them (bpf/oom.bpf.c at the
 * mark_victim raw tracepoint): every victim's pid reaches fn from the
 * sampler's poll (sampler_add_ringbuf()), at most one poll after the
 * kernel chose it. Any process: the caller decides whether it is one of
 * its own. The sampler's ring buffer calls into the watch: close the
 * sampler first, then the watch.
 */
#ifndef EBPROF_OOM_WATCH_H
#define EBPROF_OOM_WATCH_H

#include <stddef.h>

#include "ebprof/bpf_shared.h"
#include "sampler.h"

struct oom_watch;

typedef void (*oom_fn)(const struct ebprof_oom_event *e, void *ctx);

/*
 * Load and attach the watch (btf_path: as the sampler's; NULL: the
 * kernel's). 0, or -ENOENT when the kernel has no mark_victim
 * tracepoint, another negative errno with a one-line reason in err.
 */
int oom_watch_open(struct sampler *s, const char *btf_path, oom_fn fn, void *ctx,
		   struct oom_watch **out, char *err, size_t errlen);
void oom_watch_close(struct oom_watch *w);

#endif /* EBPROF_OOM_WATCH_H */
