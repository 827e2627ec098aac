/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sizes of the BPF maps whose use grows with load, from the host's CPUs,
 * the sampling frequency and the flush interval, worked out before the
 * program is loaded (the sampler applies them with
 * bpf_map__set_max_entries()). A pure function: no BPF, no I/O.
 *
 * Formulas (samples = cpus x frequency x interval, the most a counts
 * buffer can receive between two drains; interval 0 counts as
 * MAP_SIZES_DEFAULT_INTERVAL_S):
 *   counts   = clamp(pow2(samples / 4), 65536, 262144)  counts0 and counts1
 *   stacks   = clamp(pow2(counts / 4),  16384, 65536)   stacks, ustack_known
 *   offcpu   = clamp(pow2(counts / 2),  32768, 131072)  offcpu_counts0/1
 *   faults   = clamp(pow2(cpus x MAP_SIZES_FAULT_RATE / faults-period
 *                         x interval), 4096, 65536)      fault_counts0/1
 * A quarter of the samples as distinct (process, stack) keys and a
 * quarter of those as distinct stacks: what a busy PostgreSQL host shows;
 * the floors are the sizes these maps had as constants, the ceilings keep
 * preallocated memory under ~200 MiB (a stack is 1 KiB). Fault samples
 * are counted at the rate of a host under connection churn, each a key of
 * its own (a new backend per connection faults its pages in and is
 * sampled once or not at all); the floor, 4096 keys, is 1.1 MiB for both
 * maps, paid only by a session that takes faults (1 entry each
 * otherwise); a full map counts what it loses. Explicit sizes (record's/agent's options) win
 * over the formula.
 */
#ifndef EBPROF_MAP_SIZES_H
#define EBPROF_MAP_SIZES_H

#include <stdint.h>

#define MAP_SIZES_DEFAULT_INTERVAL_S 10
/* Page faults a second per CPU the fault counts are sized for: pgbench -C
 * (a backend per connection) makes ~140 000 on each of this VM's 2 CPUs
 * (bench/results/faults-*.md). */
#define MAP_SIZES_FAULT_RATE 140000

struct map_sizes {
	uint32_t counts;	/* each of counts0, counts1 */
	uint32_t stacks;	/* stacks, ustack_known */
	uint32_t offcpu_counts; /* each of offcpu_counts0, offcpu_counts1 */
	uint32_t fault_counts;	/* each of fault_counts0, fault_counts1 */
	uint64_t bytes;		/* estimate of the memory of counts and stacks */
	uint64_t offcpu_bytes;	/* ... and of the off-CPU counts (when on) */
	uint64_t fault_bytes;	/* ... and of the fault counts (when on) */
};

/* Sizes for ncpus CPUs sampled at frequency Hz, drained every interval_s
 * seconds (0: MAP_SIZES_DEFAULT_INTERVAL_S). Non-positive inputs count as 1. */
void map_sizes_compute(int ncpus, int frequency, int interval_s, struct map_sizes *out);

/* The fault counts (fault_counts) for ncpus CPUs sampled every period
 * page faults (0 counts as 1), drained every interval_s seconds. */
void map_sizes_faults(int ncpus, uint32_t period, int interval_s, struct map_sizes *out);

/* Fill bytes, offcpu_bytes and fault_bytes from the entries of ms. */
void map_sizes_estimate(struct map_sizes *ms);

#endif
