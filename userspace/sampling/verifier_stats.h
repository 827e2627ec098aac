/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verifier's cost of each program of a load (bench/verifier-cost.sh),
 * when EBPROF_VERIFIER_STATS=1 is in the environment (verifier_stats.c).
 * Not a header for other folders.
 */
#ifndef EBPROF_VERIFIER_STATS_H
#define EBPROF_VERIFIER_STATS_H

#include <bpf/libbpf.h>

struct verifier_stats;

/* Before load: the programs that load keep the verifier's statistics.
 * NULL without EBPROF_VERIFIER_STATS=1 (or out of memory): nothing armed. */
struct verifier_stats *verifier_stats_arm(struct bpf_object *obj);

/* After load (load_ms: its wall time): one info line per loaded program
 * and one for the whole, then vs is freed. Nothing for NULL. */
void verifier_stats_report(struct verifier_stats *vs, struct bpf_object *obj, double load_ms);

#endif /* EBPROF_VERIFIER_STATS_H */
