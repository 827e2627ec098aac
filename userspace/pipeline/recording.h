/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One recording from start to symbolized profile: its own BPF sampler,
 * symbolizer and process registry, so several can run at once (an ad hoc
 * HTTP profile beside the agent's continuous one) without disturbing each
 * other. Used by `ebprof record` and the HTTP API.
 */
#ifndef EBPROF_RECORDING_H
#define EBPROF_RECORDING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/build.h"
#include "profile/profile.h"
#include "sampling/sampler.h"

struct recording_progress {
	double elapsed_s;
	uint64_t samples;
	unsigned long processes; /* processes sampled so far */
};

struct recording_opts {
	int frequency;	      /* Hz, 1..10000 */
	double duration_s;    /* 0: until *stop is set */
	bool all;	      /* every process */
	bool kernel, user;    /* stacks to collect */
	bool inherit;	      /* follow forks of targets */
	const uint32_t *pids; /* explicit targets */
	size_t npids;
	const char *const *comms; /* name rule; NULL and no pids: postgres,postmaster */
	size_t ncomms;
	const char *const *cgroups; /* cgroup v2 directories */
	size_t ncgroups;
	const char *btf_path; /* NULL: the kernel's BTF */
	bool stop_when_gone;  /* end when every target exited (record -p) */
	bool prewarm;	      /* warm the symbolizer while sampling */
	const char *comment;  /* first profile comment, NULL = none */
	atomic_int *stop;     /* set non-zero to end early; may be NULL */
	/* Called about every 250 ms while sampling (may be NULL). */
	void (*on_progress)(const struct recording_progress *p, void *ctx);
	void *ctx;
};

struct recording_result {
	struct profile *profile;    /* owned by the caller (profile_free) */
	struct sampler_stats stats; /* BPF counters */
	struct builder_stats built;
	double elapsed_s;	 /* sampling time */
	double build_ms;	 /* end of sampling -> profile built */
	unsigned long processes; /* processes sampled */
	bool stopped;		 /* ended through *stop */
	char lost[256];		 /* "3 stacks lost (stack map full), ..." or "" */
};

/*
 * Record and build the profile. Returns 0 with res->profile set, or a
 * negative errno with a one-line reason in err: -ESRCH when no target
 * process exists (bad input), -EPERM/-ENOTSUP for privileges and BTF,
 * others for runtime failures.
 */
int recording_run(const struct recording_opts *o, struct recording_result *res, char *err,
		  size_t errlen);

#endif /* EBPROF_RECORDING_H */
