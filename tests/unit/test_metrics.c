// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's /metrics page (agent/metrics.c), Prometheus text format: the
 * exact page of a fresh agent, totals summed over intervals and the
 * off-CPU path's figures, the page checked line by line against the format
 * (the sinks', symbolizer's and memory budget's figures:
 * test_metrics_sinks.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/metrics.h"
#include "metrics_page.h"

Test(metrics, a_fresh_agent)
{
	struct agent_metrics m;
	char *text, want[16384];
	size_t off = 0;

	agent_metrics_init(&m);
	text = metrics_page(&m);
	off += (size_t)snprintf(
		want + off, sizeof(want) - off,
		"# HELP ebprof_intervals_total Intervals flushed.\n"
		"# TYPE ebprof_intervals_total counter\n"
		"ebprof_intervals_total 0\n"
		"# HELP ebprof_samples_total Samples of target processes.\n"
		"# TYPE ebprof_samples_total counter\n"
		"ebprof_samples_total 0\n"
		"# HELP ebprof_profiles_written_total Per-process profiles handed to the sinks.\n"
		"# TYPE ebprof_profiles_written_total counter\n"
		"ebprof_profiles_written_total 0\n"
		"# HELP ebprof_profile_errors_total Profiles that could not be built or stored.\n"
		"# TYPE ebprof_profile_errors_total counter\n"
		"ebprof_profile_errors_total 0\n"
		"# HELP ebprof_processes_tracked Processes the agent knows now.\n"
		"# TYPE ebprof_processes_tracked gauge\n"
		"ebprof_processes_tracked 0\n"
		"# HELP ebprof_last_flush_timestamp_seconds End of the last interval.\n"
		"# TYPE ebprof_last_flush_timestamp_seconds gauge\n"
		"ebprof_last_flush_timestamp_seconds 0.000\n"
		"# HELP ebprof_lost_total Samples, stacks or events lost, by cause.\n"
		"# TYPE ebprof_lost_total counter\n");
	for (int i = STAT_SAMPLES + 1; i < STAT_LOSS_END; i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off,
					"ebprof_lost_total{cause=\"%s\"} 0\n",
					sampler_stat_name((enum ebprof_stat)i));
	snprintf(
		want + off, sizeof(want) - off,
		"# HELP ebprof_symbolizer_cache_bytes Estimated size of the binary cache.\n"
		"# TYPE ebprof_symbolizer_cache_bytes gauge\n"
		"ebprof_symbolizer_cache_bytes 0\n"
		"# HELP ebprof_symbolizer_binaries Binaries in the symbolizer cache.\n"
		"# TYPE ebprof_symbolizer_binaries gauge\n"
		"ebprof_symbolizer_binaries 0\n"
		"# HELP ebprof_symbolizer_truncated_total Binaries, debug files or kernel symbol "
		"files found cut short while read.\n"
		"# TYPE ebprof_symbolizer_truncated_total counter\n"
		"ebprof_symbolizer_truncated_total 0\n"
		"# HELP ebprof_symbol_samples_total Samples with a frame in the binary, by "
		"where its names come from.\n"
		"# TYPE ebprof_symbol_samples_total counter\n"
		"# HELP ebprof_symbol_samples_resolved_total ... of which the frame resolved to "
		"a function.\n"
		"# TYPE ebprof_symbol_samples_resolved_total counter\n"
		"# HELP ebprof_symbol_leaf_samples_total Samples whose user leaf is in the "
		"binary.\n"
		"# TYPE ebprof_symbol_leaf_samples_total counter\n"
		"# HELP ebprof_symbol_leaf_samples_resolved_total ... of which the leaf resolved "
		"to a function.\n"
		"# TYPE ebprof_symbol_leaf_samples_resolved_total counter\n"
		"# HELP ebprof_debuginfod_requests_total Requests to debuginfod servers.\n"
		"# TYPE ebprof_debuginfod_requests_total counter\n"
		"ebprof_debuginfod_requests_total 0\n"
		"# HELP ebprof_debuginfod_found_total Debug files downloaded from debuginfod.\n"
		"# TYPE ebprof_debuginfod_found_total counter\n"
		"ebprof_debuginfod_found_total 0\n"
		"# HELP ebprof_debuginfod_missing_total Build-ids no debuginfod server has.\n"
		"# TYPE ebprof_debuginfod_missing_total counter\n"
		"ebprof_debuginfod_missing_total 0\n"
		"# HELP ebprof_debuginfod_errors_total Failed debuginfod lookups (network, server "
		"error, wrong file).\n"
		"# TYPE ebprof_debuginfod_errors_total counter\n"
		"ebprof_debuginfod_errors_total 0\n"
		"# HELP ebprof_debuginfod_queued debuginfod lookups waiting or in flight.\n"
		"# TYPE ebprof_debuginfod_queued gauge\n"
		"ebprof_debuginfod_queued 0\n"
		"# HELP ebprof_debuginfod_cache_bytes Size of the debuginfod cache.\n"
		"# TYPE ebprof_debuginfod_cache_bytes gauge\n"
		"ebprof_debuginfod_cache_bytes 0\n"
		"# HELP ebprof_statement_texts_read_total Statement texts the BPF program read "
		"from backends.\n"
		"# TYPE ebprof_statement_texts_read_total counter\n"
		"ebprof_statement_texts_read_total 0\n"
		"# HELP ebprof_statement_texts_sent_total Statement texts that changed and were "
		"sent to be normalized.\n"
		"# TYPE ebprof_statement_texts_sent_total counter\n"
		"ebprof_statement_texts_sent_total 0\n"
		"# HELP ebprof_statement_normalizations_total Statement texts normalized "
		"(libpg_query).\n"
		"# TYPE ebprof_statement_normalizations_total counter\n"
		"ebprof_statement_normalizations_total 0\n"
		"# HELP ebprof_statement_shape_hits_total Statement texts whose normalization was "
		"cached.\n"
		"# TYPE ebprof_statement_shape_hits_total counter\n"
		"ebprof_statement_shape_hits_total 0\n"
		"# HELP ebprof_statement_normalize_seconds_total Time spent normalizing "
		"statements.\n"
		"# TYPE ebprof_statement_normalize_seconds_total counter\n"
		"ebprof_statement_normalize_seconds_total 0.000000\n"
		"# HELP ebprof_statements_known Normalized statements kept now.\n"
		"# TYPE ebprof_statements_known gauge\n"
		"ebprof_statements_known 0\n"
		"# HELP ebprof_unwind_truncated_samples_total Samples whose user stack was cut "
		"short, by why (its last frame says so).\n"
		"# TYPE ebprof_unwind_truncated_samples_total counter\n"
		"ebprof_unwind_truncated_samples_total{reason=\"no unwind table\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"read fault\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"depth limit\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"unsupported rule\"} 0\n"
		"ebprof_unwind_truncated_samples_total{reason=\"bad frame\"} 0\n"
		"# HELP ebprof_unwind_fp_samples_total Samples with a user frame found by frame "
		"pointer (no unwind table).\n"
		"# TYPE ebprof_unwind_fp_samples_total counter\n"
		"ebprof_unwind_fp_samples_total 0\n"
		"# HELP ebprof_unwind_tables Unwind tables loaded in the kernel.\n"
		"# TYPE ebprof_unwind_tables gauge\n"
		"ebprof_unwind_tables 0\n"
		"# HELP ebprof_unwind_table_bytes Kernel memory of the unwind tables.\n"
		"# TYPE ebprof_unwind_table_bytes gauge\n"
		"ebprof_unwind_table_bytes 0\n"
		"# HELP ebprof_unwind_table_builds_total Unwind tables compiled from CFI (not "
		"found in the disk cache).\n"
		"# TYPE ebprof_unwind_table_builds_total counter\n"
		"ebprof_unwind_table_builds_total 0\n"
		"# HELP ebprof_unwind_table_build_seconds_total Time spent compiling unwind "
		"tables.\n"
		"# TYPE ebprof_unwind_table_build_seconds_total counter\n"
		"ebprof_unwind_table_build_seconds_total 0.000000\n"
		"# HELP ebprof_unwind_table_cache_hits_total Unwind tables read from the disk "
		"cache.\n"
		"# TYPE ebprof_unwind_table_cache_hits_total counter\n"
		"ebprof_unwind_table_cache_hits_total 0\n"
		"# HELP ebprof_unwind_over_budget_total Binaries unwound by frame pointers: "
		"their table was over the memory budget.\n"
		"# TYPE ebprof_unwind_over_budget_total counter\n"
		"ebprof_unwind_over_budget_total 0\n"
		"# HELP ebprof_unwind_tables_out_of_budget Binaries mapped now whose table is "
		"out of the memory budget (frame pointers).\n"
		"# TYPE ebprof_unwind_tables_out_of_budget gauge\n"
		"ebprof_unwind_tables_out_of_budget 0\n"
		"# HELP ebprof_unwind_table_evictions_total Tables sent back to frame pointers "
		"for binaries sampled more.\n"
		"# TYPE ebprof_unwind_table_evictions_total counter\n"
		"ebprof_unwind_table_evictions_total 0\n"
		"# HELP ebprof_unwind_table_promotions_total Tables out of the budget loaded "
		"again: sampled more than tables loaded.\n"
		"# TYPE ebprof_unwind_table_promotions_total counter\n"
		"ebprof_unwind_table_promotions_total 0\n"
		"# HELP ebprof_unwind_tables_freed_total Tables unloaded: no process maps their "
		"binary any more.\n"
		"# TYPE ebprof_unwind_tables_freed_total counter\n"
		"ebprof_unwind_tables_freed_total 0\n"
		"# HELP ebprof_unwind_no_table_total Binaries without usable CFI, or that could "
		"not be opened.\n"
		"# TYPE ebprof_unwind_no_table_total counter\n"
		"ebprof_unwind_no_table_total 0\n"
		"# HELP ebprof_unwind_stacks Distinct unwound user stacks held.\n"
		"# TYPE ebprof_unwind_stacks gauge\n"
		"ebprof_unwind_stacks 0\n"
		"# HELP ebprof_unwind_stack_bytes Memory of the unwound user stacks held.\n"
		"# TYPE ebprof_unwind_stack_bytes gauge\n"
		"ebprof_unwind_stack_bytes 0\n"
		"# HELP ebprof_offcpu_seconds_total Time target threads spent off the CPU, in "
		"off-CPU profiles (scaled by the ratio taken).\n"
		"# TYPE ebprof_offcpu_seconds_total counter\n"
		"ebprof_offcpu_seconds_total 0.000000\n"
		"# HELP ebprof_offcpu_short_waits_total Waits shorter than offcpu-min, not "
		"counted.\n"
		"# TYPE ebprof_offcpu_short_waits_total counter\n"
		"ebprof_offcpu_short_waits_total 0\n"
		"# HELP ebprof_offcpu_switches_skipped_total Switches not taken (offcpu-ratio).\n"
		"# TYPE ebprof_offcpu_switches_skipped_total counter\n"
		"ebprof_offcpu_switches_skipped_total 0\n"
		"# HELP ebprof_offcpu_waits_untaken_total Waits shorter than offcpu-period left "
		"out by chance (their time is carried by those taken).\n"
		"# TYPE ebprof_offcpu_waits_untaken_total counter\n"
		"ebprof_offcpu_waits_untaken_total 0\n"
		"# HELP ebprof_fault_samples_total Page-fault samples of target processes (one "
		"every faults-period faults).\n"
		"# TYPE ebprof_fault_samples_total counter\n"
		"ebprof_fault_samples_total 0\n"
		"# HELP ebprof_fault_bytes_total Page faults in the profiles, in bytes (samples x "
		"faults-period x page size).\n"
		"# TYPE ebprof_fault_bytes_total counter\n"
		"ebprof_fault_bytes_total 0\n"
		"# HELP ebprof_memory_snapshots_total Memory-context snapshots of PostgreSQL "
		"backends, by result.\n"
		"# TYPE ebprof_memory_snapshots_total counter\n"
		"ebprof_memory_snapshots_total{result=\"taken\"} 0\n"
		"ebprof_memory_snapshots_total{result=\"failed\"} 0\n"
		"# HELP ebprof_memory_growth_snapshots_total Snapshots taken at once because a "
		"backend's private memory doubled.\n"
		"# TYPE ebprof_memory_growth_snapshots_total counter\n"
		"ebprof_memory_growth_snapshots_total 0\n"
		"# HELP ebprof_memory_walk_retries_total Walks made again because contexts "
		"changed under the one before.\n"
		"# TYPE ebprof_memory_walk_retries_total counter\n"
		"ebprof_memory_walk_retries_total 0\n"
		"# HELP ebprof_memory_walk_seconds_total CPU time spent reading memory "
		"contexts from outside the backends.\n"
		"# TYPE ebprof_memory_walk_seconds_total counter\n"
		"ebprof_memory_walk_seconds_total 0.000000\n"
		"# HELP ebprof_memory_dropped_total Memory contexts (with their branch) a walk "
		"dropped, by reason.\n"
		"# TYPE ebprof_memory_dropped_total counter\n"
		"ebprof_memory_dropped_total{reason=\"unreadable\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"tag\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"methods\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"links\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"name\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"size\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"cycle\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"depth\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"contexts\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"bytes\"} 0\n"
		"ebprof_memory_dropped_total{reason=\"time\"} 0\n"
		"# HELP ebprof_memory_kept_bytes Memory of the last snapshots kept for OOM kills.\n"
		"# TYPE ebprof_memory_kept_bytes gauge\n"
		"ebprof_memory_kept_bytes 0\n"
		"# HELP ebprof_memory_oom_kills_total PostgreSQL processes the kernel killed for "
		"lack of memory.\n"
		"# TYPE ebprof_memory_oom_kills_total counter\n"
		"ebprof_memory_oom_kills_total 0\n"
		"# HELP ebprof_memory_budget_bytes The agent's memory budget (memory-budget; 0: "
		"none).\n"
		"# TYPE ebprof_memory_budget_bytes gauge\n"
		"ebprof_memory_budget_bytes 0\n"
		"# HELP ebprof_rss_bytes The agent's resident memory at the last interval's end.\n"
		"# TYPE ebprof_rss_bytes gauge\n"
		"ebprof_rss_bytes 0\n"
		"# HELP ebprof_rss_peak_bytes The agent's peak resident memory (VmHWM).\n"
		"# TYPE ebprof_rss_peak_bytes gauge\n"
		"ebprof_rss_peak_bytes 0\n"
		"# HELP ebprof_degraded 1 where the last interval's end degraded to keep within "
		"the "
		"memory budget.\n"
		"# TYPE ebprof_degraded gauge\n"
		"ebprof_degraded{what=\"symbol_cache\"} 0\n"
		"# HELP ebprof_degraded_total Interval ends that degraded to keep within the "
		"memory "
		"budget.\n"
		"# TYPE ebprof_degraded_total counter\n"
		"ebprof_degraded_total{what=\"symbol_cache\"} 0\n"
		"# HELP ebprof_memory_over_budget 1 when the agent stayed over its memory budget "
		"after "
		"degrading.\n"
		"# TYPE ebprof_memory_over_budget gauge\n"
		"ebprof_memory_over_budget 0\n"
		"# HELP ebprof_symbolizer_released_total Binaries whose symbol data the memory "
		"budget "
		"dropped.\n"
		"# TYPE ebprof_symbolizer_released_total counter\n"
		"ebprof_symbolizer_released_total 0\n"
		"# HELP ebprof_symbolizer_released_cold_total Of those, binaries with no address "
		"used in the last 4 intervals: none kept.\n"
		"# TYPE ebprof_symbolizer_released_cold_total counter\n"
		"ebprof_symbolizer_released_cold_total 0\n"
		"# HELP ebprof_symbolizer_results_kept Resolved addresses used in the last 4 "
		"intervals the last release kept.\n"
		"# TYPE ebprof_symbolizer_results_kept gauge\n"
		"ebprof_symbolizer_results_kept 0\n"
		"# HELP ebprof_symbolizer_results_dropped_total Resolved addresses the memory "
		"budget dropped: unused for 4 intervals.\n"
		"# TYPE ebprof_symbolizer_results_dropped_total counter\n"
		"ebprof_symbolizer_results_dropped_total 0\n"
		"# HELP ebprof_symbolizer_resolved_total Addresses resolved from the binaries (not "
		"from the symbolizer's memo).\n"
		"# TYPE ebprof_symbolizer_resolved_total counter\n"
		"ebprof_symbolizer_resolved_total 0\n");
	cr_expect_str_eq(text, want);
	metrics_check_format(text);
	free(text);
	agent_metrics_destroy(&m);
}

Test(metrics, intervals_add_up)
{
	struct agent_metrics m;
	struct session_interval a = { .samples = 100, .written = 3, .failed = 1 },
				b = { .samples = 50, .written = 2 };
	char *text, *lost, want[256];

	a.lost[STAT_STACKS_FULL] = 4;
	a.lost[STAT_SAMPLES] = 999; /* not a loss: not listed */
	b.lost[STAT_STACKS_FULL] = 1;
	b.lost[STAT_TARGETS_FULL] = 7;
	agent_metrics_init(&m);
	agent_metrics_interval(&m, &a);
	agent_metrics_interval(&m, &b);
	agent_metrics_snapshot(&m, 12, NULL, 0, NULL, 1700000000123456789LL);
	text = metrics_page(&m);
	metrics_check_format(text);
	cr_expect(strstr(text, "\nebprof_intervals_total 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_samples_total 150\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_profiles_written_total 5\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_profile_errors_total 1\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_processes_tracked 12\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_last_flush_timestamp_seconds 1700000000.123\n") != NULL,
		  "%s", text);
	lost = metrics_lines_with(text, "ebprof_lost_total{");
	snprintf(want, sizeof(want), "ebprof_lost_total{cause=\"%s\"} 5\n",
		 sampler_stat_name(STAT_STACKS_FULL));
	cr_expect(strstr(lost, want) != NULL, "%s", lost);
	snprintf(want, sizeof(want), "ebprof_lost_total{cause=\"%s\"} 7\n",
		 sampler_stat_name(STAT_TARGETS_FULL));
	cr_expect(strstr(lost, want) != NULL, "%s", lost);
	cr_expect_null(strstr(lost, "999"), "samples are no loss: %s", lost);
	cr_expect_null(strstr(lost, "cause=\"samples\""), "%s", lost);
	free(lost);
	free(text);
	agent_metrics_destroy(&m);
}

/* The off-CPU path the last interval's session took, and the wait
 * sampler's figures only when it is the iterator. */
Test(metrics, offcpu_path_and_wait_sampler)
{
	struct agent_metrics m;
	struct session_interval iv = { .offcpu = { .path = "iterator",
						   .visits = "targets",
						   .rate = 10,
						   .ticks = 300,
						   .late = 2,
						   .cpu_ns = 1500000000 } };
	char *text;

	iv.lost[STAT_WAITS_VISITS] = 4000;
	iv.lost[STAT_WAITS_SAME] = 3500;
	iv.lost[STAT_WAITS_SEEN] = 4200;
	agent_metrics_init(&m);
	text = metrics_page(&m);
	cr_expect_null(strstr(text, "ebprof_offcpu_path"), "no off-CPU, no path: %s", text);
	free(text);
	agent_metrics_interval(&m, &iv);
	text = metrics_page(&m);
	metrics_check_format(text);
	cr_expect(strstr(text, "\nebprof_offcpu_path{path=\"iterator\"} 1\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_rate_hz 10\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_visiting{visits=\"targets\"} 1\n") != NULL, "%s",
		  text);
	cr_expect(strstr(text, "\nebprof_waits_threads_seen_total 4200\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_visits_total 300\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_late_total 2\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_threads_visited_total 4000\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_threads_unchanged_total 3500\n") != NULL, "%s",
		  text);
	cr_expect(strstr(text, "\nebprof_waits_cpu_seconds_total 1.500000\n") != NULL, "%s", text);
	cr_expect_null(strstr(text, "ebprof_waits_links"), "one run holds no links: %s", text);
	free(text);
	/* a link per target process: how many, the most, past it */
	iv.offcpu.visits = "processes";
	iv.offcpu.links = 12;
	iv.offcpu.links_max = 512;
	iv.offcpu.links_over = 3;
	agent_metrics_interval(&m, &iv);
	text = metrics_page(&m);
	metrics_check_format(text);
	cr_expect(strstr(text, "\nebprof_waits_visiting{visits=\"processes\"} 1\n") != NULL, "%s",
		  text);
	cr_expect(strstr(text, "\nebprof_waits_links 12\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_links_max 512\n") != NULL, "%s", text);
	cr_expect(strstr(text, "\nebprof_waits_links_over_total 3\n") != NULL, "%s", text);
	free(text);
	iv = (struct session_interval){ .offcpu = { .path = "switch" } };
	agent_metrics_interval(&m, &iv);
	text = metrics_page(&m);
	cr_expect(strstr(text, "\nebprof_offcpu_path{path=\"switch\"} 1\n") != NULL, "%s", text);
	cr_expect_null(strstr(text, "ebprof_waits_rate_hz"), "the switch path has no rate: %s",
		       text);
	free(text);
	agent_metrics_destroy(&m);
}
