// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>

#include "sampling/map_sizes.h"

/* A small host keeps the sizes the maps had as constants (the floors). */
Test(map_sizes, small_host_gets_the_floors)
{
	struct map_sizes ms;

	map_sizes_compute(2, 99, 10, &ms);
	cr_expect_eq(ms.counts, 65536);
	cr_expect_eq(ms.stacks, 16384);
	cr_expect_eq(ms.offcpu_counts, 32768);
	cr_expect_gt(ms.bytes, 0);
}

/* 64 CPUs at 99 Hz for 60 s: 380 160 samples, a quarter of them as keys
 * rounded up to a power of two. */
Test(map_sizes, grows_with_cpus_frequency_interval)
{
	struct map_sizes small, big;

	map_sizes_compute(64, 99, 60, &big);
	cr_expect_eq(big.counts, 131072);
	cr_expect_eq(big.stacks, 32768);
	cr_expect_eq(big.offcpu_counts, 65536);
	map_sizes_compute(64, 99, 10, &small);
	cr_expect_lt(small.counts, big.counts);
	cr_expect_lt(small.bytes, big.bytes);
}

Test(map_sizes, ceilings_bound_memory)
{
	struct map_sizes ms;

	map_sizes_compute(1024, 10000, 3600, &ms);
	cr_expect_eq(ms.counts, 262144);
	cr_expect_eq(ms.stacks, 65536);
	cr_expect_eq(ms.offcpu_counts, 131072);
	cr_expect_lt(ms.bytes + ms.offcpu_bytes, 256ull << 20);
}

/* Nonsense inputs count as 1; interval 0 as the default interval. */
Test(map_sizes, degenerate_inputs)
{
	struct map_sizes a, b;

	map_sizes_compute(0, -5, 0, &a);
	cr_expect_eq(a.counts, 65536);
	map_sizes_compute(64, 999, 0, &a);
	map_sizes_compute(64, 999, MAP_SIZES_DEFAULT_INTERVAL_S, &b);
	cr_expect_eq(a.counts, b.counts);
	cr_expect_eq(a.stacks, b.stacks);
}

/* The fault counts: a key per sample at the rate of a host under
 * connection churn; the floor for the default period on a small host,
 * growing as the period shrinks, the ceiling for every fault. */
Test(map_sizes, fault_counts_from_cpus_period_interval)
{
	struct map_sizes ms;

	map_sizes_compute(2, 99, 10, &ms);
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
