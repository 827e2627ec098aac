/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The maps of new processes, read on a thread of their own as the BPF
 * program announces them (the `fresh` ring buffer: a process sampled
 * without unwind tables, or one announced less than a second ago that
 * mapped code since). The event loop reads a process's maps when it
 * handles its first sample, but while it is busy (a flush symbolizing new
 * binaries, hundreds of milliseconds) a process of 100 ms lives and exits
 * unread, its samples unnamed; this thread reads it within milliseconds,
 * and the event loop takes what it read when its own read finds the
 * process gone.
 *
 * Only this module's table is shared between the threads (under its
 * lock); the thread reads /proc and nothing else of the agent. It keeps
 * at most PREFETCH_SLOTS snapshots, each until taken or a minute old.
 * Each snapshot is of the image announced (/proc/PID/stat's startcode
 * the BPF program's mm->start_code, before and after the read): one
 * announced just before an exec is not read as the next image.
 */
#ifndef EBPROF_MAPS_PREFETCH_H
#define EBPROF_MAPS_PREFETCH_H

#include <stdint.h>

#include "process/procmaps.h"

#define PREFETCH_SLOTS 256

struct maps_prefetch;

/* Start the thread on the ring buffer map fd (records: struct
 * ebprof_fresh). 0 or a negative errno. */
int maps_prefetch_start(int ring_fd, struct maps_prefetch **out);
/* Stop and join the thread (what it did in a debug line), free what was
 * not taken. NULL is fine. */
void maps_prefetch_stop(struct maps_prefetch *mp);

/* The snapshot of pid read for its announcement at ns (its event's
 * ktime_ns), with its executable's path (*exe, may be NULL): both the
 * caller's now (procmaps_free, free); NULL when none (not read, or the
 * process was gone or had exec'd by then). Snapshots of pid announced
 * before ns go too. */
struct proc_maps *maps_prefetch_take(struct maps_prefetch *mp, uint32_t pid, uint64_t ns,
				     char **exe);

#endif /* EBPROF_MAPS_PREFETCH_H */
