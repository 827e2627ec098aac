/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory cgroups for the tests (v2, or v1's memory controller): one made
 * with a limit and no swap, processes moved into it, its OOM kills read,
 * and removed. Everything asserts through Criterion.
 */
#ifndef EBPROF_TEST_MEMCG_H
#define EBPROF_TEST_MEMCG_H

#include <stddef.h>
#include <stdint.h>

/* A new cgroup named NAME-<test pid> with memory limit LIMIT ("48M"),
 * swap 0 where the kernel has it; its directory into dir (len bytes). */
void memcg_make(char *dir, size_t len, const char *name, const char *limit);
/* Move pid into it. */
void memcg_add(const char *dir, int pid);
/* Its processes killed for lack of memory (memory.events' oom_kill; v1:
 * memory.oom_control's oom_kill), -1 when the kernel does not say. */
int64_t memcg_oom_kills(const char *dir);
/* Its peak usage in bytes (memory.peak; v1: max_usage_in_bytes), -1 when
 * the kernel does not say. */
int64_t memcg_peak(const char *dir);
/* Remove it (its processes gone); dir becomes "". */
void memcg_remove(char *dir);

#endif /* EBPROF_TEST_MEMCG_H */
