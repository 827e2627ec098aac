/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's counters and their /metrics page (Prometheus text format).
 * The agent's thread records each interval and takes a snapshot of its
 * sinks and symbolizer; the HTTP server's threads render the last snapshot
 * under the lock, never touching the agent's own structures.
 */
#ifndef EBPROF_AGENT_METRICS_H
#define EBPROF_AGENT_METRICS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/membudget.h"
#include "ebprof/symbolizer.h"
#include "pipeline/session.h"
#include "profile/symreport.h"
#include "sinks/sink.h"

#define AGENT_MAX_SINK_METRICS (4 * SINK_MAX_METRICS)

struct agent_metrics {
	pthread_mutex_t lock;
	/* Totals over the agent's life (reloads included). */
	uint64_t intervals, samples, profiles_written, profile_errors;
	uint64_t lost[STAT_MAX];
	/* The last snapshot. */
	uint64_t processes_tracked;
	struct sink_metric sinks[AGENT_MAX_SINK_METRICS];
	size_t nsinks;
	struct sym_stats sym;
	int64_t last_flush_ns;
	struct query_table_stats queries;
	struct symreport symbols;	    /* per binary, over the agent's life */
	uint64_t truncated[UNWIND_END_MAX]; /* samples whose user stack was cut short */
	uint64_t fp_samples;		    /* ... with a frame-pointer frame */
	uint64_t offcpu_ns;		    /* off-CPU time in the profiles */
	uint64_t fault_bytes;		    /* page faults in the profiles, bytes */
	struct sampler_unwind_info unwind;  /* the last interval's session */
	struct sampler_offcpu_info offcpu;  /* ... its off-CPU path */
	struct memsnap_stats memory;	    /* memory snapshots, this session */
	uint64_t memory_oom;		    /* backends OOM-killed, this session */
	struct membudget budget;	    /* the agent's own memory, last interval end */
};

void agent_metrics_init(struct agent_metrics *m);
void agent_metrics_destroy(struct agent_metrics *m);
/* Count one flushed interval. */
void agent_metrics_interval(struct agent_metrics *m, const struct session_interval *iv);
/* Take a snapshot: processes tracked now, the sinks' figures, the
 * symbolizer's, the end of the last flush (0: none yet). */
void agent_metrics_snapshot(struct agent_metrics *m, uint64_t processes, struct sink *const *sinks,
			    size_t nsinks, const struct symbolizer *sym, int64_t last_flush_ns);
/* The memory budget's figures at an interval's end. */
void agent_metrics_budget(struct agent_metrics *m, const struct membudget *b);
/* Binaries named on the page (most samples first). */
#define AGENT_MAX_SYMBOL_ROWS 64

/* Write the page; an http_opts.metrics callback (ctx: the metrics). */
int agent_metrics_write(FILE *out, void *ctx);

#endif /* EBPROF_AGENT_METRICS_H */
