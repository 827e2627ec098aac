// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>

#include "sampling/map_sizes.h"

static struct map_sizes sizes(int ncpus, int hz, int secs, uint32_t procs, bool prealloc)
{
	struct map_load in = { ncpus, hz, secs, procs, prealloc };
	struct map_sizes ms;

	map_sizes_compute(&in, &ms);
	return ms;
}

/* The agent's defaults on 2 CPUs: 19 Hz for 60 s is 2 280 samples, a
 * quarter more rounded up to a power of two; the stacks of two drains
 * when allocated as used, no more than the counts when preallocated. */
Test(map_sizes, sized_from_what_an_interval_holds)
{
	struct map_sizes ms = sizes(2, 19, 60, 200, false);

	cr_expect_eq(ms.counts, 4096);
	cr_expect_eq(ms.stacks, 8192);
	cr_expect_eq(ms.known, 4096);
	cr_expect_eq(ms.procs, 8192);
	cr_expect_eq(ms.sets, 8192);
	cr_expect_eq(ms.events_bytes, 128u << 10);
	cr_expect_eq(ms.ustacks_bytes, 128u << 10);
	cr_expect_gt(ms.bytes, 0);
	ms = sizes(2, 19, 60, 200, true);
	cr_expect_eq(ms.stacks, 4096);
	cr_expect_eq(ms.procs, 4096);
	cr_expect_eq(ms.sets, 256);
}

/* Every count of a drain has room: the counts hold more than the samples. */
Test(map_sizes, counts_hold_a_drain)
{
	const int cpus[] = { 1, 2, 16, 64 }, hz[] = { 19, 99, 997 }, secs[] = { 1, 10, 60 };

	for (size_t c = 0; c < 4; c++)
		for (size_t h = 0; h < 3; h++)
			for (size_t i = 0; i < 3; i++) {
				uint64_t n = (uint64_t)cpus[c] * hz[h] * secs[i];
				struct map_sizes ms = sizes(cpus[c], hz[h], secs[i], 0, false);

				if (n + n / 4 <= 262144)
					cr_expect_geq(ms.counts, n + n / 4, "%d CPUs %d Hz %d s",
						      cpus[c], hz[h], secs[i]);
			}
}

/* 64 CPUs at 99 Hz for 60 s: 380 160 samples, at the ceiling. */
Test(map_sizes, grows_with_cpus_frequency_interval)
{
	struct map_sizes small = sizes(64, 99, 10, 0, false), big = sizes(64, 99, 60, 0, false);

	cr_expect_eq(big.counts, 262144);
	cr_expect_eq(small.counts, 131072);
	cr_expect_lt(small.bytes, big.bytes);
	cr_expect_eq(big.events_bytes, 4u << 20);
	cr_expect_eq(sizes(16, 19, 60, 0, false).events_bytes, 1u << 20);
}

Test(map_sizes, ceilings_bound_memory)
{
	struct map_sizes ms = sizes(1024, 10000, 3600, 1u << 30, true);

	cr_expect_eq(ms.counts, 262144);
	cr_expect_eq(ms.procs, 65536);
	cr_expect_eq(ms.offcpu_counts, 131072);
	cr_expect_eq(ms.ustacks_bytes, 16u << 20);
	cr_expect_lt(ms.bytes + ms.offcpu_bytes, 512ull << 20);
}

/* A host with many processes gets room for four times as many. */
Test(map_sizes, processes_from_those_running)
{
	cr_expect_eq(sizes(2, 19, 60, 5000, false).procs, 32768);
	cr_expect_eq(sizes(2, 19, 60, 5000, true).procs, 32768);
	cr_expect_eq(sizes(2, 19, 60, 0, true).procs, 4096);
}

/* Nonsense inputs count as 1; interval 0 as the default interval. */
Test(map_sizes, degenerate_inputs)
{
	struct map_sizes a = sizes(0, -5, 0, 0, false), b;

	cr_expect_eq(a.counts, 512);
	a = sizes(64, 999, 0, 0, false);
	b = sizes(64, 999, MAP_SIZES_DEFAULT_INTERVAL_S, 0, false);
	cr_expect_eq(a.counts, b.counts);
	cr_expect_eq(a.stacks, b.stacks);
}

/* The fault counts: a key per sample at the rate of a host under
 * connection churn; the floor for the default period on a small host,
 * growing as the period shrinks, the ceiling for every fault. */
Test(map_sizes, fault_counts_from_cpus_period_interval)
{
	struct map_sizes ms = sizes(2, 99, 10, 0, false);

	map_sizes_faults(2, 1000, 10, &ms);
	cr_expect_eq(ms.fault_counts, 4096);
	cr_expect_gt(ms.fault_bytes, 0);
	map_sizes_faults(2, 100, 10, &ms); /* 28 000 samples */
	cr_expect_eq(ms.fault_counts, 32768);
	map_sizes_faults(64, 1, 60, &ms);
	cr_expect_eq(ms.fault_counts, 65536);
	cr_expect_lt(ms.fault_bytes, 20ull << 20);
	map_sizes_faults(0, 0, 0, &ms); /* degenerate: as 1 CPU, period 1, 10 s */
	cr_expect_eq(ms.fault_counts, 65536);
}
