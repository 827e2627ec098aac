// SPDX-License-Identifier: BSD-2-Clause
/* Load-derived BPF map sizes: see map_sizes.h for the formulas. */
#include "map_sizes.h"

#include <linux/types.h>

#include "ebprof/bpf_shared.h"

#define COUNTS_MIN 512u
#define COUNTS_MAX 262144u
#define STACKS_MIN 1024u
#define STACKS_MAX 262144u
#define PROCS_MIN 8192u
#define PROCS_MIN_PREALLOC 4096u
#define PROCS_MAX 65536u
#define SETS_PREALLOC 256u
#define OFFCPU_MIN 32768u
#define OFFCPU_MAX 131072u
#define FAULTS_MIN 4096u
#define FAULTS_MAX 65536u
#define EVENTS_PER_CPU (64u << 10)
#define EVENTS_MIN (128u << 10)
#define EVENTS_MAX (4u << 20)
#define USTACKS_MIN (128u << 10)
#define USTACKS_MAX (16u << 20)

/* Hash map bookkeeping per element (htab_elem and its bucket), roughly. */
#define HASH_OVERHEAD 64u

static uint32_t pow2_clamp(uint64_t want, uint32_t lo, uint32_t hi)
{
	uint64_t v = lo;

	while (v < want && v < hi)
		v <<= 1;
	return v > hi ? hi : (uint32_t)v;
}

void map_sizes_compute(const struct map_load *in, struct map_sizes *out)
{
	uint64_t ncpus = in->ncpus > 0 ? (uint64_t)in->ncpus : 1;
	uint64_t hz = in->frequency > 0 ? (uint64_t)in->frequency : 1;
	uint64_t secs =
		in->interval_s > 0 ? (uint64_t)in->interval_s : MAP_SIZES_DEFAULT_INTERVAL_S;
	uint64_t samples = ncpus * hz * secs;

	out->counts = pow2_clamp(samples + samples / 4, COUNTS_MIN, COUNTS_MAX);
	out->stacks =
		in->prealloc ? out->counts : pow2_clamp(samples * 5 / 2, STACKS_MIN, STACKS_MAX);
	out->known = out->counts;
	out->procs = pow2_clamp(4ull * in->processes, in->prealloc ? PROCS_MIN_PREALLOC : PROCS_MIN,
				PROCS_MAX);
	out->sets = in->prealloc ? SETS_PREALLOC : out->procs;
	out->offcpu_counts = pow2_clamp(out->counts / 2, OFFCPU_MIN, OFFCPU_MAX);
	out->fault_counts = FAULTS_MIN;
	out->events_bytes = pow2_clamp(ncpus * EVENTS_PER_CPU, EVENTS_MIN, EVENTS_MAX);
	/* every sample of a second a new stack of 1 KiB (128 frames), twice:
	 * userspace reads them every 100 ms, less often while it flushes */
	out->ustacks_bytes = pow2_clamp(ncpus * hz * 1024 * 2, USTACKS_MIN, USTACKS_MAX);
	map_sizes_estimate(out);
}

void map_sizes_faults(int ncpus, uint32_t period, int interval_s, struct map_sizes *out)
{
	if (ncpus < 1)
		ncpus = 1;
	if (period < 1)
		period = 1;
	if (interval_s <= 0)
		interval_s = MAP_SIZES_DEFAULT_INTERVAL_S;
	out->fault_counts =
		pow2_clamp((uint64_t)ncpus * MAP_SIZES_FAULT_RATE / period * (uint64_t)interval_s,
			   FAULTS_MIN, FAULTS_MAX);
	map_sizes_estimate(out);
}

void map_sizes_estimate(struct map_sizes *ms)
{
	ms->bytes = 2ull * ms->counts * (sizeof(struct sample_key) + 8 + HASH_OVERHEAD) +
		    (uint64_t)ms->stacks * (sizeof(struct stack_trace) + 8 + HASH_OVERHEAD) +
		    (uint64_t)ms->known * (8 + 1 + HASH_OVERHEAD);
	ms->offcpu_bytes =
		2ull * ms->offcpu_counts *
		(sizeof(struct offcpu_key) + sizeof(struct offcpu_value) + HASH_OVERHEAD);
	ms->fault_bytes = 2ull * ms->fault_counts * (sizeof(struct sample_key) + 8 + HASH_OVERHEAD);
}
