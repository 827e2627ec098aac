// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler's page faults (--type faults, bpf/sample.bpf.h): a software
 * perf event per CPU counting page faults (PERF_COUNT_SW_PAGE_FAULTS) that
 * runs the fault program of the session's unwinder every faults_period
 * faults on that CPU, with the faulting registers; the program takes the
 * stacks as a CPU sample does and counts into fault_counts0/1, drained
 * here into raw samples of type PTYPE_FAULTS. A session that does not
 * take faults loads none of its programs, sizes its counts at one entry
 * and opens no event: the kernel's page-fault path then pays nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "sampler_internal.h"

static bool faults_on(const struct sampler *s)
{
	return s->types & PTYPE_BIT(PTYPE_FAULTS);
}

void faults_configure(struct sampler *s, const struct sampler_opts *opts)
{
	struct profile_bpf *sk = s->skel;
	bool on = opts->types & PTYPE_BIT(PTYPE_FAULTS);

	s->faults_period = opts->faults_period ? opts->faults_period : SAMPLER_FAULTS_PERIOD;
	bpf_program__set_autoload(sk->progs.do_fault, on && s->unwind == SAMPLER_UNWIND_FP);
	bpf_program__set_autoload(sk->progs.do_fault_loop, on && s->unwind == SAMPLER_UNWIND_LOOP);
	bpf_program__set_autoload(sk->progs.do_fault_tail, on && s->unwind == SAMPLER_UNWIND_TAIL);
	bpf_program__set_autoload(sk->progs.fault_unwind_tail,
				  on && s->unwind == SAMPLER_UNWIND_TAIL);
	if (!on) { /* its maps at their least */
		bpf_map__set_max_entries(sk->maps.fault_counts0, 1);
		bpf_map__set_max_entries(sk->maps.fault_counts1, 1);
	}
}

/* The fault program of the unwinder that runs. */
static struct bpf_program *fault_prog(struct sampler *s)
{
	switch (s->unwind) {
	case SAMPLER_UNWIND_LOOP:
		return s->skel->progs.do_fault_loop;
	case SAMPLER_UNWIND_TAIL:
		return s->skel->progs.do_fault_tail;
	default:
		return s->skel->progs.do_fault;
	}
}

int faults_attach(struct sampler *s, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
	};
	int ret, key = 0, fd;

	if (!faults_on(s) || s->fault_cpus)
		return 0;
	if (s->unwind == SAMPLER_UNWIND_TAIL) {
		fd = bpf_program__fd(s->skel->progs.fault_unwind_tail);
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.fault_unwind_prog), &key, &fd,
					BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen,
				 "cannot set up the page-fault unwinder's tail call: %s",
				 strerror(errno));
			return ret;
		}
	}
	if (!s->fault_fds)
		s->fault_fds = malloc(s->ncpus * sizeof(*s->fault_fds));
	if (!s->fault_links)
		s->fault_links = calloc(s->ncpus, sizeof(*s->fault_links));
	if (!s->fault_fds || !s->fault_links) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < s->ncpus; cpu++)
		s->fault_fds[cpu] = -1;
	attr.sample_period = s->faults_period;
	ret = sampler_attach_cpus(s, &attr, fault_prog(s), s->fault_fds, s->fault_links,
				  "the page-fault sampler", err, errlen);
	if (ret < 0)
		return ret;
	s->fault_cpus = ret;
	if (!ret) {
		snprintf(err, errlen, "no online CPU to count page faults on");
		return -ENODEV;
	}
	return 0;
}

void faults_detach(struct sampler *s)
{
	sampler_detach_cpus(s, s->fault_fds, s->fault_links);
	s->fault_cpus = 0;
}

int faults_drain(struct sampler *s, uint32_t old, bool both, raw_sample_fn fn, void *ctx)
{
	struct bpf_map *maps[2] = { s->skel->maps.fault_counts0, s->skel->maps.fault_counts1 };
	int ret, total;

	if (!faults_on(s))
		return 0;
	ret = sampler_drain_map(s, maps[old], PTYPE_FAULTS, fn, ctx);
	if (ret < 0 || !both)
		return ret;
	total = ret;
	ret = sampler_drain_map(s, maps[!old], PTYPE_FAULTS, fn, ctx);
	return ret < 0 ? ret : total + ret;
}

void faults_mark_live(struct sampler *s)
{
	if (faults_on(s))
		sampler_mark_counts(s, s->active ? s->skel->maps.fault_counts1
						 : s->skel->maps.fault_counts0);
}
