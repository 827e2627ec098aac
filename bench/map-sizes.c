// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's load-dependent BPF map sizes for a host this one is not
 * (bench/footprint-scaling.sh): map_sizes_compute() (userspace/sampling/
 * map_sizes.h), the formula the agent applies before it loads its
 * programs, for CPUS at HZ, drained every INTERVAL seconds, with PROCS
 * processes running; PREALLOC 1: a kernel before 6.1 (hash maps
 * preallocated). Prints key=value on one line.
 *
 *   map-sizes CPUS HZ INTERVAL PROCS PREALLOC
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampling/map_sizes.h"

int main(int argc, char **argv)
{
	struct map_load in = { 0 };
	struct map_sizes ms;

	if (argc != 6) {
		fprintf(stderr, "usage: map-sizes CPUS HZ INTERVAL PROCS PREALLOC\n");
		return 2;
	}
	in.ncpus = atoi(argv[1]);
	in.frequency = atoi(argv[2]);
	in.interval_s = atoi(argv[3]);
	in.processes = (uint32_t)strtoul(argv[4], NULL, 10);
	in.prealloc = atoi(argv[5]) != 0;
	map_sizes_compute(&in, &ms);
	printf("counts=%u stacks=%u known=%u procs=%u sets=%u events_bytes=%u ustacks_bytes=%u "
	       "counts_stacks_bytes=%" PRIu64 "\n",
	       ms.counts, ms.stacks, ms.known, ms.procs, ms.sets, ms.events_bytes, ms.ustacks_bytes,
	       ms.bytes);
	return 0;
}
