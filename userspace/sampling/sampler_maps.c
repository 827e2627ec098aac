// SPDX-License-Identifier: BSD-2-Clause
/* The sampler's load-dependent BPF maps, sized before load (map_sizes.h). */
#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "map_sizes.h"
#include "sampler_internal.h"
#include "util/log.h"

/* Processes running now (the numeric entries of /proc); 0 when unknown. */
static uint32_t count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	uint32_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += isdigit((unsigned char)de->d_name[0]) != 0;
	closedir(d);
	return n;
}

/* Tests fill the maps on purpose with tiny ones (see sampler.h). */
static void env_entries(struct sampler *s, struct map_sizes *ms)
{
	const char *env = getenv("EBPROF_MAP_ENTRIES");
	unsigned long n;
	char *end;

	if (!env || !*env)
		return;
	n = strtoul(env, &end, 10);
	if (!*end && n > 0 && n <= UINT32_MAX) {
		if (!s->map_bytes) /* said once, not again at a second load */
			log_warn("EBPROF_MAP_ENTRIES: counts and stack maps of %lu entries", n);
		ms->counts = ms->stacks = ms->known = ms->offcpu_counts = ms->fault_counts =
			(uint32_t)n;
	} else if (!s->map_bytes) {
		log_warn("EBPROF_MAP_ENTRIES='%s' ignored: not a number of entries from 1 to %u",
			 env, UINT32_MAX);
	}
}

/* Hash maps allocated as used, where the kernel lets every program that
 * uses them have them (6.1+); unwind_sets becomes one too (an array is
 * always whole). */
static void allocate_as_used(struct profile_bpf *sk)
{
	struct bpf_map *hashes[] = {
		sk->maps.counts0,	sk->maps.counts1,	 sk->maps.stacks,
		sk->maps.targets,	sk->maps.seen,		 sk->maps.pg_procs,
		sk->maps.unwind_pids,	sk->maps.offcpu_counts0, sk->maps.offcpu_counts1,
		sk->maps.fault_counts0, sk->maps.fault_counts1,	 sk->maps.plpgsql_procs,
	};

	for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++)
		bpf_map__set_map_flags(hashes[i],
				       bpf_map__map_flags(hashes[i]) | BPF_F_NO_PREALLOC);
	bpf_map__set_type(sk->maps.unwind_sets, BPF_MAP_TYPE_HASH);
	bpf_map__set_map_flags(sk->maps.unwind_sets, BPF_F_NO_PREALLOC);
}

/* The load-dependent maps sized from CPUs x frequency x interval and the
 * processes running (map_sizes.h), unless opts says; before
 * unwind_configure(), offcpu_configure() and faults_configure(), which
 * shrink the maps of what is off. */
void sampler_size_maps(struct sampler *s, const struct sampler_opts *opts)
{
	struct map_load load = {
		.ncpus = s->ncpus,
		.frequency = opts->frequency,
		.interval_s = opts->interval_s,
		.processes = count_processes(),
		.prealloc = !features_have_no_prealloc(),
	};
	struct profile_bpf *sk = s->skel;
	struct map_sizes ms;

	map_sizes_compute(&load, &ms);
	map_sizes_faults(s->ncpus,
			 opts->faults_period ? opts->faults_period : SAMPLER_FAULTS_PERIOD,
			 opts->interval_s, &ms);
	env_entries(s, &ms);
	if (opts->counts_entries)
		ms.counts = opts->counts_entries;
	if (opts->stack_entries)
		ms.stacks = opts->stack_entries;
	if (!load.prealloc)
		allocate_as_used(sk);
	s->prealloc = load.prealloc;
	bpf_map__set_max_entries(sk->maps.counts0, ms.counts);
	bpf_map__set_max_entries(sk->maps.counts1, ms.counts);
	bpf_map__set_max_entries(sk->maps.stacks, ms.stacks);
	bpf_map__set_max_entries(sk->maps.ustack_known, ms.known);
	bpf_map__set_max_entries(sk->maps.targets, ms.procs);
	bpf_map__set_max_entries(sk->maps.seen, ms.procs);
	bpf_map__set_max_entries(sk->maps.pg_procs, ms.procs);
	bpf_map__set_max_entries(sk->maps.plpgsql_procs, ms.procs);
	bpf_map__set_max_entries(sk->maps.plpgsql_known, ms.known);
	bpf_map__set_max_entries(sk->maps.unwind_pids, ms.procs);
	bpf_map__set_max_entries(sk->maps.unwind_sets, ms.sets);
	bpf_map__set_max_entries(sk->maps.offcpu_counts0, ms.offcpu_counts);
	bpf_map__set_max_entries(sk->maps.offcpu_counts1, ms.offcpu_counts);
	bpf_map__set_max_entries(sk->maps.fault_counts0, ms.fault_counts);
	bpf_map__set_max_entries(sk->maps.fault_counts1, ms.fault_counts);
	bpf_map__set_max_entries(sk->maps.events, ms.events_bytes);
	/* No statement nor PL/pgSQL reader (a session without PostgreSQL
	 * targets): their maps hold nothing; the memory profile still marks
	 * PostgreSQL processes in pg_procs. */
	if (!opts->queries && !opts->plpgsql && !(opts->types & PTYPE_BIT(PTYPE_MEMORY)))
		bpf_map__set_max_entries(sk->maps.pg_procs, 1);
	if (!opts->plpgsql) {
		bpf_map__set_max_entries(sk->maps.plpgsql_procs, 1);
		bpf_map__set_max_entries(sk->maps.plpgsql_known, 1);
	}
	map_sizes_estimate(&ms);
	s->sizes = ms;
	s->map_bytes = ms.bytes + (opts->types & PTYPE_BIT(PTYPE_OFFCPU) ? ms.offcpu_bytes : 0) +
		       (opts->types & PTYPE_BIT(PTYPE_FAULTS) ? ms.fault_bytes : 0);
}
