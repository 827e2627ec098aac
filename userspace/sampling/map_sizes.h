/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sizes of the BPF maps and ring buffers whose use grows with load, from
 * what an interval can hold: the host's CPUs, the sampling frequency,
 * the time between two drains and the processes running, worked out
 * before the program is loaded (the sampler applies them with
 * bpf_map__set_max_entries()). A pure function: no BPF, no I/O.
 *
 * Formulas (samples = cpus x frequency x drain interval, the most a
 * counts buffer can receive between two drains; interval 0 counts as
 * MAP_SIZES_DEFAULT_INTERVAL_S):
 *   counts   = clamp(pow2(samples x 5/4), 512, 262144)     counts0 and counts1
 *   stacks   = allocated as used: clamp(pow2(samples x 5/2), 1024, 262144)
 *              (the stacks of two drains, every sample a new one),
 *              preallocated: counts                           stacks
 *   known    = counts                                       ustack_known, plpgsql_known
 *              (LRU: a stack or chain it forgot is sent again, never lost)
 *   procs    = clamp(pow2(4 x processes), 8192, 65536)      targets, seen, pg_procs,
 *              (4096 when preallocated)                     plpgsql_procs, unwind_pids (and
 *              unwind_sets as a hash map; 256 sets as an array)
 *   offcpu   = clamp(pow2(counts / 2), 32768, 131072)        offcpu_counts0/1
 *   faults   = clamp(pow2(cpus x MAP_SIZES_FAULT_RATE / faults-period
 *                         x interval), 4096, 65536)           fault_counts0/1
 *   events   = clamp(pow2(cpus x 64 KiB), 128 KiB, 4 MiB)   the process event ring
 *   ustacks  = clamp(pow2(cpus x frequency x 1 KiB x 2), 128 KiB, 16 MiB)
 * A counts map with room for a quarter more than a drain's samples never
 * fills in a steady state; a burst beyond it (the flush late, a frequency
 * raised) is counted (STAT_COUNTS_FULL) and the next drain starts empty.
 * Where the kernel allows hash maps allocated as used (BPF_F_NO_PREALLOC
 * in perf_event programs, 6.1+: `prealloc` false), their entries cost
 * memory only when used and max_entries only bounds them (and sizes
 * their buckets, 16 bytes an entry); preallocated ones are kept small.
 * Fault samples are counted at the rate of a host under connection churn,
 * each a key of its own. Explicit sizes (record's/agent's options) win
 * over the formula.
 */
#ifndef EBPROF_MAP_SIZES_H
#define EBPROF_MAP_SIZES_H

#include <stdbool.h>
#include <stdint.h>

#define MAP_SIZES_DEFAULT_INTERVAL_S 10
/* Page faults a second per CPU the fault counts are sized for: pgbench -C
 * (a backend per connection) makes ~140 000 on each of this VM's 2 CPUs
 * (bench/results/faults-*.md). */
#define MAP_SIZES_FAULT_RATE 140000

/* What the maps are sized for. */
struct map_load {
	int ncpus;
	int frequency;	    /* Hz */
	int interval_s;	    /* seconds between two drains; 0: the default */
	uint32_t processes; /* running now (the per-process maps) */
	bool prealloc;	    /* hash maps preallocated (kernels before 6.1) */
};

struct map_sizes {
	uint32_t counts;	/* each of counts0, counts1 */
	uint32_t stacks;	/* stacks */
	uint32_t known;		/* ustack_known */
	uint32_t procs;		/* targets, seen, pg_procs, unwind_pids */
	uint32_t sets;		/* unwind_sets */
	uint32_t offcpu_counts; /* each of offcpu_counts0, offcpu_counts1 */
	uint32_t fault_counts;	/* each of fault_counts0, fault_counts1 */
	uint32_t events_bytes;	/* the `events` ring */
	uint32_t ustacks_bytes; /* the `ustacks` ring (DWARF unwinding) */
	uint64_t bytes;		/* estimate of the memory of counts and stacks at most */
	uint64_t offcpu_bytes;	/* ... and of the off-CPU counts (when on) */
	uint64_t fault_bytes;	/* ... and of the fault counts (when on) */
};

/* Sizes for the load in (non-positive figures count as 1). */
void map_sizes_compute(const struct map_load *in, struct map_sizes *out);

/* The fault counts (fault_counts) for ncpus CPUs sampled every period
 * page faults (0 counts as 1), drained every interval_s seconds. */
void map_sizes_faults(int ncpus, uint32_t period, int interval_s, struct map_sizes *out);

/* Fill bytes, offcpu_bytes and fault_bytes from the entries of ms. */
void map_sizes_estimate(struct map_sizes *ms);

#endif
