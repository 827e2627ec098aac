// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Empty programs at the hooks of off-CPU profiling (bench/offcpu-body.sh):
 * run beside ebprof's with bpf_stats on, they take the same hook and
 * measurement costs, so the difference of run times per run is what
 * ebprof's programs do.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("raw_tp/sched_switch")
int floor_switch(void *ctx)
{
	return 0;
}

SEC("raw_tp/sched_exit_tp")
int floor_exit(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
