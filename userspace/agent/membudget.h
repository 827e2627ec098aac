/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's memory budget (memory-budget): at each interval's end the
 * agent compares its resident memory with the budget and, over it,
 * degrades in steps it shows on /metrics rather than losing samples:
 *   1. symbol caches: the symbolizer drops every binary no process pins
 *      (DWARF, the debug files libdw maps and decompresses, symbol
 *      tables) and the resolutions of addresses the interval did not
 *      use; those it used are kept (sym_release_cold()), so the next
 *      flush opens its binaries again but resolves only new addresses:
 *      stacks stay as true, and an agent persistently over its budget
 *      does not resolve everything again every interval.
 * Still over after that, the agent says so (over_budget) and carries on:
 * the rest is what sampling needs. The decisions are pure functions of
 * the figures given, for the tests; the caller measures and acts.
 */
#ifndef EBPROF_AGENT_MEMBUDGET_H
#define EBPROF_AGENT_MEMBUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* What to do now (bits). */
#define MB_RELEASE_SYMBOLS 1u

struct membudget {
	uint64_t budget;	  /* bytes; 0: no budget */
	uint64_t rss, peak;	  /* the last measure: VmRSS, VmHWM (bytes) */
	bool symbols_degraded;	  /* the last interval's end dropped symbol caches */
	uint64_t symbol_releases; /* interval ends that did, over the agent's life */
	bool over_budget;	  /* still over after degrading, at the last end */
};

/* Interval end: resident memory now (bytes) -> the MB_* steps to take.
 * Records the measure and which degradations are in force. */
unsigned membudget_decide(struct membudget *b, uint64_t rss);
/* After the steps: resident memory again; sets over_budget. */
void membudget_after(struct membudget *b, uint64_t rss);
/* VmRSS and VmHWM of a /proc/PID/status file (bytes). 0 or a negative
 * errno (-EINVAL: no such lines). */
int membudget_read_status(const char *path, uint64_t *rss, uint64_t *peak);

#endif /* EBPROF_AGENT_MEMBUDGET_H */
