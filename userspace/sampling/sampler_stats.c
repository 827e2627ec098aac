// SPDX-License-Identifier: BSD-2-Clause
/*
 * The BPF program's counters (the per-CPU `stats` map, enum ebprof_stat in
 * include/ebprof/bpf_shared.h): summed over the CPUs, named for the
 * interval lines, -v and /metrics, and the losses among them said in one
 * line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler_internal.h"

int sampler_read_stats(struct sampler *s, struct sampler_stats *out)
{
	int fd = bpf_map__fd(s->skel->maps.stats);
	uint64_t *vals = calloc(s->ncpus, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	for (uint32_t k = 0; k < STAT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			out->v[k] += vals[cpu];
	}
	free(vals);
	return 0;
}

int sampler_type_stat(enum ptype t)
{
	return t == PTYPE_CPU ? STAT_SAMPLES : t == PTYPE_FAULTS ? STAT_FAULT_SAMPLES : -1;
}

const char *sampler_stat_name(enum ebprof_stat stat)
{
	static const char *const names[STAT_MAX] = {
		[STAT_SAMPLES] = "samples",
		[STAT_STACKS_FULL] = "stacks lost (stack map full)",
		[STAT_KSTACK_EFAULT] = "kernel stacks unreadable",
		[STAT_USTACK_EFAULT] = "user stacks unreadable",
		[STAT_STACK_OTHER] = "stack errors",
		[STAT_COUNTS_FULL] = "samples lost (counts map full)",
		[STAT_EVENTS_LOST] = "process events lost",
		[STAT_TARGETS_FULL] = "processes not followed (target map full)",
		[STAT_SEEN_FULL] = "processes not announced (seen map full)",
		[STAT_QUERY_LOST] = "statement texts lost (ring buffer full)",
		[STAT_PG_FULL] = "backends not labelled (pg_procs map full)",
		[STAT_USTACKS_LOST] = "user stacks lost (unwound stack ring buffer full)",
		[STAT_UNWIND_PROCS_FULL] = "processes unwound by frame pointers (unwind_pids full)",
		[STAT_OFFCPU_FULL] = "waits lost (off-CPU maps full)",
		[STAT_FAULTS_FULL] = "page-fault samples lost (fault counts map full)",
		[STAT_PLPGSQL_LOST] = "PL/pgSQL frames lost (ring buffer full)",
		[STAT_PLPGSQL_FAULT] = "PL/pgSQL frames cut short (backend memory unreadable)",
		[STAT_PLPGSQL_CUT] = "PL/pgSQL frames cut short (too deep, or a cycle)",
		[STAT_WAITS_LIST_FULL] = "target threads not visited (wait sampler's list full)",
		[STAT_QUERY_READS] = "statement texts read",
		[STAT_QUERY_SENT] = "statement texts sent",
		[STAT_QUERY_NS] = "ns in statement capture (bench builds)",
		[STAT_QUERY_CALLS] = "samples timed (bench builds)",
		[STAT_USTACKS_SENT] = "unwound user stacks sent",
		[STAT_OFFCPU_SHORT] = "waits under the off-CPU threshold",
		[STAT_OFFCPU_SKIPPED] = "switches not sampled (off-CPU ratio)",
		[STAT_OFFCPU_UNTAKEN] = "waits under the off-CPU period left to chance",
		[STAT_FAULT_SAMPLES] = "page-fault samples",
		[STAT_PLPGSQL_SENT] = "PL/pgSQL chains sent",
		[STAT_WAITS_VISITS] = "threads found off the CPU by the wait sampler",
		[STAT_WAITS_SAME] = "... not run since their last visit",
		[STAT_WAITS_IDLE] = "... idle for their client, their last idle stacks",
		[STAT_WAITS_ONCPU] = "threads found on a CPU by the wait sampler",
		[STAT_WAITS_CUT] = "waits in progress cut at a drain",
		[STAT_WAITS_SEEN] = "threads looked at by the wait sampler",
		[STAT_WAITS_OTHERS] = "... of processes not targeted",
		[STAT_WAITS_IDLE_SAME] = "threads idle where they were idle, ran since: labels "
					 "and stacks again",
		[STAT_WAITS_FOLDED] = "runs of wait visits added to the counts",
	};

	return stat < STAT_MAX ? names[stat] : "?";
}

void sampler_loss_text(const uint64_t *lost, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (int i = STAT_SAMPLES + 1; i < STAT_LOSS_END; i++) {
		if (!lost[i])
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%llu %s", off ? ", " : "",
				(unsigned long long)lost[i], sampler_stat_name(i));
	}
}
