// SPDX-License-Identifier: BSD-2-Clause
/* Load-derived BPF map sizes: see map_sizes.h for the formulas. */
#include "map_sizes.h"

#include <linux/types.h>

#include "ebprof/bpf_shared.h"

#define COUNTS_MIN 65536u
#define COUNTS_MAX 262144u
#define STACKS_MIN 16384u
#define STACKS_MAX 65536u
#define OFFCPU_MIN 32768u
#define OFFCPU_MAX 131072u
#define FAULTS_MIN 4096u
#define FAULTS_MAX 65536u

/* Hash map bookkeeping per element (htab_elem and its bucket), roughly. */
#define HASH_OVERHEAD 64u

static uint32_t pow2_clamp(uint64_t want, uint32_t lo, uint32_t hi)
{
	uint64_t v = lo;

	while (v < want && v < hi)
		v <<= 1;
	return v > hi ? hi : (uint32_t)v;
}

void map_sizes_compute(int ncpus, int frequency, int interval_s, struct map_sizes *out)
{
	uint64_t samples;

	if (ncpus < 1)
		ncpus = 1;
	if (frequency < 1)
		frequency = 1;
	if (interval_s <= 0)
		interval_s = MAP_SIZES_DEFAULT_INTERVAL_S;
	samples = (uint64_t)ncpus * (uint64_t)frequency * (uint64_t)interval_s;
	out->counts = pow2_clamp(samples / 4, COUNTS_MIN, COUNTS_MAX);
	out->stacks = pow2_clamp(out->counts / 4, STACKS_MIN, STACKS_MAX);
	out->offcpu_counts = pow2_clamp(out->counts / 2, OFFCPU_MIN, OFFCPU_MAX);
	out->fault_counts = FAULTS_MIN;
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
		    (uint64_t)ms->stacks * (8 + 1 + HASH_OVERHEAD);
	ms->offcpu_bytes =
		2ull * ms->offcpu_counts *
		(sizeof(struct offcpu_key) + sizeof(struct offcpu_value) + HASH_OVERHEAD);
	ms->fault_bytes = 2ull * ms->fault_counts * (sizeof(struct sample_key) + 8 + HASH_OVERHEAD);
}
