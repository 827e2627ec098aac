// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the kernel's verifier spent on each program of a load, for
 * bench/verifier-cost.sh: with EBPROF_VERIFIER_STATS=1 in the environment,
 * every program that loads asks for the verifier's statistics (log level
 * BPF_LOG_STATS, 5.2+) into a buffer of its own, and after the load one
 * info line per program says its instructions verified (bpf_prog_info's
 * verified_insns, 5.16+), the verifier's own time and its states. Without
 * the variable nothing changes: an older kernel refuses log level 4.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "verifier_stats.h"
#include "util/log.h"

#define STATS_LOG_LEN 65536 /* the statistics, and the lines of each subprogram */

struct verifier_stats {
	size_t n;
	char (*logs)[STATS_LOG_LEN];
};

struct verifier_stats *verifier_stats_arm(struct bpf_object *obj)
{
	const char *env = getenv("EBPROF_VERIFIER_STATS");
	struct verifier_stats *vs;
	struct bpf_program *p;
	size_t i = 0;

	if (!env || strcmp(env, "1"))
		return NULL;
	vs = calloc(1, sizeof(*vs));
	if (!vs)
		return NULL;
	bpf_object__for_each_program(p, obj) vs->n++;
	vs->logs = calloc(vs->n ? vs->n : 1, sizeof(*vs->logs));
	if (!vs->logs) {
		free(vs);
		return NULL;
	}
	bpf_object__for_each_program(p, obj)
	{
		if (bpf_program__autoload(p)) {
			bpf_program__set_log_buf(p, vs->logs[i], STATS_LOG_LEN);
			bpf_program__set_log_level(p, 4); /* BPF_LOG_STATS */
		}
		i++;
	}
	return vs;
}

/* The number after key in log, -1 when absent. */
static long long log_number(const char *log, const char *key)
{
	const char *at = strstr(log, key);

	return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

void verifier_stats_report(struct verifier_stats *vs, struct bpf_object *obj, double load_ms)
{
	unsigned long long insns = 0, us = 0;
	struct bpf_program *p;
	size_t i = 0, nprogs = 0;

	if (!vs)
		return;
	bpf_object__for_each_program(p, obj)
	{
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);
		const char *log = vs->logs[i++];
		long long t = log_number(log, "verification time "),
			  states = log_number(log, "total_states "),
			  peak = log_number(log, "peak_states ");

		if (bpf_program__fd(p) < 0)
			continue;
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			memset(&info, 0, sizeof(info));
		log_info("verifier: %s: %u instructions verified, %lld us, %lld states (peak %lld)",
			 bpf_program__name(p), info.verified_insns, t, states, peak);
		insns += info.verified_insns;
		us += t > 0 ? (unsigned long long)t : 0;
		nprogs++;
	}
	log_info("verifier: %zu programs loaded in %.1f ms: %llu instructions verified, %llu us",
		 nprogs, load_ms, insns, us);
	free(vs->logs);
	free(vs);
}
