// SPDX-License-Identifier: BSD-2-Clause
/* The sampler's load-dependent BPF maps, sized before load (map_sizes.h). */
#include <stdint.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

#include "map_sizes.h"
#include "sampler_internal.h"
#include "util/log.h"

/* The load-dependent maps sized from CPUs x frequency x interval
 * (map_sizes.h), unless opts says; before unwind_configure(),
 * offcpu_configure() and faults_configure(), which shrink the maps of
 * what is off. */
void sampler_size_maps(struct sampler *s, const struct sampler_opts *opts)
{
	struct map_sizes ms;
	const char *env;
	char *end;

	map_sizes_compute(s->ncpus, opts->frequency, opts->interval_s, &ms);
	map_sizes_faults(s->ncpus,
			 opts->faults_period ? opts->faults_period : SAMPLER_FAULTS_PERIOD,
			 opts->interval_s, &ms);
	/* Tests fill the maps on purpose with tiny ones (see sampler.h). */
	env = getenv("EBPROF_MAP_ENTRIES");
	if (env && *env) {
		unsigned long n = strtoul(env, &end, 10);

		if (!*end && n > 0 && n <= UINT32_MAX) {
			if (!s->map_bytes) /* said once, not again at a second load */
				log_warn("EBPROF_MAP_ENTRIES: counts and stack maps of %lu entries",
					 n);
			ms.counts = ms.stacks = ms.offcpu_counts = ms.fault_counts = (uint32_t)n;
		} else if (!s->map_bytes) {
			log_warn("EBPROF_MAP_ENTRIES='%s' ignored: not a number of entries from 1 "
				 "to %u",
				 env, UINT32_MAX);
		}
	}
	if (opts->counts_entries)
		ms.counts = opts->counts_entries;
	if (opts->stack_entries)
		ms.stacks = opts->stack_entries;
	bpf_map__set_max_entries(s->skel->maps.counts0, ms.counts);
	bpf_map__set_max_entries(s->skel->maps.counts1, ms.counts);
	bpf_map__set_max_entries(s->skel->maps.stacks, ms.stacks);
	bpf_map__set_max_entries(s->skel->maps.ustack_known, ms.stacks);
	bpf_map__set_max_entries(s->skel->maps.offcpu_counts0, ms.offcpu_counts);
	bpf_map__set_max_entries(s->skel->maps.offcpu_counts1, ms.offcpu_counts);
	bpf_map__set_max_entries(s->skel->maps.fault_counts0, ms.fault_counts);
	bpf_map__set_max_entries(s->skel->maps.fault_counts1, ms.fault_counts);
	map_sizes_estimate(&ms);
	s->map_bytes = ms.bytes + (opts->types & PTYPE_BIT(PTYPE_OFFCPU) ? ms.offcpu_bytes : 0) +
		       (opts->types & PTYPE_BIT(PTYPE_FAULTS) ? ms.fault_bytes : 0);
}
