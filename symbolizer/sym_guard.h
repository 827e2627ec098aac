/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading files through their mapping without dying when they shrink
 * (sym_guard.c). libelf and libdw read binaries and debug files through a
 * mapping of the whole file, and the core kernel's symbols are used from
 * theirs (kallsyms_cache.c). Those files belong to other users and
 * containers: one truncated while mapped makes the next read of a page past
 * its new end raise SIGBUS, which would kill the agent.
 *
 * Code that reads such a mapping runs inside a guarded region on its own
 * thread. A SIGBUS for a data address past the end of a file (BUS_ADRERR)
 * raised inside one is answered by mapping a page of zeros over the
 * faulting page: the read is retried and finds zeros, which libelf and
 * libdw take as any corrupt file (the fuzz target feeds them worse). The
 * region counts it, and whoever left it throws away what was read there
 * and the file's state (sym_cache.c: the binary's entry is dropped, its
 * mapping unmapped). Nothing jumps out of libdw: its state stays
 * consistent and is freed as usual.
 *
 * Every other SIGBUS (outside a region, another thread's, an instruction
 * fetch, a memory error, one sent by kill) goes to the action installed
 * before (the default: the process dies, as it would without the guard).
 */
#ifndef EBPROF_SYM_GUARD_H
#define EBPROF_SYM_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct symg {
	struct symg *outer; /* the region this one is nested in */
	/* set by the signal handler */
	volatile unsigned int faults; /* pages found past the end of their file */
	volatile uintptr_t addr;      /* the first of them */
};

/* Install the SIGBUS handler, once per process (sym_new()); 0 or a
 * negative errno (then regions guard nothing). */
int symg_install(void);

/* The innermost region of this thread (sym_guard.c's handler reads it). */
extern __thread struct symg *symg_current __attribute__((tls_model("initial-exec")));

/* Enter a region on this thread; leave it: true when a page read inside
 * lay past the end of its file (g->addr: the first). A nested region's
 * faults count in the outer one too. Cheap: two thread-local stores (the
 * fences only keep the compiler from moving reads across them). */
static inline void symg_enter(struct symg *g)
{
	g->faults = 0;
	g->addr = 0;
	g->outer = symg_current;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	symg_current = g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline bool symg_leave(struct symg *g)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	symg_current = g->outer;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!g->faults)
		return false;
	if (g->outer && !g->outer->faults++)
		g->outer->addr = g->addr;
	return true;
}

#endif /* EBPROF_SYM_GUARD_H */
